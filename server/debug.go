package server

import (
	"context"
	"fmt"

	"github.com/kinetic-run/kinetic/engine"
)

type debugReply struct {
	*engine.DebugSession
	// SessionID names a session that holds a forward open (debug_detach closes it); ""
	// when there is nothing to close (the local backend).
	SessionID string `json:"session_id,omitempty"`
}

// debugAttach waits (up to timeout seconds, or until the request is cancelled) for the
// job's debugger and connects to it. A forward, if the backend makes one, lives on the
// server's own context after the reply, until debug_detach or the server exits.
func (s *Server) debugAttach(ctx context.Context, j *engine.Job, localPort int, timeout float64) (*debugReply, error) {
	wctx, cancelWait := withTimeout(ctx, timeout)
	defer cancelWait()
	fctx, cancel := context.WithCancel(s.base)
	stopWatch := context.AfterFunc(wctx, cancel) // waiting ends with the request
	sess, err := j.DebugAttach(fctx, localPort)
	if !stopWatch() && err == nil {
		sess.Close() // the request ended just as the session opened
		err = wctx.Err()
	}
	if err != nil {
		cancel()
		if wctx.Err() != nil && ctx.Err() == nil {
			return nil, &typedError{ErrTimeout, fmt.Errorf("no debugger of job %s within %gs: %w", j.Handle.JobID, timeout, err)}
		}
		return nil, err
	}
	r := &debugReply{DebugSession: sess}
	if !sess.Forwarded {
		cancel()
		return r, nil
	}
	s.mu.Lock()
	s.debugID++
	r.SessionID = fmt.Sprintf("debug-%d", s.debugID)
	s.debugs[r.SessionID] = func() { sess.Close(); cancel() }
	s.mu.Unlock()
	return r, nil
}

// debugDetach closes a debug session's forward; it reports whether the session was open.
func (s *Server) debugDetach(id string) bool {
	s.mu.Lock()
	stop, ok := s.debugs[id]
	delete(s.debugs, id)
	s.mu.Unlock()
	if ok {
		stop()
	}
	return ok
}

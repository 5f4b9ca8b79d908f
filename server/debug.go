package server

import (
	"context"
	"fmt"

	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/protocol"
)

// noWaitDebug is how long debug_attach with no_wait (Python's timeout=0) looks for the
// job's debugger: one look at its marker and one connection.
const noWaitDebug = 1.0

// openDebug waits (up to timeout seconds, or until the request is cancelled) for the
// job's debugger and connects to it. A forward, if the backend makes one, lives on the
// server's own context after the reply, until debug_detach or the server exits.
func (s *Server) openDebug(ctx context.Context, j *engine.Job, localPort int, timeout float64) (*protocol.DebugSession, error) {
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
			return nil, errs.Errorf(errs.DeadlineExceeded, "no debugger of job %s within %gs: %w", j.Handle.JobID, timeout, err)
		}
		return nil, err
	}
	r := debugSessionOf(sess)
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

// closeDebug closes a debug session's forward; it reports whether the session was open.
func (s *Server) closeDebug(id string) bool {
	s.mu.Lock()
	stop, ok := s.debugs[id]
	delete(s.debugs, id)
	s.mu.Unlock()
	if ok {
		stop()
	}
	return ok
}

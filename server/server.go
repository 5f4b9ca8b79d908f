// Package server speaks the engine protocol: JSON lines over a pair of streams (the
// stdin and stdout of `kinetic serve --stdio`), which is how the Python SDK reaches the
// Go engine. One long-lived server per Python process; requests run concurrently and
// are answered by id, so a blocking wait does not hold up a status poll.
//
// The wire types are package protocol; this package decodes a request, looks its method
// up in a table of typed handlers (handlers.go), and maps engine results and errors to
// protocol types (convert.go, errors.go). The protocol is documented, with its version
// rules, in docs/protocol.md; server/testdata holds golden transcripts of it.
package server

import (
	"bufio"
	"context"
	"encoding/json"
	"github.com/kinetic-run/kinetic/internal/calltrace"
	"io"
	"sync"

	"github.com/kinetic-run/kinetic/batch"
	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/protocol"
	"github.com/kinetic-run/kinetic/version"
)

// Server serves one client.
type Server struct {
	eng *engine.Engine

	wmu sync.Mutex
	enc *json.Encoder

	mu       sync.Mutex
	inflight map[int64]context.CancelFunc
	wg       sync.WaitGroup

	// base is the server's own context: cancelled by a signal, not by the client
	// leaving. Batch submissions run under it, so a client that exits normally does
	// not cut its batches short; Serve waits for them.
	base    context.Context
	batches map[string]*batch.Batch
	// debugs are the open debug sessions that hold a forward, by session ID.
	debugs  map[string]func()
	debugID int
}

func newServer(ctx context.Context, eng *engine.Engine, w io.Writer) *Server {
	return &Server{eng: eng, enc: json.NewEncoder(w), inflight: map[int64]context.CancelFunc{}, base: ctx,
		batches: map[string]*batch.Batch{}, debugs: map[string]func(){}}
}

// Serve reads requests from r and writes messages to w until r ends or ctx is done.
func Serve(ctx context.Context, eng *engine.Engine, r io.Reader, w io.Writer) error {
	s := newServer(ctx, eng, w)
	if err := s.send(protocol.Greeting(version.Version)); err != nil {
		return err
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		s.wg.Wait()
		s.mu.Lock()
		pending := make([]*batch.Batch, 0, len(s.batches))
		for _, b := range s.batches {
			pending = append(pending, b)
		}
		s.mu.Unlock()
		for _, b := range pending {
			<-b.Done()
		}
	}()
	var n int64 // lines read: an unreadable one is answered with its number
	for sc.Scan() {
		n++
		var req protocol.Request
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			s.send(unreadable(n, sc.Bytes(), err))
			continue
		}
		if ordered[req.Method] {
			// Answered before the next line is read: a client may send it without
			// waiting for the reply, and what it sends next sees its effect.
			s.serve(ctx, &req)
			continue
		}
		rctx, rcancel := context.WithCancel(ctx)
		s.mu.Lock()
		s.inflight[req.ID] = rcancel
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() {
				s.mu.Lock()
				delete(s.inflight, req.ID)
				s.mu.Unlock()
				rcancel()
			}()
			s.serve(rctx, &req)
		}()
	}
	return sc.Err()
}

// serve answers one request: its handler's result or error, then the work the handler
// left for after the reply (e.g. cleanup: the caller has its value already).
func (s *Server) serve(ctx context.Context, req *protocol.Request) {
	c := &call{Context: ctx, s: s, id: req.ID}
	calltrace.Mark("engine.recv."+req.Method, "")
	res, err := s.dispatch(c, req)
	if err != nil {
		s.send(protocol.Message{ID: req.ID, Error: toError(err)})
		return
	}
	s.send(protocol.Message{ID: req.ID, Result: res})
	calltrace.Mark("engine.replied."+req.Method, "")
	if c.after == nil {
		return
	}
	if ordered[req.Method] {
		// Not in the read loop's way: the reply is out, the rest is cleanup.
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			c.after()
		}()
		return
	}
	c.after()
	calltrace.Mark("engine.after."+req.Method, "")
}

// ordered are the methods served in the order of the lines, each before the next line
// is read (their handlers are quick: a claim). The SDK sends "collected" for a sync
// call's value without waiting for the reply; a request it sends after (a status, an
// attach, another result) must see the claim.
var ordered = map[string]bool{protocol.MethodCollected: true}

// dispatch runs the handler of req's method.
func (s *Server) dispatch(c *call, req *protocol.Request) (any, error) {
	h, ok := handlers[req.Method]
	if !ok {
		return nil, invalidf("unknown method %q (this engine speaks protocol %d)", req.Method, protocol.Version)
	}
	return h(s, c, req.Params)
}

func (s *Server) send(m protocol.Message) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.enc.Encode(m)
}

func (s *Server) cancelRequest(id int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.inflight[id]; ok {
		c()
		return true
	}
	return false
}

// call is one request being served: its context, its ID (events go to it) and work to
// do once the response has been sent.
type call struct {
	context.Context
	s     *Server
	id    int64
	after func()
}

// event sends an event tied to the request.
func (c *call) event(name string, data any) {
	c.s.send(protocol.Message{ID: c.id, Event: name, Data: data})
}

// afterReply runs f once the response has been sent.
func (c *call) afterReply(f func()) { c.after = f }

// logWriter turns written log bytes into log events.
type logWriter struct{ c *call }

func (w logWriter) Write(p []byte) (int, error) {
	w.c.event(protocol.EventLog, string(p))
	return len(p), nil
}

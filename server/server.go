// Package server speaks the engine protocol: JSON lines over a pair of streams (the
// stdin and stdout of `kinetic serve --stdio`), which is how the Python SDK reaches the
// Go engine. One long-lived server per Python process; requests run concurrently and
// are answered by id, so a blocking wait does not hold up a status poll. The protocol is
// documented, with its version rules, in docs/protocol.md.
package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/kinetic-run/kinetic/batch"
	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/version"
)

// Protocol is the protocol's major version. A client that reads a different value in
// the greeting must refuse to talk (and say which binary it found).
const Protocol = 1

// Version is the kinetic version reported in the greeting.
var Version = version.Version

// Request is one line from the client.
type Request struct {
	ID     int64           `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// Message is one line to the client: a greeting, an event or a response.
type Message struct {
	ID     int64  `json:"id,omitempty"`
	Result any    `json:"result,omitempty"`
	Error  *Error `json:"error,omitempty"`
	Event  string `json:"event,omitempty"`
	Data   any    `json:"data,omitempty"`
	// Greeting fields.
	Kinetic  string `json:"kinetic,omitempty"`
	Protocol int    `json:"protocol,omitempty"`
}

// Error is a failed request. Type is one of the codes below; clients map them to
// exceptions (NotFound → LookupError, Timeout → TimeoutError, ...).
type Error struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// Error types.
const (
	ErrInvalid   = "InvalidArgument"
	ErrNotFound  = "NotFound"
	ErrTimeout   = "Timeout"
	ErrNoResult  = "NoResult"
	ErrCancelled = "Cancelled"
	ErrInternal  = "Internal"
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

// Serve reads requests from r and writes messages to w until r ends or ctx is done.
func Serve(ctx context.Context, eng *engine.Engine, r io.Reader, w io.Writer) error {
	s := &Server{eng: eng, enc: json.NewEncoder(w), inflight: map[int64]context.CancelFunc{}, base: ctx, batches: map[string]*batch.Batch{}, debugs: map[string]func(){}}
	if err := s.send(Message{Kinetic: Version, Protocol: Protocol}); err != nil {
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
	for sc.Scan() {
		var req Request
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			s.send(Message{Error: &Error{Type: ErrInvalid, Message: "request is not JSON: " + err.Error()}})
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
			res, err := s.dispatch(rctx, &req)
			if err != nil {
				s.send(Message{ID: req.ID, Error: toError(err)})
				return
			}
			after, _ := res.(afterReply)
			if after.then != nil {
				res = after.result
			}
			if res == nil {
				res = struct{}{}
			}
			s.send(Message{ID: req.ID, Result: res})
			if after.then != nil {
				after.then() // e.g. cleanup: the caller has its value already
			}
		}()
	}
	return sc.Err()
}

func (s *Server) send(m Message) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.enc.Encode(m)
}

// event sends an event tied to request id.
func (s *Server) event(id int64, name string, data any) {
	s.send(Message{ID: id, Event: name, Data: data})
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

// afterReply is a result with work to do once it has been sent.
type afterReply struct {
	result any
	then   func()
}

// typedError lets handlers choose the error type.
type typedError struct {
	typ string
	err error
}

func (e *typedError) Error() string { return e.err.Error() }
func (e *typedError) Unwrap() error { return e.err }

func toError(err error) *Error {
	var te *typedError
	switch {
	case errors.As(err, &te):
		return &Error{Type: te.typ, Message: err.Error()}
	case errors.Is(err, engine.ErrNotFound):
		return &Error{Type: ErrNotFound, Message: err.Error()}
	case errors.Is(err, engine.ErrNoResult):
		return &Error{Type: ErrNoResult, Message: err.Error()}
	case errors.Is(err, context.DeadlineExceeded):
		return &Error{Type: ErrTimeout, Message: err.Error()}
	case errors.Is(err, context.Canceled):
		return &Error{Type: ErrCancelled, Message: err.Error()}
	default:
		return &Error{Type: ErrInvalid, Message: err.Error()}
	}
}

func decode(raw json.RawMessage, v any) error {
	if len(raw) == 0 {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return &typedError{ErrInvalid, fmt.Errorf("bad params: %w", err)}
	}
	return nil
}

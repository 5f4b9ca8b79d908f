package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kinetic-run/kinetic/accel"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/deps"
	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/protocol"
)

func TestHandlersCoverProtocol(t *testing.T) {
	for _, m := range protocol.Methods {
		if handlers[m] == nil {
			t.Errorf("method %q has no handler", m)
		}
	}
	for m := range handlers {
		if !slices.Contains(protocol.Methods, m) {
			t.Errorf("handler %q is not in protocol.Methods", m)
		}
	}
}

func TestClassify(t *testing.T) {
	_, accelErr := accel.Parse("h100x3")
	_, configErr := config.Validate(config.Namespace, "Not A Namespace")
	for _, c := range []struct {
		name string
		err  error
		want protocol.Class
	}{
		{"job not found", fmt.Errorf("no job x: %w", engine.ErrNotFound), protocol.NotFound},
		{"no result", fmt.Errorf("job x: %w", engine.ErrNoResult), protocol.NoResult},
		{"timeout", fmt.Errorf("wait: %w", context.DeadlineExceeded), protocol.Timeout},
		{"cancelled", fmt.Errorf("wait: %w", context.Canceled), protocol.Cancelled},
		{"accelerator", fmt.Errorf("plan: %w", accelErr), protocol.InvalidArgument},
		{"config value", configErr, protocol.InvalidArgument},
		{"profile", &config.ProfileNotFoundError{Name: "p"}, protocol.InvalidArgument},
		{"deps file", &deps.FileError{File: "requirements.txt", Line: 3, Err: deps.ErrSyntax}, protocol.InvalidArgument},
		{"deps sentinel", fmt.Errorf("x: %w", deps.ErrCredentials), protocol.InvalidArgument},
		{"not a debug job", fmt.Errorf("job x: %w", engine.ErrNotDebug), protocol.InvalidArgument},
		{"chosen by handler", invalidf("bad params: %w", errors.New("x")), protocol.InvalidArgument},
		{"chosen over a sentinel", &classError{protocol.Timeout, fmt.Errorf("no debugger: %w", context.Canceled)}, protocol.Timeout},
		{"store outage", fmt.Errorf("read jobs/x/handle.json: %w", errors.New("dial tcp: connection refused")), protocol.Internal},
		{"anything else", errors.New("boom"), protocol.Internal},
	} {
		if accelErr == nil || configErr == nil {
			t.Fatal("accel.Parse or config.Validate accepted a bad value")
		}
		if got := classify(c.err); got != c.want {
			t.Errorf("%s: classify(%v) = %s, want %s", c.name, c.err, got, c.want)
		}
	}
}

type echoReq struct {
	N int `json:"n"`
}

type echoResp struct {
	N int `json:"n"`
}

func TestHandleAdapter(t *testing.T) {
	h := handle(func(_ *Server, _ *call, r *echoReq) (*echoResp, error) {
		if r.N < 0 {
			return nil, nil
		}
		return &echoResp{r.N}, nil
	})
	for _, c := range []struct {
		params string
		want   string
		class  protocol.Class
	}{
		{``, `{"n":0}`, ""},                        // absent params are the zero request
		{`{"n": 3, "extra": true}`, `{"n":3}`, ""}, // unknown fields are ignored
		{`{"n": -1}`, `{}`, ""},                    // a nil response is {}
		{`{"n": "x"}`, ``, protocol.InvalidArgument},
		{`[1]`, ``, protocol.InvalidArgument},
	} {
		res, err := h(nil, &call{Context: context.Background()}, json.RawMessage(c.params))
		if c.class != "" {
			if err == nil || classify(err) != c.class {
				t.Errorf("params %s: err %v, want class %s", c.params, err, c.class)
			}
			continue
		}
		if err != nil {
			t.Errorf("params %s: %v", c.params, err)
			continue
		}
		if b, _ := json.Marshal(res); string(b) != c.want {
			t.Errorf("params %s: result %s, want %s", c.params, b, c.want)
		}
	}
}

// TestStoreOutage: a store that cannot be opened is Internal, not the caller's
// InvalidArgument, and an unknown job is still found to be unknown only when the store
// answers.
func TestStoreOutage(t *testing.T) {
	home := t.TempDir()
	t.Setenv("KINETIC_HOME", home)
	t.Setenv("KINETIC_PROFILES_FILE", filepath.Join(home, "profiles.json"))
	eng, err := engine.New(config.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	s := newServer(context.Background(), eng, io.Discard)
	bad := "file:///proc/kinetic-no-such-store"
	for _, req := range []protocol.Request{
		{ID: 1, Method: protocol.MethodList, Params: json.RawMessage(`{"store": "` + bad + `"}`)},
		{ID: 2, Method: protocol.MethodStatus, Params: json.RawMessage(`{"job_id": "job-0123456789abcdefghijklm", "store": "` + bad + `"}`)},
	} {
		_, err := s.dispatch(&call{Context: context.Background(), s: s, id: req.ID}, &req)
		if err == nil {
			t.Errorf("%s on %s: no error", req.Method, bad)
			continue
		}
		if got := classify(err); got != protocol.Internal {
			t.Errorf("%s on %s: class %s (%v), want Internal", req.Method, bad, got, err)
		}
	}
}

package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/accel"
	"github.com/kinetic-run/kinetic/batch"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/data"
	"github.com/kinetic-run/kinetic/deps"
	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/image"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/jobview"
	"github.com/kinetic-run/kinetic/pack"
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

// TestClassify feeds the known errors of every package, each wrapped once as a caller
// would, through toError: the class comes from the code the error got where it started.
func TestClassify(t *testing.T) {
	must := func(what string, err error) error {
		t.Helper()
		if err == nil {
			t.Fatalf("%s: no error", what)
		}
		return err
	}
	_, accelErr := accel.Parse("h100x3")
	_, configErr := config.Validate(config.Namespace, "Not A Namespace")
	_, dataEmpty := data.Parse("", false, false)
	_, dataMissing := data.Parse(filepath.Join(t.TempDir(), "no-such-file"), false, false)
	_, dataScheme := data.Parse("ftp://host/x", false, false)
	_, dataGS := data.Parse("gs:///x", false, false)
	_, dataHF := data.Parse("hf://imdb?nope=1", false, false)
	_, dataFuse := data.FuseSpec(data.Ref{Source: "x", Kind: data.LocalDir}, "v", "/data")
	_, imageRef := image.ParseReference("https://registry.example/repo:tag")
	_, imageChoice := image.ParseChoice("BUNDLED")
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, pack.IgnoreFile), []byte("[z-a]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, packIgnore := pack.Scan(context.Background(), work, pack.Options{CacheDir: t.TempDir()})
	gone := &engine.CleanedUpError{Tombstone: &job.Tombstone{JobID: "job-x", State: job.Succeeded, CollectedBy: "pid 1 on h", CleanedAt: time.Unix(0, 0)}}
	for _, c := range []struct {
		name string
		err  error
		want protocol.Class
	}{
		// accel
		{"accel.UnknownError", must("accel.Parse", accelErr), protocol.InvalidArgument},
		// config
		{"config.ValueError", must("config.Validate", configErr), protocol.InvalidArgument},
		{"config.ErrInvalid", config.ErrInvalid, protocol.InvalidArgument},
		{"config.ErrProfileNotFound", config.ErrProfileNotFound, protocol.InvalidArgument},
		{"config.ProfileNotFoundError", &config.ProfileNotFoundError{Name: "p"}, protocol.InvalidArgument},
		{"config.ErrCorrupt", config.ErrCorrupt, protocol.InvalidArgument},
		{"config.CorruptFileError", &config.CorruptFileError{Path: "p.json", Err: errors.New("unexpected EOF")}, protocol.InvalidArgument},
		// deps
		{"deps.FileError", &deps.FileError{File: "requirements.txt", Line: 3, Err: deps.ErrSyntax}, protocol.InvalidArgument},
		{"deps.FileError (read)", &deps.FileError{File: "requirements.txt", Err: errors.New("permission denied")}, protocol.InvalidArgument},
		{"deps.ErrSyntax", deps.ErrSyntax, protocol.InvalidArgument},
		{"deps.ErrLocalPath", deps.ErrLocalPath, protocol.InvalidArgument},
		{"deps.ErrCredentials", deps.ErrCredentials, protocol.InvalidArgument},
		{"deps.ErrInclude", deps.ErrInclude, protocol.InvalidArgument},
		{"deps.ErrUnsupported", deps.ErrUnsupported, protocol.InvalidArgument},
		// engine (and jobview, whose sentinels the engine's are)
		{"engine.ErrNotFound", engine.ErrNotFound, protocol.NotFound},
		{"jobview.ErrNotFound", jobview.ErrNotFound, protocol.NotFound},
		{"engine.CleanedUpError", gone, protocol.NotFound},
		{"engine.ErrNoResult", engine.ErrNoResult, protocol.NoResult},
		{"engine.ErrNotDebug", engine.ErrNotDebug, protocol.InvalidArgument},
		// data
		{"data.Parse empty", must("data.Parse empty", dataEmpty), protocol.InvalidArgument},
		{"data.Parse missing path", must("data.Parse missing", dataMissing), protocol.InvalidArgument},
		{"data.Parse scheme", must("data.Parse scheme", dataScheme), protocol.InvalidArgument},
		{"data.Parse gs", must("data.Parse gs", dataGS), protocol.InvalidArgument},
		{"data.Parse hf", must("data.Parse hf", dataHF), protocol.InvalidArgument},
		{"data.Validate", must("data.Validate", data.Validate(data.Ref{Source: "x", Kind: "nope"})), protocol.InvalidArgument},
		{"data.FuseSpec", must("data.FuseSpec", dataFuse), protocol.InvalidArgument},
		// image
		{"image.ErrBadReference", must("image.ParseReference", imageRef), protocol.InvalidArgument},
		{"image.ParseChoice", must("image.ParseChoice", imageChoice), protocol.InvalidArgument},
		{"image.ErrUnreachable", image.ErrUnreachable, protocol.Unavailable},
		// pack
		{"pack ignore pattern", must("pack.Scan", packIgnore), protocol.InvalidArgument},
		// context
		{"context.DeadlineExceeded", context.DeadlineExceeded, protocol.Timeout},
		{"context.Canceled", context.Canceled, protocol.Cancelled},
		// the server's own
		{"chosen by handler", invalidf("bad params: %w", errors.New("x")), protocol.InvalidArgument},
		{"timedOut", timedOut(context.DeadlineExceeded, 1, "job x did not finish", "it keeps running"), protocol.Timeout},
		{"chosen over context", errs.Errorf(errs.DeadlineExceeded, "no debugger: %w", context.Canceled), protocol.Timeout},
		// no code
		{"store outage", errors.New("dial tcp: connection refused"), protocol.Internal},
		{"anything else", errors.New("boom"), protocol.Internal},
		// the codes of a store, registry or cluster that refused or did not answer
		{"errs.PermissionDenied", errs.New(errs.PermissionDenied, "bucket b: 403"), protocol.PermissionDenied},
		{"errs.ResourceExhausted", errs.New(errs.ResourceExhausted, "no space left"), protocol.ResourceExhausted},
		{"errs.Unavailable", errs.New(errs.Unavailable, "503"), protocol.Unavailable},
	} {
		err := fmt.Errorf("call: %w", c.err)
		if got := toError(err).Class; got != c.want {
			t.Errorf("%s: toError(%v) has class %s, want %s", c.name, err, got, c.want)
		}
	}
	if e := toError(fmt.Errorf("result: %w", gone)); e.Collected == nil || e.Collected.CollectedBy != "pid 1 on h" {
		t.Errorf("CleanedUpError lost its Collected detail: %+v", e)
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

// TestStoreOutage: a store that cannot be opened is Unavailable, not the caller's
// InvalidArgument, and an unknown job is still found to be unknown only when the store
// answers.
func TestStoreOutage(t *testing.T) {
	home := t.TempDir()
	t.Setenv("KINETIC_HOME", home)
	t.Setenv("KINETIC_PROFILES_FILE", filepath.Join(home, "profiles.json"))
	eng, err := engine.New(config.Options{}, engine.WithUnwritten(batch.Unwritten{}))
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	s := newServer(context.Background(), eng, io.Discard)
	bad := "file:///proc/kinetic-no-such-store"
	// A store that exists but cannot be opened (a file, not a directory): a store named
	// that does not exist is the caller's mistake for list (TestListMissingStore).
	notDir := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(notDir, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, req := range []protocol.Request{
		{ID: 1, Method: protocol.MethodList, Params: json.RawMessage(`{"store": "file://` + notDir + `"}`)},
		{ID: 2, Method: protocol.MethodStatus, Params: json.RawMessage(`{"job_id": "job-0123456789abcdefghijklm", "store": "file://` + notDir + `"}`)},
	} {
		_, err := s.dispatch(&call{Context: context.Background(), s: s, id: req.ID}, &req)
		if err == nil {
			t.Errorf("%s on %s: no error", req.Method, bad)
			continue
		}
		if got := classify(err); got != protocol.Unavailable {
			t.Errorf("%s on %s: class %s (%v), want Unavailable", req.Method, bad, got, err)
		}
	}
}

// TestListMissingStore: listing a file store whose directory does not exist lists
// nothing and makes no directory (the SDK and the CLI refuse the path before asking).
func TestListMissingStore(t *testing.T) {
	home := t.TempDir()
	t.Setenv("KINETIC_HOME", home)
	t.Setenv("KINETIC_PROFILES_FILE", filepath.Join(home, "profiles.json"))
	eng, err := engine.New(config.Options{}, engine.WithUnwritten(batch.Unwritten{}))
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	s := newServer(context.Background(), eng, io.Discard)
	missing := filepath.Join(t.TempDir(), "no", "such", "dir")
	for i, st := range []string{missing, "file://" + missing} {
		req := protocol.Request{ID: int64(i + 1), Method: protocol.MethodList, Params: json.RawMessage(`{"store": "` + st + `"}`)}
		res, err := s.dispatch(&call{Context: context.Background(), s: s, id: req.ID}, &req)
		if rows, ok := res.([]protocol.ListedJob); err != nil || !ok || len(rows) != 0 {
			t.Errorf("list %s: %v, %v; want an empty list", st, res, err)
		}
	}
	if _, err := os.Stat(filepath.Dir(filepath.Dir(missing))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("list made %s (%v)", filepath.Dir(filepath.Dir(missing)), err)
	}
}

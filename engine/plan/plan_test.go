package plan

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/image"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// testEnv is a real configuration (no environment, no profile) and a mem:// store,
// with what a person would be told kept.
type testEnv struct {
	t        *testing.T
	args     map[config.Key]string
	mu       sync.Mutex
	notices  []string
	warnings []string
	st       *store.Store
	// ensure and addRunner answer EnsureImage and AddRunner when set (a registry).
	ensure    func(req *image.BuildRequest) (image.Result, error)
	addRunner func(where *job.Handle, img name.Reference, into name.Repository) (image.WithRunner, bool)
	added     []string // the images AddRunner was asked for, "IMAGE into REPOSITORY"
	// pythonVersion and imagePython answer PythonVersion and ImagePython.
	pythonVersion, imagePython string
}

func newEnv(t *testing.T, args map[config.Key]string) *testEnv {
	t.Helper()
	if args == nil {
		args = map[config.Key]string{}
	}
	if _, ok := args[config.Store]; !ok {
		args[config.Store] = "mem://"
	}
	return &testEnv{t: t, args: args}
}

func (e *testEnv) Resolve(args map[config.Key]string) (*config.Resolved, error) {
	merged := map[config.Key]string{}
	for k, v := range e.args {
		merged[k] = v
	}
	for k, v := range args {
		merged[k] = v
	}
	return config.Resolve(config.Options{Args: merged, Getenv: func(string) string { return "" }, ProfilesFile: filepath.Join(e.t.TempDir(), "profiles.json")})
}

func (e *testEnv) Store(ctx context.Context, url string) (*store.Store, error) {
	if e.st == nil {
		st, err := store.Open(ctx, url)
		if err != nil {
			return nil, err
		}
		e.t.Cleanup(func() { st.Close() })
		e.st = st
	}
	return e.st, nil
}

func (e *testEnv) PathPython() string                                 { return "" }
func (e *testEnv) PythonVersion(string) string                        { return e.pythonVersion }
func (e *testEnv) ImagePython(context.Context, name.Reference) string { return e.imagePython }
func (e *testEnv) NoticeOnce(msg string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.notices = append(e.notices, msg)
}
func (e *testEnv) Warning(msg string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.warnings = append(e.warnings, msg)
}
func (e *testEnv) EnsureImage(_ context.Context, _ *config.Resolved, req *image.BuildRequest) (image.Result, error) {
	if e.ensure != nil {
		return e.ensure(req)
	}
	return image.Result{}, errors.New("no registry in these tests")
}
func (e *testEnv) AddRunner(_ context.Context, where *job.Handle, _ *store.Store, img name.Reference, into name.Repository) (image.WithRunner, bool) {
	e.added = append(e.added, img.String()+" into "+into.String())
	if e.addRunner == nil {
		return image.WithRunner{}, false
	}
	return e.addRunner(where, img, into)
}

// pickleRequest is a call of a pickled function with no working directory.
func pickleRequest() *Request {
	return &Request{Kind: job.KindPickle, Payload: []byte("pickle"), FuncName: "f", NoWorkdir: true, Cwd: os.TempDir()}
}

// upTo runs the steps of Make before the one called last, then last, and returns the
// job and last's error: a step's test starts from what the steps before it made.
func upTo(t *testing.T, env Env, req *Request, last string) (*Job, error) {
	t.Helper()
	p := &Job{}
	for _, s := range steps {
		if s.name == last {
			return p, s.run(context.Background(), env, req, p)
		}
		if err := s.run(context.Background(), env, req, p); err != nil {
			t.Fatalf("step %s: %v", s.name, err)
		}
	}
	t.Fatalf("no step %q", last)
	return nil, nil
}

// TestMakeStopsAtTheFirstBadStep: Make runs the steps in order and stops at the
// first that fails, so a bad accelerator is said before a bad payload, and nothing
// after it (the store is not even opened).
func TestMakeStopsAtTheFirstBadStep(t *testing.T) {
	env := newEnv(t, nil)
	req := pickleRequest()
	req.Accelerator, req.Payload = "tpu-v9000", nil
	_, err := Make(context.Background(), env, req)
	if err == nil || !strings.Contains(err.Error(), "tpu-v9000") {
		t.Fatalf("Make = %v, want the accelerator's error", err)
	}
	if env.st != nil {
		t.Error("the store was opened after a failed step")
	}
	var names []string
	for _, s := range steps {
		names = append(names, s.name)
	}
	want := "settings accelerator placement call environment capture data tree upload size dependencies image handle"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("steps %q, want %q", got, want)
	}
}

// TestMake: a good call is planned whole: spec, handle and store agree.
func TestMake(t *testing.T) {
	env := newEnv(t, nil)
	p, err := Make(context.Background(), env, pickleRequest())
	if err != nil {
		t.Fatal(err)
	}
	if p.Handle.JobID != p.Spec.JobID || !job.ValidName(p.Handle.JobID) || p.Handle.Store != "mem://" || p.Handle.Backend != config.DefaultBackend() {
		t.Errorf("handle %+v, spec %+v", p.Handle, p.Spec)
	}
	if string(p.Payload) != "pickle" || p.Manifest != nil || p.Root != "" {
		t.Errorf("payload %q, manifest %v, root %q: want the payload and no tree", p.Payload, p.Manifest, p.Root)
	}
}

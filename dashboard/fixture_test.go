package dashboard

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/kinetic-run/kinetic/backend/local" // jobs run on this machine

	"github.com/kinetic-run/kinetic/batch"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/testkit/testbin"
	"github.com/kinetic-run/kinetic/testkit/tier"
)

// fixture is a file:// store with real jobs on the local backend, made once for the
// package's tests, and a dashboard over it.
type fixture struct {
	e     *engine.Engine
	srv   *Server
	ts    *httptest.Server
	token string
	store string
	// The jobs: two successes (a command and a function), a function that raised, two
	// running commands whose logs grow (one for the browser, one for the API test), and
	// a 50-input batch whose input 7 fails on both of its attempts.
	ok, okFunc, failed, running, running2 string
	batch                                 string
}

// fx is the package's fixture, made by the first test that needs it (setup).
var (
	fx      *fixture
	fxOnce  sync.Once
	fxErr   error
	fxClean func()
)

func TestMain(m *testing.M) {
	code := m.Run()
	if fxClean != nil {
		fxClean()
	}
	os.Exit(code)
}

// setup makes the fixture once (about a minute: real jobs and a 50-input batch).
func setup(t *testing.T) {
	t.Helper()
	tier.Heavy(t, "runs jobs with the kinetic binary")
	fxOnce.Do(func() {
		home, err := os.MkdirTemp("", "kinetic-dashboard-test-")
		if err != nil {
			fxErr = err
			return
		}
		// The local backend keeps its state under KINETIC_HOME; room for the two running
		// jobs beside the batch's workers.
		os.Setenv("KINETIC_HOME", filepath.Join(home, "data"))
		os.Setenv("KINETIC_LOCAL_SLOTS", "6")
		bin, err := testbin.Build()
		if err != nil {
			fxErr = err
			os.RemoveAll(home)
			return
		}
		f, err := makeFixture(context.Background(), home, bin)
		fxClean = func() {
			if f != nil {
				f.close()
			}
			os.RemoveAll(home)
		}
		fx, fxErr = f, err
	})
	if fxErr != nil {
		t.Fatalf("the test store: %v", fxErr)
	}
}

func (f *fixture) close() {
	if f.ts != nil {
		f.ts.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// Stop what still runs: no test leaves processes behind.
	if rows, err := f.e.List(ctx, f.store); err == nil {
		for _, r := range rows {
			if !r.State.Terminal() {
				if j, err := f.e.Attach(ctx, r.Handle.JobID, f.store); err == nil {
					j.Cancel(ctx)
					j.Wait(ctx, nil) // gone before the store is removed
				}
			}
		}
	}
	f.e.Close()
}

// pickles makes the pickles of the batch's function and inputs, and of two whole calls,
// with Debian's python3 and cloudpickle.
func pickles(dir string) error {
	script := `
import cloudpickle, pickle, sys, os
d = sys.argv[1]
def square(x):
    import time
    time.sleep(0.02 * (x % 5))
    if x == 7:
        raise ValueError("seven is not welcome here")
    print("squaring", x)
    return x * x
def add(a, b):
    print("adding", a, b)
    return a + b
def explode(n):
    def inner(k):
        return {"a": 1}[k]
    print("about to fail")
    return inner("missing-key-%d" % n)
open(os.path.join(d, "square.pkl"), "wb").write(cloudpickle.dumps(square))
for i in range(50):
    open(os.path.join(d, "in-%02d.pkl" % i), "wb").write(cloudpickle.dumps(((i,), {})))
open(os.path.join(d, "add.pkl"), "wb").write(cloudpickle.dumps((add, (2, 3), {})))
open(os.path.join(d, "explode.pkl"), "wb").write(cloudpickle.dumps((explode, (3,), {})))
`
	out, err := exec.Command("python3", "-c", script, dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("make pickles (python3 with cloudpickle): %v: %s", err, out)
	}
	return nil
}

func makeFixture(ctx context.Context, home, bin string) (*fixture, error) {
	st := "file://" + filepath.Join(home, "store")
	pf := filepath.Join(home, "profiles.json")
	env := map[string]string{"KINETIC_HOME": filepath.Join(home, "data"), "KINETIC_STORE": st, "KINETIC_BACKEND": "local"}
	e, err := engine.New(config.Options{Getenv: func(k string) string { return env[k] }, ProfilesFile: pf}, engine.WithUnwritten(batch.Unwritten{}))
	if err != nil {
		return nil, err
	}
	e.Exe = bin
	e.Warn = func(string) {}
	e.Notice = os.Stderr
	f := &fixture{e: e, store: st}
	pk := filepath.Join(home, "pickles")
	os.MkdirAll(pk, 0o755)
	if err := pickles(pk); err != nil {
		return f, err
	}
	read := func(name string) []byte { b, _ := os.ReadFile(filepath.Join(pk, name)); return b }
	submit := func(req *engine.SubmitRequest) (string, error) {
		req.NoWorkdir = true
		req.Cwd = home
		j, err := e.Submit(ctx, req)
		if err != nil {
			return "", err
		}
		return j.Handle.JobID, nil
	}
	cmd := func(name, script string) (string, error) {
		return submit(&engine.SubmitRequest{Kind: job.KindCommand, Command: []string{"sh", "-c", script}, DisplayName: name})
	}
	var inputs [][]byte
	for i := range 50 {
		inputs = append(inputs, read(fmt.Sprintf("in-%02d.pkl", i)))
	}
	b, err := batch.Map(ctx, e, &batch.MapRequest{Template: engine.SubmitRequest{Kind: job.KindPickle, Payload: read("square.pkl"),
		FuncName: "square", DisplayName: "square", NoWorkdir: true, Cwd: home}, Inputs: inputs, MaxConcurrent: 4, Retries: 1,
		Name: "squares", Tags: map[string]string{"team": "search"}})
	if err != nil {
		return f, err
	}
	f.batch = b.GroupID()
	// Wait for the batch, then make and wait for the single jobs.
	deadline := time.Now().Add(150 * time.Second)
	for {
		v, err := batch.Read(ctx, e, f.batch, st, true)
		if err != nil {
			return f, err
		}
		done := 0
		for _, s := range v.Statuses {
			if s.Status.Terminal() {
				done++
			}
		}
		if v.Settled && done == 50 {
			break
		}
		if time.Now().After(deadline) {
			return f, fmt.Errorf("the batch did not finish: %d of 50 final", done)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Then the single jobs, so that they are newer than every child (on page 1).
	if f.ok, err = cmd("hello", "echo hello from kinetic; echo done"); err != nil {
		return f, err
	}
	if f.okFunc, err = submit(&engine.SubmitRequest{Kind: job.KindPickle, Payload: read("add.pkl"), FuncName: "add", DisplayName: "add"}); err != nil {
		return f, err
	}
	if f.failed, err = submit(&engine.SubmitRequest{Kind: job.KindPickle, Payload: read("explode.pkl"), FuncName: "explode", DisplayName: "explode"}); err != nil {
		return f, err
	}
	for _, id := range []string{f.ok, f.okFunc, f.failed} {
		j, err := e.Attach(ctx, id, st)
		if err != nil {
			return f, err
		}
		wctx, cancel := context.WithDeadline(ctx, deadline)
		state, reason, err := j.Wait(wctx, nil)
		cancel()
		if err != nil {
			return f, fmt.Errorf("wait for %s: %w", id, err)
		}
		if want := map[string]job.State{f.ok: job.Succeeded, f.okFunc: job.Succeeded, f.failed: job.Failed}[id]; state != want {
			return f, fmt.Errorf("job %s is %s (%s), want %s", id, state, reason, want)
		}
	}
	grow := "i=0; while true; do i=$((i+1)); echo \"step $i: loss=$((1000/i))\"; sleep 0.2; done"
	if f.running, err = cmd("train", grow); err != nil {
		return f, err
	}
	if f.running2, err = cmd("train-2", grow); err != nil {
		return f, err
	}
	// Both running before any test looks (a test run alone would find them PENDING).
	for _, id := range []string{f.running, f.running2} {
		if err := awaitRunning(ctx, e, st, id, deadline); err != nil {
			return f, err
		}
	}
	f.token, _ = NewToken()
	f.srv, err = New(e, Options{Token: f.token, Store: st, Backend: "local", Poll: 500 * time.Millisecond})
	if err != nil {
		return f, err
	}
	f.ts = httptest.NewServer(f.srv)
	return f, nil
}

// url is the server's URL for path, with the token when auth is true.
func (f *fixture) url(path string, auth bool) string {
	u := f.ts.URL + path
	if auth {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		u += sep + "token=" + f.token
	}
	return u
}

// awaitRunning waits until job id is RUNNING, or fails at deadline.
func awaitRunning(ctx context.Context, e *engine.Engine, st, id string, deadline time.Time) error {
	j, err := e.Attach(ctx, id, st)
	if err != nil {
		return err
	}
	for {
		s, reason, err := j.Status(ctx)
		switch {
		case err != nil:
			return err
		case s == job.Running:
			return nil
		case s.Terminal():
			return fmt.Errorf("job %s ended (%s %s) before the tests", id, s, reason)
		case time.Now().After(deadline):
			return fmt.Errorf("job %s is still %s", id, s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

package batch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"testing"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/batch/driver"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
	"github.com/kinetic-run/kinetic/testkit/kubeconfigtest"
)

// outcome is how one attempt of one input ends: final after reads Status reads (never,
// until cancelled, when reads < 0), FAILED with reason if reason is set.
type outcome struct {
	reads  int
	reason string
}

// fakeBackend runs nothing: each attempt ends as its outcome says. It logs every call
// in order (cancels of running jobs apart: they are made concurrently), and counts the attempts in
// flight (submitted, not yet seen final by a Status read).
type fakeBackend struct {
	outcome func(index, attempt int) outcome
	// onSubmit, if set, runs in Submit, StartGroup (per member) and Enqueue before the job is taken;
	// an error fails the submission.
	onSubmit func(index, attempt int) error

	mu          sync.Mutex
	calls       []string
	cancels     []string
	jobs        map[string]*fakeJob
	attempts    map[string]int // per input
	inFlight    int
	maxInFlight int
	statusReads int // Status calls
	groupLooks  int // GroupDone calls
	// unwrittenReads counts UnwrittenStatus calls (statuses of derived children read
	// without the store).
	unwrittenReads int
}

type fakeJob struct {
	name  string // index/attempt
	o     outcome
	reads int
	state job.State
	seen  bool // reported final
}

func newFakeBackend(outcome func(index, attempt int) outcome) *fakeBackend {
	return &fakeBackend{outcome: outcome, jobs: map[string]*fakeJob{}, attempts: map[string]int{}}
}

func (f *fakeBackend) Name() string { return "k8s" }

// take records the call and the job; verb is the call's name in the log.
func (f *fakeBackend) take(h *job.Handle, verb, extra string) error {
	f.mu.Lock()
	a := f.attempts[h.GroupIndex]
	f.mu.Unlock()
	index, _ := strconv.Atoi(h.GroupIndex)
	if f.onSubmit != nil {
		if err := f.onSubmit(index, a); err != nil {
			return err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.attempts[h.GroupIndex]++
	name := fmt.Sprintf("%s/%d", h.GroupIndex, a)
	f.calls = append(f.calls, verb+" "+name+extra)
	o := outcome{}
	if f.outcome != nil {
		o = f.outcome(index, a)
	}
	f.jobs[h.JobID] = &fakeJob{name: name, o: o, state: job.Running}
	f.inFlight++
	f.maxInFlight = max(f.maxInFlight, f.inFlight)
	return nil
}

func (f *fakeBackend) Submit(ctx context.Context, h *job.Handle) error {
	return f.take(h, "submit", "")
}

func (f *fakeBackend) Status(ctx context.Context, h *job.Handle) (job.State, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.statusReads++
	j := f.jobs[h.JobID]
	if j == nil {
		return job.NotFound, "", nil
	}
	if j.state == job.Running && j.o.reads >= 0 && j.reads >= j.o.reads {
		j.state = job.Succeeded
		if j.o.reason != "" {
			j.state = job.Failed
		}
	}
	j.reads++
	reason := ""
	if j.state == job.Failed {
		reason = j.o.reason
	}
	if j.state.Terminal() && !j.seen {
		j.seen = true
		f.inFlight--
	}
	return j.state, reason, nil
}

func (f *fakeBackend) Cancel(ctx context.Context, h *job.Handle) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	j := f.jobs[h.JobID]
	if j == nil {
		return nil
	}
	if j.state == job.Running {
		f.cancels = append(f.cancels, j.name)
		j.state, j.o.reason, j.o.reads = job.Failed, "cancelled", 0
	}
	return nil
}

func (f *fakeBackend) Cleanup(ctx context.Context, h *job.Handle) error { return nil }

// log returns the calls and the (sorted) cancels so far.
func (f *fakeBackend) log() (calls, cancels []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cancels = append([]string(nil), f.cancels...)
	sort.Strings(cancels)
	return append([]string(nil), f.calls...), cancels
}

// fakeQueuer is a driver with a queue: children go to it.
type fakeQueuer struct{ *fakeBackend }

func (f fakeQueuer) Modes(*job.Handle, *job.Spec) driver.Modes {
	return driver.Modes{Queue: true}
}
func (f fakeQueuer) StartGroup(context.Context, driver.Group, *job.Handle) error {
	return driver.ErrUnsupported
}
func (f fakeQueuer) GroupDone(context.Context, string) (map[int]bool, error) { return nil, nil }
func (f fakeQueuer) UnwrittenStatus(ctx context.Context, h *job.Handle) (job.State, string, error) {
	return f.Status(ctx, h)
}
func (f fakeQueuer) CleanupGroup(context.Context, string) error { return nil }
func (f fakeQueuer) Release(context.Context, *job.Handle) error { return nil }

func (f fakeQueuer) Enqueue(ctx context.Context, h *job.Handle, parallelism int) error {
	return f.take(h, "enqueue", fmt.Sprintf(" p=%d", parallelism))
}

// fakeGrouper is a driver that runs units: first attempts join one unit per batch.
type fakeGrouper struct{ *fakeBackend }

func (f fakeGrouper) Modes(*job.Handle, *job.Spec) driver.Modes {
	return driver.Modes{Unit: true}
}
func (f fakeGrouper) Enqueue(context.Context, *job.Handle, int) error {
	return driver.ErrUnsupported
}
func (f fakeGrouper) Release(context.Context, *job.Handle) error { return nil }

func (f fakeGrouper) StartGroup(ctx context.Context, g driver.Group, template *job.Handle) error {
	f.mu.Lock()
	f.calls = append(f.calls, fmt.Sprintf("start size=%d p=%d", g.Size, g.Parallelism))
	f.mu.Unlock()
	// Every index runs at once, as the pods of an Indexed Job do, each as the derived
	// job of its input (nothing of it is written by the submitter).
	for i := range g.Size {
		h := &job.Handle{JobID: job.ChildID(g.ID, i), GroupID: g.ID, GroupIndex: strconv.Itoa(i), K8sName: g.ID}
		if err := f.take(h, "join", ""); err != nil {
			return err
		}
	}
	return nil
}

func (f fakeGrouper) UnwrittenStatus(ctx context.Context, h *job.Handle) (job.State, string, error) {
	f.mu.Lock()
	f.unwrittenReads++
	f.mu.Unlock()
	return f.Status(ctx, h)
}

func (f fakeGrouper) GroupDone(ctx context.Context, gid string) (map[int]bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.groupLooks++
	done := map[int]bool{}
	for id, j := range f.jobs {
		if g, i, ok := job.ParseChildID(id); ok && g == gid && (j.state.Terminal() || j.o.reads >= 0 && j.reads >= j.o.reads) {
			done[i] = true
		}
	}
	return done, nil
}

func (f fakeGrouper) CleanupGroup(ctx context.Context, gid string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "cleanup-group")
	return nil
}

// newTestEngine is an engine with no environment, a profiles file of its own, and be
// as its "k8s" backend. Its store is mem:// (one bucket per engine).
func newTestEngine(t *testing.T, be backend.Backend) *engine.Engine {
	t.Helper()
	pf := filepath.Join(t.TempDir(), "profiles.json")
	if err := os.WriteFile(pf, []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	// A kubeconfig that names a cluster, which planning a k8s job checks first
	// (plan.Preflight); be stands in for the cluster.
	kubeconfig := kubeconfigtest.Write(t)
	getenv := func(k string) string {
		if k == "KUBECONFIG" {
			return kubeconfig
		}
		return ""
	}
	e, err := engine.New(config.Options{Getenv: getenv, ProfilesFile: pf}, engine.WithUnwritten(Unwritten{}))
	if err != nil {
		t.Fatal(err)
	}
	e.Warn = func(string) {}
	e.RegisterBackend("k8s", func(*engine.Engine, *store.Store) (backend.Backend, error) { return be, nil })
	t.Cleanup(func() { e.Close() })
	return e
}

// mapRequest is a batch of n inputs of a pickled function on the fake backend.
func mapRequest(n int) *MapRequest {
	req := &MapRequest{Template: engine.SubmitRequest{Kind: job.KindPickle, Payload: []byte("the function"), NoWorkdir: true, FuncName: "f",
		// A custom image: bundled images would need a registry, which these tests are not about.
		ContainerImage: "registry.example/team/python:3.11",
		Config:         map[config.Key]string{config.Backend: "k8s", config.Store: "mem://"}}}
	for i := range n {
		req.Inputs = append(req.Inputs, []byte{byte(i + 1)})
	}
	return req
}

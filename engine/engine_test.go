package engine

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/backend/kubernetes"
	_ "github.com/kinetic-run/kinetic/backend/local" // the local backend; the cluster ones are faked with RegisterBackend
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
	"github.com/kinetic-run/kinetic/testkit/gcstest"
	"github.com/kinetic-run/kinetic/testkit/kubeconfigtest"
)

// fakeBackend is a backend that runs nothing: every job is final as soon as it is
// submitted, FAILED when fail says so. It stands in for a cluster in engine tests that
// inject faults (a preempted spot node).
type fakeBackend struct {
	mu      sync.Mutex
	states  map[string]job.State
	reasons map[string]string
	submits []*job.Handle
	// fail decides, at submission, whether a job fails and why.
	fail func(h *job.Handle, earlier int) (bool, string)
}

func newFake(fail func(h *job.Handle, earlier int) (bool, string)) *fakeBackend {
	return &fakeBackend{states: map[string]job.State{}, reasons: map[string]string{}, fail: fail}
}

func (f *fakeBackend) Name() string { return "k8s" }

func (f *fakeBackend) Submit(ctx context.Context, h *job.Handle) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	earlier := 0
	for _, s := range f.submits {
		if s.GroupID == h.GroupID && s.GroupIndex == h.GroupIndex {
			earlier++
		}
	}
	f.submits = append(f.submits, h)
	f.states[h.JobID] = job.Succeeded
	if f.fail != nil {
		if bad, reason := f.fail(h, earlier); bad {
			f.states[h.JobID], f.reasons[h.JobID] = job.Failed, reason
		}
	}
	return nil
}

func (f *fakeBackend) Status(ctx context.Context, h *job.Handle) (job.State, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.states[h.JobID]
	if !ok {
		return job.NotFound, "", nil
	}
	return s, f.reasons[h.JobID], nil
}

func (f *fakeBackend) Cancel(ctx context.Context, h *job.Handle) error  { return nil }
func (f *fakeBackend) Cleanup(ctx context.Context, h *job.Handle) error { return nil }

// newTestEngine is an engine with no environment and a profiles file of its own.
func newTestEngine(t *testing.T, env map[string]string, profiles string) *Engine {
	t.Helper()
	pf := filepath.Join(t.TempDir(), "profiles.json")
	if profiles != "" {
		if err := os.WriteFile(pf, []byte(profiles), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := env["KUBECONFIG"]; !ok {
		// The k8s jobs these tests plan need a kubeconfig that names a cluster
		// (plan.Preflight); a fake backend then stands in for it.
		env = maps.Clone(env)
		if env == nil {
			env = map[string]string{}
		}
		env["KUBECONFIG"] = kubeconfigtest.Write(t)
	}
	e, err := New(config.Options{Getenv: func(k string) string { return env[k] }, ProfilesFile: pf})
	if err != nil {
		t.Fatal(err)
	}
	e.Warn = func(string) {}
	t.Cleanup(func() { e.Close() })
	return e
}

func pickleRequest() *SubmitRequest {
	// A custom image: bundled images would need a registry, which these tests are not about.
	return &SubmitRequest{Kind: job.KindPickle, Payload: []byte("the function"), NoWorkdir: true, FuncName: "f",
		ContainerImage: "registry.example/team/python:3.11",
		Config:         map[config.Key]string{config.Backend: "k8s", config.Store: "mem://"}}
}

// TestSpotReachesHandleAndSpec: spot=True and the :spot suffix both put the job on spot
// capacity, in the handle and in the spec the backend reads.
func TestSpotReachesHandleAndSpec(t *testing.T) {
	ctx := context.Background()
	for name, tc := range map[string]struct {
		spot bool
		acc  string
		want bool
	}{
		"spot=True":   {spot: true, acc: "l4", want: true},
		":spot":       {acc: "l4:spot", want: true},
		"both":        {spot: true, acc: "l4:spot", want: true},
		"on demand":   {acc: "l4", want: false},
		"cpu on spot": {spot: true, acc: "cpu", want: true},
	} {
		t.Run(name, func(t *testing.T) {
			e := newTestEngine(t, nil, "")
			fake := newFake(nil)
			e.RegisterBackend("k8s", func(*Engine, *store.Store) (backend.Backend, error) { return fake, nil })
			req := pickleRequest()
			req.Spot, req.Accelerator = tc.spot, tc.acc
			j, err := e.Submit(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := j.Store.Get(ctx, store.SpecKey(j.Handle.JobID))
			if err != nil {
				t.Fatal(err)
			}
			spec, err := job.DecodeSpec(raw)
			if err != nil {
				t.Fatal(err)
			}
			if spec.Spot != tc.want || (j.Handle.Spot == "true") != tc.want {
				t.Errorf("spec.Spot = %v, handle spot = %q, want %v", spec.Spot, j.Handle.Spot, tc.want)
			}
		})
	}
}

const twoClusters = `{"current": "b", "profiles": {
  "a": {"backend": "gke", "project": "pa", "zone": "europe-west4-a", "cluster": "ca", "namespace": "team-a", "kube_context": "ctx-a", "store": "mem://"},
  "b": {"backend": "gke", "project": "pb", "zone": "us-central1-a", "cluster": "cb", "namespace": "team-b", "store": "mem://"}}}`

// TestClusterOfFollowsTheHandle: a job submitted through profile a is reached on a's
// cluster even when profile b is active; only the kubeconfig file is this machine's.
func TestClusterOfFollowsTheHandle(t *testing.T) {
	ctx := context.Background()
	kubeconfig := kubeconfigtest.Write(t, "ctx-a")
	env := map[string]string{"KUBECONFIG": kubeconfig}
	pf := filepath.Join(t.TempDir(), "profiles.json")
	os.WriteFile(pf, []byte(twoClusters), 0o600)
	submitter, err := New(config.Options{Getenv: func(k string) string { return env[k] }, ProfilesFile: pf, Profile: "a"})
	if err != nil {
		t.Fatal(err)
	}
	defer submitter.Close()
	fake := newFake(nil)
	submitter.RegisterBackend("gke", func(*Engine, *store.Store) (backend.Backend, error) { return fake, nil })
	req := pickleRequest()
	req.Config = nil // everything from profile a
	j, err := submitter.Submit(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	h := j.Handle
	if h.ClusterName != "ca" || h.KubeContext != "ctx-a" || h.Namespace != "team-a" {
		t.Fatalf("handle records cluster %q context %q namespace %q, want profile a's", h.ClusterName, h.KubeContext, h.Namespace)
	}

	observer := newTestEngine(t, env, twoClusters) // profile b is active here
	clusterOf := func(h *job.Handle) kubernetes.Cluster {
		return kubernetes.ClusterOf(h, observer.Config().Get(kubernetes.KeyKubeconfig))
	}
	want := kubernetes.Cluster{Backend: "gke", Project: "pa", Zone: "europe-west4-a", Cluster: "ca", Namespace: "team-a", KubeContext: "ctx-a", Kubeconfig: kubeconfig}
	if d := cmp.Diff(want, clusterOf(h)); d != "" {
		t.Errorf("ClusterOf (-want +got):\n%s", d)
	}

	// No context recorded and no kubeconfig with GKE's get-credentials context for the
	// handle's cluster: a direct connection to the handle's cluster (GKE API and ADC).
	// (A handle of the previous version: no location, the cluster in its flat fields.)
	h2 := *h
	h2.KubeContext, h2.Location = "", ""
	if got := clusterOf(&h2); got.KubeContext != "" || !got.GKEDirect || got.GKECluster().Path() != "projects/pa/locations/europe-west4-a/clusters/ca" {
		t.Errorf("no context recorded: %+v, want a direct connection to pa/europe-west4-a/ca", got)
	}
	h2.Backend = "k8s" // a generic cluster: the kubeconfig's current context
	if got := clusterOf(&h2).KubeContext; got != "" {
		t.Errorf("generic cluster context = %q, want none", got)
	}
}

// debuggerFake is a fake cluster backend that forwards debuggers.
type debuggerFake struct {
	*fakeBackend
	stopped  bool
	gotPort  int
	gotIndex string
}

func (d *debuggerFake) DebugEndpoint(ctx context.Context, h *job.Handle, m *job.DebugMarker, localPort int) (string, int, func(), error) {
	d.gotPort, d.gotIndex = localPort, m.HostIndex
	return "127.0.0.1", 15678, func() { d.stopped = true }, nil
}

func TestDebugAttach(t *testing.T) {
	ctx := context.Background()
	e := newTestEngine(t, nil, "")
	fake := &debuggerFake{fakeBackend: newFake(nil)}
	e.RegisterBackend("k8s", func(*Engine, *store.Store) (backend.Backend, error) { return fake, nil })
	req := pickleRequest()
	req.Debug, req.DebugWait = true, 30
	j, err := e.Submit(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	fake.states[j.Handle.JobID] = job.Running
	raw, _ := j.Store.Get(ctx, store.SpecKey(j.Handle.JobID))
	spec, _ := job.DecodeSpec(raw)
	if spec.Debug == nil || spec.Debug.WaitSeconds != 30 {
		t.Fatalf("spec debug = %+v, want a 30 s wait", spec.Debug)
	}
	m := &job.DebugMarker{Host: "127.0.0.1", Port: 5678, RemoteRoot: "/tmp/kinetic/w/root", HostIndex: "0", WaitSeconds: 30}
	go func() {
		time.Sleep(50 * time.Millisecond) // attach waits for the marker
		j.Store.Put(ctx, store.DebugKey(j.Handle.JobID), m.Encode())
	}()
	s, err := j.DebugAttach(ctx, 5679)
	if err != nil {
		t.Fatal(err)
	}
	if s.Host != "127.0.0.1" || s.Port != 15678 || !s.Forwarded || fake.gotPort != 5679 || fake.gotIndex != "0" {
		t.Fatalf("session %+v, backend saw port %d host %s", s, fake.gotPort, fake.gotIndex)
	}
	want := map[string]any{
		"name": "Kinetic: f (" + j.Handle.JobID + ")", "type": "debugpy", "request": "attach", "justMyCode": false,
		"connect":      map[string]any{"host": "127.0.0.1", "port": 15678},
		"pathMappings": []map[string]string{{"localRoot": "${workspaceFolder}", "remoteRoot": "/tmp/kinetic/w/root"}},
	}
	if d := cmp.Diff(want, s.Launch); d != "" {
		t.Errorf("launch (-want +got):\n%s", d)
	}
	s.Close()
	s.Close()
	if !fake.stopped {
		t.Error("Close did not stop the forward")
	}

	// A finished job no longer waits; a backend without Debugger cannot attach.
	fake.states[j.Handle.JobID] = job.Failed
	if _, err := j.DebugAttach(ctx, 0); err == nil || !strings.Contains(err.Error(), "no longer waits") {
		t.Errorf("attach to a finished job: %v", err)
	}
	plain := &Job{Handle: j.Handle, Store: j.Store, Backend: newFake(nil)}
	if _, err := plain.DebugAttach(ctx, 0); !errors.Is(err, backend.ErrUnavailable) {
		t.Errorf("attach through a backend without Debugger: %v", err)
	}
}

// TestCleanupKeepsOutputsOnGCS: cleanup(k8s=True, gcs=True) removes the job's store
// objects on a gs:// store and leaves what the job wrote under KINETIC_OUTPUT_DIR.
func TestCleanupKeepsOutputsOnGCS(t *testing.T) {
	ctx := context.Background()
	srv := gcstest.Start(t)
	url := "gs://" + srv.NewBucket(t) + "?endpoint=" + srv.URL()
	e := newTestEngine(t, nil, "")
	fake := newFake(nil)
	e.RegisterBackend("k8s", func(*Engine, *store.Store) (backend.Backend, error) { return fake, nil })
	req := pickleRequest()
	req.Config[config.Store] = url
	j, err := e.Submit(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	id := j.Handle.JobID
	if want := strings.TrimSuffix(strings.SplitN(url, "?", 2)[0], "/") + "/outputs/" + id; j.Handle.OutputDir != want {
		t.Fatalf("output dir = %q, want %q", j.Handle.OutputDir, want)
	}
	ckpt := store.OutputsPrefix(id) + "ckpt/step-1.bin"
	if err := j.Store.Put(ctx, ckpt, []byte("weights")); err != nil {
		t.Fatal(err)
	}
	if err := j.Cleanup(ctx, true, true); err != nil {
		t.Fatal(err)
	}
	if objs, _ := j.Store.List(ctx, store.JobPrefix(id)); len(objs) != 0 {
		t.Errorf("cleanup left %d job objects", len(objs))
	}
	if b, err := j.Store.Get(ctx, ckpt); err != nil || string(b) != "weights" {
		t.Errorf("the output %s after cleanup: %q, %v", ckpt, b, err)
	}
}

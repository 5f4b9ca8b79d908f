package kubernetes

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func testBackend(t *testing.T, o Options) *Backend {
	t.Helper()
	st, err := store.Open(context.Background(), "mem://")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	b := &Backend{st: st, cache: map[string]*cached{}}
	// New's defaults, without its store scheme check (the golden files do not depend
	// on the store).
	if o.RunnerImage == "" {
		o.RunnerImage = testRunnerImage
	}
	b.o = o.withDefaults()
	b.cs = fake.NewSimpleClientset()
	return b
}

// testRunnerImage is what pods get: a published runner image, by digest.
const testRunnerImage = "registry.example.com/team/kinetic-runner@sha256:7d9c1f3c0f5e1b2a4c6d8e0f1a3b5c7d9e1f2a4b6c8d0e2f4a6b8c0d2e4f6a8b"

func testHandle(acc string) *job.Handle {
	return &job.Handle{
		JobID: "job-0123456789abcdefghijklm", K8sName: "job-0123456789abcdefghijklm", Backend: "gke",
		Accelerator: acc, FuncName: "train", DisplayName: "train", CreatedAt: "2026-11-22T12:00:00Z",
		Namespace: "default", Store: "gs://bucket", Debug: "false",
	}
}

func golden(t *testing.T, name string, v any) {
	t.Helper()
	got, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", name+".json")
	if *update {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs from the golden file (-want +got):\n%s", path, diff)
	}
}

// TestJobGolden pins the Job of each accelerator family, on GKE and on a generic cluster.
func TestJobGolden(t *testing.T) {
	cases := []struct {
		name, acc, cluster string
		o                  Options
	}{
		{"cpu", "cpu", "gke", Options{}},
		{"cpu4-secret-sa", "cpu:4", "gke", Options{StoreSecret: "kinetic-store", ServiceAccount: "kinetic-runner", Memory: "8Gi"}},
		{"gpu-l4x2", "l4x2", "gke", Options{}},
		{"gpu-a100-spot", "a100:spot", "gke", Options{}},
		{"tpu-v6e-8", "tpu-v6e-8", "gke", Options{}},
		{"tpu-v5e-4-spot", "v5litepod-4:spot", "gke", Options{}},
		{"generic-gpu-l4x2", "l4x2", "generic", Options{}},
		{"generic-tpu-v6e-8", "tpu-v6e-8", "generic", Options{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.o.ClusterType = c.cluster
			b := testBackend(t, c.o)
			j, err := b.jobFor(testHandle(c.acc))
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "job-"+c.name, j)
		})
	}
}

func TestIndexedJobGolden(t *testing.T) {
	b := testBackend(t, Options{ClusterType: "gke"})
	h := testHandle("l4")
	h.GroupID, h.GroupKind = "grp-0123456789abcdefghijklm", "map"
	j, err := b.indexedJobFor(backend.Group{ID: h.GroupID, Size: 1000, Parallelism: 64}, h)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "indexed-job-l4", j)
}

func TestAnnotationsRoundTrip(t *testing.T) {
	h := testHandle("tpu-v6e-8")
	h.ImageURI = "us-docker.pkg.dev/p/r/img:tag"
	got, err := handleFromAnnotations(handleAnnotations(h))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(h, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

// TestNoRunnerImage: with neither a runner image nor a way to publish one, a submission
// fails with the fix (there is no default image to fall back on).
func TestNoRunnerImage(t *testing.T) {
	b := &Backend{o: Options{}.withDefaults()}
	err := b.ensureRunnerImage(context.Background())
	if err == nil || !strings.Contains(err.Error(), "image_registry") || !strings.Contains(err.Error(), "runner_image") {
		t.Errorf("no runner image: %v", err)
	}
}

// A job with a time limit: the runner stops the call; the pod's activeDeadlineSeconds is
// the backstop, the limit plus the start-up allowance, for jobs and batches alike.
func TestTimeoutIsThePodsDeadline(t *testing.T) {
	b := testBackend(t, Options{ClusterType: "gke"})
	h := testHandle("cpu")
	j, err := b.jobFor(h)
	if err != nil {
		t.Fatal(err)
	}
	if d := j.Spec.Template.Spec.ActiveDeadlineSeconds; d != nil {
		t.Errorf("a job without timeout has a pod deadline of %d s", *d)
	}
	h.TimeoutSeconds = "90"
	j, err = b.jobFor(h)
	if err != nil {
		t.Fatal(err)
	}
	if d := j.Spec.Template.Spec.ActiveDeadlineSeconds; d == nil || *d != 90+podStartAllowance {
		t.Errorf("timeout 90: pod deadline %v, want %d", d, 90+podStartAllowance)
	}
	h.GroupID, h.GroupKind = "grp-0123456789abcdefghijklm", "map"
	ij, err := b.indexedJobFor(backend.Group{ID: h.GroupID, Size: 10, Parallelism: 2}, h)
	if err != nil {
		t.Fatal(err)
	}
	if d := ij.Spec.Template.Spec.ActiveDeadlineSeconds; d == nil || *d != 90+podStartAllowance {
		t.Errorf("a batch's pods: deadline %v", d)
	}
	if ij.Spec.ActiveDeadlineSeconds != nil {
		t.Error("the Indexed Job itself has a deadline: it would stop the whole batch")
	}
}

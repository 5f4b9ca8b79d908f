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
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kinetic-run/kinetic/batch/driver"
	"github.com/kinetic-run/kinetic/data"
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
			j, err := b.jobFor(testHandle(c.acc), nil)
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
	j, err := b.indexedJobFor(driver.Group{ID: h.GroupID, Size: 1000, Parallelism: 64}, h, nil)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "indexed-job-l4", j)
}

func TestAnnotationsRoundTrip(t *testing.T) {
	h := testHandle("tpu-v6e-8")
	h.ImageURI = "us-docker.pkg.dev/p/r/img:tag"
	h.RunnerInImage = testRunnerImage // a Job re-read from the cluster makes the same pods
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
	j, err := b.jobFor(h, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := j.Spec.Template.Spec.ActiveDeadlineSeconds; d != nil {
		t.Errorf("a job without timeout has a pod deadline of %d s", *d)
	}
	h.TimeoutSeconds = "90"
	j, err = b.jobFor(h, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := j.Spec.Template.Spec.ActiveDeadlineSeconds; d == nil || *d != 90+podStartAllowance {
		t.Errorf("timeout 90: pod deadline %v, want %d", d, 90+podStartAllowance)
	}
	h.GroupID, h.GroupKind = "grp-0123456789abcdefghijklm", "map"
	ij, err := b.indexedJobFor(driver.Group{ID: h.GroupID, Size: 10, Parallelism: 2}, h, nil)
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

// fusedRefs is a spec's Data: a fused gs:// directory argument, a fused gs:// object as a
// volume, a plain gs:// directory (downloaded) and a local directory (uploaded).
func fusedRefs(t *testing.T) []job.DataRef {
	t.Helper()
	var refs []job.DataRef
	for _, d := range []struct {
		src   string
		fuse  bool
		mount string
	}{{"gs://bkt/datasets/imagenet/", true, ""}, {"gs://bkt/models/llama/weights.bin", true, "/models"}, {"gs://bkt/plain/", false, ""}, {t.TempDir(), false, ""}} {
		r, err := data.Parse(d.src, d.fuse, false)
		if err != nil {
			t.Fatal(err)
		}
		r.Mount = d.mount
		refs = append(refs, r)
	}
	return refs
}

// TestFuseGolden pins the pods of a job, a batch and a multi-host job with GCS FUSE Data:
// a read-only CSI ephemeral volume of the Cloud Storage FUSE driver per fused Data (the
// bucket, only-dir = its prefix), the pod annotation that turns the driver's sidecar on,
// and the runner told where each one is mounted (--fuse-paths) so it downloads nothing.
func TestFuseGolden(t *testing.T) {
	fuse, err := planFuse(fusedRefs(t))
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"0": "/kinetic/fuse/0", "1": "/kinetic/fuse/1/weights.bin"}; !cmp.Equal(fuse.paths, want) {
		t.Errorf("paths %v, want %v", fuse.paths, want)
	}
	b := testBackend(t, Options{ClusterType: "gke", ServiceAccount: "kinetic-runner"})
	j, err := b.jobFor(testHandle("cpu"), fuse)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "job-fuse", j)
	h := testHandle("l4")
	h.GroupID, h.GroupKind = "grp-0123456789abcdefghijklm", "map"
	ij, err := b.indexedJobFor(driver.Group{ID: h.GroupID, Size: 10, Parallelism: 2}, h, fuse)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "indexed-job-fuse", ij)
	lws, err := b.leaderWorkerSetFor(testHandle("tpu-v6e-16"), fuse)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "lws-fuse", lws)
	if none, err := planFuse(fusedRefs(t)[2:]); none != nil || err != nil {
		t.Errorf("no fused Data: plan %+v, %v", none, err)
	}
}

// testImageWithRunner is a bundled image with the runner added (image.Client.AddRunner).
const testImageWithRunner = "registry.example.com/team/kinetic-env@sha256:0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9"

// withRunner is h run in an image Kinetic built with the runner in it.
func withRunner(h *job.Handle) *job.Handle {
	h.ImageURI, h.RunnerInImage = testImageWithRunner, testRunnerImage
	return h
}

// TestRunnerInImage pins the pods of a job, a batch and a multi-host job whose image holds
// the runner (the handle's runner_in_image): no init container, no runner volume, the
// runner started at job.RunnerPath of the job's own image; and checks that every other
// handle keeps the init container that copies the runner in.
func TestRunnerInImage(t *testing.T) {
	b := testBackend(t, Options{ClusterType: "gke"})
	j, err := b.jobFor(withRunner(testHandle("cpu")), nil)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "job-cpu-runner-in-image", j)
	h := withRunner(testHandle("l4"))
	h.GroupID, h.GroupKind = "grp-0123456789abcdefghijklm", "map"
	ij, err := b.indexedJobFor(driver.Group{ID: h.GroupID, Size: 1000, Parallelism: 64}, h, nil)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "indexed-job-l4-runner-in-image", ij)
	lh := withRunner(testHandle("tpu-v6e-16"))
	lh.Backend = PathwaysName
	lws, err := b.leaderWorkerSetFor(lh, nil)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "lws-tpu-v6e-16-runner-in-image", lws.Object)

	// What the golden files encode, checked so a regenerated file cannot lose it.
	for name, spec := range map[string]corev1.PodSpec{"job": j.Spec.Template.Spec, "indexed job": ij.Spec.Template.Spec} {
		c := spec.Containers[0]
		if len(spec.InitContainers) != 0 || c.Image != testImageWithRunner || c.Command[0] != job.RunnerPath {
			t.Errorf("%s: init containers %d, image %s, command %v: want none, the image with the runner, %s", name, len(spec.InitContainers), c.Image, c.Command, job.RunnerPath)
		}
		for _, v := range spec.Volumes {
			if v.Name == runnerVolume {
				t.Errorf("%s: a runner volume with the runner in the image", name)
			}
		}
		for _, m := range c.VolumeMounts {
			if m.Name == runnerVolume {
				t.Errorf("%s: the runner volume mounted with the runner in the image", name)
			}
		}
	}
	if b, _ := json.Marshal(lws.Object); strings.Contains(string(b), "initContainers") || !strings.Contains(string(b), `"command":["`+job.RunnerPath+`","runner"`) {
		t.Errorf("LeaderWorkerSet: %s", b)
	}

	// The init container stays for an image Kinetic did not build, and for a handle
	// whose runner_in_image does not go with the image its pods run.
	for name, h := range map[string]*job.Handle{
		"custom image": func() *job.Handle { h := testHandle("cpu"); h.ImageURI = "registry.example.com/team/mine:1"; return h }(),
		"no image":     func() *job.Handle { h := testHandle("cpu"); h.RunnerInImage = testRunnerImage; return h }(),
		"prebuilt":     func() *job.Handle { h := withRunner(testHandle("cpu")); h.ImageURI = "prebuilt"; return h }(),
		"older handle": testHandle("cpu"),
	} {
		j, err := b.jobFor(h, nil)
		if err != nil {
			t.Fatal(err)
		}
		spec := j.Spec.Template.Spec
		if len(spec.InitContainers) != 1 || spec.InitContainers[0].Image != testRunnerImage || spec.Containers[0].Command[0] != runnerDir+"/kinetic" {
			t.Errorf("%s: init containers %v, command %v: want the runner copied in", name, spec.InitContainers, spec.Containers[0].Command)
		}
	}
}

// TestRunnerInImageNeedsNoRunnerImage: a job whose image holds the runner is submitted
// by a backend that has no runner image and no way to publish one (another machine's
// engine re-creating its Job from the store); any other job still fails with the fix.
func TestRunnerInImageNeedsNoRunnerImage(t *testing.T) {
	b := &Backend{o: Options{}.withDefaults()}
	if err := b.ensureRunnerImageFor(context.Background(), withRunner(testHandle("cpu"))); err != nil {
		t.Errorf("runner in the image: %v", err)
	}
	if err := b.ensureRunnerImageFor(context.Background(), testHandle("cpu")); err == nil || !strings.Contains(err.Error(), "runner_image") {
		t.Errorf("runner copied in: %v", err)
	}
}

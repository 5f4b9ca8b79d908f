package kubernetes

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"

	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// TestLeaderWorkerSetGolden pins the LeaderWorkerSet of multi-host slices on GKE (and
// one generic cluster without accelerator resources, as the real-cluster tests run it).
func TestLeaderWorkerSetGolden(t *testing.T) {
	cases := []struct {
		name, acc, cluster string
		o                  Options
	}{
		{"tpu-v5litepod-2x4", "tpu-v5litepod-2x4", "gke", Options{}},
		{"tpu-v6e-16", "tpu-v6e-16", "gke", Options{}},
		{"tpu-v6e-16-spot-secret", "tpu-v6e-16:spot", "gke", Options{StoreSecret: "kinetic-store"}},
		{"generic-no-devices-tpu-v6e-8", "tpu-v6e-8", "generic", Options{IgnoreAcceleratorResources: true, CPU: "10m"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.o.ClusterType = c.cluster
			b := testBackend(t, c.o)
			h := testHandle(c.acc)
			h.Backend = PathwaysName
			obj, err := b.leaderWorkerSetFor(h, nil)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "lws-"+c.name, obj.Object)
		})
	}
}

// TestLeaderWorkerSetShape checks what the golden files encode, so a regenerated file
// cannot silently lose it.
func TestLeaderWorkerSetShape(t *testing.T) {
	b := testBackend(t, Options{ClusterType: "gke"})
	h := testHandle("tpu-v6e-16")
	obj, err := b.leaderWorkerSetFor(h, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec := obj.Object["spec"].(map[string]any)
	lwt := spec["leaderWorkerTemplate"].(map[string]any)
	if spec["replicas"] != int64(1) || lwt["size"] != int64(4) || lwt["restartPolicy"] != "RecreateGroupOnPodRestart" {
		t.Errorf("replicas/size/restartPolicy: %v %v %v", spec["replicas"], lwt["size"], lwt["restartPolicy"])
	}
	if obj.GetLabels()[LabelApp] != LabelPathwaysApp || obj.GetLabels()[LabelJobID] != h.JobID {
		t.Errorf("labels %v", obj.GetLabels())
	}
	var tmpl corev1.PodTemplateSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(lwt["workerTemplate"].(map[string]any), &tmpl); err != nil {
		t.Fatal(err)
	}
	if tmpl.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		t.Errorf("restartPolicy %s", tmpl.Spec.RestartPolicy)
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range tmpl.Spec.Containers[0].Env {
		env[e.Name] = e
	}
	for _, name := range []string{"KINETIC_HOST_INDEX", "TPU_WORKER_ID"} {
		if e := env[name]; e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || !strings.Contains(e.ValueFrom.FieldRef.FieldPath, lwsWorkerIndexLabel) {
			t.Errorf("%s = %+v, want the worker-index label", name, e)
		}
	}
	if env["MEGASCALE_COORDINATOR_ADDRESS"].Value != "$(LWS_LEADER_ADDRESS)" || env["MEGASCALE_NUM_SLICES"].Value != "1" {
		t.Errorf("megascale env: %+v", env)
	}
	if got := tmpl.Spec.Containers[0].Resources.Limits["google.com/tpu"]; got.String() != "4" {
		t.Errorf("google.com/tpu limit %s, want 4 per host", got.String())
	}
	if !strings.Contains(strings.Join(tmpl.Spec.Containers[0].Command, " "), "--hold") {
		t.Errorf("runner does not hold: %v", tmpl.Spec.Containers[0].Command)
	}
}

func workerPod(host string, phase corev1.PodPhase, mutate func(*corev1.Pod)) corev1.Pod {
	p := pod(0, phase, mutate)
	p.Name = "lws-0"
	if host != "0" {
		p.Name += "-" + host
	}
	p.Labels = map[string]string{lwsWorkerIndexLabel: host}
	return p
}

func running(p *corev1.Pod) {
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "job", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
}

func TestJudgeGroup(t *testing.T) {
	g := graces{unschedulable: 0, pull: 0}
	cases := []struct {
		name   string
		pods   []corev1.Pod
		state  job.State
		reason string
	}{
		{"no pods yet", nil, job.Pending, ""},
		{"all running", []corev1.Pod{workerPod("0", corev1.PodRunning, running), workerPod("1", corev1.PodRunning, running)}, job.Running, ""},
		{"worker pending", []corev1.Pod{workerPod("0", corev1.PodRunning, running), workerPod("1", corev1.PodPending, nil)}, job.Pending, ""},
		{"worker failed", []corev1.Pod{workerPod("0", corev1.PodRunning, running), workerPod("1", corev1.PodFailed, func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "job", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 3}}}}
		})}, job.Failed, "host 1 (pod lws-0-1): container job exited with code 3"},
		{"worker OOM-killed and restarted", []corev1.Pod{workerPod("0", corev1.PodRunning, running), workerPod("1", corev1.PodRunning, func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "job", RestartCount: 1, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}}}}
		})}, job.Failed, "host 1 (pod lws-0-1): OOMKilled"},
		{"leader image missing", []corev1.Pod{workerPod("0", corev1.PodPending, waiting("ErrImagePull", "manifest unknown"))}, job.Failed, "host 0 (pod lws-0): ErrImagePull"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := judgeGroup(c.pods, now, g)
			if v.state != c.state || !strings.HasPrefix(v.reason, c.reason) {
				t.Errorf("got %s %q, want %s %q", v.state, v.reason, c.state, c.reason)
			}
		})
	}
}

// TestPathwaysStatusHostFailure: a worker's failure envelope fails the job while the
// leader runs, names the host, is recorded, and scales the LeaderWorkerSet to zero.
func TestPathwaysStatusHostFailure(t *testing.T) {
	ctx := context.Background()
	b := testBackend(t, Options{ClusterType: "gke"})
	scheme := runtime.NewScheme()
	dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(scheme, map[schema.GroupVersionResource]string{LWSResource: "LeaderWorkerSetList"})
	b.dyn = dyn
	p := &Pathways{b: b, dyn: dyn}
	h := testHandle("tpu-v6e-16")
	h.Backend = PathwaysName
	if err := b.st.Put(ctx, store.HandleKey(h.JobID), h.Encode()); err != nil {
		t.Fatal(err)
	}
	if err := p.Submit(ctx, h); err != nil {
		t.Fatal(err)
	}
	if s, _, err := p.Status(ctx, h); err != nil || s != job.Pending {
		t.Fatalf("before any pod: %s %v", s, err)
	}
	env := &job.Envelope{Success: false, Phase: job.PhaseCall, Host: "2", ExcType: "ValueError", ExcMessage: "worker 2 is unhappy"}
	if err := b.st.Put(ctx, store.HostEnvelopeKey(h.JobID, "2"), env.Encode()); err != nil {
		t.Fatal(err)
	}
	s, reason, err := p.Status(ctx, h)
	if err != nil || s != job.Failed || !strings.Contains(reason, "host 2 failed: ValueError: worker 2 is unhappy") {
		t.Fatalf("status %s %q %v", s, reason, err)
	}
	obj, err := dyn.Resource(LWSResource).Namespace("default").Get(ctx, h.K8sName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r, _, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas"); r != 0 {
		t.Errorf("replicas %d after the failure, want 0", r)
	}
	// The verdict is in the store: it outlives the LeaderWorkerSet.
	if err := p.Cleanup(ctx, h); err != nil {
		t.Fatal(err)
	}
	if s, reason2, _ := p.Status(ctx, h); s != job.Failed || reason2 != reason {
		t.Errorf("after cleanup: %s %q", s, reason2)
	}
	if hs, err := b.listLeaderWorkerSets(ctx); err != nil || len(hs) != 0 {
		t.Errorf("list after cleanup: %v %v", hs, err)
	}
}

// TestPathwaysRelease: a running job keeps its pods; once the leader's envelope is in
// the store, Release scales the LeaderWorkerSet to zero and keeps it (cleanup removes
// it); a batch child's LeaderWorkerSet carries the batch's label.
func TestPathwaysRelease(t *testing.T) {
	ctx := context.Background()
	b := testBackend(t, Options{ClusterType: "gke"})
	dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{LWSResource: "LeaderWorkerSetList"})
	b.dyn = dyn
	p := &Pathways{b: b, dyn: dyn}
	h := testHandle("tpu-v6e-16")
	h.Backend, h.GroupID, h.GroupKind, h.GroupIndex = PathwaysName, "grp-0123456789abcdefghijklm", "map", "3"
	if err := b.st.Put(ctx, store.HandleKey(h.JobID), h.Encode()); err != nil {
		t.Fatal(err)
	}
	if err := p.Submit(ctx, h); err != nil {
		t.Fatal(err)
	}
	replicas := func() int64 {
		t.Helper()
		obj, err := dyn.Resource(LWSResource).Namespace("default").Get(ctx, h.K8sName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if g := obj.GetLabels()[LabelGroupID]; g != h.GroupID {
			t.Errorf("group label %q, want %q", g, h.GroupID)
		}
		r, ok, err := unstructured.NestedInt64(obj.Object, "spec", "replicas")
		if !ok || err != nil {
			t.Fatalf("replicas: %v %v in %v", ok, err, obj.Object["spec"])
		}
		return r
	}
	if s, r, err := p.Status(ctx, h); err != nil || s.Terminal() {
		t.Fatalf("status before the envelope: %s %q %v", s, r, err)
	}
	if err := p.Release(ctx, h); err != nil || replicas() != 1 {
		t.Fatalf("release of a job that has not ended: %v, replicas %d, want 1", err, replicas())
	}
	env := &job.Envelope{Success: true, Host: "0", HasValue: true}
	if err := b.st.Put(ctx, store.EnvelopeKey(h.JobID), env.Encode()); err != nil {
		t.Fatal(err)
	}
	if err := p.Release(ctx, h); err != nil || replicas() != 0 {
		t.Fatalf("release of a finished job: %v, replicas %d, want 0", err, replicas())
	}
	if err := p.Release(ctx, h); err != nil {
		t.Fatalf("second release: %v", err)
	}
	if err := p.Cleanup(ctx, h); err != nil {
		t.Fatal(err)
	}
	if err := p.Release(ctx, h); err != nil {
		t.Errorf("release after cleanup: %v", err)
	}
}

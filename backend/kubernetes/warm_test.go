package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kinetic-run/kinetic/accel"
	"github.com/kinetic-run/kinetic/infra"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/runner"
)

// busyPod is warm pod "p1" of key "k" running job h.
func busyPod(h *job.Handle) corev1.Pod {
	p := warmPod("p1", "k", warmBusy, time.Time{})
	p.Labels[LabelJobID] = h.JobID
	return p
}

func warmPod(name, key, state string, until time.Time) corev1.Pod {
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", ResourceVersion: "7",
			Labels:      map[string]string{LabelWarm: key, LabelWarmState: state, LabelJobID: "job-old"},
			Annotations: map[string]string{AnnotationWarmRecord: "job-old", AnnotationPrefix + "job_id": "job-old"}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.7"},
	}
	if !until.IsZero() {
		p.Annotations[AnnotationWarmUntil] = until.UTC().Format(time.RFC3339Nano)
	}
	return p
}

func TestCandidates(t *testing.T) {
	now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	deleting := warmPod("deleting", "k", warmIdle, now.Add(time.Minute))
	deleting.DeletionTimestamp = &metav1.Time{Time: now}
	pending := warmPod("pending", "k", warmIdle, now.Add(time.Minute)) // no address yet
	pending.Status.Phase, pending.Status.PodIP = corev1.PodPending, ""
	// Its runner waits (its record), but the kubelet has not yet said it runs.
	late := warmPod("reported-late", "k", warmIdle, now.Add(40*time.Second))
	late.Status.Phase = corev1.PodPending
	ended := warmPod("ended", "k", warmIdle, now.Add(time.Minute))
	ended.Status.Phase = corev1.PodSucceeded
	norecord := warmPod("norecord", "k", warmIdle, now.Add(time.Minute))
	delete(norecord.Annotations, AnnotationWarmRecord)
	list := []corev1.Pod{
		warmPod("older", "k", warmIdle, now.Add(20*time.Second)),
		warmPod("busy", "k", warmBusy, now.Add(time.Minute)),
		warmPod("other-key", "k2", warmIdle, now.Add(time.Minute)),
		warmPod("expiring", "k", warmIdle, now.Add(warmMargin-time.Millisecond)),
		warmPod("no-until", "k", warmIdle, time.Time{}),
		deleting, pending, norecord, late, ended,
		warmPod("fresh", "k", warmIdle, now.Add(50*time.Second)),
	}
	var got []string
	for _, p := range candidates(list, "k", now) {
		got = append(got, p.Name)
	}
	if diff := cmp.Diff([]string{"fresh", "reported-late", "older"}, got); diff != "" {
		t.Errorf("candidates (-want +got):\n%s", diff)
	}
}

func TestOutcome(t *testing.T) {
	for _, c := range []struct {
		code int
		err  error
		want handOver
	}{
		{200, nil, handedOver},
		{409, errors.New("conflict"), refused},
		{400, errors.New("bad"), refused},
		{403, errors.New("forbidden"), refused},
		{404, errors.New("no pod"), refused},
		{503, errors.New("cannot reach the pod"), refused},
		{502, errors.New("bad gateway"), unknown},
		{500, errors.New("internal"), unknown},
		{0, context.DeadlineExceeded, unknown},
		{200, errors.New("body cut"), unknown},
	} {
		if got := outcome(c.code, c.err); got != c.want {
			t.Errorf("outcome(%d, %v) = %v, want %v", c.code, c.err, got, c.want)
		}
	}
}

func TestWarmKey(t *testing.T) {
	b := testBackend(t, Options{Name: K8sName, WarmPods: 2})
	key := func(b *Backend, h *job.Handle) (string, bool) {
		sp, err := acceleratorOf(h)
		if err != nil {
			t.Fatal(err)
		}
		return b.warmKey(h, sp, nil)
	}
	h := testHandle("cpu")
	base, ok := key(b, h)
	if !ok || base == "" {
		t.Fatalf("a plain CPU job is not warm-eligible")
	}
	other := testHandle("cpu")
	other.JobID, other.K8sName, other.FuncName, other.CreatedAt = "job-zzzzzzzzzzzzzzzzzzzzzzzz", "job-zzzzzzzzzzzzzzzzzzzzzzzz", "eval", "2026-11-23T00:00:00Z"
	if k, _ := key(b, other); k != base {
		t.Errorf("two jobs of the same kind have keys %s and %s", base, k)
	}
	differs := map[string]func(h *job.Handle, o *Options){
		"image":           func(h *job.Handle, o *Options) { h.ImageURI = "example.com/other:1" },
		"accelerator":     func(h *job.Handle, o *Options) { h.Accelerator = "gpu-l4" },
		"spot":            func(h *job.Handle, o *Options) { h.Accelerator = "gpu-l4"; h.Spot = "true" },
		"store":           func(h *job.Handle, o *Options) { h.Store = "gs://other" },
		"namespace":       func(h *job.Handle, o *Options) { o.Namespace = "team" },
		"service account": func(h *job.Handle, o *Options) { o.ServiceAccount = "sa" },
		"store secret":    func(h *job.Handle, o *Options) { o.StoreSecret = "creds" },
		"runner image":    func(h *job.Handle, o *Options) { o.RunnerImage = "example.com/runner@sha256:00" },
		"cpu":             func(h *job.Handle, o *Options) { o.CPU = "2" },
		"memory":          func(h *job.Handle, o *Options) { o.Memory = "4Gi" },
		"cluster type":    func(h *job.Handle, o *Options) { o.ClusterType = "gke"; h.Accelerator = "gpu-l4" },
	}
	for name, change := range differs {
		h := testHandle("cpu")
		o := Options{Name: K8sName, WarmPods: 2}
		change(h, &o)
		b2 := testBackend(t, o)
		k, ok := key(b2, h)
		if !ok {
			t.Errorf("%s: not eligible", name)
			continue
		}
		if name == "spot" {
			h2 := testHandle("gpu-l4")
			if k2, _ := key(b2, h2); k2 == k {
				t.Errorf("spot and on-demand gpu-l4 share the key %s", k)
			}
			continue
		}
		if name == "cluster type" {
			gpu, _ := key(b, testHandle("gpu-l4"))
			if gpu == k {
				t.Errorf("gke and generic gpu-l4 share the key %s", k)
			}
			continue
		}
		if k == base {
			t.Errorf("a different %s keeps the key %s", name, k)
		}
	}
	// The same image with and without the runner recorded in it: the pods differ (one
	// copies the runner in), so must the keys; and a job whose image holds the runner
	// does not take a pod left by a runner copied in from another runner image.
	copied := testHandle("cpu")
	copied.ImageURI = testImageWithRunner
	kc, _ := key(b, copied)
	ki, ok := key(b, withRunner(testHandle("cpu")))
	if !ok || ki == kc {
		t.Errorf("the runner in the image and copied in: keys %s and %s (eligible %v)", ki, kc, ok)
	}
	never := map[string]func(h *job.Handle, o *Options){
		"debug":        func(h *job.Handle, o *Options) { h.Debug = "true" },
		"batch member": func(h *job.Handle, o *Options) { h.GroupID = "grp-x" },
		"time limit":   func(h *job.Handle, o *Options) { h.TimeoutSeconds = "60" },
		"multi-host":   func(h *job.Handle, o *Options) { h.Accelerator = "tpu-v6e-16" },
		"warm_pods=0":  func(h *job.Handle, o *Options) { o.WarmPods = 0 },
	}
	for name, change := range never {
		h := testHandle("cpu")
		o := Options{Name: K8sName, WarmPods: 2}
		change(h, &o)
		if _, ok := key(testBackend(t, o), h); ok {
			t.Errorf("%s: eligible for a warm pod", name)
		}
	}
	if _, ok := testBackend(t, Options{Name: K8sName, WarmPods: 2}).warmKey(h, accel.Spec{}, &fusePlan{}); ok {
		t.Errorf("a job with FUSE volumes is eligible for a warm pod")
	}
}

func TestClaimed(t *testing.T) {
	p := warmPod("p", "k", warmIdle, time.Now().Add(time.Minute))
	h := testHandle("cpu")
	c := claimed(&p, h)
	if c.ResourceVersion != "7" {
		t.Errorf("the claim lost the listed resourceVersion (its precondition): %q", c.ResourceVersion)
	}
	if c.Labels[LabelWarmState] != warmBusy || c.Labels[LabelJobID] != h.JobID || c.Labels[LabelWarm] != "k" {
		t.Errorf("claimed labels: %v", c.Labels)
	}
	if _, ok := c.Annotations[AnnotationWarmUntil]; ok {
		t.Errorf("a claimed pod keeps its idle window: %v", c.Annotations)
	}
	if c.Annotations[AnnotationPrefix+"job_id"] != h.JobID || c.Annotations[AnnotationPrefix+"func_name"] != "train" {
		t.Errorf("a claimed pod does not carry its job's handle: %v", c.Annotations)
	}
	if p.Labels[LabelJobID] != "job-old" {
		t.Errorf("claimed changed the listed pod")
	}
}

// TestClaimLostRace: the first candidate was claimed by another engine between the list
// and the update (the apiserver answers Conflict: injected here, on every try); it is read
// again, still looks claimable, conflicts again, and the claim goes on to the next one. Its runner's record cannot be read, so it is refused: the pod this
// engine holds is deleted (nothing finds the job on it) and Submit makes a Job.
func TestClaimLostRace(t *testing.T) {
	b := testBackend(t, Options{Name: K8sName, WarmPods: 2})
	now := time.Now()
	first := warmPod("first", "k", warmIdle, now.Add(55*time.Second))
	second := warmPod("second", "k", warmIdle, now.Add(40*time.Second))
	cs := fake.NewSimpleClientset(&first, &second)
	var updated []string
	cs.PrependReactor("update", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.UpdateAction).GetObject().(*corev1.Pod)
		updated = append(updated, p.Name)
		if p.Name == "first" {
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, p.Name, errors.New("the object has been modified"))
		}
		return false, nil, nil
	})
	b.cs = cs
	h := testHandle("cpu")
	if b.tryWarm(context.Background(), h, "k") {
		t.Fatal("tryWarm reports the job handed over, with no runner record to hand it with")
	}
	if diff := cmp.Diff([]string{"first", "first", "second", "second"}, updated); diff != "" { // the last: disowned
		t.Errorf("claim attempts (-want +got):\n%s", diff)
	}
	if _, err := cs.CoreV1().Pods("default").Get(context.Background(), "second", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the claimed pod whose runner could not be told stays: %v", err)
	}
	if p, err := cs.CoreV1().Pods("default").Get(context.Background(), "first", metav1.GetOptions{}); err != nil || p.Labels[LabelJobID] != "job-old" {
		t.Errorf("the pod another engine won was changed: %v %v", p.Labels, err)
	}
}

// TestClaimAfterIdleLabel: the pod changed between the list and the claim (the engine
// that saw its last job end labelled it idle a moment ago: injected as one Conflict). It
// is read again and claimed, not given up for a new pod.
func TestClaimAfterIdleLabel(t *testing.T) {
	b := testBackend(t, Options{Name: K8sName, WarmPods: 2})
	p := warmPod("only", "k", warmIdle, time.Now().Add(55*time.Second))
	cs := fake.NewSimpleClientset(&p)
	var updated []string
	conflicted := false
	cs.PrependReactor("update", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		u := a.(k8stesting.UpdateAction).GetObject().(*corev1.Pod)
		updated = append(updated, u.Name+" "+u.Labels[LabelWarmState])
		if !conflicted {
			conflicted = true
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, u.Name, errors.New("the object has been modified"))
		}
		return false, nil, nil
	})
	b.cs = cs
	h := testHandle("cpu")
	b.tryWarm(context.Background(), h, "k")
	// Claimed on the second try (busy, as h's); its runner's record cannot be read here,
	// so the hand-over is refused and the pod disowned and deleted, which says it was ours.
	if diff := cmp.Diff([]string{"only busy", "only busy", "only gone"}, updated); diff != "" {
		t.Errorf("claim attempts (-want +got):\n%s", diff)
	}
	if _, err := cs.CoreV1().Pods("default").Get(context.Background(), "only", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the pod was not claimed after the conflict: %v", err)
	}
}

// TestAwaitReported: an idle pod whose address the kubelet has not reported yet is waited
// for (here it is reported 300 ms later) instead of making a new pod; one that is not
// reported within reportWait is not.
func TestAwaitReported(t *testing.T) {
	ctx := context.Background()
	for _, reported := range []bool{true, false} {
		b := testBackend(t, Options{Name: K8sName, WarmPods: 2})
		p := warmPod("late", "k", warmIdle, time.Now().Add(55*time.Second))
		p.Status.Phase, p.Status.PodIP = corev1.PodPending, ""
		cs := fake.NewSimpleClientset(&p)
		b.cs = cs
		if reported {
			go func() {
				time.Sleep(300 * time.Millisecond)
				q := p.DeepCopy()
				q.Status.Phase, q.Status.PodIP = corev1.PodRunning, "10.0.0.9"
				cs.CoreV1().Pods("default").Update(ctx, q, metav1.UpdateOptions{})
			}()
		}
		start := time.Now()
		got := b.awaitReported(ctx, []corev1.Pod{p}, "k")
		switch {
		case reported && (len(got) != 1 || got[0].Status.PodIP != "10.0.0.9"):
			t.Errorf("reported after 300 ms: got %v", got)
		case !reported && len(got) != 0:
			t.Errorf("never reported: got %v", got)
		case !reported && time.Since(start) < reportWait:
			t.Errorf("never reported: gave up after %v, before %v", time.Since(start), reportWait)
		}
	}
}

func TestJudgeWarm(t *testing.T) {
	h := testHandle("cpu")
	running := warmPod("p", "k", warmBusy, time.Time{})
	running.Labels[LabelJobID] = h.JobID
	running.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "job", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	idle := running.DeepCopy()
	idle.Labels[LabelWarmState] = warmIdle
	ended := running.DeepCopy()
	ended.Status.Phase = corev1.PodSucceeded
	deleted := running.DeepCopy()
	deleted.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	g := graces{unschedulable: time.Minute, pull: time.Minute}
	for name, c := range map[string]struct {
		p     *corev1.Pod
		taken bool
		want  job.State
	}{
		"running":           {&running, false, job.Running},
		"gone after taking": {nil, true, job.Failed},
		"never taken":       {nil, false, job.Pending},
		"idle, no result":   {idle, false, job.Failed},
		"ended, no result":  {ended, false, job.Failed},
		"deleted":           {deleted, false, job.Failed},
	} {
		v := judgeWarm(h, c.p, c.taken, time.Now(), g)
		if v.state != c.want {
			t.Errorf("%s: %s (%s), want %s", name, v.state, v.reason, c.want)
		}
		if v.pod != "" {
			t.Errorf("%s: a log tail would be read from the shared pod %s", name, v.pod)
		}
	}
	_ = http.StatusOK
}

// TestWarmLabelsInfra: infra (doctor, the dashboard, down), which may not import this
// package, reads warm pods by the same labels and annotations.
func TestWarmLabelsInfra(t *testing.T) {
	for _, c := range [][2]string{
		{LabelWarm, infra.LabelWarm}, {LabelWarmState, infra.LabelWarmState}, {LabelJobID, infra.LabelJobID},
		{AnnotationWarmUntil, infra.AnnotationWarmUntil}, {AnnotationWarmIdleSince, infra.AnnotationWarmIdleSince},
	} {
		if c[0] != c[1] {
			t.Errorf("backend/kubernetes says %q, infra %q", c[0], c[1])
		}
	}
}

// TestOfferIdleAfterConflict: the pod that ran a job changed between the list and the
// update that makes it idle (the kubelet updates a pod's status at any time: its
// resourceVersion moves; injected here as one Conflict). It is read again and made idle,
// with when it began to wait; a pod that went on to another job meanwhile is left alone.
func TestOfferIdleAfterConflict(t *testing.T) {
	ctx := context.Background()
	since := time.Now().Add(-time.Second).UTC()
	for _, c := range []struct {
		name     string
		moved    func(*corev1.Pod) // what happened to the pod between the list and the update
		wantIdle bool
	}{
		{"status changed", func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		}, true},
		{"taken by another job", func(p *corev1.Pod) { p.Labels[LabelJobID] = "job-other" }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := testBackend(t, Options{Name: K8sName, WarmPods: 2})
			h := testHandle("cpu")
			p := busyPod(h)
			cs := fake.NewSimpleClientset(&p)
			conflicts := 0
			cs.PrependReactor("update", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if conflicts > 0 {
					return false, nil, nil
				}
				conflicts++
				q, _ := cs.Tracker().Get(schema.GroupVersionResource{Version: "v1", Resource: "pods"}, "default", "p1")
				moved := q.(*corev1.Pod).DeepCopy()
				c.moved(moved)
				cs.Tracker().Update(schema.GroupVersionResource{Version: "v1", Resource: "pods"}, moved, "default")
				return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "p1", errors.New("the object has been modified"))
			})
			b.cs = cs
			rec, _ := json.Marshal(runner.WarmRecord{Job: h.JobID, Pod: "p1", Port: 8471, Key: "k", Until: since.Add(time.Minute), Since: since, Nonce: "n"})
			if err := b.st.Put(ctx, runner.WarmRecordKey(h.JobID), rec); err != nil {
				t.Fatal(err)
			}
			b.offerIdle(ctx, h)
			got, err := cs.CoreV1().Pods("default").Get(ctx, "p1", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			idle := got.Labels[LabelWarmState] == warmIdle
			if idle != c.wantIdle || conflicts != 1 {
				t.Fatalf("after one conflict: %v %v (want idle %v)", got.Labels, got.Annotations, c.wantIdle)
			}
			if idle && (got.Annotations[AnnotationWarmIdleSince] != since.Format(time.RFC3339Nano) || got.Annotations[AnnotationWarmRecord] != h.JobID ||
				got.Annotations[AnnotationWarmUntil] != since.Add(time.Minute).Format(time.RFC3339Nano)) {
				t.Errorf("idle annotations: %v", got.Annotations)
			}
		})
	}
}

// TestRefusedPodNamesNoJob: a claimed pod whose runner did not take the job terminates
// for a while (here: a delete only marks it, as the apiserver does for a pod with a grace
// period); the job, run meanwhile on the next pod, is found there, not on the terminating
// one, whose labels no longer name it.
func TestRefusedPodNamesNoJob(t *testing.T) {
	ctx := context.Background()
	b := testBackend(t, Options{Name: K8sName, WarmPods: 2})
	first := warmPod("first", "k", warmIdle, time.Now().Add(55*time.Second))
	cs := fake.NewSimpleClientset(&first)
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	cs.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		o, err := cs.Tracker().Get(gvr, "default", a.(k8stesting.DeleteAction).GetName())
		if err != nil {
			return true, nil, err
		}
		p := o.(*corev1.Pod).DeepCopy()
		p.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		return true, nil, cs.Tracker().Update(gvr, p, "default")
	})
	b.cs = cs
	h := testHandle("cpu")
	if b.tryWarm(ctx, h, "k") { // no runner record: refused
		t.Fatal("handed over without a record")
	}
	got, err := cs.CoreV1().Pods("default").Get(ctx, "first", metav1.GetOptions{})
	if err != nil || got.DeletionTimestamp == nil {
		t.Fatalf("the refused pod is not being deleted: %v", err)
	}
	if got.Labels[LabelJobID] != "" || got.Labels[LabelWarmState] != warmGone || got.Annotations[AnnotationPrefix+"job_id"] != "" {
		t.Errorf("the refused pod still names a job: %v %v", got.Labels, got.Annotations)
	}
	// The job then runs on another pod; a terminating pod that still names it (its
	// relabelling failed) does not hide it.
	next := warmPod("next", "k", warmBusy, time.Time{})
	next.Labels[LabelJobID] = h.JobID
	stale := warmPod("a-stale", "k", warmBusy, time.Time{})
	stale.Labels[LabelJobID] = h.JobID
	stale.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	for _, p := range []*corev1.Pod{&stale, &next} {
		if _, err := cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if p, err := b.warmPodOf(ctx, h.JobID); err != nil || p == nil || p.Name != "next" {
		t.Errorf("warmPodOf: %v %v, want the pod not being deleted", p, err)
	}
}

// TestCleanupKeepsClaimedPod: the cleanup of an ended job lists its pod busy with it, and
// a submission claims the pod (its runner waits for the next job) before the delete. The
// delete, conditioned on the listed version, leaves the claimer's pod alone. The fake
// clientset ignores preconditions: a reactor gives them the apiserver's meaning.
func TestCleanupKeepsClaimedPod(t *testing.T) {
	ctx := context.Background()
	b := testBackend(t, Options{Name: K8sName, WarmPods: 2})
	h := testHandle("cpu")
	p := busyPod(h)
	cs := fake.NewSimpleClientset(&p)
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	cs.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		o, _ := cs.Tracker().Get(gvr, "default", "p1")
		listed := o.(*corev1.Pod).DeepCopy()
		if listed.Labels[LabelJobID] != h.JobID {
			return true, &corev1.PodList{}, nil
		}
		// Claimed right after this answer.
		claimedPod := listed.DeepCopy()
		claimedPod.Labels[LabelJobID] = "job-next"
		claimedPod.ResourceVersion = "8"
		cs.Tracker().Update(gvr, claimedPod, "default")
		return true, &corev1.PodList{Items: []corev1.Pod{*listed}}, nil
	})
	cs.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		d := a.(k8stesting.DeleteActionImpl)
		o, err := cs.Tracker().Get(gvr, "default", d.GetName())
		if err != nil {
			return true, nil, err
		}
		if pre := d.DeleteOptions.Preconditions; pre != nil && pre.ResourceVersion != nil && *pre.ResourceVersion != o.(*corev1.Pod).ResourceVersion {
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, d.GetName(), errors.New("the object has been modified"))
		}
		return false, nil, nil
	})
	b.cs = cs
	if err := b.stopWarm(ctx, h.JobID); err != nil {
		t.Fatal(err)
	}
	got, err := cs.CoreV1().Pods("default").Get(ctx, "p1", metav1.GetOptions{})
	if err != nil || got.Labels[LabelJobID] != "job-next" {
		t.Errorf("the pod claimed by the next job was deleted by the ended job's cleanup: %v", err)
	}
}

// TestCleanupEndedOffersIdle: an ended job whose runner waits for the next is cleaned
// up: its pod is labelled idle and kept, not deleted with the job.
func TestCleanupEndedOffersIdle(t *testing.T) {
	ctx := context.Background()
	b := testBackend(t, Options{Name: K8sName, WarmPods: 2})
	h := testHandle("cpu")
	p := busyPod(h)
	p.Labels["batch.kubernetes.io/job-name"] = h.K8sName
	b.cs = fake.NewSimpleClientset(&p)
	now := time.Now().UTC()
	rec, _ := json.Marshal(runner.WarmRecord{Job: h.JobID, Pod: "p1", Port: 8471, Key: "k", Until: now.Add(time.Minute), Since: now, Nonce: "n"})
	if err := b.st.Put(ctx, runner.WarmRecordKey(h.JobID), rec); err != nil {
		t.Fatal(err)
	}
	if err := b.CleanupEnded(ctx, h); err != nil {
		t.Fatal(err)
	}
	got, err := b.cs.CoreV1().Pods("default").Get(ctx, "p1", metav1.GetOptions{})
	if err != nil || got.Labels[LabelWarmState] != warmIdle {
		t.Errorf("the waiting pod of the cleaned-up job: %v %v, want kept idle", err, got)
	}
}

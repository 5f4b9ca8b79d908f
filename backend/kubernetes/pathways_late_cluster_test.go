package kubernetes_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kinetic-run/kinetic/store"
)

// TestPathwaysLateWorker: a worker pod that comes up only after the leader's call has
// ended still runs its part, and the job ends only after it. TestPathwaysTwoHosts failed
// this way once on a loaded node: the worker's pod came up after the leader had written
// the job's result, the worker took the job for over and never ran, and its output never
// reached the store. Here the late start is injected: the job runs in a namespace whose
// ResourceQuota admits one pod, so LeaderWorkerSet cannot create the worker's pod until
// the test lifts the quota, seconds after the leader's call has printed.
func TestPathwaysLateWorker(t *testing.T) {
	shared(t)
	needLWS(t)
	c := needCluster(t)
	st := newStore(t)
	ctx := context.Background()
	cs, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	ns := fmt.Sprintf("kn-late-%d", time.Now().UnixNano()%1_000_000_000)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "one-pod", Namespace: ns},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")}}}
	if _, err := cs.CoreV1().ResourceQuotas(ns).Create(ctx, quota, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The apiserver enforces the quota once the controller manager has counted it.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		q, err := cs.CoreV1().ResourceQuotas(ns).Get(ctx, "one-pod", metav1.GetOptions{})
		if err == nil && q.Status.Hard != nil && q.Status.Used != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ResourceQuota was not counted within 60s: %v", err)
		}
	}
	env := append([]string{"KINETIC_NAMESPACE=" + ns}, multiHostEnv...)
	id := submitRun(t, st, env, "--accelerator", "tpu-v6e-8", "--", "sh", "-c", `echo "from host $KINETIC_HOST_INDEX"`)
	t.Cleanup(func() { kinetic(t, st, env, "jobs", "cleanup", id) })

	// The leader runs its part alone.
	for deadline := time.Now().Add(2 * time.Minute); !strings.Contains(jobLogs(t, st, id), "from host 0"); time.Sleep(300 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the leader did not run within 2 minutes\n%s", describeGroup(t, ns, id))
		}
	}
	time.Sleep(3 * time.Second) // the leader's call has ended by now
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "leaderworkerset.sigs.k8s.io/name=" + id})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("the quota did not hold the worker's pod back (pods: %v): the injection failed\n%s", err, describeGroup(t, ns, id))
	}
	if ok, _ := st.Exists(ctx, store.EnvelopeKey(id)); ok {
		t.Errorf("the leader wrote the job's result while host 1 had not started: the job ended without it")
	}
	if s, r := status(t, st, id); s != "RUNNING" {
		t.Errorf("status %s (%s) while host 1 waits to start, want RUNNING", s, r)
	}

	// The worker's pod can be created now: it runs, then the job ends.
	if err := cs.CoreV1().ResourceQuotas(ns).Delete(ctx, "one-pod", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	lifted := time.Now()
	var s, reason string
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(500 * time.Millisecond) {
		if s, reason = status(t, st, id); s == "SUCCEEDED" || s == "FAILED" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status %s (%s) 3 minutes after the worker's pod could be created\n%s", s, reason, describeGroup(t, ns, id))
		}
	}
	t.Logf("%s %s after the quota was lifted", s, time.Since(lifted).Round(100*time.Millisecond))
	if s != "SUCCEEDED" {
		t.Fatalf("status %s (%s)\n%s", s, reason, describeGroup(t, ns, id))
	}
	if w := hostLogs(t, st, id, "1"); !strings.Contains(w, "from host 1") {
		t.Errorf("the late worker's output in the store: %q\n%s", w, describeGroup(t, ns, id))
	}
	if w, l := envelopeTime(t, st, id, "1"), envelopeTime(t, st, id, "0"); l.Before(w) {
		t.Errorf("the job's envelope (%s) is older than the late worker's (%s)", l, w)
	}
}

// jobLogs is what the job's leader mirrored into the store.
func jobLogs(t *testing.T, st *store.Store, id string) string {
	t.Helper()
	objs, err := st.List(context.Background(), store.LogsPrefix(id))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, o := range objs {
		if raw, err := st.Get(context.Background(), o.Key); err == nil {
			b.Write(raw)
		}
	}
	return b.String()
}

// describeGroup says what the cluster shows of multi-host job id in namespace ns, for
// failures: the LeaderWorkerSet's StatefulSets, its pods (phase, conditions, containers),
// the events of both, and the last lines each pod's job container printed.
func describeGroup(t *testing.T, ns, id string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := cluster.Client()
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	sts, err := cs.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		fmt.Fprintf(&b, "statefulsets: %v\n", err)
	} else {
		n := 0
		for _, s := range sts.Items {
			if !strings.HasPrefix(s.Name, id) {
				continue
			}
			n++
			want := int32(1)
			if s.Spec.Replicas != nil {
				want = *s.Spec.Replicas
			}
			fmt.Fprintf(&b, "statefulset %s: replicas %d, created %d, ready %d\n", s.Name, want, s.Status.Replicas, s.Status.ReadyReplicas)
		}
		if n == 0 {
			b.WriteString("no StatefulSet of the LeaderWorkerSet\n")
		}
	}
	b.WriteString("pods:\n")
	b.WriteString(describePodsIn(ns, id))
	if evs, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{}); err != nil {
		fmt.Fprintf(&b, "events: %v\n", err)
	} else {
		sort.Slice(evs.Items, func(i, k int) bool { return evs.Items[i].LastTimestamp.Before(&evs.Items[k].LastTimestamp) })
		b.WriteString("events:\n")
		for _, e := range evs.Items {
			if strings.HasPrefix(e.InvolvedObject.Name, id) {
				fmt.Fprintf(&b, "  %s %s %s/%s: %s: %s (x%d)\n", e.LastTimestamp.Format("15:04:05"), e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message, e.Count)
			}
		}
	}
	if pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "leaderworkerset.sigs.k8s.io/name=" + id}); err == nil {
		for _, p := range pods.Items {
			raw, err := cs.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{Container: "job", TailLines: ptr(int64(20))}).DoRaw(ctx)
			if err != nil {
				fmt.Fprintf(&b, "output of %s: %v\n", p.Name, err)
				continue
			}
			fmt.Fprintf(&b, "output of %s (last 20 lines):\n%s\n", p.Name, raw)
		}
	}
	return b.String()
}

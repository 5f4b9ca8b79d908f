package kubernetes_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestScaleUpFailures: a GPU job whose pod waits for a node GKE's cluster autoscaler
// cannot add, on the real test cluster: the real scheduler leaves the pod Unschedulable
// (no node has the GPU), and the test writes the autoscaler's events as GKE's does.
// Zero quota: `kinetic jobs status` says FAILED within a minute, naming the
// accelerator, the zone and the quota to ask for, and the pod is stopped. A stockout:
// the reason names it while the autoscaler retries (PENDING, then FAILED once the
// unschedulable grace is over: 5 s here).
func TestScaleUpFailures(t *testing.T) {
	shared(t)
	_, st := newBackend(t, nil)
	cs, err := cluster.Client()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	quota := submitRun(t, st, nil, "--accelerator", "l4", "--", "true")
	stock := submitRun(t, st, nil, "--accelerator", "l4", "--", "true")
	autoscaler := func(id, msg string) {
		t.Helper()
		pod := waitUnschedulable(t, id)
		now := metav1.Now()
		_, err := cs.CoreV1().Events("default").Create(ctx, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{GenerateName: pod.Name + ".", Namespace: "default"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: pod.Name, UID: pod.UID, APIVersion: "v1"},
			Reason:         "FailedScaleUp", Message: msg, Type: corev1.EventTypeWarning, Count: 1,
			FirstTimestamp: now, LastTimestamp: now, Source: corev1.EventSource{Component: "cluster-autoscaler"},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	autoscaler(quota, "Node scale up in zones us-central1-a associated with this pod failed: GCE quota exceeded. Pod is at risk of not being scheduled.")
	autoscaler(stock, "Node scale up in zones us-central1-a associated with this pod failed: GCE out of resources. Pod is at risk of not being scheduled.")

	start := time.Now()
	_, r := waitStatus(t, st, quota, 60*time.Second, "FAILED")
	for _, w := range []string{"FailedScaleUp", "gpu-l4 (1× nvidia-l4)", "zone us-central1-a", "quota NVIDIA_L4_GPUS"} {
		if !strings.Contains(r, w) {
			t.Errorf("zero quota: reason %q lacks %q", r, w)
		}
	}
	t.Logf("zero quota reported in %.1fs", time.Since(start).Seconds())
	waitNoPods(t, quota) // stopped: the autoscaler would otherwise keep trying

	var s string
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if s, r = status(t, st, stock); strings.Contains(r, "stockout") {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if !strings.Contains(r, "stockout") || !strings.Contains(r, "zone us-central1-a") || (s != "PENDING" && s != "FAILED") {
		t.Errorf("stockout: %s %q", s, r)
	}
}

// waitUnschedulable waits until the pod of job id is Unschedulable, and returns it.
func waitUnschedulable(t *testing.T, id string) *corev1.Pod {
	t.Helper()
	cs, _ := cluster.Client()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		pods, err := cs.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + id})
		if err == nil {
			for i := range pods.Items {
				for _, c := range pods.Items[i].Status.Conditions {
					if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonUnschedulable {
						return &pods.Items[i]
					}
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("no Unschedulable pod of job %s in 60s", id)
	return nil
}

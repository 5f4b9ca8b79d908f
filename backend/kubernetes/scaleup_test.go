package kubernetes

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kinetic-run/kinetic/job"
)

func event(reason, msg string, at time.Time) corev1.Event {
	return corev1.Event{Reason: reason, Message: msg, LastTimestamp: metav1.NewTime(at), Source: corev1.EventSource{Component: "cluster-autoscaler"}}
}

// The cluster autoscaler's events as GKE writes them on a pending pod.
const (
	quotaMsg = "Node scale up in zones us-central1-a associated with this pod failed: GCE quota exceeded. Pod is at risk of not being scheduled."
	stockMsg = "Node scale up in zones us-central1-a associated with this pod failed: GCE out of resources. Pod is at risk of not being scheduled."
	notMsg   = "pod didn't trigger scale-up: 1 max node group size reached, 2 node(s) didn't match Pod's node affinity/selector"
)

func TestJudgeScaleUp(t *testing.T) {
	now := time.Now()
	pending := verdict{state: job.Pending, pod: "p", reason: "Unschedulable: 0/1 nodes are available"}
	failed := verdict{state: job.Failed, stuck: true, pod: "p", reason: "Unschedulable: no node can run the job's pod after 5m0s"}
	for _, tc := range []struct {
		name    string
		v       verdict
		acc     string
		spot    bool
		evs     []corev1.Event
		state   job.State
		want    []string
		notWant string
	}{
		{"quota: failed at once", pending, "gpu-l4", false, []corev1.Event{event("FailedScaleUp", quotaMsg, now)}, job.Failed,
			[]string{"gpu-l4 (1× nvidia-l4)", "zone us-central1-a", "quota NVIDIA_L4_GPUS", "GCE quota exceeded"}, ""},
		{"quota on spot", pending, "gpu-a100", true, []corev1.Event{event("FailedScaleUp", quotaMsg, now)}, job.Failed,
			[]string{"PREEMPTIBLE_NVIDIA_A100_GPUS"}, ""},
		{"TPU quota", pending, "tpu-v6e-8", false, []corev1.Event{event("FailedScaleUp", quotaMsg, now)}, job.Failed,
			[]string{"tpu-v6e-8 (TPU tpu-v6e-slice, topology 2x4)", "TPU quota for tpu-v6e-slice chips"}, ""},
		{"stockout: pending with the reason", pending, "gpu-l4", false, []corev1.Event{event("FailedScaleUp", stockMsg, now)}, job.Pending,
			[]string{"stockout", "zone us-central1-a", "keeps trying"}, ""},
		{"stockout past the grace", failed, "gpu-l4", false, []corev1.Event{event("FailedScaleUp", stockMsg, now)}, job.Failed,
			[]string{"stockout", "gave up after the unschedulable grace"}, ""},
		{"not triggered", pending, "gpu-l4", false, []corev1.Event{event("NotTriggerScaleUp", notMsg, now)}, job.Pending,
			[]string{"NotTriggerScaleUp", "max node group size reached", "kinetic pool list"}, ""},
		{"the latest event wins", pending, "gpu-l4", false, []corev1.Event{event("FailedScaleUp", quotaMsg, now.Add(-time.Minute)), event("NotTriggerScaleUp", notMsg, now)}, job.Pending,
			[]string{"NotTriggerScaleUp"}, "quota"},
		{"no autoscaler events", pending, "gpu-l4", false, []corev1.Event{event("Scheduled", "x", now)}, job.Pending,
			[]string{"Unschedulable: 0/1"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := judgeScaleUp(tc.v, tc.acc, tc.spot, tc.evs)
			if got.state != tc.state {
				t.Errorf("state %s, want %s (%s)", got.state, tc.state, got.reason)
			}
			for _, w := range tc.want {
				if !strings.Contains(got.reason, w) {
					t.Errorf("reason %q lacks %q", got.reason, w)
				}
			}
			if tc.notWant != "" && strings.Contains(got.reason, tc.notWant) {
				t.Errorf("reason %q says %q", got.reason, tc.notWant)
			}
			if got.state == job.Failed && !got.stuck {
				t.Error("a FAILED verdict on a pod the cluster still holds must stop it (stuck)")
			}
		})
	}
}

// FuzzJudgeScaleUp: the autoscaler's event messages (text from the cluster) never
// panic the verdict, and a FAILED verdict always stops the pod.
func FuzzJudgeScaleUp(f *testing.F) {
	f.Add("FailedScaleUp", quotaMsg, "gpu-l4")
	f.Add("FailedScaleUp", stockMsg, "tpu-v6e-8")
	f.Add("NotTriggerScaleUp", notMsg, "")
	f.Add("FailedScaleUp", "in zones ,,", "nonsense")
	f.Fuzz(func(t *testing.T, reason, msg, acc string) {
		v := verdict{state: job.Pending, pod: "p", reason: "Unschedulable: x"}
		got := judgeScaleUp(v, acc, false, []corev1.Event{event(reason, msg, time.Now())})
		if got.reason == "" || (got.state == job.Failed && !got.stuck) || got.pod != "p" {
			t.Errorf("judgeScaleUp(%q, %q, %q) = %+v", reason, msg, acc, got)
		}
	})
}

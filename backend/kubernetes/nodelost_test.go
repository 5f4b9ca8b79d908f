package kubernetes

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kinetic-run/kinetic/job"
)

// TestJudgeNode: a node is lost once Ready has not been True for longer than the grace.
func TestJudgeNode(t *testing.T) {
	now := time.Now()
	node := func(s corev1.ConditionStatus, ago time.Duration) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: s, Reason: "NodeStatusUnknown", Message: "Kubelet stopped posting node status.",
			LastTransitionTime: metav1.NewTime(now.Add(-ago))}}}}
	}
	for _, c := range []struct {
		n    *corev1.Node
		want string
	}{
		{node(corev1.ConditionTrue, time.Hour), ""},
		{node(corev1.ConditionUnknown, 10*time.Second), ""},
		{node(corev1.ConditionUnknown, 2*time.Minute), "unreachable"},
		{node(corev1.ConditionFalse, 2*time.Minute), "NotReady for 2m0s"},
		{&corev1.Node{}, ""},
	} {
		got := judgeNode(c.n, now, time.Minute)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("judgeNode = %q, want %q", got, c.want)
		}
		if got != "" && (!strings.Contains(got, "NodeNotReady") || !strings.Contains(got, "n1") || !strings.Contains(got, "Kubelet stopped posting")) {
			t.Errorf("reason %q does not name the node and the cause", got)
		}
	}
}

// TestJudgeDeletedPod: a Job failed because its pod was deleted (the Job controller
// counts a terminating pod as failed) says so, instead of "backoff limit".
func TestJudgeDeletedPod(t *testing.T) {
	g := graces{unschedulable: time.Minute, pull: time.Minute}
	failed := &batchv1.Job{Status: batchv1.JobStatus{Failed: 1, Conditions: []batchv1.JobCondition{{
		Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit"}}}}
	deleting := pod(time.Minute, corev1.PodRunning, func(p *corev1.Pod) {
		p.DeletionTimestamp = &metav1.Time{Time: now}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "job", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	})
	if v := judgeJob(failed, []corev1.Pod{deleting}, now, g); v.state != job.Failed || !strings.Contains(v.reason, "pod p was deleted while the job ran") {
		t.Errorf("deleted pod: %+v", v)
	}
	if v := judgeJob(failed, nil, now, g); v.state != job.Failed || !strings.Contains(v.reason, "pod is gone") {
		t.Errorf("force-deleted pod: %+v", v)
	}
	exited := pod(time.Minute, corev1.PodFailed, func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "job", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2}}}}
	})
	if v := judgeJob(failed, []corev1.Pod{exited}, now, g); !strings.Contains(v.reason, "exited with code 2") {
		t.Errorf("failed pod keeps its own reason: %+v", v)
	}
}

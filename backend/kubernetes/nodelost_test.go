package kubernetes

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

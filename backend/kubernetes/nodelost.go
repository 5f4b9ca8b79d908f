package kubernetes

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kinetic-run/kinetic/job"
)

// DefaultNodeLostGrace is how long the node of a running job's pod may be NotReady (or
// Unknown: its kubelet stopped reporting) before the job is FAILED. With the node
// lifecycle controller's 50 s monitor grace it is about when Kubernetes itself would
// evict the pod (300 s default toleration), but it does not depend on that eviction:
// when every node of a cluster is NotReady (a one-node cluster, a zone outage), the
// controller assumes a control-plane fault and evicts nothing, and the pod would show
// Running for ever.
const DefaultNodeLostGrace = 5 * time.Minute

// nodeCacheTTL bounds how often one backend reads the same Node (a batch's children
// share it).
const nodeCacheTTL = 2 * time.Second

type cachedNode struct {
	at   time.Time
	node *corev1.Node
}

// nodeCache is a backend's recent looks at Nodes (its zero value is ready).
type nodeCache struct {
	mu        sync.Mutex
	forbidden bool
	nodes     map[string]*cachedNode
}

// nodeLost turns a RUNNING or PENDING verdict about a pod bound to a node into FAILED
// (stuck: the caller stops the Job) when that node has not been Ready for longer than
// grace. It is silent when the Node cannot be read (no RBAC for nodes, API errors):
// the pod's own status then decides, as before.
func (b *Backend) nodeLost(ctx context.Context, v verdict, pods []corev1.Pod, grace time.Duration) verdict {
	if v.state != job.Running && v.state != job.Pending {
		return v
	}
	if grace <= 0 {
		grace = DefaultNodeLostGrace
	}
	var p *corev1.Pod
	for i := range pods {
		if pods[i].Name == v.pod {
			p = &pods[i]
		}
	}
	if p == nil || p.Spec.NodeName == "" || p.DeletionTimestamp != nil {
		return v
	}
	n := b.node(ctx, p.Spec.NodeName)
	if n == nil {
		return v
	}
	if r := judgeNode(n, time.Now(), grace); r != "" {
		return verdict{state: job.Failed, stuck: true, pod: v.pod, reason: r}
	}
	return v
}

// judgeNode is the reason a node is lost (Ready not True for longer than grace), or "".
func judgeNode(n *corev1.Node, now time.Time, grace time.Duration) string {
	for _, c := range n.Status.Conditions {
		if c.Type != corev1.NodeReady {
			continue
		}
		if c.Status == corev1.ConditionTrue {
			return ""
		}
		since := c.LastTransitionTime.Time
		if since.IsZero() || now.Sub(since) <= grace {
			return ""
		}
		what := "NotReady"
		if c.Status == corev1.ConditionUnknown {
			what = "unreachable (NodeStatusUnknown)"
		}
		msg := strings.TrimSpace(c.Message)
		if msg == "" {
			msg = c.Reason
		}
		return fmt.Sprintf("NodeNotReady: the job's node %s has been %s for %s (%s): the cluster can no longer see or manage the job's pod, so the job was stopped (check the node with `kubectl describe node %s`, then resubmit the job)",
			n.Name, what, now.Sub(since).Round(time.Second), msg, n.Name)
	}
	return ""
}

// node reads a Node, at most every nodeCacheTTL; nil when it cannot be read. A
// Forbidden answer turns node reads off for this backend (the user may not read
// cluster-scoped objects).
func (b *Backend) node(ctx context.Context, name string) *corev1.Node {
	nc := &b.nodeCache
	nc.mu.Lock()
	if nc.forbidden {
		nc.mu.Unlock()
		return nil
	}
	if c := nc.nodes[name]; c != nil && time.Since(c.at) < nodeCacheTTL {
		nc.mu.Unlock()
		return c.node
	}
	nc.mu.Unlock()
	cctx, cancel := ctxTimeout(ctx)
	defer cancel()
	n, err := b.cs.CoreV1().Nodes().Get(cctx, name, metav1.GetOptions{})
	nc.mu.Lock()
	defer nc.mu.Unlock()
	if apierrors.IsForbidden(err) {
		nc.forbidden = true
	}
	if err != nil {
		return nil
	}
	if nc.nodes == nil {
		nc.nodes = map[string]*cachedNode{}
	}
	nc.nodes[name] = &cachedNode{at: time.Now(), node: n}
	return n
}

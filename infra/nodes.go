package infra

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kinetic-run/kinetic/accel"
)

// acceleratorResources are the extended resources accelerators are scheduled by.
var acceleratorResources = []corev1.ResourceName{"nvidia.com/gpu", "google.com/tpu", "amd.com/gpu"}

// poolLabels name a node's pool on GKE, EKS, AKS and Karpenter.
var poolLabels = []string{"cloud.google.com/gke-nodepool", "eks.amazonaws.com/nodegroup", "kubernetes.azure.com/agentpool", "karpenter.sh/nodepool"}

// Node is one node of a cluster: its pool, the catalog accelerators it offers and how
// many of its accelerator devices running pods hold.
type Node struct {
	Name  string `json:"name"`
	Pool  string `json:"pool,omitempty"`
	Ready bool   `json:"ready"`
	// Accelerators are the catalog names whose node selectors the node matches.
	Accelerators []string `json:"accelerators,omitempty"`
	// Resource is the accelerator resource (nvidia.com/gpu, google.com/tpu), if any;
	// Allocatable how many the node has, Used how many running or pending pods bound to
	// it request (-1 when pods could not be listed).
	Resource    string `json:"resource,omitempty"`
	Allocatable int64  `json:"allocatable,omitempty"`
	Used        int64  `json:"used,omitempty"`
	CPU         string `json:"cpu"`
	Memory      string `json:"memory"`
}

// Nodes lists t's nodes with their pools and accelerators, sorted by pool and name. It
// only reads: nodes, and pods in every namespace (to count the accelerators in use; a
// user who may not list them gets Used -1).
func Nodes(ctx context.Context, t *Target) ([]Node, error) {
	cs, err := t.clientset()
	if err != nil {
		return nil, err
	}
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list the cluster's nodes: %w", err)
	}
	used := map[string]int64{}
	pods, perr := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "status.phase!=Succeeded,status.phase!=Failed"})
	if perr == nil {
		for _, p := range pods.Items {
			if p.Spec.NodeName == "" {
				continue
			}
			for _, c := range p.Spec.Containers {
				for _, r := range acceleratorResources {
					if q, ok := c.Resources.Requests[r]; ok {
						used[p.Spec.NodeName] += q.Value()
					}
				}
			}
		}
	}
	out := make([]Node, 0, len(nodes.Items))
	for _, n := range nodes.Items {
		nd := Node{Name: n.Name, CPU: n.Status.Allocatable.Cpu().String(), Memory: n.Status.Allocatable.Memory().String(), Used: used[n.Name]}
		if perr != nil {
			nd.Used = -1
		}
		for _, l := range poolLabels {
			if v := n.Labels[l]; v != "" {
				nd.Pool = v
				break
			}
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				nd.Ready = c.Status == corev1.ConditionTrue
			}
		}
		for _, r := range acceleratorResources {
			if q, ok := n.Status.Allocatable[r]; ok && q.Value() > 0 {
				nd.Resource, nd.Allocatable = string(r), q.Value()
			}
		}
		nd.Accelerators = accel.OnNode(n.Labels)
		sort.Strings(nd.Accelerators)
		out = append(out, nd)
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].Pool != out[b].Pool {
			return out[a].Pool < out[b].Pool
		}
		return strings.Compare(out[a].Name, out[b].Name) < 0
	})
	return out, nil
}

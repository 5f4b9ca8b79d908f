package engine

import (
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/job"
)

// Cluster is how to reach the cluster that holds a job: the facts recorded in its handle
// at submission, plus the kubeconfig file of this machine.
type Cluster struct {
	Backend   string `json:"backend"`
	Project   string `json:"project,omitempty"`
	Zone      string `json:"zone,omitempty"`
	Cluster   string `json:"cluster,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	// KubeContext is the kubeconfig context to use: the handle's, else for GKE backends
	// the context `gcloud container clusters get-credentials` names
	// (gke_PROJECT_ZONE_CLUSTER), else "" (the kubeconfig's current context).
	KubeContext string `json:"kube_context,omitempty"`
	// Kubeconfig is this machine's kubeconfig file (configuration key kubeconfig, else
	// KUBECONFIG; "" means the client's default, ~/.kube/config). It is not in the handle:
	// a path on the submitting machine means nothing on another one.
	Kubeconfig string `json:"kubeconfig,omitempty"`
}

// ClusterOf returns the cluster connection facts for h. They come from the handle, not
// from the active profile, so a job submitted to cluster A is observed, attached and
// debugged on A whatever profile is active now; only the kubeconfig file is this
// machine's. The Kubernetes backends use it to pick the kubeconfig context.
func (e *Engine) ClusterOf(h *job.Handle) Cluster {
	c := Cluster{Backend: h.Backend, Project: h.Project, Zone: h.Zone, Cluster: h.ClusterName, Namespace: h.Namespace,
		KubeContext: h.KubeContext, Kubeconfig: e.cfg.Get(config.Kubeconfig)}
	if c.KubeContext == "" && isGKE(h.Backend) && c.Project != "" && c.Zone != "" && c.Cluster != "" {
		c.KubeContext = "gke_" + c.Project + "_" + c.Zone + "_" + c.Cluster
	}
	return c
}

// isGKE reports whether backend names a backend on Google Kubernetes Engine.
func isGKE(backend string) bool { return backend == "gke" || backend == "pathways" }

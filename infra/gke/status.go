package gke

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"cloud.google.com/go/artifactregistry/apiv1/artifactregistrypb"
	"cloud.google.com/go/container/apiv1/containerpb"
	"cloud.google.com/go/iam/admin/apiv1/adminpb"
)

// Status is what exists of what up makes.
type Status struct {
	Project        string     `json:"project"`
	Zone           string     `json:"zone"`
	Cluster        string     `json:"cluster"`
	ClusterStatus  string     `json:"cluster_status"` // NOT_FOUND, PROVISIONING, RUNNING, …
	Version        string     `json:"version,omitempty"`
	Endpoint       string     `json:"endpoint,omitempty"`
	WorkloadPool   string     `json:"workload_pool,omitempty"`
	GCSFuse        bool       `json:"gcs_fuse_csi_driver"`
	Pools          []PoolInfo `json:"pools,omitempty"`
	Repository     string     `json:"repository,omitempty"` // "" when missing
	Bucket         string     `json:"bucket"`
	BucketExists   bool       `json:"bucket_exists"`
	ServiceAccount string     `json:"service_account,omitempty"` // "" when missing
}

// Ready reports whether everything up makes is there and the cluster runs.
func (s *Status) Ready() bool {
	return s.ClusterStatus == "RUNNING" && s.Repository != "" && s.BucketExists && s.ServiceAccount != ""
}

// GetStatus reads the cluster, its pools, the repository, the bucket and the service account.
func GetStatus(ctx context.Context, c *Clients, cfg Config) (*Status, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	bucket, _ := cfg.Bucket()
	s := &Status{Project: cfg.Project, Zone: cfg.Zone, Cluster: cfg.Cluster, ClusterStatus: "NOT_FOUND", Bucket: "gs://" + bucket}
	for _, read := range []func(context.Context, *Clients, *Config, *Status) error{readClusterStatus, readRepositoryStatus, readBucketStatus, readAccountStatus} {
		if err := read(ctx, c, &cfg, s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func readClusterStatus(ctx context.Context, c *Clients, cfg *Config, s *Status) error {
	cl, err := c.Cluster.GetCluster(ctx, &containerpb.GetClusterRequest{Name: cfg.clusterName()})
	if notFound(err) {
		return nil
	}
	if err != nil {
		return apiErr("read the cluster "+cfg.clusterName(), err)
	}
	s.ClusterStatus = cl.GetStatus().String()
	s.Version, s.Endpoint = cl.GetCurrentMasterVersion(), cl.GetEndpoint()
	s.WorkloadPool = cl.GetWorkloadIdentityConfig().GetWorkloadPool()
	s.GCSFuse = cl.GetAddonsConfig().GetGcsFuseCsiDriverConfig().GetEnabled()
	for _, np := range cl.GetNodePools() {
		s.Pools = append(s.Pools, poolInfo(np))
	}
	return nil
}

func readRepositoryStatus(ctx context.Context, c *Clients, cfg *Config, s *Status) error {
	_, err := c.Registry.GetRepository(ctx, &artifactregistrypb.GetRepositoryRequest{Name: cfg.repoName()})
	switch {
	case err == nil:
		s.Repository = cfg.RepoHost()
	case !notFound(err):
		return apiErr("read the repository", err)
	}
	return nil
}

func readBucketStatus(ctx context.Context, _ *Clients, cfg *Config, s *Status) error {
	bucket, endpoint := cfg.Bucket()
	st, err := storageService(ctx, endpoint)
	if err != nil {
		return err
	}
	_, err = st.Buckets.Get(bucket).Context(ctx).Do()
	switch {
	case err == nil:
		s.BucketExists = true
	case httpCode(err) != http.StatusNotFound:
		return apiErr("read the bucket", err)
	}
	return nil
}

func readAccountStatus(ctx context.Context, c *Clients, cfg *Config, s *Status) error {
	_, err := c.IAM.GetServiceAccount(ctx, &adminpb.GetServiceAccountRequest{Name: cfg.accountName()})
	switch {
	case err == nil:
		s.ServiceAccount = cfg.AccountEmail()
	case !notFound(err):
		return apiErr("read the service account", err)
	}
	return nil
}

// Print writes the status for a person: ✓/✗ lines and the pools.
func (s *Status) Print(w io.Writer) {
	mark := func(ok bool) string {
		if ok {
			return "✓"
		}
		return "✗"
	}
	fmt.Fprintf(w, "%s cluster %s (project %s, zone %s): %s", mark(s.ClusterStatus == "RUNNING"), s.Cluster, s.Project, s.Zone, s.ClusterStatus)
	if s.Version != "" {
		fmt.Fprintf(w, ", Kubernetes %s", s.Version)
	}
	fmt.Fprintln(w)
	if s.ClusterStatus != "NOT_FOUND" {
		fmt.Fprintf(w, "%s Workload Identity: %s\n", mark(s.WorkloadPool != ""), orDash(s.WorkloadPool))
		fmt.Fprintf(w, "%s GCS FUSE CSI driver\n", mark(s.GCSFuse))
	}
	fmt.Fprintf(w, "%s repository: %s\n", mark(s.Repository != ""), orDash(s.Repository))
	fmt.Fprintf(w, "%s store bucket: %s\n", mark(s.BucketExists), s.Bucket)
	fmt.Fprintf(w, "%s service account: %s\n", mark(s.ServiceAccount != ""), orDash(s.ServiceAccount))
	if len(s.Pools) > 0 {
		fmt.Fprintln(w, "node pools:")
		PrintPools(w, s.Pools)
	}
	if !s.Ready() {
		fmt.Fprintln(w, "    fix: `kinetic up` creates what is missing")
	}
}

// PrintPools writes a table of pools.
func PrintPools(w io.Writer, pools []PoolInfo) {
	fmt.Fprintf(w, "  %-22s %-20s %-20s %-7s %-5s %s\n", "NAME", "ACCELERATOR", "MACHINE TYPE", "NODES", "SPOT", "STATUS")
	for _, p := range pools {
		extra := ""
		if p.Topology != "" {
			extra += " topology " + p.Topology
		}
		if p.Reservation != "" {
			extra += " reservation " + p.Reservation
		}
		fmt.Fprintf(w, "  %-22s %-20s %-20s %-7s %-5v %s%s\n", p.Name, orDash(p.Accelerator), p.MachineType, fmt.Sprintf("%d-%d", p.MinNodes, p.MaxNodes), p.Spot, p.Status, extra)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

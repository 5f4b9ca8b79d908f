package gke

import (
	"context"
	"fmt"
	"net/http"

	"cloud.google.com/go/artifactregistry/apiv1/artifactregistrypb"
	"cloud.google.com/go/container/apiv1/containerpb"
	"cloud.google.com/go/iam/admin/apiv1/adminpb"
	storagev1 "google.golang.org/api/storage/v1"
)

// DownOptions say what down may delete.
type DownOptions struct {
	// ForceDestroy deletes the store bucket and every object in it (job records,
	// outputs). Without it the bucket is kept.
	ForceDestroy bool
}

// downPlanner holds what PlanDown's steps read and plan.
type downPlanner struct {
	c   *Clients
	cfg Config
	o   DownOptions
	p   *Plan

	st           *storagev1.Service
	bucket       string
	bucketThere  bool
	accountThere bool
}

// downSteps are PlanDown's resources, in the reverse of up's order.
var downSteps = []func(d *downPlanner, ctx context.Context) error{
	(*downPlanner).cluster,
	(*downPlanner).network,
	(*downPlanner).read,
	(*downPlanner).bucketBinding,
	(*downPlanner).account,
	(*downPlanner).storeBucket,
	(*downPlanner).repository, // last: up made it first
}

// PlanDown reads what up created and plans its deletion, in the reverse of up's order:
// the cluster (with its pools, and what up put in it: LeaderWorkerSet, the Kubernetes
// service account), the service account (its role on a kept bucket is removed first),
// the bucket only with ForceDestroy, the repository (with its images). The APIs up
// enabled stay enabled (other things in the project may use them).
func PlanDown(ctx context.Context, c *Clients, cfg Config, o DownOptions) (*Plan, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	d := &downPlanner{c: c, cfg: cfg, o: o, p: &Plan{Title: fmt.Sprintf("GKE: project %s, zone %s, cluster %s", cfg.Project, cfg.Zone, cfg.Cluster), poll: cfg.Poll}}
	var endpoint string
	d.bucket, endpoint = d.cfg.Bucket()
	var err error
	if d.st, err = storageService(ctx, endpoint); err != nil {
		return nil, err
	}
	for _, s := range downSteps {
		if err := s(d, ctx); err != nil {
			return nil, err
		}
	}
	return d.p, nil
}

func (d *downPlanner) add(s Step) { d.p.Steps = append(d.p.Steps, s) }

func (d *downPlanner) gone(what string) { d.add(Step{What: what, Action: ActOK, Detail: "not there"}) }

// cluster deletes the cluster with its pools (or waits for an earlier deletion).
func (d *downPlanner) cluster(ctx context.Context) error {
	c, cfg := d.c, &d.cfg
	cl, err := c.Cluster.GetCluster(ctx, &containerpb.GetClusterRequest{Name: cfg.clusterName()})
	switch {
	case notFound(err):
		d.gone("cluster " + cfg.Cluster)
	case err != nil:
		return apiErr("read the cluster "+cfg.clusterName(), err)
	case cl.GetStatus() == containerpb.Cluster_STOPPING:
		d.add(Step{What: "cluster " + cfg.Cluster, Action: ActWait, Detail: "being deleted by an earlier operation",
			apply: func(ctx context.Context, pr *progress) error { return c.waitClusterGone(ctx, cfg, pr) }})
	default:
		pools := []string{}
		for _, np := range cl.GetNodePools() {
			pools = append(pools, np.GetName())
		}
		d.add(Step{What: "cluster " + cfg.Cluster, Action: ActDelete, Detail: fmt.Sprintf("with node pools %v; takes minutes", pools),
			apply: func(ctx context.Context, pr *progress) error { return c.deleteCluster(ctx, cfg, pr) }})
	}
	return nil
}

func (c *Clients) deleteCluster(ctx context.Context, cfg *Config, pr *progress) error {
	op, err := c.Cluster.DeleteCluster(ctx, &containerpb.DeleteClusterRequest{Name: cfg.clusterName()})
	if notFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return c.waitOp(ctx, cfg, op, pr)
}

// network is the network up made when the project had none, after the cluster on it.
func (d *downPlanner) network(ctx context.Context) error {
	nstep, err := d.c.planNetworkDown(ctx, &d.cfg)
	if err != nil {
		return err
	}
	if nstep != nil {
		d.add(*nstep)
	}
	return nil
}

// read finds whether the bucket and the service account are there.
func (d *downPlanner) read(ctx context.Context) error {
	_, bErr := d.st.Buckets.Get(d.bucket).Context(ctx).Do()
	d.bucketThere = bErr == nil
	if bErr != nil && httpCode(bErr) != http.StatusNotFound {
		return apiErr("read the bucket "+d.bucket, bErr)
	}
	_, saErr := d.c.IAM.GetServiceAccount(ctx, &adminpb.GetServiceAccountRequest{Name: d.cfg.accountName()})
	if saErr != nil && !notFound(saErr) {
		return apiErr("read the service account "+d.cfg.AccountEmail(), saErr)
	}
	d.accountThere = !notFound(saErr)
	return nil
}

// bucketBinding removes the service account's role on a bucket that stays.
func (d *downPlanner) bucketBinding(ctx context.Context) error {
	if !d.bucketThere || d.o.ForceDestroy {
		return nil
	}
	st, bucket, member := d.st, d.bucket, "serviceAccount:"+d.cfg.AccountEmail()
	pol, err := st.Buckets.GetIamPolicy(bucket).Context(ctx).Do()
	if err != nil {
		return apiErr("read the IAM policy of bucket "+bucket, err)
	}
	if hasStorageBinding(pol, RoleStorage, member) {
		d.add(Step{What: fmt.Sprintf("%s on gs://%s for %s", RoleStorage, bucket, d.cfg.AccountEmail()), Action: ActDelete,
			apply: func(ctx context.Context, pr *progress) error {
				return revokeBucket(ctx, st, bucket, RoleStorage, member)
			}})
	}
	return nil
}

// account deletes the service account of job pods.
func (d *downPlanner) account(context.Context) error {
	c, cfg := d.c, &d.cfg
	if !d.accountThere {
		d.gone("service account " + cfg.AccountEmail())
		return nil
	}
	d.add(Step{What: "service account " + cfg.AccountEmail(), Action: ActDelete,
		apply: func(ctx context.Context, pr *progress) error {
			err := c.IAM.DeleteServiceAccount(ctx, &adminpb.DeleteServiceAccountRequest{Name: cfg.accountName()})
			if notFound(err) {
				return nil
			}
			return err
		}})
	return nil
}

// storeBucket deletes the bucket only with ForceDestroy.
func (d *downPlanner) storeBucket(context.Context) error {
	st, bucket := d.st, d.bucket
	switch {
	case !d.bucketThere:
		d.gone("store bucket gs://" + bucket)
	case d.o.ForceDestroy:
		d.add(Step{What: "store bucket gs://" + bucket, Action: ActDelete, Detail: "--force-destroy: every job record and output in it",
			apply: func(ctx context.Context, pr *progress) error { return deleteBucket(ctx, st, bucket, pr) }})
	default:
		d.add(Step{What: "store bucket gs://" + bucket, Action: ActKeep, Detail: "job records and outputs stay; --force-destroy deletes it"})
	}
	return nil
}

// repository deletes the Artifact Registry repository and its images.
func (d *downPlanner) repository(ctx context.Context) error {
	c, cfg := d.c, &d.cfg
	_, err := c.Registry.GetRepository(ctx, &artifactregistrypb.GetRepositoryRequest{Name: cfg.repoName()})
	switch {
	case notFound(err):
		d.gone("Artifact Registry repository " + cfg.Repository())
	case err != nil:
		return apiErr("read the repository "+cfg.repoName(), err)
	default:
		d.add(Step{What: "Artifact Registry repository " + cfg.Repository(), Action: ActDelete, Detail: "and every image in it",
			apply: func(ctx context.Context, pr *progress) error { return c.deleteRepo(ctx, cfg, pr) }})
	}
	return nil
}

func (c *Clients) deleteRepo(ctx context.Context, cfg *Config, pr *progress) error {
	op, err := c.Registry.DeleteRepository(ctx, &artifactregistrypb.DeleteRepositoryRequest{Name: cfg.repoName()})
	if notFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	pr.op = op.Name()
	for !op.Done() {
		pr.tick("deleting")
		if err := pr.sleep(ctx); err != nil {
			return err
		}
		if err := op.Poll(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (c *Clients) waitClusterGone(ctx context.Context, cfg *Config, pr *progress) error {
	for {
		_, err := c.Cluster.GetCluster(ctx, &containerpb.GetClusterRequest{Name: cfg.clusterName()})
		if notFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		pr.tick("deleting")
		if err := pr.sleep(ctx); err != nil {
			return err
		}
	}
}

// deleteBucket deletes every object, then the bucket.
func deleteBucket(ctx context.Context, st *storagev1.Service, bucket string, pr *progress) error {
	n := 0
	err := st.Objects.List(bucket).Context(ctx).Pages(ctx, func(l *storagev1.Objects) error {
		for _, o := range l.Items {
			if err := st.Objects.Delete(bucket, o.Name).Context(ctx).Do(); err != nil && httpCode(err) != http.StatusNotFound {
				return fmt.Errorf("delete gs://%s/%s: %w", bucket, o.Name, err)
			}
			n++
			if n%1000 == 0 {
				fmt.Fprintf(pr.w, "    … deleted %d objects\n", n)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := st.Buckets.Delete(bucket).Context(ctx).Do(); err != nil && httpCode(err) != http.StatusNotFound {
		return err
	}
	return nil
}

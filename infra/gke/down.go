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

// PlanDown reads what up created and plans its deletion, in the reverse of up's order:
// the cluster (with its pools, and what up put in it: LeaderWorkerSet, the Kubernetes
// service account), the service account (its role on a kept bucket is removed first),
// the bucket only with ForceDestroy, the repository (with its images). The APIs up
// enabled stay enabled (other things in the project may use them).
func PlanDown(ctx context.Context, c *Clients, cfg Config, o DownOptions) (*Plan, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	p := &Plan{Title: fmt.Sprintf("GKE: project %s, zone %s, cluster %s", cfg.Project, cfg.Zone, cfg.Cluster), poll: cfg.Poll}
	bucket, endpoint := cfg.Bucket()
	st, err := storageService(ctx, endpoint)
	if err != nil {
		return nil, err
	}
	gone := func(what string) { p.Steps = append(p.Steps, Step{What: what, Action: ActOK, Detail: "not there"}) }

	cl, err := c.Cluster.GetCluster(ctx, &containerpb.GetClusterRequest{Name: cfg.clusterName()})
	switch {
	case notFound(err):
		gone("cluster " + cfg.Cluster)
	case err != nil:
		return nil, apiErr("read the cluster "+cfg.clusterName(), err)
	case cl.GetStatus() == containerpb.Cluster_STOPPING:
		p.Steps = append(p.Steps, Step{What: "cluster " + cfg.Cluster, Action: ActWait, Detail: "being deleted by an earlier operation",
			apply: func(ctx context.Context, pr *progress) error { return c.waitClusterGone(ctx, &cfg, pr) }})
	default:
		pools := []string{}
		for _, np := range cl.GetNodePools() {
			pools = append(pools, np.GetName())
		}
		p.Steps = append(p.Steps, Step{What: "cluster " + cfg.Cluster, Action: ActDelete, Detail: fmt.Sprintf("with node pools %v; takes minutes", pools),
			apply: func(ctx context.Context, pr *progress) error {
				op, err := c.Cluster.DeleteCluster(ctx, &containerpb.DeleteClusterRequest{Name: cfg.clusterName()})
				if notFound(err) {
					return nil
				}
				if err != nil {
					return err
				}
				return c.waitOp(ctx, &cfg, op, pr)
			}})
	}

	// The network up made when the project had none, after the cluster on it.
	nstep, err := c.planNetworkDown(ctx, &cfg)
	if err != nil {
		return nil, err
	}
	if nstep != nil {
		p.Steps = append(p.Steps, *nstep)
	}

	member := "serviceAccount:" + cfg.AccountEmail()
	_, bErr := st.Buckets.Get(bucket).Context(ctx).Do()
	bucketThere := bErr == nil
	if bErr != nil && httpCode(bErr) != http.StatusNotFound {
		return nil, apiErr("read the bucket "+bucket, bErr)
	}
	_, saErr := c.IAM.GetServiceAccount(ctx, &adminpb.GetServiceAccountRequest{Name: cfg.accountName()})
	if saErr != nil && !notFound(saErr) {
		return nil, apiErr("read the service account "+cfg.AccountEmail(), saErr)
	}
	if bucketThere && !o.ForceDestroy {
		pol, err := st.Buckets.GetIamPolicy(bucket).Context(ctx).Do()
		if err != nil {
			return nil, apiErr("read the IAM policy of bucket "+bucket, err)
		}
		if hasStorageBinding(pol, RoleStorage, member) {
			p.Steps = append(p.Steps, Step{What: fmt.Sprintf("%s on gs://%s for %s", RoleStorage, bucket, cfg.AccountEmail()), Action: ActDelete,
				apply: func(ctx context.Context, pr *progress) error {
					return revokeBucket(ctx, st, bucket, RoleStorage, member)
				}})
		}
	}
	if notFound(saErr) {
		gone("service account " + cfg.AccountEmail())
	} else {
		p.Steps = append(p.Steps, Step{What: "service account " + cfg.AccountEmail(), Action: ActDelete,
			apply: func(ctx context.Context, pr *progress) error {
				err := c.IAM.DeleteServiceAccount(ctx, &adminpb.DeleteServiceAccountRequest{Name: cfg.accountName()})
				if notFound(err) {
					return nil
				}
				return err
			}})
	}

	switch {
	case !bucketThere:
		gone("store bucket gs://" + bucket)
	case o.ForceDestroy:
		p.Steps = append(p.Steps, Step{What: "store bucket gs://" + bucket, Action: ActDelete, Detail: "--force-destroy: every job record and output in it",
			apply: func(ctx context.Context, pr *progress) error { return deleteBucket(ctx, st, bucket, pr) }})
	default:
		p.Steps = append(p.Steps, Step{What: "store bucket gs://" + bucket, Action: ActKeep, Detail: "job records and outputs stay; --force-destroy deletes it"})
	}
	// The repository last: up made it first.
	if _, err := c.Registry.GetRepository(ctx, &artifactregistrypb.GetRepositoryRequest{Name: cfg.repoName()}); notFound(err) {
		gone("Artifact Registry repository " + cfg.Repository())
	} else if err != nil {
		return nil, apiErr("read the repository "+cfg.repoName(), err)
	} else {
		p.Steps = append(p.Steps, Step{What: "Artifact Registry repository " + cfg.Repository(), Action: ActDelete, Detail: "and every image in it",
			apply: func(ctx context.Context, pr *progress) error {
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
			}})
	}

	return p, nil
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

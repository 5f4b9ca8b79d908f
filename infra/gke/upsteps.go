package gke

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"cloud.google.com/go/artifactregistry/apiv1/artifactregistrypb"
	"cloud.google.com/go/container/apiv1/containerpb"
	"cloud.google.com/go/iam"
	admin "cloud.google.com/go/iam/admin/apiv1"
	"cloud.google.com/go/iam/admin/apiv1/adminpb"
	"cloud.google.com/go/iam/apiv1/iampb"
	storagev1 "google.golang.org/api/storage/v1"

	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/image"
	"github.com/kinetic-run/kinetic/store"
	"github.com/kinetic-run/kinetic/store/gcs"
)

// upPlanner holds what PlanUp's steps read and plan: each step reads one resource and
// appends the step that makes it (or says it is there) to p.
type upPlanner struct {
	c   *Clients
	cfg Config
	p   *Plan

	st             *storagev1.Service
	bucket         string
	cl             *containerpb.Cluster // the cluster as read; nil when it is (re)created
	repoMissing    bool
	bucketMissing  bool
	accountMissing bool
}

// upStep is one resource of PlanUp.
type upStep struct {
	name string
	plan func(u *upPlanner, ctx context.Context) error
}

// upSteps are PlanUp's resources, in dependency order.
var upSteps = []upStep{
	{"repository", (*upPlanner).repository},
	{"bucket", (*upPlanner).storeBucket},
	{"service account", (*upPlanner).account},
	{"cluster", (*upPlanner).cluster},
	{"first pool", (*upPlanner).firstPool},
	{"bucket binding", (*upPlanner).bucketBinding},
	{"registry binding", (*upPlanner).registryBinding},
	{"identity binding", (*upPlanner).identityBinding},
	{"kubernetes", (*upPlanner).kube},
	{"runner image", (*upPlanner).runner},
}

// PlanUp reads what exists (reads only) and plans what up creates or changes, in
// dependency order: repository, bucket, service account, cluster, the three role
// bindings, the runner image. When a required API is off, the plan is only the step
// that enables it (Replan): apply it, then plan again.
func PlanUp(ctx context.Context, c *Clients, cfg Config) (_ *Plan, err error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	defer func() { err = stillDisabled(err, cfg.Project) }()
	u := &upPlanner{c: c, cfg: cfg, p: &Plan{Title: fmt.Sprintf("GKE: project %s, zone %s, cluster %s", cfg.Project, cfg.Zone, cfg.Cluster), poll: cfg.Poll}}
	// The APIs first: nothing else can be read while they are off.
	if done, err := u.apis(ctx); err != nil || done {
		return u.p, err
	}
	for _, s := range upSteps {
		if err := s.plan(u, ctx); err != nil {
			return nil, err
		}
	}
	return u.p, nil
}

// stillDisabled rewords a disabled API met inside up: "an API is disabled: run kinetic
// up" would send the user round in a circle: the APIs step said they are enabled, so
// Google has not caught up yet.
func stillDisabled(err error, project string) error {
	if err == nil || !serviceDisabled(err) || strings.Contains(err.Error(), "quota project") {
		return err
	}
	inner := err
	var ae *apiError
	if errors.As(err, &ae) {
		inner = ae.err
	}
	_, msg := describe(inner)
	return &apiError{text: fmt.Sprintf("Google still refuses calls to an API of project %s that is enabled (%s): an API enabled minutes ago takes a while to answer; run the same command again in a few minutes", project, msg), code: errs.Unavailable, err: err}
}

// apis plans the APIs; done when some are off (the plan is only their step) and opens
// the storage service otherwise.
func (u *upPlanner) apis(ctx context.Context) (done bool, err error) {
	apis, missing, err := u.c.planAPIs(ctx, &u.cfg)
	if err != nil {
		return true, err
	}
	u.p.Steps = append(u.p.Steps, apis)
	if missing {
		u.p.Replan = true
		u.p.Notes = append(u.p.Notes, "the rest is planned once these APIs are enabled (what exists cannot be read before)")
		return true, nil
	}
	var endpoint string
	u.bucket, endpoint = u.cfg.Bucket()
	u.st, err = storageService(ctx, endpoint)
	return err != nil, err
}

func (u *upPlanner) add(s Step) { u.p.Steps = append(u.p.Steps, s) }

// exists plans what: ok when read found it, create (with apply) when it is missing.
func (u *upPlanner) exists(what string, missing bool, readErr error, read string, apply func(context.Context, *progress) error) (bool, error) {
	switch {
	case missing:
		u.add(Step{What: what, Action: ActCreate, apply: apply})
	case readErr != nil:
		return false, apiErr(read, readErr)
	default:
		u.add(Step{What: what, Action: ActOK})
	}
	return missing, nil
}

// repository is the Artifact Registry repository.
func (u *upPlanner) repository(ctx context.Context) (err error) {
	cfg := &u.cfg
	_, rerr := u.c.Registry.GetRepository(ctx, &artifactregistrypb.GetRepositoryRequest{Name: cfg.repoName()})
	u.repoMissing, err = u.exists(fmt.Sprintf("Artifact Registry repository %s (%s)", cfg.Repository(), cfg.RepoHost()), notFound(rerr), rerr,
		"read the repository "+cfg.repoName(), func(ctx context.Context, pr *progress) error { return u.c.createRepo(ctx, cfg, pr) })
	return err
}

// storeBucket is the store bucket.
func (u *upPlanner) storeBucket(ctx context.Context) (err error) {
	cfg := &u.cfg
	_, rerr := u.st.Buckets.Get(u.bucket).Context(ctx).Do()
	u.bucketMissing, err = u.exists(fmt.Sprintf("store bucket gs://%s (jobs/, groups/, blobs/ expire after %d days)", u.bucket, store.RetentionDays),
		httpCode(rerr) == http.StatusNotFound, rerr, "read the bucket "+u.bucket, func(ctx context.Context, pr *progress) error {
			err := gcs.CreateBucket(ctx, cfg.Store, gcs.BucketOptions{Project: cfg.Project, Location: Region(cfg.Zone)})
			if errors.Is(err, gcs.ErrBucketExists) {
				return nil
			}
			return err
		})
	return err
}

// account is the Google service account of job pods.
func (u *upPlanner) account(ctx context.Context) (err error) {
	cfg := &u.cfg
	_, rerr := u.c.IAM.GetServiceAccount(ctx, &adminpb.GetServiceAccountRequest{Name: cfg.accountName()})
	u.accountMissing, err = u.exists("service account "+cfg.AccountEmail()+" (job pods act as it)", notFound(rerr), rerr,
		"read the service account "+cfg.AccountEmail(), func(ctx context.Context, pr *progress) error {
			_, err := u.c.IAM.CreateServiceAccount(ctx, &adminpb.CreateServiceAccountRequest{Name: "projects/" + cfg.Project, AccountId: cfg.AccountID(),
				ServiceAccount: &adminpb.ServiceAccount{DisplayName: "Kinetic job pods", Description: "Kinetic job pods (Workload Identity); made by kinetic up"}})
			if exists(err) {
				return nil
			}
			return err
		})
	return err
}

// cluster is the cluster and its system pool, by the state Google reports.
func (u *upPlanner) cluster(ctx context.Context) error {
	cl, err := u.c.Cluster.GetCluster(ctx, &containerpb.GetClusterRequest{Name: u.cfg.clusterName()})
	u.cl = cl
	switch {
	case notFound(err):
		return u.newCluster(ctx)
	case err != nil:
		return apiErr("read the cluster "+u.cfg.clusterName(), err)
	case cl.GetStatus() == containerpb.Cluster_STOPPING:
		return fmt.Errorf("cluster %s is being deleted: wait until `kinetic status` no longer shows it, then run up again", u.cfg.Cluster)
	case cl.GetStatus() == containerpb.Cluster_ERROR:
		return u.recreateCluster(ctx)
	case cl.GetStatus() == containerpb.Cluster_PROVISIONING || cl.GetStatus() == containerpb.Cluster_RECONCILING:
		u.add(Step{What: "cluster " + u.cfg.Cluster, Action: ActWait, Detail: "an operation started earlier is " + strings.ToLower(cl.GetStatus().String()) + " it",
			apply: func(ctx context.Context, pr *progress) error { return u.c.waitCluster(ctx, &u.cfg, pr) }})
		return nil
	}
	return u.runningCluster(ctx)
}

// newCluster plans a cluster that does not exist (and its network when needed).
func (u *upPlanner) newCluster(ctx context.Context) error {
	c, cfg := u.c, &u.cfg
	mt, err := c.systemMachineType(ctx, cfg, u.p)
	if err != nil {
		return err
	}
	spec := clusterSpec(cfg, mt)
	network, nstep, err := c.planNetwork(ctx, cfg)
	if err != nil {
		return err
	}
	if nstep != nil {
		u.add(*nstep)
	}
	spec.Network = network
	u.add(Step{What: "cluster " + cfg.Cluster, Action: ActCreate,
		Detail: fmt.Sprintf("Workload Identity, GCS FUSE CSI driver, system pool of %s, 1–3 nodes; takes minutes", mt),
		apply: func(ctx context.Context, pr *progress) error {
			op, err := c.Cluster.CreateCluster(ctx, &containerpb.CreateClusterRequest{Parent: cfg.location(), Cluster: spec})
			if exists(err) {
				return c.waitCluster(ctx, cfg, pr)
			}
			if err != nil {
				return err
			}
			return c.waitOp(ctx, cfg, op, pr)
		}})
	return nil
}

// recreateCluster plans a cluster in ERROR: an operation failed at Google (a quota, a
// stockout) and left it so: never "ok"; it is deleted and created again.
func (u *upPlanner) recreateCluster(ctx context.Context) error {
	c, cfg, cl := u.c, &u.cfg, u.cl
	mt, err := c.systemMachineType(ctx, cfg, u.p)
	if err != nil {
		return err
	}
	spec := clusterSpec(cfg, mt)
	spec.Network = cl.GetNetwork()
	if spec.Network == "default" {
		spec.Network = ""
	}
	u.add(Step{What: "cluster " + cfg.Cluster, Action: ActRecreate,
		Detail: "it is in ERROR at Google (" + firstLine(cl.GetStatusMessage()) + "): deleted and created again; takes minutes",
		apply:  func(ctx context.Context, pr *progress) error { return c.recreate(ctx, cfg, spec, pr) }})
	u.cl = nil // nothing of it stays: its pools are planned as new
	return nil
}

// recreate deletes the cluster (when it is still there) and creates spec.
func (c *Clients) recreate(ctx context.Context, cfg *Config, spec *containerpb.Cluster, pr *progress) error {
	op, err := c.Cluster.DeleteCluster(ctx, &containerpb.DeleteClusterRequest{Name: cfg.clusterName()})
	if err != nil && !notFound(err) {
		return err
	}
	if err == nil {
		if err := c.waitOp(ctx, cfg, op, pr); err != nil {
			return err
		}
	}
	if op, err = c.Cluster.CreateCluster(ctx, &containerpb.CreateClusterRequest{Parent: cfg.location(), Cluster: spec}); err != nil {
		return err
	}
	return c.waitOp(ctx, cfg, op, pr)
}

// runningCluster plans a cluster that is there: what it lacks is updated.
func (u *upPlanner) runningCluster(ctx context.Context) error {
	c, cfg, cl := u.c, &u.cfg, u.cl
	u.add(Step{What: "cluster " + cfg.Cluster, Action: ActOK, Detail: cl.GetStatus().String()})
	if cl.GetWorkloadIdentityConfig().GetWorkloadPool() != cfg.WorkloadPool() {
		u.add(Step{What: "Workload Identity on cluster " + cfg.Cluster, Action: ActUpdate, Detail: "pool " + cfg.WorkloadPool(),
			apply: func(ctx context.Context, pr *progress) error {
				return c.updateCluster(ctx, cfg, pr, &containerpb.ClusterUpdate{DesiredWorkloadIdentityConfig: &containerpb.WorkloadIdentityConfig{WorkloadPool: cfg.WorkloadPool()}})
			}})
	}
	if !cl.GetAddonsConfig().GetGcsFuseCsiDriverConfig().GetEnabled() {
		u.add(Step{What: "GCS FUSE CSI driver on cluster " + cfg.Cluster, Action: ActUpdate,
			apply: func(ctx context.Context, pr *progress) error {
				return c.updateCluster(ctx, cfg, pr, &containerpb.ClusterUpdate{DesiredAddonsConfig: &containerpb.AddonsConfig{GcsFuseCsiDriverConfig: &containerpb.GcsFuseCsiDriverConfig{Enabled: true}}})
			}})
	}
	if slices.ContainsFunc(cl.GetNodePools(), func(np *containerpb.NodePool) bool { return np.GetName() == SystemPool }) || len(cl.GetNodePools()) != 0 {
		return nil
	}
	return u.systemPool(ctx)
}

// systemPool plans the system pool of a cluster that has no pool at all.
func (u *upPlanner) systemPool(ctx context.Context) error {
	c, cfg := u.c, &u.cfg
	offered, err := c.zoneMachineTypes(ctx, cfg)
	if err != nil {
		return err
	}
	mt, note, err := pickSystemMachineType(cfg.Zone, offered)
	if err != nil {
		return err
	}
	if note != "" {
		u.p.Notes = append(u.p.Notes, note)
	}
	u.p.SystemMachineType = mt
	u.add(Step{What: "node pool " + SystemPool, Action: ActCreate, Detail: mt,
		apply: func(ctx context.Context, pr *progress) error {
			op, err := c.whenIdle(ctx, cfg, pr, func() (*containerpb.Operation, error) {
				return c.Cluster.CreateNodePool(ctx, &containerpb.CreateNodePoolRequest{Parent: cfg.clusterName(), NodePool: systemPool(mt)})
			})
			if exists(err) {
				return nil
			}
			if err != nil {
				return err
			}
			return c.waitOp(ctx, cfg, op, pr)
		}})
	return nil
}

// firstPool is the first accelerator pool (up --accelerator): pool add's step, after
// the cluster.
func (u *upPlanner) firstPool(context.Context) error {
	if u.cfg.Pool == nil {
		return nil
	}
	np, sp, err := NodePoolFor(*u.cfg.Pool)
	if err != nil {
		return err
	}
	st, err := u.c.poolStep(&u.cfg, np, sp, u.cl.GetNodePools())
	if err != nil {
		return err
	}
	u.add(st)
	return nil
}

// bucketBinding lets the pods' service account use the bucket.
func (u *upPlanner) bucketBinding(ctx context.Context) error {
	cfg, st, bucket := &u.cfg, u.st, u.bucket
	member := "serviceAccount:" + cfg.AccountEmail()
	need := u.bucketMissing || u.accountMissing
	if !need {
		pol, err := st.Buckets.GetIamPolicy(bucket).Context(ctx).Do()
		if err != nil {
			return apiErr("read the IAM policy of bucket "+bucket, err)
		}
		need = !hasStorageBinding(pol, RoleStorage, member)
	}
	u.add(Step{What: fmt.Sprintf("%s on gs://%s for %s", RoleStorage, bucket, cfg.AccountEmail()), Action: act(need),
		apply: func(ctx context.Context, pr *progress) error {
			return grantBucket(ctx, st, bucket, RoleStorage, member)
		}})
	return nil
}

// registryBinding lets the nodes pull from the repository.
func (u *upPlanner) registryBinding(ctx context.Context) error {
	c, cfg := u.c, &u.cfg
	proj, err := c.Compute.Projects.Get(cfg.Project).Context(ctx).Do()
	if err != nil {
		return apiErr("read project "+cfg.Project, err)
	}
	nodeMember := "serviceAccount:" + proj.DefaultServiceAccount
	need := u.repoMissing
	if !need {
		pol, err := c.Registry.GetIamPolicy(ctx, &iampb.GetIamPolicyRequest{Resource: cfg.repoName()})
		if err != nil {
			return apiErr("read the IAM policy of repository "+cfg.repoName(), err)
		}
		need = !hasBinding(pol, RoleRegistryRead, nodeMember)
	}
	u.add(Step{What: fmt.Sprintf("%s on repository %s for the nodes (%s)", RoleRegistryRead, cfg.Repository(), proj.DefaultServiceAccount), Action: act(need),
		apply: func(ctx context.Context, pr *progress) error {
			pol, err := c.Registry.GetIamPolicy(ctx, &iampb.GetIamPolicyRequest{Resource: cfg.repoName()})
			if err != nil {
				return err
			}
			if !addBinding(pol, RoleRegistryRead, nodeMember) {
				return nil
			}
			_, err = c.Registry.SetIamPolicy(ctx, &iampb.SetIamPolicyRequest{Resource: cfg.repoName(), Policy: pol})
			return err
		}})
	return nil
}

// identityBinding lets the Kubernetes service account act as the Google one.
func (u *upPlanner) identityBinding(ctx context.Context) error {
	c, cfg := u.c, &u.cfg
	need := u.accountMissing
	if !need {
		pol, err := c.IAM.GetIamPolicy(ctx, &iampb.GetIamPolicyRequest{Resource: cfg.accountName()})
		if err != nil {
			return apiErr("read the IAM policy of "+cfg.AccountEmail(), err)
		}
		need = !hasBinding(pol.InternalProto, RoleWorkloadIdentity, cfg.KubeMember())
	}
	u.add(Step{What: fmt.Sprintf("%s on %s for Kubernetes service account %s/%s", RoleWorkloadIdentity, cfg.AccountEmail(), cfg.Namespace, KubeServiceAccount), Action: act(need),
		apply: func(ctx context.Context, pr *progress) error {
			pol, err := c.IAM.GetIamPolicy(ctx, &iampb.GetIamPolicyRequest{Resource: cfg.accountName()})
			if err != nil {
				return err
			}
			if !addBinding(pol.InternalProto, RoleWorkloadIdentity, cfg.KubeMember()) {
				return nil
			}
			_, err = c.IAM.SetIamPolicy(ctx, &admin.SetIamPolicyRequest{Resource: cfg.accountName(), Policy: &iam.Policy{InternalProto: pol.InternalProto}})
			return err
		}})
	return nil
}

// kube is the Kubernetes service account of job pods and LeaderWorkerSet, once the
// cluster runs. A running cluster without an endpoint (only the fakes of Google's APIs
// have one) is left out.
func (u *upPlanner) kube(ctx context.Context) error {
	cl := u.cl
	if u.cfg.Kube == nil || (cl != nil && cl.GetStatus() == containerpb.Cluster_RUNNING && cl.GetEndpoint() == "") {
		return nil
	}
	var running *containerpb.Cluster
	if cl != nil && cl.GetStatus() == containerpb.Cluster_RUNNING {
		running = cl
	}
	s, err := u.c.kubeStep(ctx, &u.cfg, running)
	if err != nil {
		return err
	}
	u.add(s)
	if s, err = u.c.lwsStep(ctx, &u.cfg, running); err != nil {
		return err
	}
	u.add(s)
	return nil
}

// runner is the runner image: found by digest, or published.
func (u *upPlanner) runner(ctx context.Context) error {
	cfg := &u.cfg
	if cfg.Runner == nil {
		return nil
	}
	ref, ok, err := "", false, error(nil)
	if !u.repoMissing || cfg.Registry != cfg.RepoHost() {
		if ref, ok, err = cfg.Runner.Find(ctx, cfg.Registry); err != nil {
			return err
		}
	}
	if ok {
		u.p.RunnerImage = ref
		u.add(Step{What: "runner image " + ref, Action: ActOK})
		return nil
	}
	u.add(Step{What: "runner image in " + cfg.Registry + "/" + image.RunnerRepoName, Action: ActPublish, Detail: "linux/amd64, linux/arm64",
		apply: func(ctx context.Context, pr *progress) error {
			ref, err := cfg.Runner.Publish(ctx, cfg.Registry, pr.w)
			u.p.RunnerImage = ref
			return err
		}})
	return nil
}

package gke

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"cloud.google.com/go/artifactregistry/apiv1/artifactregistrypb"
	"cloud.google.com/go/container/apiv1/containerpb"
	"cloud.google.com/go/iam"
	admin "cloud.google.com/go/iam/admin/apiv1"
	"cloud.google.com/go/iam/admin/apiv1/adminpb"
	"cloud.google.com/go/iam/apiv1/iampb"
	"google.golang.org/api/googleapi"
	storagev1 "google.golang.org/api/storage/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/image"
	"github.com/kinetic-run/kinetic/store"
	"github.com/kinetic-run/kinetic/store/gcs"
)

// Runner finds and publishes the runner image in a registry.
type Runner interface {
	// Find returns the runner image by digest when registry holds it (one HEAD).
	Find(ctx context.Context, registry string) (ref string, ok bool, err error)
	// Publish pushes it and returns it by digest.
	Publish(ctx context.Context, registry string, progress io.Writer) (string, error)
}

// ImageRunner is the Runner of image.PublishRunner: this CLI's runner binaries.
type ImageRunner struct {
	Images *image.Client
	Source image.RunnerSource
}

func (r ImageRunner) repo(ctx context.Context, registry string) (string, map[string]string, string, error) {
	bins, err := r.Source.Binaries(ctx)
	if err != nil {
		return "", nil, "", err
	}
	tag, err := image.RunnerTag(bins)
	return strings.TrimSuffix(registry, "/") + "/" + image.RunnerRepoName, bins, tag, err
}

// Find implements Runner.
func (r ImageRunner) Find(ctx context.Context, registry string) (string, bool, error) {
	repoName, _, tag, err := r.repo(ctx, registry)
	if err != nil {
		return "", false, err
	}
	repo, err := image.ParseRepository(repoName)
	if err != nil {
		return "", false, err
	}
	h, ok, err := r.Images.Lookup(ctx, repo.Tag(tag))
	if err != nil || !ok {
		return repo.Tag(tag).Name(), false, err
	}
	return repo.Digest(h.String()).Name(), true, nil
}

// Publish implements Runner.
func (r ImageRunner) Publish(ctx context.Context, registry string, progress io.Writer) (string, error) {
	repoName, bins, _, err := r.repo(ctx, registry)
	if err != nil {
		return "", err
	}
	repo, err := image.ParseRepository(repoName)
	if err != nil {
		return "", err
	}
	d, err := r.Images.PublishRunner(ctx, repo, bins, progress)
	return d.Name(), err
}

// PlanUp reads what exists (reads only) and plans what up creates or changes, in
// dependency order: repository, bucket, service account, cluster, the three role
// bindings, the runner image. When a required API is off, the plan is only the step
// that enables it (Replan): apply it, then plan again.
func PlanUp(ctx context.Context, c *Clients, cfg Config) (_ *Plan, err error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	defer func() {
		// Inside up, "an API is disabled: run kinetic up" would send the user round in a
		// circle: the APIs step said they are enabled, so Google has not caught up yet.
		if err != nil && serviceDisabled(err) && !strings.Contains(err.Error(), "quota project") {
			inner := err
			var ae *apiError
			if errors.As(err, &ae) {
				inner = ae.err
			}
			_, msg := describe(inner)
			err = &apiError{text: fmt.Sprintf("Google still refuses calls to an API of project %s that is enabled (%s): an API enabled minutes ago takes a while to answer; run the same command again in a few minutes", cfg.Project, msg), code: errs.Unavailable, err: err}
		}
	}()
	p := &Plan{Title: fmt.Sprintf("GKE: project %s, zone %s, cluster %s", cfg.Project, cfg.Zone, cfg.Cluster), poll: cfg.Poll}

	// The APIs first: nothing else can be read while they are off.
	apis, missing, err := c.planAPIs(ctx, &cfg)
	if err != nil {
		return nil, err
	}
	p.Steps = append(p.Steps, apis)
	if missing {
		p.Replan = true
		p.Notes = append(p.Notes, "the rest is planned once these APIs are enabled (what exists cannot be read before)")
		return p, nil
	}
	bucket, endpoint := cfg.Bucket()
	st, err := storageService(ctx, endpoint)
	if err != nil {
		return nil, err
	}

	// The Artifact Registry repository.
	repoMissing := false
	what := fmt.Sprintf("Artifact Registry repository %s (%s)", cfg.Repository(), cfg.RepoHost())
	if _, err := c.Registry.GetRepository(ctx, &artifactregistrypb.GetRepositoryRequest{Name: cfg.repoName()}); notFound(err) {
		repoMissing = true
		p.Steps = append(p.Steps, Step{What: what, Action: ActCreate, apply: func(ctx context.Context, pr *progress) error {
			return c.createRepo(ctx, &cfg, pr)
		}})
	} else if err != nil {
		return nil, apiErr("read the repository "+cfg.repoName(), err)
	} else {
		p.Steps = append(p.Steps, Step{What: what, Action: ActOK})
	}

	// The store bucket.
	bucketMissing := false
	what = fmt.Sprintf("store bucket gs://%s (jobs/, groups/, blobs/ expire after %d days)", bucket, store.RetentionDays)
	if _, err := st.Buckets.Get(bucket).Context(ctx).Do(); httpCode(err) == http.StatusNotFound {
		bucketMissing = true
		p.Steps = append(p.Steps, Step{What: what, Action: ActCreate, apply: func(ctx context.Context, pr *progress) error {
			err := gcs.CreateBucket(ctx, cfg.Store, gcs.BucketOptions{Project: cfg.Project, Location: Region(cfg.Zone)})
			if errors.Is(err, gcs.ErrBucketExists) {
				return nil
			}
			return err
		}})
	} else if err != nil {
		return nil, apiErr("read the bucket "+bucket, err)
	} else {
		p.Steps = append(p.Steps, Step{What: what, Action: ActOK})
	}

	// The Google service account of job pods.
	saMissing := false
	what = "service account " + cfg.AccountEmail() + " (job pods act as it)"
	if _, err := c.IAM.GetServiceAccount(ctx, &adminpb.GetServiceAccountRequest{Name: cfg.accountName()}); notFound(err) {
		saMissing = true
		p.Steps = append(p.Steps, Step{What: what, Action: ActCreate, apply: func(ctx context.Context, pr *progress) error {
			_, err := c.IAM.CreateServiceAccount(ctx, &adminpb.CreateServiceAccountRequest{Name: "projects/" + cfg.Project, AccountId: cfg.AccountID(),
				ServiceAccount: &adminpb.ServiceAccount{DisplayName: "Kinetic job pods", Description: "Kinetic job pods (Workload Identity); made by kinetic up"}})
			if exists(err) {
				return nil
			}
			return err
		}})
	} else if err != nil {
		return nil, apiErr("read the service account "+cfg.AccountEmail(), err)
	} else {
		p.Steps = append(p.Steps, Step{What: what, Action: ActOK})
	}

	// The cluster and its system pool.
	cl, err := c.Cluster.GetCluster(ctx, &containerpb.GetClusterRequest{Name: cfg.clusterName()})
	switch {
	case notFound(err):
		mt, err := c.systemMachineType(ctx, &cfg, p)
		if err != nil {
			return nil, err
		}
		spec := clusterSpec(&cfg, mt)
		network, nstep, err := c.planNetwork(ctx, &cfg)
		if err != nil {
			return nil, err
		}
		if nstep != nil {
			p.Steps = append(p.Steps, *nstep)
		}
		spec.Network = network
		p.Steps = append(p.Steps, Step{What: "cluster " + cfg.Cluster, Action: ActCreate,
			Detail: fmt.Sprintf("Workload Identity, GCS FUSE CSI driver, system pool of %s, 1–3 nodes; takes minutes", mt),
			apply: func(ctx context.Context, pr *progress) error {
				op, err := c.Cluster.CreateCluster(ctx, &containerpb.CreateClusterRequest{Parent: cfg.location(), Cluster: spec})
				if exists(err) {
					return c.waitCluster(ctx, &cfg, pr)
				}
				if err != nil {
					return err
				}
				return c.waitOp(ctx, &cfg, op, pr)
			}})
	case err != nil:
		return nil, apiErr("read the cluster "+cfg.clusterName(), err)
	case cl.GetStatus() == containerpb.Cluster_STOPPING:
		return nil, fmt.Errorf("cluster %s is being deleted: wait until `kinetic status` no longer shows it, then run up again", cfg.Cluster)
	case cl.GetStatus() == containerpb.Cluster_ERROR:
		// An operation failed at Google (a quota, a stockout) and left the cluster in
		// ERROR: never "ok"; it is deleted and created again.
		mt, err := c.systemMachineType(ctx, &cfg, p)
		if err != nil {
			return nil, err
		}
		spec := clusterSpec(&cfg, mt)
		spec.Network = cl.GetNetwork()
		if spec.Network == "default" {
			spec.Network = ""
		}
		p.Steps = append(p.Steps, Step{What: "cluster " + cfg.Cluster, Action: ActRecreate,
			Detail: "it is in ERROR at Google (" + firstLine(cl.GetStatusMessage()) + "): deleted and created again; takes minutes",
			apply: func(ctx context.Context, pr *progress) error {
				op, err := c.Cluster.DeleteCluster(ctx, &containerpb.DeleteClusterRequest{Name: cfg.clusterName()})
				if err != nil && !notFound(err) {
					return err
				}
				if err == nil {
					if err := c.waitOp(ctx, &cfg, op, pr); err != nil {
						return err
					}
				}
				if op, err = c.Cluster.CreateCluster(ctx, &containerpb.CreateClusterRequest{Parent: cfg.location(), Cluster: spec}); err != nil {
					return err
				}
				return c.waitOp(ctx, &cfg, op, pr)
			}})
		cl = nil // nothing of it stays: its pools are planned as new
	case cl.GetStatus() == containerpb.Cluster_PROVISIONING || cl.GetStatus() == containerpb.Cluster_RECONCILING:
		p.Steps = append(p.Steps, Step{What: "cluster " + cfg.Cluster, Action: ActWait, Detail: "an operation started earlier is " + strings.ToLower(cl.GetStatus().String()) + " it",
			apply: func(ctx context.Context, pr *progress) error { return c.waitCluster(ctx, &cfg, pr) }})
	default:
		p.Steps = append(p.Steps, Step{What: "cluster " + cfg.Cluster, Action: ActOK, Detail: cl.GetStatus().String()})
		if cl.GetWorkloadIdentityConfig().GetWorkloadPool() != cfg.WorkloadPool() {
			p.Steps = append(p.Steps, Step{What: "Workload Identity on cluster " + cfg.Cluster, Action: ActUpdate, Detail: "pool " + cfg.WorkloadPool(),
				apply: func(ctx context.Context, pr *progress) error {
					return c.updateCluster(ctx, &cfg, pr, &containerpb.ClusterUpdate{DesiredWorkloadIdentityConfig: &containerpb.WorkloadIdentityConfig{WorkloadPool: cfg.WorkloadPool()}})
				}})
		}
		if !cl.GetAddonsConfig().GetGcsFuseCsiDriverConfig().GetEnabled() {
			p.Steps = append(p.Steps, Step{What: "GCS FUSE CSI driver on cluster " + cfg.Cluster, Action: ActUpdate,
				apply: func(ctx context.Context, pr *progress) error {
					return c.updateCluster(ctx, &cfg, pr, &containerpb.ClusterUpdate{DesiredAddonsConfig: &containerpb.AddonsConfig{GcsFuseCsiDriverConfig: &containerpb.GcsFuseCsiDriverConfig{Enabled: true}}})
				}})
		}
		if !slices.ContainsFunc(cl.GetNodePools(), func(np *containerpb.NodePool) bool { return np.GetName() == SystemPool }) && len(cl.GetNodePools()) == 0 {
			offered, err := c.zoneMachineTypes(ctx, &cfg)
			if err != nil {
				return nil, err
			}
			mt, note, err := pickSystemMachineType(cfg.Zone, offered)
			if err != nil {
				return nil, err
			}
			if note != "" {
				p.Notes = append(p.Notes, note)
			}
			p.SystemMachineType = mt
			p.Steps = append(p.Steps, Step{What: "node pool " + SystemPool, Action: ActCreate, Detail: mt,
				apply: func(ctx context.Context, pr *progress) error {
					op, err := c.whenIdle(ctx, &cfg, pr, func() (*containerpb.Operation, error) {
						return c.Cluster.CreateNodePool(ctx, &containerpb.CreateNodePoolRequest{Parent: cfg.clusterName(), NodePool: systemPool(mt)})
					})
					if exists(err) {
						return nil
					}
					if err != nil {
						return err
					}
					return c.waitOp(ctx, &cfg, op, pr)
				}})
		}
	}

	// The first accelerator pool (up --accelerator): pool add's step, after the cluster.
	if cfg.Pool != nil {
		np, sp, err := NodePoolFor(*cfg.Pool)
		if err != nil {
			return nil, err
		}
		st, err := c.poolStep(&cfg, np, sp, cl.GetNodePools())
		if err != nil {
			return nil, err
		}
		p.Steps = append(p.Steps, st)
	}

	// Role bindings, each on its one resource.
	member := "serviceAccount:" + cfg.AccountEmail()
	need := bucketMissing || saMissing
	if !need {
		pol, err := st.Buckets.GetIamPolicy(bucket).Context(ctx).Do()
		if err != nil {
			return nil, apiErr("read the IAM policy of bucket "+bucket, err)
		}
		need = !hasStorageBinding(pol, RoleStorage, member)
	}
	p.Steps = append(p.Steps, Step{What: fmt.Sprintf("%s on gs://%s for %s", RoleStorage, bucket, cfg.AccountEmail()), Action: act(need),
		apply: func(ctx context.Context, pr *progress) error {
			return grantBucket(ctx, st, bucket, RoleStorage, member)
		}})

	proj, err := c.Compute.Projects.Get(cfg.Project).Context(ctx).Do()
	if err != nil {
		return nil, apiErr("read project "+cfg.Project, err)
	}
	nodeMember := "serviceAccount:" + proj.DefaultServiceAccount
	need = repoMissing
	if !need {
		pol, err := c.Registry.GetIamPolicy(ctx, &iampb.GetIamPolicyRequest{Resource: cfg.repoName()})
		if err != nil {
			return nil, apiErr("read the IAM policy of repository "+cfg.repoName(), err)
		}
		need = !hasBinding(pol, RoleRegistryRead, nodeMember)
	}
	p.Steps = append(p.Steps, Step{What: fmt.Sprintf("%s on repository %s for the nodes (%s)", RoleRegistryRead, cfg.Repository(), proj.DefaultServiceAccount), Action: act(need),
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

	need = saMissing
	if !need {
		pol, err := c.IAM.GetIamPolicy(ctx, &iampb.GetIamPolicyRequest{Resource: cfg.accountName()})
		if err != nil {
			return nil, apiErr("read the IAM policy of "+cfg.AccountEmail(), err)
		}
		need = !hasBinding(pol.InternalProto, RoleWorkloadIdentity, cfg.KubeMember())
	}
	p.Steps = append(p.Steps, Step{What: fmt.Sprintf("%s on %s for Kubernetes service account %s/%s", RoleWorkloadIdentity, cfg.AccountEmail(), cfg.Namespace, KubeServiceAccount), Action: act(need),
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

	// The Kubernetes service account of job pods, once the cluster runs.
	// and LeaderWorkerSet. A running cluster without an endpoint (only the fakes of
	// Google's APIs have one) is left out.
	if cfg.Kube != nil && (cl == nil || cl.GetStatus() != containerpb.Cluster_RUNNING || cl.GetEndpoint() != "") {
		var running *containerpb.Cluster
		if cl != nil && cl.GetStatus() == containerpb.Cluster_RUNNING {
			running = cl
		}
		s, err := c.kubeStep(ctx, &cfg, running)
		if err != nil {
			return nil, err
		}
		p.Steps = append(p.Steps, s)
		if s, err = c.lwsStep(ctx, &cfg, running); err != nil {
			return nil, err
		}
		p.Steps = append(p.Steps, s)
	}

	// The runner image.
	if cfg.Runner != nil {
		ref, ok := "", false
		if !repoMissing || cfg.Registry != cfg.RepoHost() {
			ref, ok, err = cfg.Runner.Find(ctx, cfg.Registry)
			if err != nil {
				return nil, err
			}
		}
		if ok {
			p.RunnerImage = ref
			p.Steps = append(p.Steps, Step{What: "runner image " + ref, Action: ActOK})
		} else {
			p.Steps = append(p.Steps, Step{What: "runner image in " + cfg.Registry + "/" + image.RunnerRepoName, Action: ActPublish, Detail: "linux/amd64, linux/arm64",
				apply: func(ctx context.Context, pr *progress) error {
					ref, err := cfg.Runner.Publish(ctx, cfg.Registry, pr.w)
					p.RunnerImage = ref
					return err
				}})
		}
	}
	return p, nil
}

func act(need bool) string {
	if need {
		return ActCreate
	}
	return ActOK
}

func (c *Clients) createRepo(ctx context.Context, cfg *Config, pr *progress) error {
	op, err := c.Registry.CreateRepository(ctx, &artifactregistrypb.CreateRepositoryRequest{Parent: cfg.repoParent(), RepositoryId: cfg.Repository(),
		Repository: &artifactregistrypb.Repository{Format: artifactregistrypb.Repository_DOCKER, Description: "Kinetic images (kinetic up)", Labels: managedLabels()}})
	if exists(err) {
		return nil
	}
	if err != nil {
		return err
	}
	pr.op = op.Name()
	for !op.Done() {
		pr.tick("creating")
		if err := pr.sleep(ctx); err != nil {
			return err
		}
		if _, err := op.Poll(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (c *Clients) updateCluster(ctx context.Context, cfg *Config, pr *progress, u *containerpb.ClusterUpdate) error {
	op, err := c.whenIdle(ctx, cfg, pr, func() (*containerpb.Operation, error) {
		return c.Cluster.UpdateCluster(ctx, &containerpb.UpdateClusterRequest{Name: cfg.clusterName(), Update: u})
	})
	if err != nil {
		return err
	}
	return c.waitOp(ctx, cfg, op, pr)
}

func hasBinding(p *iampb.Policy, role, member string) bool {
	for _, b := range p.GetBindings() {
		if b.GetRole() == role && b.GetCondition() == nil && slices.Contains(b.GetMembers(), member) {
			return true
		}
	}
	return false
}

// addBinding adds member to role's binding; false if it was already there.
func addBinding(p *iampb.Policy, role, member string) bool {
	if hasBinding(p, role, member) {
		return false
	}
	for _, b := range p.Bindings {
		if b.GetRole() == role && b.GetCondition() == nil {
			b.Members = append(b.Members, member)
			return true
		}
	}
	p.Bindings = append(p.Bindings, &iampb.Binding{Role: role, Members: []string{member}})
	return true
}

// removeBinding takes member out of role's binding; false if it was not there.
func removeBinding(p *iampb.Policy, role, member string) bool {
	changed := false
	var keep []*iampb.Binding
	for _, b := range p.Bindings {
		if b.GetRole() == role && slices.Contains(b.Members, member) {
			b.Members = slices.DeleteFunc(b.Members, func(m string) bool { return m == member })
			changed = true
		}
		if len(b.Members) > 0 {
			keep = append(keep, b)
		}
	}
	p.Bindings = keep
	return changed
}

func hasStorageBinding(p *storagev1.Policy, role, member string) bool {
	for _, b := range p.Bindings {
		if b.Role == role && b.Condition == nil && slices.Contains(b.Members, member) {
			return true
		}
	}
	return false
}

func grantBucket(ctx context.Context, st *storagev1.Service, bucket, role, member string) error {
	pol, err := st.Buckets.GetIamPolicy(bucket).Context(ctx).Do()
	if err != nil {
		return err
	}
	if hasStorageBinding(pol, role, member) {
		return nil
	}
	pol.Bindings = append(pol.Bindings, &storagev1.PolicyBindings{Role: role, Members: []string{member}})
	_, err = st.Buckets.SetIamPolicy(bucket, pol).Context(ctx).Do()
	return err
}

func revokeBucket(ctx context.Context, st *storagev1.Service, bucket, role, member string) error {
	pol, err := st.Buckets.GetIamPolicy(bucket).Context(ctx).Do()
	if err != nil {
		return err
	}
	changed := false
	var keep []*storagev1.PolicyBindings
	for _, b := range pol.Bindings {
		if b.Role == role && slices.Contains(b.Members, member) {
			b.Members = slices.DeleteFunc(b.Members, func(m string) bool { return m == member })
			changed = true
		}
		if len(b.Members) > 0 {
			keep = append(keep, b)
		}
	}
	if !changed {
		return nil
	}
	pol.Bindings = keep
	_, err = st.Buckets.SetIamPolicy(bucket, pol).Context(ctx).Do()
	return err
}

func httpCode(err error) int {
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		return ge.Code
	}
	return 0
}

// apiErr words an API failure for a person, without gRPC's or HTTP's text: permission,
// sign-in, a disabled API and a missing project each get their fix. The original error
// stays in the chain (errors.Is/As, errs.CodeOf).
func apiErr(what string, err error) error {
	code, msg := describe(err)
	var text string
	switch {
	case code == errs.Cancelled:
		text = what + ": interrupted"
	case quotaRE.MatchString(msg):
		m := quotaRE.FindStringSubmatch(msg)
		text = fmt.Sprintf("%s: quota %s in %s %s is used up (limit %s): ask for more in the console (IAM & Admin → Quotas, filter by %s), or choose a zone in another region", what, m[1], m[3], m[4], m[2], m[1])
	case gkeQuotaRE.MatchString(msg):
		m := gkeQuotaRE.FindStringSubmatch(msg)
		text = fmt.Sprintf("%s: the project's %s quota of %s is used up (%s): ask for more in the console (IAM & Admin → Quotas, filter by %s), or choose a zone in another region", what, m[1], m[2], msg, m[2])
	case strings.Contains(msg, "requires a quota project"):
		text = fmt.Sprintf("%s: Google refuses user credentials without a quota project (%s): run `gcloud auth application-default set-quota-project PROJECT` with your project, then the command again", what, msg)
	case strings.Contains(msg, "has not been used") || strings.Contains(msg, "SERVICE_DISABLED") || strings.Contains(msg, "it is disabled"):
		text = fmt.Sprintf("%s: an API is disabled on the project (%s): run `kinetic up` (it enables the APIs it needs), or `gcloud services enable %s`", what, msg, strings.Join(RequiredAPIs, " "))
	case code == errs.PermissionDenied:
		text = fmt.Sprintf("%s: permission denied (%s): your account needs roles/container.admin, roles/artifactregistry.admin, roles/iam.serviceAccountAdmin, roles/storage.admin and roles/serviceusage.serviceUsageAdmin on the project; if the APIs are off, `gcloud services enable %s` (as an owner) turns them on", what, msg, strings.Join(RequiredAPIs, " "))
	case strings.Contains(msg, "Unauthenticated") || strings.Contains(msg, "could not find default credentials") || strings.Contains(msg, "oauth2") || strings.Contains(msg, "invalid_grant"):
		text = fmt.Sprintf("%s: not signed in to Google (%s): run `gcloud auth application-default login`, or set GOOGLE_APPLICATION_CREDENTIALS to a service-account key file", what, msg)
	case code == errs.NotFound && strings.Contains(msg, "project"):
		text = fmt.Sprintf("%s: no such project, or not visible to your account (%s): check --project", what, msg)
	case code == errs.Unavailable || code == errs.DeadlineExceeded:
		text = fmt.Sprintf("%s: Google's API did not answer (%s): check the network, then run the command again", what, msg)
	default:
		text = fmt.Sprintf("%s: %s", what, msg)
	}
	return &apiError{text: text, code: code, err: err}
}

// apiError is an API failure worded for a person.
type apiError struct {
	text string
	code errs.Code
	err  error
}

func (e *apiError) Error() string   { return e.text }
func (e *apiError) Unwrap() error   { return e.err }
func (e *apiError) Code() errs.Code { return e.code }

// describe is an error's code and its message as Google wrote it (no "rpc error: code
// = … desc =", no "googleapi: Error 403:").
func describe(err error) (errs.Code, string) {
	if errors.Is(err, context.Canceled) {
		return errs.Cancelled, "interrupted"
	}
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		msg := ge.Message
		if msg == "" {
			msg = http.StatusText(ge.Code)
		}
		switch ge.Code {
		case http.StatusForbidden:
			return errs.PermissionDenied, msg
		case http.StatusUnauthorized:
			return errs.PermissionDenied, "Unauthenticated: " + msg
		case http.StatusNotFound:
			return errs.NotFound, msg
		}
		return errs.Unavailable, msg
	}
	if st, ok := status.FromError(err); ok {
		switch st.Code() {
		case codes.PermissionDenied:
			return errs.PermissionDenied, st.Message()
		case codes.Unauthenticated:
			return errs.PermissionDenied, "Unauthenticated: " + st.Message()
		case codes.NotFound:
			return errs.NotFound, st.Message()
		case codes.Unavailable:
			return errs.Unavailable, st.Message()
		case codes.DeadlineExceeded:
			return errs.DeadlineExceeded, st.Message()
		case codes.Canceled:
			return errs.Cancelled, "interrupted"
		}
		return errs.Internal, st.Message()
	}
	return errs.CodeOf(err), err.Error()
}

// firstLine is the first line of Google's message, at most 200 characters.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	if s == "" {
		return "no message"
	}
	return s
}

// systemMachineType picks the machine type of a new cluster's system pool among those the
// zone offers, and records it (and why, when it is not the first choice) in p.
func (c *Clients) systemMachineType(ctx context.Context, cfg *Config, p *Plan) (string, error) {
	offered, err := c.zoneMachineTypes(ctx, cfg)
	if err != nil {
		return "", err
	}
	mt, note, err := pickSystemMachineType(cfg.Zone, offered)
	if err != nil {
		return "", err
	}
	p.SystemMachineType = mt
	if note != "" {
		p.Notes = append(p.Notes, note)
	}
	return mt, nil
}

package kubernetes

import (
	"context"
	"fmt"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/batch/driver"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// LWSResource is the LeaderWorkerSet API (sigs.k8s.io/lws) the Pathways backend
// creates, spoken through the dynamic client so the product does not depend on that
// module.
var LWSResource = schema.GroupVersionResource{Group: "leaderworkerset.x-k8s.io", Version: "v1", Resource: "leaderworkersets"}

// Labels LeaderWorkerSet puts on its pods.
const (
	lwsNameLabel        = "leaderworkerset.sigs.k8s.io/name"
	lwsWorkerIndexLabel = "leaderworkerset.sigs.k8s.io/worker-index"
	// LabelPathwaysApp is the app label of multi-host jobs (the API reference's list_jobs
	// selects app=kinetic-pathways for them).
	LabelPathwaysApp = "kinetic-pathways"
)

// Pathways runs multi-host jobs (a TPU slice over several VMs): one LeaderWorkerSet per
// job, with one group (replicas 1) of as many pods as the slice has hosts, recreated as
// a whole if any pod restarts. Every pod runs `kinetic runner --hold` with its host
// index (TPU_WORKER_ID, KINETIC_HOST_INDEX) from the worker-index label and the
// leader's address as MEGASCALE_COORDINATOR_ADDRESS. The leader (host 0) writes the
// job's result; any other host that fails writes its own envelope
// (jobs/ID/hosts/N/result.json), which fails the job at once.
//
// It shares the Kubernetes backend's options, client and pod template; it does not
// run batches as units (driver.Modes: a batch of multi-host jobs is one
// LeaderWorkerSet per child).
type Pathways struct {
	b   *Backend
	dyn dynamic.Interface
}

// NewPathways connects to the cluster like New; o.Name is ignored (the handle's backend
// is "pathways"), o.ClusterType "" means "gke".
func NewPathways(st *store.Store, o Options) (*Pathways, error) {
	if o.ClusterType == "" {
		o.ClusterType = "gke"
	}
	o.Name = PathwaysName
	b, err := New(st, o)
	if err != nil {
		return nil, err
	}
	return &Pathways{b: b, dyn: b.dyn}, nil
}

// Name implements backend.Backend.
func (p *Pathways) Name() string { return PathwaysName }

// Namespace is where the backend creates jobs.
func (p *Pathways) Namespace() string { return p.b.o.Namespace }

// RunnerImage implements backend.RunnerImager (Backend.RunnerImage).
func (p *Pathways) RunnerImage(ctx context.Context) (string, error) { return p.b.RunnerImage(ctx) }

var (
	_ backend.Backend  = (*Pathways)(nil)
	_ backend.Observer = (*Pathways)(nil)
	_ driver.Driver    = (*Pathways)(nil)
)

// Submit implements backend.Backend: one LeaderWorkerSet, named after the job.
func (p *Pathways) Submit(ctx context.Context, h *job.Handle) error {
	if h.K8sName == "" {
		h.K8sName = h.JobID
	}
	fuse, err := p.b.fuseOf(ctx, h)
	if err != nil {
		return err
	}
	if err := p.b.ensureRunnerImageFor(ctx, h); err != nil {
		return err
	}
	obj, err := p.b.leaderWorkerSetFor(h, fuse)
	if err != nil {
		return err
	}
	cctx, cancel := ctxTimeout(ctx)
	defer cancel()
	if _, err := p.dyn.Resource(LWSResource).Namespace(p.b.o.Namespace).Create(cctx, obj, metav1.CreateOptions{}); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil // a retried submit of the same job
		}
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return fmt.Errorf("create LeaderWorkerSet %s in namespace %s: %w: the cluster has no LeaderWorkerSet API (install LeaderWorkerSet: https://lws.sigs.k8s.io/docs/installation/): %v", obj.GetName(), p.b.o.Namespace, backend.ErrUnavailable, err)
		}
		return fmt.Errorf("create LeaderWorkerSet %s in namespace %s: %w", obj.GetName(), p.b.o.Namespace, err)
	}
	return nil
}

// leaderWorkerSetFor is the LeaderWorkerSet that runs one multi-host job.
func (b *Backend) leaderWorkerSetFor(h *job.Handle, fuse *fusePlan) (*unstructured.Unstructured, error) {
	sp, err := acceleratorOf(h)
	if err != nil {
		return nil, fmt.Errorf("job %s: %w", h.JobID, err)
	}
	hosts := max(sp.Hosts, 1)
	labels := baseLabels()
	labels[LabelApp] = LabelPathwaysApp
	labels[LabelJobID] = h.JobID
	if h.GroupID != "" {
		// A batch child: its batch's LeaderWorkerSets (and their pods) are found by label.
		labels[LabelGroupID] = h.GroupID
	}
	args := []string{"runner", "--store", h.Store, "--job", h.JobID, "--workspace", workDir, "--hold"}
	tmpl := b.podTemplate(h, sp, labels, args)
	if err := fuse.apply(&tmpl); err != nil {
		return nil, err
	}
	// LeaderWorkerSet pods belong to StatefulSets, which allow only Always; the runner
	// holds after the job ends so nothing restarts.
	tmpl.Spec.RestartPolicy = corev1.RestartPolicyAlways
	index := corev1.EnvVar{Name: "KINETIC_HOST_INDEX", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['" + lwsWorkerIndexLabel + "']"}}}
	env := []corev1.EnvVar{index}
	for _, e := range tmpl.Spec.Containers[0].Env {
		if e.Name != "KINETIC_HOST_INDEX" {
			env = append(env, e)
		}
	}
	workerID := index
	workerID.Name = "TPU_WORKER_ID"
	env = append(env, workerID,
		// LWS_LEADER_ADDRESS is injected by LeaderWorkerSet's webhook as the first
		// variable, so it can be referenced here.
		corev1.EnvVar{Name: "MEGASCALE_COORDINATOR_ADDRESS", Value: "$(LWS_LEADER_ADDRESS)"},
		corev1.EnvVar{Name: "MEGASCALE_NUM_SLICES", Value: "1"},
		corev1.EnvVar{Name: "KINETIC_NUM_HOSTS", Value: strconv.Itoa(hosts)},
	)
	tmpl.Spec.Containers[0].Env = env
	podTemplate, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&tmpl)
	if err != nil {
		return nil, fmt.Errorf("job %s: %w", h.JobID, err)
	}
	delete(podTemplate, "metadata")
	podTemplate["metadata"] = map[string]any{"labels": toAny(tmpl.Labels)}
	if len(tmpl.Annotations) > 0 {
		// The GCS FUSE sidecar is asked for by a pod annotation.
		podTemplate["metadata"].(map[string]any)["annotations"] = toAny(tmpl.Annotations)
	}
	ann := map[string]any{}
	for k, v := range handleAnnotations(h) {
		ann[k] = v
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": LWSResource.GroupVersion().String(),
		"kind":       "LeaderWorkerSet",
		"metadata": map[string]any{
			"name":        h.K8sName,
			"namespace":   b.o.Namespace,
			"labels":      toAny(labels),
			"annotations": ann,
		},
		"spec": map[string]any{
			"replicas":      int64(1),
			"startupPolicy": "LeaderCreated",
			"leaderWorkerTemplate": map[string]any{
				"size": int64(hosts),
				// A slice is only useful whole: one pod restarting restarts them all.
				"restartPolicy":  "RecreateGroupOnPodRestart",
				"workerTemplate": podTemplate,
			},
		},
	}}
	return obj, nil
}

func toAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Cancel implements backend.Backend: record FAILED "cancelled", then delete the
// LeaderWorkerSet in the foreground.
func (p *Pathways) Cancel(ctx context.Context, h *job.Handle) error {
	state, _, err := p.Status(ctx, h)
	if err != nil {
		return err
	}
	if state.Terminal() {
		return nil
	}
	if err := p.b.record(ctx, h, "cancelled"); err != nil {
		return err
	}
	cctx, cancel := ctxTimeout(ctx)
	defer cancel()
	return p.deleteLWS(cctx, h.K8sName, metav1.DeletePropagationForeground)
}

// Cleanup implements backend.Backend: delete the LeaderWorkerSet (it has no TTL).
func (p *Pathways) Cleanup(ctx context.Context, h *job.Handle) error {
	cctx, cancel := ctxTimeout(ctx)
	defer cancel()
	return p.deleteLWS(cctx, h.K8sName, metav1.DeletePropagationBackground)
}

func (p *Pathways) deleteLWS(ctx context.Context, name string, prop metav1.DeletionPropagation) error {
	if name == "" {
		return nil
	}
	err := p.dyn.Resource(LWSResource).Namespace(p.b.o.Namespace).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &prop})
	if err != nil && !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
		return fmt.Errorf("delete LeaderWorkerSet %s: %w", name, err)
	}
	return nil
}

// Release implements driver.Driver: a job that has ended gives its slice back (its
// LeaderWorkerSet is scaled to 0 replicas, its hosts were only holding) and keeps the
// object until cleanup.
func (p *Pathways) Release(ctx context.Context, h *job.Handle) error {
	state, _, err := p.Status(ctx, h)
	if err != nil {
		return err
	}
	if state != job.Succeeded && state != job.Failed || h.K8sName == "" {
		return nil // still running, or unknown to the store: nothing to give back
	}
	cctx, cancel := ctxTimeout(ctx)
	defer cancel()
	_, err = p.dyn.Resource(LWSResource).Namespace(p.b.o.Namespace).Patch(cctx, h.K8sName, types.MergePatchType, []byte(`{"spec":{"replicas":0}}`), metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
		return fmt.Errorf("release the slice of %s (scale LeaderWorkerSet %s to 0): %w", h.JobID, h.K8sName, err)
	}
	return nil
}

// scaleToZero stops a failed job's pods (a leader waiting for a dead worker would hold
// its TPUs for ever) and keeps the LeaderWorkerSet for inspection until cleanup.
func (p *Pathways) scaleToZero(ctx context.Context, name string) {
	cctx, cancel := ctxTimeout(ctx)
	defer cancel()
	p.dyn.Resource(LWSResource).Namespace(p.b.o.Namespace).Patch(cctx, name, types.MergePatchType, []byte(`{"spec":{"replicas":0}}`), metav1.PatchOptions{})
}

// List implements backend.Observer: the namespace's single-host Jobs and multi-host
// LeaderWorkerSets.
func (p *Pathways) List(ctx context.Context) ([]*job.Handle, error) { return p.b.List(ctx) }

// listLeaderWorkerSets lists the namespace's multi-host jobs by label, from their
// annotations. A cluster without the LeaderWorkerSet API has none.
func (b *Backend) listLeaderWorkerSets(ctx context.Context) ([]*job.Handle, error) {
	if b.dyn == nil {
		return nil, nil
	}
	cctx, cancel := ctxTimeout(ctx)
	defer cancel()
	list, err := b.dyn.Resource(LWSResource).Namespace(b.o.Namespace).List(cctx, metav1.ListOptions{LabelSelector: LabelApp + "=" + LabelPathwaysApp + "," + LabelJobID})
	if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list LeaderWorkerSets in namespace %s: %w", b.o.Namespace, err)
	}
	var out []*job.Handle
	for _, o := range list.Items {
		h, err := handleFromAnnotations(o.GetAnnotations())
		if err != nil || h.JobID == "" {
			continue
		}
		out = append(out, h)
	}
	return out, nil
}

// pods are the job's pods, leader first.
func (p *Pathways) pods(ctx context.Context, h *job.Handle) ([]corev1.Pod, error) {
	cctx, cancel := ctxTimeout(ctx)
	defer cancel()
	list, err := p.b.cs.CoreV1().Pods(p.b.o.Namespace).List(cctx, metav1.ListOptions{LabelSelector: lwsNameLabel + "=" + h.K8sName})
	if err != nil {
		return nil, fmt.Errorf("pods of %s: %w", h.JobID, err)
	}
	pods := list.Items
	sort.SliceStable(pods, func(i, k int) bool { return hostOf(&pods[i]) < hostOf(&pods[k]) })
	return pods, nil
}

// hostOf is a pod's worker index (-1 if it has none).
func hostOf(p *corev1.Pod) int {
	i, err := strconv.Atoi(p.Labels[lwsWorkerIndexLabel])
	if err != nil {
		return -1
	}
	return i
}

// Modes implements driver.Driver: every child of a batch is a LeaderWorkerSet of its
// own, submitted one by one.
func (p *Pathways) Modes(h *job.Handle, spec *job.Spec) driver.Modes { return driver.Modes{} }

// Enqueue implements driver.Driver: never asked (Modes).
func (p *Pathways) Enqueue(ctx context.Context, h *job.Handle, parallelism int) error {
	return driver.ErrUnsupported
}

// StartGroup implements driver.Driver: never asked (Modes).
func (p *Pathways) StartGroup(ctx context.Context, g driver.Group, template *job.Handle) error {
	return driver.ErrUnsupported
}

// GroupDone implements driver.Driver: there are no units, so members are looked at one
// by one.
func (p *Pathways) GroupDone(ctx context.Context, gid string) (map[int]bool, error) { return nil, nil }

// UnwrittenStatus implements driver.Driver: every child's job is written.
func (p *Pathways) UnwrittenStatus(ctx context.Context, h *job.Handle) (job.State, string, error) {
	return p.Status(ctx, h)
}

// CleanupGroup implements driver.Driver: there is no unit to remove.
func (p *Pathways) CleanupGroup(ctx context.Context, gid string) error { return nil }

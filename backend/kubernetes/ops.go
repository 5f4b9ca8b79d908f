package kubernetes

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/batch/driver"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/jobview"
	"github.com/kinetic-run/kinetic/store"
)

// NotCreatedGrace: a handle whose Job does not exist this long after its creation was
// never submitted (its submitter stopped in between).
const NotCreatedGrace = time.Minute

// Submit implements backend.Backend: one Job, named after the job.
func (b *Backend) Submit(ctx context.Context, h *job.Handle) error {
	if h.K8sName == "" {
		h.K8sName = h.JobID
	}
	fuse, err := b.fuseOf(ctx, h)
	if err != nil {
		return err
	}
	if err := b.ensureRunnerImageFor(ctx, h); err != nil {
		return err
	}
	if sp, err := acceleratorOf(h); err == nil {
		if key, ok := b.warmKey(h, sp, fuse); ok && b.tryWarm(ctx, h, key) {
			return nil // on a warm pod (warm.go)
		}
	}
	j, err := b.jobFor(h, fuse)
	if err != nil {
		return err
	}
	cctx, cancel := ctxTimeout(ctx)
	defer cancel()
	if _, err := b.cs.BatchV1().Jobs(b.o.Namespace).Create(cctx, j, metav1.CreateOptions{}); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil // a retried submit of the same job
		}
		return fmt.Errorf("create Job %s in namespace %s: %w", j.Name, b.o.Namespace, err)
	}
	return nil
}

// StartGroup implements driver.Driver: one Indexed Job for the whole batch.
func (b *Backend) StartGroup(ctx context.Context, g driver.Group, tmpl *job.Handle) error {
	fuse, err := b.fuseOfGroup(ctx, g.ID)
	if err != nil {
		return err
	}
	if err := b.ensureRunnerImageFor(ctx, tmpl); err != nil {
		return err
	}
	j, err := b.indexedJobFor(g, tmpl, fuse)
	if err != nil {
		return err
	}
	cctx, cancel := ctxTimeout(ctx)
	defer cancel()
	if _, err := b.cs.BatchV1().Jobs(b.o.Namespace).Create(cctx, j, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create Indexed Job %s in namespace %s: %w", j.Name, b.o.Namespace, err)
	}
	return nil
}

// GroupDone implements driver.Driver: the indexes the batch's Indexed Job records as
// completed or failed, from one (cached) look at the Job.
func (b *Backend) GroupDone(ctx context.Context, gid string) (map[int]bool, error) {
	j, err := b.getJob(ctx, gid, true)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("look at the Indexed Job %s: %w", gid, err)
	}
	limit := 0
	if j.Spec.Completions != nil {
		limit = int(*j.Spec.Completions)
	}
	done := map[int]bool{}
	addIndexes(done, j.Status.CompletedIndexes, limit)
	if j.Status.FailedIndexes != nil {
		addIndexes(done, *j.Status.FailedIndexes, limit)
	}
	return done, nil
}

// member reports whether h runs as an index of its group's Indexed Job.
func member(h *job.Handle) (index int, ok bool) {
	if h.GroupID == "" || h.K8sName != h.GroupID {
		return 0, false
	}
	i, err := strconv.Atoi(h.GroupIndex)
	return i, err == nil
}

// cached is a recent look at one Job, or at its pods. A batch's children share them, so
// watching a thousand children costs two requests per refresh, not two thousand.
type cached struct {
	at   time.Time
	job  *batchv1.Job
	pods []corev1.Pod
	err  error
}

const cacheTTL = 500 * time.Millisecond

// fresh returns the entry under key if it is recent.
func (b *Backend) fresh(key string) *cached {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c := b.cache[key]; c != nil && time.Since(c.at) < cacheTTL {
		return c
	}
	return nil
}

func (b *Backend) keep(key string, c *cached) {
	c.at = time.Now()
	b.mu.Lock()
	b.cache[key] = c
	b.mu.Unlock()
}

// getJob reads Job name (through the cache when shared: a batch's Indexed Job).
func (b *Backend) getJob(ctx context.Context, name string, shared bool) (*batchv1.Job, error) {
	j, _, err := b.getJobAt(ctx, name, shared)
	return j, err
}

// getJobAt is getJob and when the answer came (a cached one's arrival).
func (b *Backend) getJobAt(ctx context.Context, name string, shared bool) (*batchv1.Job, time.Time, error) {
	if c := b.fresh("job/" + name); shared && c != nil {
		return c.job, c.at, c.err
	}
	cctx, cancel := ctxTimeout(ctx)
	defer cancel()
	j, err := b.cs.BatchV1().Jobs(b.o.Namespace).Get(cctx, name, metav1.GetOptions{})
	c := &cached{job: j, err: err}
	if shared {
		b.keep("job/"+name, c)
	} else {
		c.at = time.Now()
	}
	return j, c.at, err
}

// listPods lists the pods of Job name. For a batch's Indexed Job (shared) the list is
// cached and leaves out the pods that succeeded: the Job's completedIndexes already says
// which indexes those ran, and a batch of ten thousand inputs would otherwise list ten
// thousand finished pods on every look.
func (b *Backend) listPods(ctx context.Context, name string, shared bool) ([]corev1.Pod, time.Time, error) {
	if c := b.fresh("pods/" + name); shared && c != nil {
		return c.pods, c.at, c.err
	}
	cctx, cancel := ctxTimeout(ctx)
	defer cancel()
	opts := metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + name}
	if shared {
		opts.FieldSelector = "status.phase!=" + string(corev1.PodSucceeded)
	}
	var pods []corev1.Pod
	list, err := b.cs.CoreV1().Pods(b.o.Namespace).List(cctx, opts)
	if err == nil {
		pods = list.Items
	}
	c := &cached{pods: pods, err: err}
	if shared {
		b.keep("pods/"+name, c)
	} else {
		c.at = time.Now()
	}
	return pods, c.at, err
}

// observe reads Job name and, unless index (>= 0) is one it completed, its pods; seen is
// when the newest of the answers it used came.
func (b *Backend) observe(ctx context.Context, name string, shared bool, index int) (j *batchv1.Job, pods []corev1.Pod, seen time.Time, err error) {
	j, seen, err = b.getJobAt(ctx, name, shared)
	if err != nil {
		return j, nil, seen, err
	}
	if index >= 0 && indexIn(j.Status.CompletedIndexes, index) {
		return j, nil, seen, nil
	}
	pods, podsSeen, err := b.listPods(ctx, name, shared)
	if podsSeen.After(seen) {
		seen = podsSeen
	}
	return j, pods, seen, err
}

// Status implements backend.Backend. The store speaks first (a result, or a verdict
// already recorded); then the Job and its pods.
func (b *Backend) Status(ctx context.Context, h *job.Handle) (job.State, string, error) {
	read := time.Now()
	if s, reason, ok, err := b.stored(ctx, h); err != nil || ok {
		if ok && s != job.NotFound {
			b.offerIdle(ctx, h) // its pod may take the next job (warm.go)
		}
		return s, reason, err
	}
	return b.clusterStatus(ctx, h, read)
}

// UnwrittenStatus implements driver.Driver: the status of a member whose job its pod
// has not written (nothing of it is in the store), from the cluster alone.
func (b *Backend) UnwrittenStatus(ctx context.Context, h *job.Handle) (job.State, string, error) {
	return b.clusterStatus(ctx, h, time.Time{})
}

// clusterStatus judges h from its Job and pods. read is when Status began reading the
// store, which found no end (zero: the store holds nothing of h). Since the runner writes
// its result before it exits, the store is read once more before a verdict, unless the
// verdict comes from a look at the cluster older than that read: a batch's Indexed Job,
// cached for its children, that GroupDone read before the watch read the children's
// results. That second read was most of what a large map's watch spent after its pods
// ended: five requests per child on a store that had nothing of it.
func (b *Backend) clusterStatus(ctx context.Context, h *job.Handle, read time.Time) (job.State, string, error) {
	inStore := !read.IsZero()
	l := clusterLook{h: h, name: h.K8sName, index: -1}
	if l.name == "" {
		l.name = h.JobID
	}
	if index, ok := member(h); ok {
		l.index, l.isMember = index, true
	}
	j, pods, seen, err := b.observe(ctx, l.name, l.isMember, l.index)
	if apierrors.IsNotFound(err) {
		return b.noJobStatus(ctx, l, inStore)
	}
	if err != nil {
		return "", "", fmt.Errorf("status of %s: %w", h.JobID, err)
	}
	v := b.judgeCluster(ctx, l, j, pods)
	// The runner writes the envelope before it exits: read it for the last word, unless
	// the store was read after the cluster was seen (then that read had it).
	reread := inStore && !seen.Before(read)
	return b.verdictStatus(ctx, l, v, reread)
}

// clusterLook is what clusterStatus looks at: h's Job name, and its index in a batch's
// Indexed Job (isMember; -1 otherwise).
type clusterLook struct {
	h        *job.Handle
	name     string
	index    int
	isMember bool
}

// noJobStatus judges h when its Job is not there: a warm pod may run it (warm.go), the
// runner may have finished between our two looks, a new Job may not be made yet.
func (b *Backend) noJobStatus(ctx context.Context, l clusterLook, inStore bool) (job.State, string, error) {
	h := l.h
	if !l.isMember {
		if s, reason, ok, err := b.warmJobStatus(ctx, h, inStore); err != nil || ok {
			return s, reason, err
		}
	}
	if s, reason, ok, err := b.storedIf(ctx, h, inStore); err != nil || ok {
		return s, reason, err
	}
	created, _ := time.Parse(time.RFC3339Nano, h.CreatedAt)
	if time.Since(created) < NotCreatedGrace {
		return job.Pending, "", nil
	}
	reason := fmt.Sprintf("the Kubernetes Job %s is gone from namespace %s and the job left no result: it was deleted, or the job was never started because its submitter stopped", l.name, b.o.Namespace)
	return job.Failed, reason, b.record(ctx, h, reason)
}

// warmJobStatus judges h on the warm pod it was handed, if any (ok).
func (b *Backend) warmJobStatus(ctx context.Context, h *job.Handle, inStore bool) (job.State, string, bool, error) {
	v, ok, werr := b.warmStatus(ctx, h)
	if werr != nil {
		return "", "", true, fmt.Errorf("status of %s: %w", h.JobID, werr)
	}
	if !ok || v.state == job.Pending {
		return "", "", false, nil
	}
	if s, reason, ok, err := b.storedIf(ctx, h, inStore); err != nil || ok {
		return s, reason, true, err
	}
	if v.state == job.Failed {
		return job.Failed, v.reason, true, b.record(ctx, h, v.reason)
	}
	return v.state, v.reason, true, nil
}

// judgeCluster is the verdict on h's Job (or its index) and pods, its nodes and the
// autoscaler's view included.
func (b *Backend) judgeCluster(ctx context.Context, l clusterLook, j *batchv1.Job, pods []corev1.Pod) verdict {
	g := graces{unschedulable: b.o.UnschedulableGrace, pull: b.o.PullGrace}
	var v verdict
	if l.isMember {
		v = judgeIndex(j, l.index, pods, time.Now(), g)
	} else {
		v = judgeJob(j, pods, time.Now(), g)
	}
	// A pod on a node that stopped reporting shows Running for ever: judge the node.
	v = b.nodeLost(ctx, v, pods, b.o.NodeLostGrace)
	// A pod waiting for a node GKE's autoscaler cannot add (quota, stockout).
	return b.scaleUp(ctx, l.h, v)
}

// verdictStatus is h's state from v; an end is read from the store first (reread).
func (b *Backend) verdictStatus(ctx context.Context, l clusterLook, v verdict, reread bool) (job.State, string, error) {
	h := l.h
	if v.state != job.Succeeded && v.state != job.Failed {
		return v.state, v.reason, nil
	}
	if s, reason, ok, err := b.storedIf(ctx, h, reread); err != nil || ok {
		return s, reason, err
	}
	if v.state == job.Succeeded {
		return job.Succeeded, "", nil
	}
	reason := v.reason
	if t := b.logTail(ctx, h, v.pod, 10); t != "" {
		reason += "\nlast lines of output:\n" + t
	}
	if err := b.record(ctx, h, reason); err != nil {
		return "", "", err
	}
	if v.stuck {
		b.stop(ctx, h, l.name, l.isMember, v.pod)
	}
	return job.Failed, reason, nil
}

// stored reads the job's final state from the store: a status.json written by cancel or
// by an earlier verdict, or the runner's envelope. A job the store does not know (never
// written, or cleaned up) is NOT_FOUND whatever the cluster still holds.
func (b *Backend) stored(ctx context.Context, h *job.Handle) (job.State, string, bool, error) {
	state, reason, final, err := jobview.Recorded(ctx, b.st, h.JobID)
	if err != nil || !final {
		return "", "", false, err
	}
	return state, reason, true, nil
}

// storedIf is stored when the store may hold h's result (inStore).
func (b *Backend) storedIf(ctx context.Context, h *job.Handle, inStore bool) (job.State, string, bool, error) {
	if !inStore {
		return "", "", false, nil
	}
	return b.stored(ctx, h)
}

// record writes a final FAILED verdict into the store, so it outlives the Job.
func (b *Backend) record(ctx context.Context, h *job.Handle, reason string) error {
	s := job.Status{State: job.Failed, Reason: reason, UpdatedAt: time.Now().UTC()}
	raw, _ := json.MarshalIndent(s, "", "  ")
	return b.st.Put(ctx, store.StatusKey(h.JobID), raw)
}

// stop ends what the cluster would otherwise keep trying: a single job's Job is
// suspended (its pods go; the Job stays for inspection until cleanup), a batch index's
// pod is deleted (with backoffLimitPerIndex 0 the index is then failed).
func (b *Backend) stop(ctx context.Context, h *job.Handle, name string, isMember bool, pod string) {
	cctx, cancel := ctxTimeout(ctx)
	defer cancel()
	if isMember {
		if pod != "" {
			b.cs.CoreV1().Pods(b.o.Namespace).Delete(cctx, pod, metav1.DeleteOptions{})
		}
		return
	}
	b.cs.BatchV1().Jobs(b.o.Namespace).Patch(cctx, name, types.MergePatchType, []byte(`{"spec":{"suspend":true}}`), metav1.PatchOptions{})
}

// Cancel implements backend.Backend: record FAILED "cancelled", then delete the Job in
// the foreground (its pods go first). A batch child's pod is deleted; if it has not
// started yet, the runner sees the recorded status and does nothing.
func (b *Backend) Cancel(ctx context.Context, h *job.Handle) error {
	state, _, err := b.Status(ctx, h)
	if err != nil {
		return err
	}
	if state.Terminal() {
		return nil
	}
	if err := b.record(ctx, h, "cancelled"); err != nil {
		return err
	}
	cctx, cancel := ctxTimeout(ctx)
	defer cancel()
	if index, ok := member(h); ok {
		list, err := b.cs.CoreV1().Pods(b.o.Namespace).List(cctx, metav1.ListOptions{LabelSelector: fmt.Sprintf("batch.kubernetes.io/job-name=%s,%s=%d", h.K8sName, batchv1.JobCompletionIndexAnnotation, index)})
		if err != nil {
			return fmt.Errorf("cancel %s: %w", h.JobID, err)
		}
		for _, p := range list.Items {
			if err := b.cs.CoreV1().Pods(b.o.Namespace).Delete(cctx, p.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("cancel %s: delete pod %s: %w", h.JobID, p.Name, err)
			}
		}
		return nil
	}
	// A job on a warm pod: the pod goes with it, never back to idle.
	if err := b.stopWarm(ctx, h.JobID); err != nil {
		return fmt.Errorf("cancel %s: %w", h.JobID, err)
	}
	if b.servesOthers(ctx, h.K8sName) {
		return nil // its Job's pod now serves other jobs (warm.go)
	}
	return b.deleteJob(cctx, h.K8sName, metav1.DeletePropagationForeground)
}

// Cleanup implements backend.Backend: delete the Job (a batch child's Indexed Job is
// removed by CleanupGroup, since its siblings share it).
func (b *Backend) Cleanup(ctx context.Context, h *job.Handle) error {
	if _, ok := member(h); ok {
		state, _, err := b.Status(ctx, h)
		if err != nil {
			return err
		}
		if !state.Terminal() {
			return b.Cancel(ctx, h)
		}
		return nil
	}
	if err := b.stopWarm(ctx, h.JobID); err != nil {
		return fmt.Errorf("cleanup %s: %w", h.JobID, err)
	}
	cctx, cancel := ctxTimeout(ctx)
	defer cancel()
	if b.servesOthers(ctx, h.K8sName) {
		// Its pod now waits for or serves other jobs (warm.go): the Job stays, and
		// completes when the pod exits; its TTL then removes both.
		return nil
	}
	return b.deleteJob(cctx, h.K8sName, metav1.DeletePropagationBackground)
}

// CleanupEnded implements backend.EndedCleaner: h has ended (its result was collected),
// so its warm pod, if its runner waits for the next job, is offered idle first (the
// engine that collected the result may never have asked Status, which offers it) and
// then kept: Cleanup stops only what is still busy with h.
func (b *Backend) CleanupEnded(ctx context.Context, h *job.Handle) error {
	if _, ok := member(h); !ok {
		b.offerIdle(ctx, h)
	}
	return b.Cleanup(ctx, h)
}

// CleanupGroup deletes a batch's Indexed Job.
// WithdrawGroup implements driver.Withdrawer: a batch whose Indexed Job was
// created has started (its pods run the inputs); one without it never will, since
// only StartGroup creates it.
func (b *Backend) WithdrawGroup(ctx context.Context, gid string) (bool, error) {
	_, err := b.getJob(ctx, gid, false)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("look at the Indexed Job %s: %w", gid, err)
	}
	return true, nil
}

func (b *Backend) CleanupGroup(ctx context.Context, gid string) error {
	cctx, cancel := ctxTimeout(ctx)
	defer cancel()
	return b.deleteJob(cctx, gid, metav1.DeletePropagationBackground)
}

func (b *Backend) deleteJob(ctx context.Context, name string, prop metav1.DeletionPropagation) error {
	if name == "" {
		return nil
	}
	err := b.cs.BatchV1().Jobs(b.o.Namespace).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &prop})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete Job %s: %w", name, err)
	}
	return nil
}

// List implements backend.Observer: the single jobs (Jobs) and multi-host jobs
// (LeaderWorkerSets) in the namespace, by label, from their annotations (no store
// reads). Batch children are listed by their batch.
func (b *Backend) List(ctx context.Context) ([]*job.Handle, error) {
	cctx, cancel := ctxTimeout(ctx)
	defer cancel()
	list, err := b.cs.BatchV1().Jobs(b.o.Namespace).List(cctx, metav1.ListOptions{LabelSelector: LabelApp + "=kinetic," + LabelJobID})
	if err != nil {
		return nil, fmt.Errorf("list Jobs in namespace %s: %w", b.o.Namespace, err)
	}
	var out []*job.Handle
	for _, j := range list.Items {
		h, err := handleFromAnnotations(j.Annotations)
		if err != nil || h.JobID == "" {
			continue // not ours, or written by something else
		}
		out = append(out, h)
	}
	handed, err := b.listHandedOver(ctx)
	if err != nil {
		return nil, err
	}
	out = append(out, handed...)
	multi, err := b.listLeaderWorkerSets(ctx)
	if err != nil {
		return nil, err
	}
	out = append(out, multi...)
	sort.Slice(out, func(i, k int) bool { return out[i].JobID < out[k].JobID })
	return out, nil
}

// StreamLogs implements backend.Observer with pods/log.
func (b *Backend) StreamLogs(ctx context.Context, h *job.Handle, follow bool, tailLines int, w io.Writer) error {
	pod, err := b.podOf(ctx, h)
	if err != nil {
		return err
	}
	opts := &corev1.PodLogOptions{Container: "job", Follow: follow}
	if tailLines > 0 {
		opts.TailLines = ptr(int64(tailLines))
	}
	rc, err := b.cs.CoreV1().Pods(b.o.Namespace).GetLogs(pod, opts).Stream(ctx)
	if err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsBadRequest(err) {
			return backend.ErrNoLogs // gone, or not started: the store has what there is
		}
		return fmt.Errorf("logs of %s: %w", h.JobID, err)
	}
	defer rc.Close()
	_, err = io.Copy(w, rc)
	return err
}

// podOf finds the newest pod of a job (or of a batch child's index).
func (b *Backend) podOf(ctx context.Context, h *job.Handle) (string, error) {
	sel := "batch.kubernetes.io/job-name=" + h.K8sName
	if index, ok := member(h); ok {
		sel += fmt.Sprintf(",%s=%d", batchv1.JobCompletionIndexAnnotation, index)
	}
	cctx, cancel := ctxTimeout(ctx)
	defer cancel()
	list, err := b.cs.CoreV1().Pods(b.o.Namespace).List(cctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return "", fmt.Errorf("pods of %s: %w", h.JobID, err)
	}
	if len(list.Items) == 0 {
		return "", backend.ErrNoLogs
	}
	pods := list.Items
	sort.Slice(pods, func(i, k int) bool { return pods[i].CreationTimestamp.After(pods[k].CreationTimestamp.Time) })
	if pods[0].Labels[LabelWarm] != "" {
		// A warm pod's log holds other jobs' output too: the store's copy is this job's.
		return "", backend.ErrNoLogs
	}
	return pods[0].Name, nil
}

// logTail returns the last n lines of a failed job's output from its pod ("" when the
// pod is gone: `logs` still reads the copy in the store).
func (b *Backend) logTail(ctx context.Context, h *job.Handle, pod string, n int) string {
	if pod != "" {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		rc, err := b.cs.CoreV1().Pods(b.o.Namespace).GetLogs(pod, &corev1.PodLogOptions{Container: "job", TailLines: ptr(int64(n))}).Stream(cctx)
		if err == nil {
			defer rc.Close()
			var lines []string
			sc := bufio.NewScanner(io.LimitReader(rc, 64<<10))
			for sc.Scan() {
				lines = append(lines, sc.Text())
			}
			return strings.Join(lines, "\n")
		}
	}
	return ""
}

// Modes implements driver.Driver: the first attempts of a batch are one Indexed Job.
func (b *Backend) Modes(h *job.Handle, spec *job.Spec) driver.Modes {
	return driver.Modes{Unit: true}
}

// Enqueue implements driver.Driver: never asked (Modes has no queue).
func (b *Backend) Enqueue(ctx context.Context, h *job.Handle, parallelism int) error {
	return driver.ErrUnsupported
}

// Release implements driver.Driver: a single-host job's pod exits when it ends and
// holds nothing.
func (b *Backend) Release(ctx context.Context, h *job.Handle) error { return nil }

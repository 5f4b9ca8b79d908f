package kubernetes

// Warm pods (docs/kubernetes.md, "Warm pods"): the pod of a job may stay after the job
// for the next job of the same warm key, which then starts without a new pod. The
// runner in the pod never writes to the apiserver; the engine does:
//
//   - Submit of a warm-eligible job puts the key on its pod (LabelWarm) and asks the
//     runner to stay (--warm-idle);
//   - the runner, once the job ended and it cleaned up, writes a WarmRecord beside the
//     result; an engine that sees the result (Status) labels the pod idle, unless the
//     key already has WarmPods idle pods (the runner is then released);
//   - Submit of a job of that key claims an idle pod (or, when none is labelled idle, a
//     busy one whose job has a WarmRecord: the engine that saw that job end may have
//     read its result and exited without looking at the pod) by updating its labels with the
//     listed resourceVersion as precondition (exactly one claimer wins) and hands the
//     job to the runner through the apiserver's pod proxy; any failure falls back to a
//     new Job, and a job is never run twice (WarmTakenKey).

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kinetic-run/kinetic/accel"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/runner"
)

// Labels and annotations of warm pods.
const (
	// LabelWarm is the warm key of a pod that may take more than one job.
	LabelWarm = "kinetic.dev/warm"
	// LabelWarmState is "busy" (its job runs, or the runner cleans up after it) or
	// "idle" (it waits for a job: claimable).
	LabelWarmState = "kinetic.dev/warm-state"
	// AnnotationWarmUntil is when an idle pod stops waiting (RFC 3339);
	// AnnotationWarmIdleSince when it started to (the dashboard and doctor show both:
	// infra.ListWarmPods reads them).
	AnnotationWarmUntil     = "kinetic.dev/warm-until"
	AnnotationWarmIdleSince = "kinetic.dev/warm-idle-since"
	// AnnotationWarmRecord names the job whose WarmRecord holds the idle runner's port
	// and nonce.
	AnnotationWarmRecord = "kinetic.dev/warm-record"

	warmBusy = "busy"
	warmIdle = "idle"
	// warmGone: a claimed pod whose runner did not take the job, on its way out. It
	// names no job, so nothing finds a job on it.
	warmGone = "gone"
)

// Defaults of the settings warm_pods and warm_pod_idle.
const (
	DefaultWarmPods    = 2
	DefaultWarmPodIdle = 60 * time.Second
)

// warmMargin: a pod whose window ends sooner than this is not claimed (it may be gone
// before the job reaches it).
const warmMargin = 3 * time.Second

// handOverTimeout bounds the request that hands a job to a warm pod's runner (which
// may wait up to 3 s for its clean-up after the last job).
const handOverTimeout = 8 * time.Second

// warmKey is the warm key of h's pod, and whether h may use or leave a warm pod: not a
// debug job, a batch member, a job with a time limit (the pod's deadline would be its
// own) or with FUSE volumes, and only when WarmPods > 0. The key hashes everything that
// shapes the pod (the pod spec without the job's argv: image, runner image, resources,
// service account, store secret, node selectors, tolerations) with the accelerator's
// name (spot included), the store and the namespace.
func (b *Backend) warmKey(h *job.Handle, sp accel.Spec, fuse *fusePlan) (string, bool) {
	if b.o.WarmPods <= 0 || !warmEligible(h) || fuse != nil || sp.MultiHost() {
		return "", false
	}
	tmpl := b.podTemplate(h, sp, nil, nil)
	raw, _ := json.Marshal(struct {
		Spec        corev1.PodSpec
		Accelerator string // with :spot: what the pod asks for, even where the spec says nothing of it
		Store       string
		Namespace   string
	}{tmpl.Spec, sp.Name, h.Store, b.o.Namespace})
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])[:24], true
}

// clock is the time (tests move it).
func (b *Backend) clock() time.Time {
	if b.now != nil {
		return b.now()
	}
	return time.Now()
}

// warmEligible is what the handle alone says of a job's use of warm pods.
func warmEligible(h *job.Handle) bool {
	return h.Debug != "true" && h.GroupID == "" && h.TimeoutSeconds == "" && h.Backend != PathwaysName
}

// warmArgs are the runner's flags for a warm pod of key.
func (b *Backend) warmArgs(key string) []string {
	return []string{"--warm-idle", b.o.WarmPodIdle.String(), "--warm-port", strconv.Itoa(runner.DefaultWarmPodPort), "--warm-key", key}
}

// reachable says whether pod p can take a job through the pod proxy: it has an address
// and has not ended. Its phase may still say Pending: the kubelet reports a started
// container up to a relisting later (a second by default), and a call can end within
// that; the runner's record, which a claim needs too, says it runs.
func reachable(p *corev1.Pod) bool {
	switch p.Status.Phase {
	case corev1.PodRunning, corev1.PodPending:
		return p.Status.PodIP != ""
	}
	return false
}

// candidates are the pods of list a job may claim at now: idle, running, not being
// deleted, with more than warmMargin of their window left; the freshest first.
func candidates(list []corev1.Pod, key string, now time.Time) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range list {
		if p.Labels[LabelWarm] != key || p.Labels[LabelWarmState] != warmIdle || p.DeletionTimestamp != nil || !reachable(&p) {
			continue
		}
		until, err := time.Parse(time.RFC3339Nano, p.Annotations[AnnotationWarmUntil])
		if err != nil || until.Sub(now) < warmMargin || p.Annotations[AnnotationWarmRecord] == "" {
			continue
		}
		out = append(out, p)
	}
	sort.SliceStable(out, func(i, k int) bool {
		return out[i].Annotations[AnnotationWarmUntil] > out[k].Annotations[AnnotationWarmUntil]
	})
	return out
}

// reportWait bounds how long a submission waits for the kubelet to report the address
// of an idle pod (awaitReported): less than a new pod takes.
const reportWait = 2 * time.Second

// awaitReported waits, up to reportWait, for an idle pod of key whose runner waits for a
// job (an engine labelled it idle from the runner's record) but whose address the
// kubelet has not reported yet: it reports a started container up to a relisting later
// (a second by default), and a call can end within that. Waiting that long is cheaper
// than a new pod. It returns the pod once it can be claimed, or nothing.
func (b *Backend) awaitReported(ctx context.Context, list []corev1.Pod, key string) []corev1.Pod {
	for _, p := range list {
		if awaitingReport(&p, key) {
			return b.awaitClaimable(ctx, p.Name, key) // one wait per submission
		}
	}
	return nil
}

// awaitingReport says p is an idle pod of key whose runner waits for a job but whose
// address the kubelet has not reported yet.
func awaitingReport(p *corev1.Pod, key string) bool {
	return p.Labels[LabelWarm] == key && p.Labels[LabelWarmState] == warmIdle && p.DeletionTimestamp == nil &&
		p.Status.Phase == corev1.PodPending && p.Annotations[AnnotationWarmRecord] != ""
}

// awaitClaimable reads pod name again every 100 ms, up to reportWait, until it can be
// claimed (then it is returned) or is no longer idle.
func (b *Backend) awaitClaimable(ctx context.Context, name, key string) []corev1.Pod {
	for deadline := b.clock().Add(reportWait); b.clock().Before(deadline); {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(100 * time.Millisecond):
		}
		cctx, cancel := ctxTimeout(ctx)
		fresh, err := b.cs.CoreV1().Pods(b.o.Namespace).Get(cctx, name, metav1.GetOptions{})
		cancel()
		if err != nil || fresh.Labels[LabelWarmState] != warmIdle || fresh.DeletionTimestamp != nil {
			return nil
		}
		if got := candidates([]corev1.Pod{*fresh}, key, b.clock()); len(got) == 1 {
			return got
		}
	}
	return nil
}

// maxEndedLooks bounds the store reads endedBusy makes for one submission.
const maxEndedLooks = 3

// endedBusy are the pods of list still labelled busy whose job has ended and whose
// runner waits for another job (the job's WarmRecord names the pod), annotated as
// offerIdle would have annotated them. Labelling a pod idle is the work of an engine that
// sees its job end through Status; a `kinetic run` that read the result and exited first
// leaves it busy, and without this no job would take it before its window ended.
func (b *Backend) endedBusy(ctx context.Context, list []corev1.Pod, key string, now time.Time) []corev1.Pod {
	var out []corev1.Pod
	looks := 0
	for _, p := range list {
		id := p.Labels[LabelJobID]
		if p.Labels[LabelWarm] != key || p.Labels[LabelWarmState] != warmBusy || p.DeletionTimestamp != nil || !reachable(&p) || !job.ValidName(id) {
			continue
		}
		if looks == maxEndedLooks {
			break
		}
		looks++
		rec, err := b.warmRecord(ctx, id)
		if err != nil || rec.Pod != p.Name || rec.Until.Sub(now) < warmMargin {
			continue // running its job still, or not waiting for another
		}
		c := p.DeepCopy()
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[AnnotationWarmRecord] = id
		c.Annotations[AnnotationWarmUntil] = rec.Until.UTC().Format(time.RFC3339Nano)
		out = append(out, *c)
	}
	return out
}

// claimed is p as job h claims it: busy, labelled and annotated as h's (its handle's
// fields, for List), the idle annotations gone. p's resourceVersion stays: the update
// succeeds only if nobody changed the pod since it was listed.
func claimed(p *corev1.Pod, h *job.Handle) *corev1.Pod {
	c := p.DeepCopy()
	c.Labels[LabelWarmState] = warmBusy
	c.Labels[LabelJobID] = h.JobID
	for k := range c.Annotations {
		if strings.HasPrefix(k, AnnotationPrefix) {
			delete(c.Annotations, k)
		}
	}
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	for k, v := range handleAnnotations(h) {
		c.Annotations[k] = v
	}
	return c
}

// handOver is what came of handing a job to a warm pod's runner.
type handOver int

const (
	handedOver handOver = iota // the runner took the job
	refused                    // it did not, for sure: start the job elsewhere
	unknown                    // no answer: it may have taken it
)

// outcome classifies the answer to the hand-over request: the runner's 200 (taken) and
// 409/400 (refused); the apiserver's own 401/403 (RBAC: never sent), 404 (no such pod)
// and 503 (it could not reach the pod); anything else (a timeout, a broken connection,
// 502) leaves it unknown.
func outcome(code int, err error) handOver {
	switch {
	case code == http.StatusOK && err == nil:
		return handedOver
	case code == runner.WarmRefusedStatus, code == http.StatusBadRequest, code == http.StatusUnauthorized,
		code == http.StatusForbidden, code == http.StatusNotFound, code == http.StatusServiceUnavailable:
		return refused
	}
	return unknown
}

// tryWarm runs h on an idle warm pod of key if there is one. true means h runs (or,
// rarely, was lost on its way and is recorded FAILED): Submit creates nothing. false
// means it was not handed to any pod: Submit creates its Job.
func (b *Backend) tryWarm(ctx context.Context, h *job.Handle, key string) bool {
	cctx, cancel := ctxTimeout(ctx)
	defer cancel()
	list, err := b.cs.CoreV1().Pods(b.o.Namespace).List(cctx, metav1.ListOptions{LabelSelector: LabelWarm + "=" + key})
	if err != nil {
		return false // no permission, or no answer: a new Job
	}
	pods := candidates(list.Items, key, b.clock())
	if len(pods) == 0 {
		pods = b.endedBusy(ctx, list.Items, key, b.clock())
	}
	if len(pods) == 0 {
		pods = b.awaitReported(ctx, list.Items, key)
	}
	for i, p := range pods {
		if i == 3 {
			break // a crowd claims the same pods: a new pod is quicker
		}
		c, p, err := b.claimPod(cctx, p, h, key)
		if err != nil {
			continue // another claimer won (Conflict), or the pod went: the next one
		}
		if c.DeletionTimestamp != nil {
			// Deleted after it was listed (released: its kind had idle pods enough): ours by
			// its labels now, but going; a job handed to it would go with it.
			continue
		}
		switch b.handTo(ctx, c, p.Annotations[AnnotationWarmRecord], h) {
		case handedOver:
			return true
		case refused:
			// Ours, and of no use (its runner found its last job unclean, or its window
			// ended): it goes, and first stops naming h, since h may run on the next pod
			// while this one still terminates.
			b.disown(ctx, c, h.JobID)
			continue
		default:
			return b.lostHandOver(ctx, c, h)
		}
	}
	return false
}

// claimPod claims pod p for h. A pod changed since it was listed (taken by another
// claimer, or labelled idle a moment ago by the engine that saw its last job end: a
// `kinetic run` that exits right after the result sends that update on its way out) is
// claimed as it is now if it may still be claimed; p is then the pod as read again.
func (b *Backend) claimPod(ctx context.Context, p corev1.Pod, h *job.Handle, key string) (*corev1.Pod, corev1.Pod, error) {
	c, err := b.cs.CoreV1().Pods(b.o.Namespace).Update(ctx, claimed(&p, h), metav1.UpdateOptions{})
	if !apierrors.IsConflict(err) {
		return c, p, err
	}
	fresh, gerr := b.cs.CoreV1().Pods(b.o.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
	if gerr != nil {
		return c, p, err
	}
	if again := candidates([]corev1.Pod{*fresh}, key, b.clock()); len(again) == 1 {
		p = again[0]
		c, err = b.cs.CoreV1().Pods(b.o.Namespace).Update(ctx, claimed(&p, h), metav1.UpdateOptions{})
	}
	return c, p, err
}

// disown gives up pod c, claimed for job id and not taken by its runner: its labels and
// annotations stop naming id (a pod takes a while to terminate, and one that still named
// id would be found as id's by warmPodOf while id runs on another pod), then it is
// deleted.
func (b *Backend) disown(ctx context.Context, c *corev1.Pod, id string) {
	cctx, cancel := ctxTimeout(ctx)
	defer cancel()
	for try := 0; try < 3; try++ {
		d := c.DeepCopy()
		d.Labels[LabelWarmState] = warmGone
		delete(d.Labels, LabelJobID)
		for k := range d.Annotations {
			if strings.HasPrefix(k, AnnotationPrefix) {
				delete(d.Annotations, k)
			}
		}
		u, err := b.cs.CoreV1().Pods(b.o.Namespace).Update(cctx, d, metav1.UpdateOptions{})
		if err == nil {
			c = u
			break
		}
		if !apierrors.IsConflict(err) {
			break // deleted below all the same
		}
		// Its status moved (the kubelet): read it again; still ours, try again.
		fresh, gerr := b.cs.CoreV1().Pods(b.o.Namespace).Get(cctx, c.Name, metav1.GetOptions{})
		if gerr != nil || fresh.Labels[LabelJobID] != id {
			return
		}
		c = fresh
	}
	b.deletePod(ctx, c)
}

// handTo sends h to the runner of pod c, with the nonce of the record (of job recID)
// its idle annotations named.
func (b *Backend) handTo(ctx context.Context, c *corev1.Pod, recID string, h *job.Handle) handOver {
	rec, err := b.warmRecord(ctx, recID)
	if err != nil {
		// Cannot tell the runner who we are; the pod is claimed and useless.
		return refused
	}
	body, _ := json.Marshal(runner.TakeRequest{Job: h.JobID, Nonce: rec.Nonce})
	hctx, cancel := context.WithTimeout(ctx, handOverTimeout)
	defer cancel()
	var code int
	res := b.cs.CoreV1().RESTClient().Post().Namespace(b.o.Namespace).Resource("pods").
		Name(c.Name+":"+strconv.Itoa(rec.Port)).SubResource("proxy").Suffix("take").
		SetHeader("Content-Type", "application/json").Body(body).Do(hctx)
	res.StatusCode(&code)
	return outcome(code, res.Error())
}

// lostHandOver settles a hand-over whose answer was lost: if the runner recorded that it
// took h, h runs there. Otherwise the pod is deleted and, once it is gone, looked at once
// more: taken in between, h is FAILED (it started and was stopped: never run twice);
// else h was never started and Submit creates its Job.
func (b *Backend) lostHandOver(ctx context.Context, c *corev1.Pod, h *job.Handle) bool {
	if ok, _ := b.st.Exists(ctx, runner.WarmTakenKey(h.JobID)); ok {
		return true
	}
	b.deletePod(ctx, c)
	b.waitPodGone(ctx, c.Name, 40*time.Second)
	if ok, _ := b.st.Exists(ctx, runner.WarmTakenKey(h.JobID)); ok {
		b.record(ctx, h, fmt.Sprintf("the warm pod %s took the job and was lost before it answered (it was deleted so that the job does not run twice): submit it again", c.Name))
		return true
	}
	return false
}

// warmRecord reads the WarmRecord written when job id ended.
func (b *Backend) warmRecord(ctx context.Context, id string) (*runner.WarmRecord, error) {
	if !job.ValidName(id) {
		return nil, fmt.Errorf("no warm record named %q", id)
	}
	raw, err := b.st.Get(ctx, runner.WarmRecordKey(id))
	if err != nil {
		return nil, err
	}
	var rec runner.WarmRecord
	if err := json.Unmarshal(raw, &rec); err != nil {
		return nil, fmt.Errorf("warm record of %s: %w", id, err)
	}
	return &rec, nil
}

// offerIdle is called by Status when h has ended: if h's runner waits for another job
// (its WarmRecord), its pod is labelled idle, or released when its key already has
// WarmPods idle pods. Each job is looked at once per process. Finished warm pods that no
// Job owns any more (their Job was cleaned up while they served others) are deleted on
// the way.
func (b *Backend) offerIdle(ctx context.Context, h *job.Handle) {
	if !warmEligible(h) || b.offeredBefore(h.JobID) {
		return
	}
	rec, err := b.warmRecord(ctx, h.JobID)
	if err != nil || rec.Key == "" || time.Until(rec.Until) < warmMargin {
		return
	}
	cctx, cancel := ctxTimeout(ctx)
	defer cancel()
	mine, idle, err := b.warmPodsOf(cctx, ctx, rec)
	if err != nil || !stillBusyWith(mine, h.JobID) {
		return // not the pod that ran h, or taken again already
	}
	if idle >= b.o.WarmPods {
		b.release(ctx, mine.Name, rec)
		return
	}
	b.markIdle(cctx, mine, rec, h.JobID)
}

// offeredBefore says whether job id was offered already by this process (and marks it).
func (b *Backend) offeredBefore(id string) bool {
	b.warmMu.Lock()
	defer b.warmMu.Unlock()
	if b.offered == nil {
		b.offered = map[string]bool{}
	}
	seen := b.offered[id]
	b.offered[id] = true
	return seen
}

// warmPodsOf lists rec's key's warm pods: rec's own, and how many are idle. Finished
// ones without an owner are deleted on the way (under ctx).
func (b *Backend) warmPodsOf(cctx, ctx context.Context, rec *runner.WarmRecord) (mine *corev1.Pod, idle int, err error) {
	list, err := b.cs.CoreV1().Pods(b.o.Namespace).List(cctx, metav1.ListOptions{LabelSelector: LabelWarm + "=" + rec.Key})
	if err != nil {
		return nil, 0, err
	}
	for i := range list.Items {
		p := &list.Items[i]
		switch {
		case p.Name == rec.Pod:
			mine = p
		case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
			if len(p.OwnerReferences) == 0 {
				b.deletePod(ctx, p)
			}
		case p.Labels[LabelWarmState] == warmIdle && p.DeletionTimestamp == nil:
			idle++
		}
	}
	return mine, idle, nil
}

// stillBusyWith says p is the warm pod running job id, not taken again nor going.
func stillBusyWith(p *corev1.Pod, id string) bool {
	return p != nil && p.Labels[LabelJobID] == id && p.Labels[LabelWarmState] == warmBusy && p.DeletionTimestamp == nil
}

// markIdle labels mine idle (until rec.Until), trying again (at most three times) when
// the pod changed since it was read.
func (b *Backend) markIdle(ctx context.Context, mine *corev1.Pod, rec *runner.WarmRecord, id string) {
	since := rec.Since
	if since.IsZero() {
		since = b.clock() // a runner older than the field
	}
	for try := 0; ; try++ {
		p := mine.DeepCopy()
		p.Labels[LabelWarmState] = warmIdle
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[AnnotationWarmUntil] = rec.Until.UTC().Format(time.RFC3339Nano)
		p.Annotations[AnnotationWarmIdleSince] = since.UTC().Format(time.RFC3339Nano)
		p.Annotations[AnnotationWarmRecord] = id
		_, err := b.cs.CoreV1().Pods(b.o.Namespace).Update(ctx, p, metav1.UpdateOptions{})
		if !apierrors.IsConflict(err) || try == 2 {
			return
		}
		// The pod changed since it was listed: its status, most often (the kubelet's
		// updates move its resourceVersion too). Read it again: still busy with h, it is
		// made idle; taken or going, someone else decided.
		if mine, err = b.cs.CoreV1().Pods(b.o.Namespace).Get(ctx, mine.Name, metav1.GetOptions{}); err != nil || !stillBusyWith(mine, id) {
			return
		}
	}
}

// release tells an idle runner to exit (its key has enough idle pods); if it does not
// answer, its pod is deleted.
func (b *Backend) release(ctx context.Context, pod string, rec *runner.WarmRecord) {
	body, _ := json.Marshal(runner.TakeRequest{Nonce: rec.Nonce})
	hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	res := b.cs.CoreV1().RESTClient().Post().Namespace(b.o.Namespace).Resource("pods").
		Name(pod + ":" + strconv.Itoa(rec.Port)).SubResource("proxy").Suffix("release").Body(body).Do(hctx)
	if res.Error() == nil {
		return
	}
	// Not released (no answer, or not idle): the pod goes, unless a submission claimed it
	// meanwhile — its runner may have just taken a job, which deleting the pod would
	// kill. A claim relabels the pod first, and moves its resourceVersion, which the
	// delete is conditioned on.
	p, err := b.cs.CoreV1().Pods(b.o.Namespace).Get(hctx, pod, metav1.GetOptions{})
	if err != nil || p.Labels[LabelJobID] != rec.Job || p.DeletionTimestamp != nil {
		return
	}
	b.deletePod(ctx, p)
}

// deletePod deletes p if it has not changed since it was read.
func (b *Backend) deletePod(ctx context.Context, p *corev1.Pod) {
	cctx, cancel := ctxTimeout(ctx)
	defer cancel()
	rv := p.ResourceVersion
	b.cs.CoreV1().Pods(b.o.Namespace).Delete(cctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
}

// waitPodGone waits until pod name no longer exists, at most d.
func (b *Backend) waitPodGone(ctx context.Context, name string, d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		cctx, cancel := ctxTimeout(ctx)
		_, err := b.cs.CoreV1().Pods(b.o.Namespace).Get(cctx, name, metav1.GetOptions{})
		cancel()
		if apierrors.IsNotFound(err) || ctx.Err() != nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// warmPodOf is the warm pod that was handed job id (none when id runs in its own Job's
// pod, or its pod is gone).
func (b *Backend) warmPodOf(ctx context.Context, id string) (*corev1.Pod, error) {
	cctx, cancel := ctxTimeout(ctx)
	defer cancel()
	list, err := b.cs.CoreV1().Pods(b.o.Namespace).List(cctx, metav1.ListOptions{LabelSelector: LabelJobID + "=" + id + "," + LabelWarm})
	if err != nil {
		return nil, err
	}
	// One pod normally; should a pod that a claim gave up still name id (its relabelling
	// failed), the one not being deleted is where id runs.
	var found *corev1.Pod
	for i := range list.Items {
		p := &list.Items[i]
		if p.Labels["batch.kubernetes.io/job-name"] == id {
			continue
		}
		if found == nil || (found.DeletionTimestamp != nil && p.DeletionTimestamp == nil) {
			found = p
		}
	}
	return found, nil
}

// judgeWarm is the verdict on job h, handed to the warm pod p (nil: gone), once the store
// holds no result for it.
func judgeWarm(h *job.Handle, p *corev1.Pod, taken bool, now time.Time, g graces) verdict {
	switch {
	case p == nil && taken:
		return verdict{state: job.Failed, reason: "the warm pod that took the job is gone and the job left no result: it was deleted, evicted or preempted, or its node was lost"}
	case p == nil:
		return verdict{state: job.Pending} // the caller's Job-gone rule decides
	case p.Labels[LabelJobID] != h.JobID || p.Labels[LabelWarmState] == warmIdle:
		return verdict{state: job.Failed, reason: fmt.Sprintf("the warm pod %s went on without the job's result", p.Name)}
	case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
		return verdict{state: job.Failed, reason: fmt.Sprintf("the warm pod %s that ran the job ended without its result (%s)", p.Name, podFailure(p))}
	case p.DeletionTimestamp != nil:
		if r := disruption(p); r != "" {
			return verdict{state: job.Failed, reason: r}
		}
		return verdict{state: job.Failed, reason: fmt.Sprintf("the job's warm pod %s was deleted while the job ran", p.Name)}
	}
	v := judgePod(p, now, g)
	v.pod = "" // its log holds earlier jobs' output too: no tail from it
	v.stuck = false
	return v
}

// warmStatus judges a job whose Job does not exist: it may run on a warm pod. ok false
// means it has no warm pod and never took one.
func (b *Backend) warmStatus(ctx context.Context, h *job.Handle) (verdict, bool, error) {
	p, err := b.warmPodOf(ctx, h.JobID)
	if err != nil {
		return verdict{}, false, err
	}
	taken := false
	if p == nil {
		if taken, err = b.st.Exists(ctx, runner.WarmTakenKey(h.JobID)); err != nil || !taken {
			return verdict{}, false, err
		}
	}
	return judgeWarm(h, p, taken, b.clock(), graces{unschedulable: b.o.UnschedulableGrace, pull: b.o.PullGrace}), true, nil
}

// stopWarm deletes the warm pods running job id (cancel, cleanup): a pod is never given
// back to idle after a job that was stopped.
func (b *Backend) stopWarm(ctx context.Context, id string) error {
	cctx, cancel := ctxTimeout(ctx)
	defer cancel()
	list, err := b.cs.CoreV1().Pods(b.o.Namespace).List(cctx, metav1.ListOptions{LabelSelector: LabelJobID + "=" + id + "," + LabelWarmState + "=" + warmBusy})
	if err != nil {
		return fmt.Errorf("pods of %s: %w", id, err)
	}
	for i := range list.Items {
		if err := b.deleteWhileBusyWith(cctx, &list.Items[i], id); err != nil {
			return fmt.Errorf("delete the warm pod %s of %s: %w", list.Items[i].Name, id, err)
		}
	}
	return nil
}

// deleteWhileBusyWith deletes pod p, listed busy with job id, while it still is: the
// delete is conditioned on the listed resourceVersion, since a submission may claim the
// pod meanwhile (an ended job's pod whose runner waits for the next) and deleting it then
// would kill that job. A conflict from a mere status update is retried.
func (b *Backend) deleteWhileBusyWith(ctx context.Context, p *corev1.Pod, id string) error {
	for try := 0; ; try++ {
		rv := p.ResourceVersion
		err := b.cs.CoreV1().Pods(b.o.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
		if err == nil || apierrors.IsNotFound(err) {
			return nil
		}
		if !apierrors.IsConflict(err) || try == 4 {
			return err
		}
		if p, err = b.cs.CoreV1().Pods(b.o.Namespace).Get(ctx, p.Name, metav1.GetOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		}
		if p.Labels[LabelJobID] != id || p.Labels[LabelWarmState] != warmBusy {
			return nil // claimed by another job, or offered idle: not id's to stop
		}
	}
}

// servesOthers reports whether Job name's pods include a warm pod now serving (or
// waiting for) another job: deleting the Job would delete it too, so the Job is left to
// complete when the pod exits.
func (b *Backend) servesOthers(ctx context.Context, name string) bool {
	cctx, cancel := ctxTimeout(ctx)
	defer cancel()
	list, err := b.cs.CoreV1().Pods(b.o.Namespace).List(cctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + name + "," + LabelWarm})
	if err != nil {
		return false
	}
	for _, p := range list.Items {
		if p.Labels[LabelJobID] != name || p.Labels[LabelWarmState] == warmIdle {
			return true
		}
	}
	return false
}

// listHandedOver lists the jobs running on warm pods they were handed to (no Job of
// their own), from the pods' annotations.
func (b *Backend) listHandedOver(ctx context.Context) ([]*job.Handle, error) {
	cctx, cancel := ctxTimeout(ctx)
	defer cancel()
	list, err := b.cs.CoreV1().Pods(b.o.Namespace).List(cctx, metav1.ListOptions{LabelSelector: LabelWarmState + "=" + warmBusy})
	if err != nil {
		return nil, fmt.Errorf("list warm pods in namespace %s: %w", b.o.Namespace, err)
	}
	var out []*job.Handle
	for _, p := range list.Items {
		if p.Labels[LabelJobID] == p.Labels["batch.kubernetes.io/job-name"] {
			continue // its Job lists it
		}
		if h, err := handleFromAnnotations(p.Annotations); err == nil && h.JobID == p.Labels[LabelJobID] {
			out = append(out, h)
		}
	}
	return out, nil
}

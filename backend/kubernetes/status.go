package kubernetes

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kinetic-run/kinetic/job"
)

// verdict is what the cluster says about one job (or one index of a batch).
type verdict struct {
	state  job.State
	reason string
	// stuck: FAILED by our judgement while the cluster still tries (pull, schedule);
	// the caller records it in the store and stops the pod.
	stuck bool
	pod   string // the pod the verdict is about, for log tails
}

// graces are how long the cluster may keep trying before we call a job FAILED.
type graces struct {
	unschedulable, pull time.Duration
}

// judgeJob turns a single job's Job and pods into a verdict.
func judgeJob(j *batchv1.Job, pods []corev1.Pod, now time.Time, g graces) verdict {
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete, batchv1.JobSuccessCriteriaMet:
			return verdict{state: job.Succeeded}
		case batchv1.JobFailed, batchv1.JobFailureTarget:
			return judgeFailedJob(c, pods, now, g)
		}
	}
	if j.Status.Succeeded > 0 {
		return verdict{state: job.Succeeded}
	}
	if j.Status.Failed > 0 {
		if v := judgePods(pods, now, g); v.state == job.Failed {
			return v
		}
		if r, pod := deletedReason(pods); r != "" {
			return verdict{state: job.Failed, reason: r, pod: pod}
		}
		return verdict{state: job.Failed, reason: "the job's pod failed"}
	}
	return judgePods(pods, now, g)
}

// judgeFailedJob is the verdict on a Job whose condition c says it failed: its pods'
// failure, else (the Job's own reasons, deadline or failure policy, delete the pods
// themselves) why a pod was deleted, else the condition's reason.
func judgeFailedJob(c batchv1.JobCondition, pods []corev1.Pod, now time.Time, g graces) verdict {
	if v := judgePods(pods, now, g); v.state == job.Failed {
		return v
	}
	if c.Reason == "BackoffLimitExceeded" {
		if r, pod := deletedReason(pods); r != "" {
			return verdict{state: job.Failed, reason: r, pod: pod}
		}
	}
	return verdict{state: job.Failed, reason: jobFailedReason(c)}
}

// judgeIndex is the verdict on index i of an Indexed Job.
func judgeIndex(j *batchv1.Job, i int, pods []corev1.Pod, now time.Time, g graces) verdict {
	if indexIn(j.Status.CompletedIndexes, i) {
		return verdict{state: job.Succeeded}
	}
	mine := podsOfIndex(pods, i)
	if j.Status.FailedIndexes != nil && indexIn(*j.Status.FailedIndexes, i) {
		if v := judgePods(mine, now, g); v.state == job.Failed {
			return v
		}
		if r, pod := deletedReason(mine); r != "" {
			return verdict{state: job.Failed, reason: r, pod: pod}
		}
		return verdict{state: job.Failed, reason: fmt.Sprintf("index %d of Job %s failed", i, j.Name)}
	}
	for _, c := range j.Status.Conditions {
		if c.Status == corev1.ConditionTrue && (c.Type == batchv1.JobFailed || c.Type == batchv1.JobFailureTarget) && len(mine) == 0 {
			return verdict{state: job.Failed, reason: jobFailedReason(c)}
		}
	}
	return judgePods(mine, now, g)
}

func jobFailedReason(c batchv1.JobCondition) string {
	switch c.Reason {
	case "DeadlineExceeded":
		return "DeadlineExceeded: the job ran past its deadline: " + c.Message
	case "BackoffLimitExceeded":
		return "the job's pod failed (" + c.Message + ")"
	}
	return strings.TrimSpace(c.Reason + ": " + c.Message)
}

// judgePods looks at the newest pod: what a person would look at with kubectl.
func judgePods(pods []corev1.Pod, now time.Time, g graces) verdict {
	if len(pods) == 0 {
		return verdict{state: job.Pending}
	}
	sort.Slice(pods, func(a, b int) bool {
		return pods[a].CreationTimestamp.Time.After(pods[b].CreationTimestamp.Time)
	})
	p := &pods[0]
	v := judgePod(p, now, g)
	v.pod = p.Name
	return v
}

// judgePod classifies one pod: the first of podChecks that knows, else PENDING.
func judgePod(p *corev1.Pod, now time.Time, g graces) verdict {
	for _, check := range podChecks {
		if v, ok := check(p, now, g); ok {
			return v
		}
	}
	return verdict{state: job.Pending}
}

// podCheck gives a pod's verdict when it knows it (ok).
type podCheck func(p *corev1.Pod, now time.Time, g graces) (verdict, bool)

// podChecks are judgePod's checks, in order.
var podChecks = []podCheck{podEnded, podDisrupted, podContainers, podUnschedulable, podRunning}

func podEnded(p *corev1.Pod, _ time.Time, _ graces) (verdict, bool) {
	switch p.Status.Phase {
	case corev1.PodSucceeded:
		return verdict{state: job.Succeeded}, true
	case corev1.PodFailed:
		return verdict{state: job.Failed, reason: podFailure(p)}, true
	}
	return verdict{}, false
}

func podDisrupted(p *corev1.Pod, _ time.Time, _ graces) (verdict, bool) {
	if p.DeletionTimestamp == nil {
		return verdict{}, false
	}
	r := disruption(p)
	return verdict{state: job.Failed, reason: r}, r != ""
}

// podContainers finds a container out of memory, or waiting on an image pull that
// cannot succeed, or unable to start.
func podContainers(p *corev1.Pod, now time.Time, g graces) (verdict, bool) {
	for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if v, ok := containerVerdict(p, cs, now, g); ok {
			return v, true
		}
	}
	return verdict{}, false
}

func containerVerdict(p *corev1.Pod, cs corev1.ContainerStatus, now time.Time, g graces) (verdict, bool) {
	if t := cs.State.Terminated; t != nil && t.Reason == "OOMKilled" {
		return verdict{state: job.Failed, reason: oomReason(p, cs.Name)}, true
	}
	w := cs.State.Waiting
	if w == nil {
		return verdict{}, false
	}
	switch w.Reason {
	case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", "RegistryUnavailable":
		if permanentPull(w.Reason, w.Message) || now.Sub(p.CreationTimestamp.Time) > g.pull {
			return verdict{state: job.Failed, stuck: true, reason: fmt.Sprintf("%s: cannot pull image %s for container %s: %s (check the image name and that the cluster can reach its registry)", w.Reason, imageOf(p, cs.Name), cs.Name, w.Message)}, true
		}
	case "CreateContainerConfigError", "CreateContainerError":
		if now.Sub(p.CreationTimestamp.Time) > g.pull {
			return verdict{state: job.Failed, stuck: true, reason: fmt.Sprintf("%s: container %s cannot start: %s", w.Reason, cs.Name, w.Message)}, true
		}
	}
	return verdict{}, false
}

func podUnschedulable(p *corev1.Pod, now time.Time, g graces) (verdict, bool) {
	for _, c := range p.Status.Conditions {
		if c.Type != corev1.PodScheduled || c.Status != corev1.ConditionFalse || c.Reason != corev1.PodReasonUnschedulable {
			continue
		}
		since := c.LastTransitionTime.Time
		if since.IsZero() {
			since = p.CreationTimestamp.Time
		}
		if now.Sub(since) > g.unschedulable {
			return verdict{state: job.Failed, stuck: true, reason: fmt.Sprintf("Unschedulable: no node can run the job's pod after %s: %s (check the accelerator and the cluster's node pools)", g.unschedulable.Round(time.Second), c.Message)}, true
		}
		return verdict{state: job.Pending, reason: "Unschedulable: " + c.Message}, true
	}
	return verdict{}, false
}

func podRunning(p *corev1.Pod, _ time.Time, _ graces) (verdict, bool) {
	if p.Status.Phase != corev1.PodRunning {
		return verdict{}, false
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == "job" && cs.State.Running != nil {
			return verdict{state: job.Running}, true
		}
	}
	return verdict{}, false
}

// permanentPull: the registry answered that the image does not exist, or the name is
// not an image name. Retrying will not help.
func permanentPull(reason, msg string) bool {
	if reason == "InvalidImageName" || reason == "ErrImageNeverPull" {
		return true
	}
	m := strings.ToLower(msg)
	for _, s := range []string{"not found", "manifest unknown", "name unknown", "404", "repository does not exist", "no such host"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// podFailure explains a Failed pod: the disruption that ended it, or its containers.
func podFailure(p *corev1.Pod) string {
	if r := disruption(p); r != "" {
		return r
	}
	if p.Status.Reason == "Evicted" {
		return "evicted: " + p.Status.Message
	}
	if p.Status.Reason == "DeadlineExceeded" {
		return "timeout: the pod ran past its deadline (the job's timeout plus the start-up allowance): " + p.Status.Message
	}
	for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
			return exitReason(p, cs.Name, t)
		}
	}
	if p.Status.Message != "" {
		return p.Status.Reason + ": " + p.Status.Message
	}
	return "the job's pod failed"
}

// exitReason words container name's exit t: out of memory, or its code, reason and
// message.
func exitReason(p *corev1.Pod, name string, t *corev1.ContainerStateTerminated) string {
	if t.Reason == "OOMKilled" {
		return oomReason(p, name)
	}
	r := fmt.Sprintf("container %s exited with code %d", name, t.ExitCode)
	if t.Reason != "" && t.Reason != "Error" {
		r += " (" + t.Reason + ")"
	}
	if t.Message != "" {
		r += ": " + strings.TrimSpace(t.Message)
	}
	return r
}

// disruption reports a pod ended by the cluster rather than by the job: preemption of
// a spot node, eviction, or deletion.
func disruption(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type != corev1.DisruptionTarget || c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Reason {
		case "PreemptionByScheduler", "TerminationByKubelet":
			if p.Spec.NodeSelector["cloud.google.com/gke-spot"] == "true" || c.Reason == "PreemptionByScheduler" {
				return "preempted: " + c.Message
			}
			return "evicted by the node: " + c.Message
		case "EvictionByEvictionAPI":
			return "evicted: " + c.Message
		case "DeletionByTaintManager", "DeletionByPodGC":
			if p.Spec.NodeSelector["cloud.google.com/gke-spot"] == "true" {
				return "preempted: the spot node was reclaimed (" + c.Reason + ")"
			}
			return "the node went away: " + c.Message
		}
		return c.Reason + ": " + c.Message
	}
	return ""
}

func oomReason(p *corev1.Pod, container string) string {
	limit := ""
	for _, c := range append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
		if c.Name == container {
			if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
				limit = " of " + q.String()
			}
		}
	}
	return fmt.Sprintf("OOMKilled: container %s used more than its memory limit%s (ask for a larger machine, or lower the job's memory use)", container, limit)
}

func imageOf(p *corev1.Pod, container string) string {
	for _, c := range append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
		if c.Name == container {
			return c.Image
		}
	}
	return "?"
}

// indexIn reports whether i is in an index set like "1,3-5,7".
func indexIn(set string, i int) bool {
	found := false
	eachIndexRange(set, func(a, b int) {
		found = found || i >= a && i <= b
	})
	return found
}

// addIndexes adds the indexes of set (a Job's "1,3-5,7") to done, up to limit of them
// (a damaged range cannot make it allocate without bound).
func addIndexes(done map[int]bool, set string, limit int) {
	eachIndexRange(set, func(a, b int) {
		for i := a; i <= b && i < limit; i++ {
			done[i] = true
		}
	})
}

func eachIndexRange(set string, f func(a, b int)) {
	for _, part := range strings.Split(set, ",") {
		if part == "" {
			continue
		}
		lo, hi, found := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		b := a
		if found {
			if b, err = strconv.Atoi(hi); err != nil {
				continue
			}
		}
		f(a, b)
	}
}

func podsOfIndex(pods []corev1.Pod, i int) []corev1.Pod {
	want := strconv.Itoa(i)
	var out []corev1.Pod
	for _, p := range pods {
		if p.Labels[batchv1.JobCompletionIndexAnnotation] == want || p.Annotations[batchv1.JobCompletionIndexAnnotation] == want {
			out = append(out, p)
		}
	}
	return out
}

// deletedReason explains a failed Job whose pod did not fail by itself: the Job
// controller counts a pod being deleted (kubectl delete pod, a controller, a drain) as
// failed at once, and a force-deleted pod is simply gone. Either way the job left no
// result, and "backoff limit" would tell a person nothing.
func deletedReason(pods []corev1.Pod) (reason, pod string) {
	if len(pods) == 0 {
		return "the job's pod is gone: it was deleted before the job finished and left no result (kubectl delete pod, a drain, or its node removed); resubmit the job", ""
	}
	newest := &pods[0]
	for i := range pods {
		if pods[i].CreationTimestamp.After(newest.CreationTimestamp.Time) {
			newest = &pods[i]
		}
	}
	if newest.DeletionTimestamp == nil || newest.Status.Phase == corev1.PodSucceeded || newest.Status.Phase == corev1.PodFailed {
		return "", ""
	}
	return fmt.Sprintf("the job's pod %s was deleted while the job ran (at %s; kubectl delete pod, a drain, or a controller), and the Job does not retry; resubmit the job",
		newest.Name, newest.DeletionTimestamp.UTC().Format(time.RFC3339)), newest.Name
}

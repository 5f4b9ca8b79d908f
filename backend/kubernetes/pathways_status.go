package kubernetes

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// Status implements backend.Backend. The store speaks first: a recorded verdict or the
// leader's envelope, then any other host's failure envelope (so a worker that raises
// fails the job while the leader still runs); then the LeaderWorkerSet's pods.
func (p *Pathways) Status(ctx context.Context, h *job.Handle) (job.State, string, error) {
	name := h.K8sName
	if name == "" {
		name = h.JobID
	}
	if s, reason, ok, err := p.storedOrHostFailure(ctx, h, name); err != nil || ok {
		return s, reason, err
	}
	cctx, cancel := ctxTimeout(ctx)
	_, err := p.dyn.Resource(LWSResource).Namespace(p.b.o.Namespace).Get(cctx, name, metav1.GetOptions{})
	cancel()
	switch {
	case meta.IsNoMatchError(err):
		return "", "", fmt.Errorf("status of %s: %w: the cluster has no LeaderWorkerSet API: %v", h.JobID, backend.ErrUnavailable, err)
	case apierrors.IsNotFound(err):
		return p.goneStatus(ctx, h, name)
	case err != nil:
		return "", "", fmt.Errorf("status of %s: %w", h.JobID, err)
	}
	pods, err := p.pods(ctx, h)
	if err != nil {
		return "", "", err
	}
	v := judgeGroup(pods, time.Now(), graces{unschedulable: p.b.o.UnschedulableGrace, pull: p.b.o.PullGrace})
	if v.state != job.Failed {
		return v.state, v.reason, nil
	}
	// A host's runner may have written the better explanation meanwhile.
	if s, reason, ok, err := p.storedOrHostFailure(ctx, h, name); err != nil || ok {
		return s, reason, err
	}
	return p.fail(ctx, h, name, v.reason, v.pod)
}

// storedOrHostFailure is the store's word on h (ok): a recorded verdict or the leader's
// envelope, else a failed host's envelope (then the job fails).
func (p *Pathways) storedOrHostFailure(ctx context.Context, h *job.Handle, name string) (job.State, string, bool, error) {
	if s, reason, ok, err := p.b.stored(ctx, h); err != nil || ok {
		return s, reason, true, err
	}
	reason, ok, err := p.hostFailure(ctx, h)
	if err != nil || !ok {
		return "", "", err != nil, err
	}
	s, reason, err := p.fail(ctx, h, name, reason, "")
	return s, reason, true, err
}

// goneStatus judges h when its LeaderWorkerSet is not there: the leader may have
// finished between our looks; a new one may not be made yet.
func (p *Pathways) goneStatus(ctx context.Context, h *job.Handle, name string) (job.State, string, error) {
	if s, reason, ok, err := p.b.stored(ctx, h); err != nil || ok {
		return s, reason, err
	}
	created, _ := time.Parse(time.RFC3339Nano, h.CreatedAt)
	if time.Since(created) < NotCreatedGrace {
		return job.Pending, "", nil
	}
	reason := fmt.Sprintf("the LeaderWorkerSet %s is gone from namespace %s and the job left no result: it was deleted, or the job was never started because its submitter stopped", name, p.b.o.Namespace)
	return job.Failed, reason, p.b.record(ctx, h, reason)
}

// fail records a FAILED verdict (with the last lines of pod's output, if any) and stops
// the job's pods.
func (p *Pathways) fail(ctx context.Context, h *job.Handle, name, reason, pod string) (job.State, string, error) {
	if t := p.b.logTail(ctx, h, pod, 10); t != "" {
		reason += "\nlast lines of output:\n" + t
	}
	if err := p.b.record(ctx, h, reason); err != nil {
		return "", "", err
	}
	p.scaleToZero(ctx, name)
	return job.Failed, reason, nil
}

// hostFailure reads the failure envelopes the non-leader hosts wrote, and returns the
// first one's reason, naming the host.
func (p *Pathways) hostFailure(ctx context.Context, h *job.Handle) (string, bool, error) {
	objs, err := p.b.st.List(ctx, store.HostsPrefix(h.JobID))
	if err != nil {
		return "", false, fmt.Errorf("status of %s: %w", h.JobID, err)
	}
	for _, o := range objs {
		if !strings.HasSuffix(o.Key, "/result.json") {
			continue
		}
		raw, err := p.b.st.Get(ctx, o.Key)
		if store.IsNotFound(err) {
			continue
		}
		if err != nil {
			return "", false, err
		}
		env, err := job.DecodeEnvelope(raw)
		if err != nil {
			return fmt.Sprintf("%s is unreadable: %v", o.Key, err), true, nil
		}
		if env.Success {
			continue
		}
		host := strings.TrimSuffix(strings.TrimPrefix(o.Key, store.HostsPrefix(h.JobID)), "/result.json")
		return fmt.Sprintf("host %s failed: %s", host, env.FailureReason()), true, nil
	}
	return "", false, nil
}

// judgeGroup turns the pods of a multi-host job (leader first) into a verdict: any
// failed or restarted host fails the job; it runs when the leader runs.
func judgeGroup(pods []corev1.Pod, now time.Time, g graces) verdict {
	if len(pods) == 0 {
		return verdict{state: job.Pending}
	}
	state, reason := job.Running, ""
	for i := range pods {
		pod := &pods[i]
		host := pod.Labels[lwsWorkerIndexLabel]
		if r := restarted(pod); r != "" {
			return verdict{state: job.Failed, reason: fmt.Sprintf("host %s (pod %s): %s", host, pod.Name, r), pod: pod.Name}
		}
		v := judgePod(pod, now, g)
		switch v.state {
		case job.Failed:
			v.reason = fmt.Sprintf("host %s (pod %s): %s", host, pod.Name, v.reason)
			v.pod = pod.Name
			return v
		case job.Pending:
			state = job.Pending
			if reason == "" && v.reason != "" {
				reason = fmt.Sprintf("host %s: %s", host, v.reason)
			}
		case job.Succeeded:
			// The runner holds, so a pod that ended was stopped from outside.
		}
	}
	return verdict{state: state, reason: reason}
}

// restarted explains a job container that ended and was started again: the runner
// holds after the job, so that is a crash, a kill or an OOM kill.
func restarted(p *corev1.Pod) string {
	for _, cs := range p.Status.ContainerStatuses {
		t := cs.LastTerminationState.Terminated
		if cs.Name != "job" || cs.RestartCount == 0 || t == nil {
			continue
		}
		if t.Reason == "OOMKilled" {
			return oomReason(p, cs.Name)
		}
		r := fmt.Sprintf("container %s ended with code %d and was restarted", cs.Name, t.ExitCode)
		if t.Reason != "" && t.Reason != "Error" && t.Reason != "Completed" {
			r += " (" + t.Reason + ")"
		}
		return r
	}
	return ""
}

// StreamLogs implements backend.Observer: the leader's output. Following is left to
// the store's copy: the leader's container holds after the job, so its stream would
// not end with the job.
func (p *Pathways) StreamLogs(ctx context.Context, h *job.Handle, follow bool, tailLines int, w io.Writer) error {
	if follow {
		return backend.ErrNoLogs
	}
	pods, err := p.pods(ctx, h)
	if err != nil {
		return err
	}
	if len(pods) == 0 || hostOf(&pods[0]) != 0 {
		return backend.ErrNoLogs
	}
	opts := &corev1.PodLogOptions{Container: "job", Follow: follow}
	if tailLines > 0 {
		opts.TailLines = ptr(int64(tailLines))
	}
	rc, err := p.b.cs.CoreV1().Pods(p.b.o.Namespace).GetLogs(pods[0].Name, opts).Stream(ctx)
	if err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsBadRequest(err) {
			return backend.ErrNoLogs
		}
		return fmt.Errorf("logs of %s: %w", h.JobID, err)
	}
	defer rc.Close()
	_, err = io.Copy(w, rc)
	return err
}

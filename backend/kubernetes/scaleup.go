package kubernetes

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kinetic-run/kinetic/accel"
	"github.com/kinetic-run/kinetic/job"
)

// A pod that waits for a node GKE's cluster autoscaler must add (a TPU or GPU pool
// scaled to zero) is Unschedulable like one no pool fits; what the autoscaler then says
// about it is in the pod's events:
//
//   - FailedScaleUp "Node scale up in zones Z associated with this pod failed: GCE
//     quota exceeded. Pod is at risk of not being scheduled." — the project's quota for
//     that accelerator is used up (often zero on a new project): no retry will help
//     until the user asks for more, so the job is FAILED at once, naming the
//     accelerator, the zone and the quota to ask for.
//   - FailedScaleUp "… failed: GCE out of resources …" — a stockout: Google has no
//     such machine in that zone now. The autoscaler retries, and capacity may come
//     back, so the job stays PENDING with that reason (the unschedulable grace then
//     fails it, with the stockout named).
//   - NotTriggerScaleUp "pod didn't trigger scale-up: …" — no pool can grow to fit it
//     (max size reached, a pool in backoff after a failed scale-up, or none matches):
//     PENDING with the autoscaler's words, then FAILED after the grace as before.

var zonesRE = regexp.MustCompile(`in zones? ([a-z0-9-]+(?:, ?[a-z0-9-]+)*)`)

// scaleUp refines a Pending or Failed Unschedulable verdict with the cluster
// autoscaler's events on its pod (one list of events, only then). Without permission
// to list events, or without events, the verdict stands.
func (b *Backend) scaleUp(ctx context.Context, h *job.Handle, v verdict) verdict {
	if v.pod == "" || !strings.HasPrefix(v.reason, "Unschedulable") {
		return v
	}
	cctx, cancel := ctxTimeout(ctx)
	defer cancel()
	evs, err := b.cs.CoreV1().Events(b.o.Namespace).List(cctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=Pod,involvedObject.name=" + v.pod})
	if err != nil {
		return v
	}
	return judgeScaleUp(v, h.Accelerator, h.Spot == "true", evs.Items)
}

// judgeScaleUp is scaleUp's verdict from the pod's events.
func judgeScaleUp(v verdict, accelerator string, spot bool, evs []corev1.Event) verdict {
	last := lastScaleUpEvent(evs)
	if last == nil {
		return v
	}
	what := acceleratorWords(accelerator)
	zone := "the cluster's zone"
	if m := zonesRE.FindStringSubmatch(last.Message); m != nil {
		zone = "zone " + m[1]
	}
	msg := strings.TrimSpace(last.Message)
	var r string
	switch {
	case last.Reason == "FailedScaleUp" && strings.Contains(strings.ToLower(msg), "quota"):
		return verdict{state: job.Failed, stuck: true, pod: v.pod, reason: fmt.Sprintf(
			"FailedScaleUp: GKE could not add a node for %s in %s: the project's quota for it is used up (%s). Ask for more of %s in that region (console: IAM & Admin → Quotas), or use a reservation you hold; the job was stopped",
			what, zone, msg, quotaName(accelerator, spot))}
	case last.Reason == "FailedScaleUp" && (strings.Contains(msg, "out of resources") || strings.Contains(msg, "ZONE_RESOURCE_POOL_EXHAUSTED") || strings.Contains(msg, "stockout")):
		r = fmt.Sprintf("FailedScaleUp: GKE could not add a node for %s in %s: Google has none free there now (a stockout: %s). The autoscaler keeps trying; or use another zone, a reservation, or spot capacity", what, zone, msg)
		return scaleUpVerdict(v, r, r+"; gave up after the unschedulable grace")
	case last.Reason == "FailedScaleUp":
		r = fmt.Sprintf("FailedScaleUp: GKE could not add a node for %s in %s: %s", what, zone, msg)
	default:
		r = fmt.Sprintf("NotTriggerScaleUp: no node pool can grow to run %s: %s (check `kinetic pool list`: a pool of this accelerator, its --max-nodes)", what, msg)
	}
	return scaleUpVerdict(v, r, r)
}

// lastScaleUpEvent is the newest of the autoscaler's FailedScaleUp and NotTriggerScaleUp
// events, nil if none.
func lastScaleUpEvent(evs []corev1.Event) *corev1.Event {
	var last *corev1.Event
	for i := range evs {
		e := &evs[i]
		if e.Reason != "FailedScaleUp" && e.Reason != "NotTriggerScaleUp" {
			continue
		}
		if last == nil || eventTime(e).After(eventTime(last)) {
			last = e
		}
	}
	return last
}

// scaleUpVerdict is PENDING for reason while v waits; FAILED (stuck) for failed once v
// has given up.
func scaleUpVerdict(v verdict, reason, failed string) verdict {
	if v.state == job.Failed {
		return verdict{state: job.Failed, stuck: true, pod: v.pod, reason: failed}
	}
	return verdict{state: job.Pending, pod: v.pod, reason: reason}
}

func eventTime(e *corev1.Event) time.Time {
	for _, t := range []time.Time{e.EventTime.Time, e.LastTimestamp.Time, e.FirstTimestamp.Time, e.CreationTimestamp.Time} {
		if !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}

// acceleratorWords names a catalog accelerator with its hardware: "gpu-l4 (1× nvidia-l4)".
func acceleratorWords(name string) string {
	sp, err := accel.Parse(name)
	if err != nil || name == "" {
		if name == "" {
			return "the job"
		}
		return name
	}
	switch sp.Kind {
	case accel.GPU:
		return fmt.Sprintf("%s (%d× %s)", sp.Name, sp.Chips, sp.NodeSelector[accel.LabelGPUAccelerator])
	case accel.TPU:
		return fmt.Sprintf("%s (TPU %s, topology %s)", sp.Name, sp.NodeSelector["cloud.google.com/gke-tpu-accelerator"], sp.Topology)
	}
	return sp.Name
}

// quotaName is the Compute Engine quota an accelerator's nodes count against: a GPU's
// NVIDIA_<MODEL>_GPUS (PREEMPTIBLE_… on spot), a TPU's chips of its type.
func quotaName(name string, spot bool) string {
	sp, err := accel.Parse(name)
	if err != nil {
		return "the accelerator's quota"
	}
	switch sp.Kind {
	case accel.GPU:
		model := sp.NodeSelector[accel.LabelGPUAccelerator]
		model = strings.TrimPrefix(strings.TrimPrefix(model, "nvidia-tesla-"), "nvidia-")
		if i := strings.Index(model, "-"); i > 0 && strings.HasSuffix(model, "gb") {
			model = model[:i] // nvidia-h100-80gb counts as NVIDIA_H100_GPUS
		}
		q := "NVIDIA_" + strings.ToUpper(strings.ReplaceAll(model, "-", "_")) + "_GPUS"
		if spot || sp.Spot {
			q = "PREEMPTIBLE_" + q
		}
		return "quota " + q
	case accel.TPU:
		return fmt.Sprintf("the TPU quota for %s chips (%s)", sp.NodeSelector["cloud.google.com/gke-tpu-accelerator"], map[bool]string{true: "preemptible", false: "on-demand"}[spot || sp.Spot])
	}
	return "the accelerator's quota"
}

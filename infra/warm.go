package infra

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The labels and annotations backend/kubernetes puts on warm pods (its warm.go, where
// they are documented; a test there checks these are the same).
const (
	LabelWarm               = "kinetic.dev/warm"
	LabelWarmState          = "kinetic.dev/warm-state"
	LabelJobID              = "kinetic.dev/job-id"
	AnnotationWarmUntil     = "kinetic.dev/warm-until"
	AnnotationWarmIdleSince = "kinetic.dev/warm-idle-since"
	annotationAccelerator   = "kinetic.dev/accelerator"
)

// WarmPod is a pod kept for the next job of its kind (docs/kubernetes.md, "Warm pods"):
// what `kinetic doctor`, `kinetic status` and the dashboard show, since a held
// accelerator costs money while it waits.
type WarmPod struct {
	Pod       string `json:"pod"`
	Namespace string `json:"namespace"`
	Node      string `json:"node,omitempty"`
	// State is "idle" (it waits for a job until Until) or "busy" (a job runs on it, or
	// its runner cleans up after one).
	State string `json:"state"`
	// Job is the job it runs, or ran last.
	Job string `json:"job"`
	// Image and Accelerator (the catalog name, "" for a CPU pod) with the namespace make
	// its kind: a job of the same kind may take it.
	Image       string `json:"image"`
	Accelerator string `json:"accelerator,omitempty"`
	// Holds is what the pod holds while it waits: its accelerator devices, CPU and memory
	// requests ("nvidia.com/gpu 1, cpu 250m").
	Holds string `json:"holds"`
	// Key is the warm key (a hash of everything that shapes the pod).
	Key       string    `json:"key"`
	Started   time.Time `json:"started"`
	IdleSince time.Time `json:"idle_since,omitzero"`
	Until     time.Time `json:"until,omitzero"`
}

// Describe is one line for a person, at now.
func (w WarmPod) Describe(now time.Time) string {
	what := w.Accelerator
	if what == "" {
		what = "cpu"
	}
	s := fmt.Sprintf("%s (%s, %s, holds %s, up %s, job %s", w.Pod, what, w.Image, w.Holds, now.Sub(w.Started).Round(time.Second), w.Job)
	if w.State == "idle" {
		if !w.IdleSince.IsZero() {
			s += fmt.Sprintf(", idle for %s", now.Sub(w.IdleSince).Round(time.Second))
		} else {
			s += ", idle"
		}
		if !w.Until.IsZero() {
			s += fmt.Sprintf(", exits in %s", w.Until.Sub(now).Round(time.Second))
		}
	} else {
		s += ", busy"
	}
	return s + ")"
}

// ListWarmPods lists the warm pods in t's namespace that have not ended, by name.
func ListWarmPods(ctx context.Context, t *Target) ([]WarmPod, error) {
	cs, err := t.clientset()
	if err != nil {
		return nil, err
	}
	return listWarmPods(ctx, cs, t.Namespace)
}

func listWarmPods(ctx context.Context, cs kubernetes.Interface, ns string) ([]WarmPod, error) {
	list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: LabelWarm})
	if err != nil {
		return nil, fmt.Errorf("list the warm pods in namespace %s: %w", ns, err)
	}
	var out []WarmPod
	for _, p := range list.Items {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || p.DeletionTimestamp != nil ||
			p.Labels[LabelWarmState] == "gone" {
			continue // ended, or on its way out (a second down has nothing to remove)
		}
		w := WarmPod{Pod: p.Name, Namespace: p.Namespace, Node: p.Spec.NodeName, State: p.Labels[LabelWarmState],
			Job: p.Labels[LabelJobID], Accelerator: p.Annotations[annotationAccelerator], Key: p.Labels[LabelWarm],
			Started: p.CreationTimestamp.Time}
		if w.Accelerator == "cpu" {
			w.Accelerator = ""
		}
		for _, c := range p.Spec.Containers {
			if c.Name == "job" {
				w.Image = c.Image
				w.Holds = holds(c.Resources.Requests)
			}
		}
		if w.State == "idle" {
			w.Until, _ = time.Parse(time.RFC3339Nano, p.Annotations[AnnotationWarmUntil])
			w.IdleSince, _ = time.Parse(time.RFC3339Nano, p.Annotations[AnnotationWarmIdleSince])
		}
		out = append(out, w)
	}
	sort.Slice(out, func(i, k int) bool { return out[i].Pod < out[k].Pod })
	return out, nil
}

// holds names a container's requests, accelerator devices first.
func holds(req corev1.ResourceList) string {
	var parts []string
	for _, r := range acceleratorResources {
		if q, ok := req[r]; ok {
			parts = append(parts, string(r)+" "+q.String())
		}
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := req[r]; ok {
			parts = append(parts, string(r)+" "+q.String())
		}
	}
	if len(parts) == 0 {
		return "no requests"
	}
	return strings.Join(parts, ", ")
}

// warmPodsDetail is doctor's line on the warm pods.
func warmPodsDetail(pods []WarmPod, err error, ns string, now time.Time) string {
	if err != nil {
		return "cannot list pods (" + err.Error() + ")"
	}
	if len(pods) == 0 {
		return "none in namespace " + ns + " (warm_pods, warm_pod_idle: docs/kubernetes.md)"
	}
	parts := make([]string, len(pods))
	for i, w := range pods {
		parts[i] = w.Describe(now)
	}
	return strings.Join(parts, "; ")
}

// DeleteWarmPods deletes the warm pods named (`kinetic down`): a pod running a job ends
// it, and the job is FAILED as a deleted pod's. A pod already gone is no error.
func DeleteWarmPods(ctx context.Context, t *Target, pods []WarmPod) error {
	cs, err := t.clientset()
	if err != nil {
		return err
	}
	var errs []error
	for _, w := range pods {
		if err := cs.CoreV1().Pods(w.Namespace).Delete(ctx, w.Pod, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete the warm pod %s: %w", w.Pod, err))
		}
	}
	return errors.Join(errs...)
}

// WarmDownStep says what down does with pods: "" when there are none.
func WarmDownStep(pods []WarmPod) (what, detail string) {
	if len(pods) == 0 {
		return "", ""
	}
	var idle, busy []string
	for _, w := range pods {
		d := w.Pod
		if w.Accelerator != "" {
			d += " " + w.Accelerator
		}
		if w.State == "idle" {
			idle = append(idle, d)
		} else {
			busy = append(busy, d+" running job "+w.Job)
		}
	}
	what = fmt.Sprintf("%d warm pod(s) in namespace %s", len(pods), pods[0].Namespace)
	var ds []string
	if len(idle) > 0 {
		ds = append(ds, "idle: "+strings.Join(idle, ", "))
	}
	if len(busy) > 0 {
		ds = append(ds, "busy, their jobs are stopped: "+strings.Join(busy, ", "))
	}
	return what, strings.Join(ds, "; ")
}

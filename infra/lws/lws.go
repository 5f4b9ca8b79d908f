// Package lws installs LeaderWorkerSet (sigs.k8s.io/lws), which multi-host jobs (the
// pathways backend) run on, into a cluster: the pinned release's manifests (embedded,
// manifests.yaml, made by gen.sh) applied server-side, the controller's image
// overridable (a registry of one's own, a cluster without internet). Read says what the
// cluster has; an older release that kinetic installed is upgraded, one installed by
// someone else is left alone. See docs/infrastructure.md.
package lws

//go:generate sh gen.sh

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// Version is the pinned release.
const Version = "v0.7.0"

// DefaultImage is the release's controller image.
const DefaultImage = "registry.k8s.io/lws/lws:" + Version

// Names in the release's manifests.
const (
	Namespace  = "lws-system"
	Deployment = "lws-controller-manager"
	CRD        = "leaderworkersets.leaderworkerset.x-k8s.io"
)

// VersionAnnotation records, on the CRD and the controller's Deployment, the release
// kinetic installed: what Read compares with Version.
const VersionAnnotation = "kinetic.dev/lws-version"

// The controller's requests (the release asks for 2 replicas of 1 CPU and 1Gi).
const (
	ControllerCPU    = "100m"
	ControllerMemory = "256Mi"
)

// FieldManager is the server-side apply field manager.
const FieldManager = "kinetic"

//go:embed manifests.yaml
var manifests []byte

var (
	crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	lwsResource = schema.GroupVersionResource{Group: "leaderworkerset.x-k8s.io", Version: "v1", Resource: "leaderworkersets"}
)

// State is what a cluster has of LeaderWorkerSet.
type State struct {
	// Present: the LeaderWorkerSet API (its CRD) exists.
	Present bool
	// Ours: kinetic installed it (VersionAnnotation); only then is it upgraded.
	Ours bool
	// Version is the release installed ("" if unknown), Image the controller's image
	// ("" without the Deployment).
	Version, Image string
}

// Read reads the CRD and the controller's Deployment.
func Read(ctx context.Context, cfg *rest.Config) (State, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return State{}, err
	}
	crd, err := dyn.Resource(crdResource).Get(ctx, CRD, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return State{}, nil
	}
	if err != nil {
		return State{}, fmt.Errorf("read the LeaderWorkerSet CRD: %w", err)
	}
	s := State{Present: true, Version: crd.GetAnnotations()[VersionAnnotation]}
	s.Ours = s.Version != ""
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return s, err
	}
	d, err := cs.AppsV1().Deployments(Namespace).Get(ctx, Deployment, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return s, fmt.Errorf("read the LeaderWorkerSet controller %s/%s: %w", Namespace, Deployment, err)
	default:
		s.Image = managerImage(d)
		if s.Version == "" {
			s.Version = tagOf(s.Image)
		}
	}
	return s, nil
}

func managerImage(d *appsv1.Deployment) string {
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "manager" {
			return c.Image
		}
	}
	return ""
}

// tagOf is the vX.Y.Z tag of an image reference, "" if none.
func tagOf(ref string) string {
	if i := strings.LastIndexByte(ref, ':'); i >= 0 && !strings.Contains(ref[i:], "/") {
		if t := ref[i+1:]; strings.HasPrefix(t, "v") {
			return t
		}
	}
	return ""
}

// Plan says what Install would do for State s with the controller image: "ok",
// "create" or "update", and why.
func (s State) Plan(image string) (action, detail string) {
	if image == "" {
		image = DefaultImage
	}
	switch {
	case !s.Present:
		return "create", Version + ", controller " + image
	case !s.Ours && Older(s.Version, Version):
		return "ok", "release " + s.Version + " installed by someone else: left as it is (kinetic needs " + Version + ")"
	case !s.Ours:
		return "ok", "installed by someone else"
	case Older(s.Version, Version):
		return "update", s.Version + " → " + Version
	case s.Image != image:
		return "update", "controller image " + s.Image + " → " + image
	}
	return "ok", Version
}

// Older reports whether release a (vX.Y.Z) is older than b; an unreadable a is older.
func Older(a, b string) bool {
	pa, oka := parse(a)
	pb, _ := parse(b)
	if !oka {
		return true
	}
	for i := range pa {
		if pa[i] != pb[i] {
			return pa[i] < pb[i]
		}
	}
	return false
}

func parse(v string) ([3]int, bool) {
	var out [3]int
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if len(parts) != 3 || !strings.HasPrefix(v, "v") {
		return out, false
	}
	for i, p := range parts {
		if j := strings.IndexAny(p, "-+"); j >= 0 {
			p = p[:j]
		}
		n, err := strconv.Atoi(p)
		if err != nil {
			return out, false
		}
		out[i] = n
	}
	return out, true
}

// Objects are the release's objects, with image as the controller's image ("" =
// DefaultImage), one replica with ControllerCPU and ControllerMemory, and
// VersionAnnotation on the CRD and the Deployment.
func Objects(image string) ([]*unstructured.Unstructured, error) {
	if image == "" {
		image = DefaultImage
	}
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifests), 1<<20)
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("the embedded LeaderWorkerSet manifests: %w", err)
		}
		if len(doc) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: doc}
		switch u.GetKind() {
		case "CustomResourceDefinition":
			annotate(u)
		case "Deployment":
			annotate(u)
			// One replica asking for a tenth of a core: the release's two replicas of a
			// core and 1 GiB each would take half of the small system pool up makes
			// (requests only; no limits, so nothing is throttled or killed).
			if err := unstructured.SetNestedField(u.Object, int64(1), "spec", "replicas"); err != nil {
				return nil, err
			}
			cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
			for _, c := range cs {
				if m, ok := c.(map[string]any); ok && m["name"] == "manager" {
					m["image"] = image
					m["resources"] = map[string]any{"requests": map[string]any{"cpu": ControllerCPU, "memory": ControllerMemory}}
				}
			}
			if err := unstructured.SetNestedSlice(u.Object, cs, "spec", "template", "spec", "containers"); err != nil {
				return nil, err
			}
		}
		out = append(out, u)
	}
}

func annotate(u *unstructured.Unstructured) {
	a := u.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[VersionAnnotation] = Version
	u.SetAnnotations(a)
}

// Install applies the release server-side (field manager "kinetic", forcing
// conflicts: the objects are the release's) and waits, at most wait, until the API
// admits a LeaderWorkerSet (the controller's webhooks answer). Running it again is
// harmless: an upgrade is the same apply.
func Install(ctx context.Context, cfg *rest.Config, image string, wait time.Duration, progress io.Writer) error {
	objs, err := Objects(image)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	for _, u := range objs {
		gvk := u.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return fmt.Errorf("LeaderWorkerSet %s %s: the cluster does not serve %s: %w", gvk.Kind, u.GetName(), gvk.GroupVersion(), err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			ri = dyn.Resource(m.Resource).Namespace(u.GetNamespace())
		}
		if _, err := ri.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
			return fmt.Errorf("apply LeaderWorkerSet %s %s: %w", gvk.Kind, u.GetName(), err)
		}
	}
	return WaitReady(ctx, cfg, wait, progress)
}

// WaitReady waits until the API server admits a LeaderWorkerSet (a dry run): the CRD
// is established and the controller's webhooks answer.
func WaitReady(ctx context.Context, cfg *rest.Config, wait time.Duration, progress io.Writer) error {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	probe := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
		"metadata": map[string]any{"name": "kinetic-probe", "namespace": "default"},
		"spec": map[string]any{"leaderWorkerTemplate": map[string]any{"size": int64(1), "workerTemplate": map[string]any{
			"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "none"}}}}}},
	}}
	start := time.Now()
	last := start
	for {
		_, err = dyn.Resource(lwsResource).Namespace("default").Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil || apierrors.IsAlreadyExists(err) {
			return nil
		}
		if crashed, msg := crashing(ctx, cfg); crashed {
			return fmt.Errorf("the LeaderWorkerSet controller keeps failing (%s): see `kubectl -n %s logs deploy/%s`", msg, Namespace, Deployment)
		}
		if time.Since(start) > wait {
			return fmt.Errorf("the LeaderWorkerSet controller is not answering after %s (%s): see `kubectl -n %s get pods` (its image must be pullable from the nodes: set lws_image to a copy in your registry)", wait.Round(time.Second), why(ctx, cfg), Namespace)
		}
		if progress != nil && time.Since(last) > 30*time.Second {
			last = time.Now()
			fmt.Fprintf(progress, "    … waiting for the LeaderWorkerSet controller (%s)\n", time.Since(start).Round(time.Second))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// crashing reports whether a controller container has exited three times or more, with
// the last lines it wrote before its last exit: waiting longer would not help.
func crashing(ctx context.Context, cfg *rest.Config) (bool, string) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return false, ""
	}
	pods, err := cs.CoreV1().Pods(Namespace).List(ctx, metav1.ListOptions{LabelSelector: "control-plane=controller-manager"})
	if err != nil {
		return false, ""
	}
	for _, p := range pods.Items {
		for _, c := range p.Status.ContainerStatuses {
			if c.RestartCount < 3 || c.LastTerminationState.Terminated == nil {
				continue
			}
			msg := fmt.Sprintf("pod %s exited %d times, last with code %d", p.Name, c.RestartCount, c.LastTerminationState.Terminated.ExitCode)
			tail := int64(5)
			if b, err := cs.CoreV1().Pods(Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: c.Name, Previous: true, TailLines: &tail}).DoRaw(ctx); err == nil && len(b) > 0 {
				msg += ": " + lastError(string(b))
			}
			return true, msg
		}
	}
	return false, ""
}

// lastError is the last log line that says ERROR (else the last line), without the
// stack trace controller-runtime appends, at most 300 bytes.
func lastError(logs string) string {
	lines := strings.Split(strings.TrimSpace(logs), "\n")
	line := lines[len(lines)-1]
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], "ERROR") {
			line = lines[i]
			break
		}
	}
	if i := strings.Index(line, `, "errorVerbose"`); i >= 0 {
		line = line[:i] + "}"
	}
	if len(line) > 300 {
		line = line[:300] + "…"
	}
	return strings.TrimSpace(line)
}

// why says what the controller's pods are doing, for the timeout's message.
func why(ctx context.Context, cfg *rest.Config) string {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "its pods cannot be read"
	}
	pods, err := cs.CoreV1().Pods(Namespace).List(ctx, metav1.ListOptions{LabelSelector: "control-plane=controller-manager"})
	if err != nil || len(pods.Items) == 0 {
		return "no controller pod"
	}
	var parts []string
	for _, p := range pods.Items {
		s := p.Name + " " + string(p.Status.Phase)
		for _, c := range p.Status.ContainerStatuses {
			if w := c.State.Waiting; w != nil {
				s += ": " + w.Reason
			}
		}
		for _, c := range p.Status.Conditions {
			if c.Type == "PodScheduled" && c.Status != "True" {
				s += ": not scheduled (" + c.Message + ")"
			}
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// Package infra sets up and checks the infrastructure jobs run on. For any existing
// Kubernetes cluster (kinetic up --backend k8s): the namespace, the service account of
// job pods, the Role the engine needs and its binding, the runner image, the profile;
// and kinetic doctor's checks. See docs/infrastructure.md.
package infra

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/google/go-containerregistry/pkg/name"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kinetic-run/kinetic/image"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// Name is the name of the service account, Role and RoleBinding up makes.
const Name = "kinetic"

// LWSGroup is the API group of LeaderWorkerSets (multi-host jobs).
const LWSGroup = "leaderworkerset.x-k8s.io"

// Target is one cluster, namespace, store and registry.
type Target struct {
	Config      *rest.Config
	Context     string // the kubeconfig context ("" if in-cluster)
	Kubeconfig  string
	Namespace   string
	Store       string // store URL, reachable from the pods
	Registry    string // image_registry
	RunnerImage string // runner_image override ("" = the published one)
	StoreSecret string
	Source      image.RunnerSource
	Images      *image.Client
	// Client, if set, is used instead of one made from Config (tests).
	Client kubernetes.Interface
}

func (t *Target) clientset() (kubernetes.Interface, error) {
	if t.Client != nil {
		return t.Client, nil
	}
	cfg := rest.CopyConfig(t.Config)
	cfg.UserAgent = "kinetic"
	cfg.QPS, cfg.Burst = 50, 100
	return kubernetes.NewForConfig(cfg)
}

// Rule is one permission the engine needs in the namespace.
type Rule struct {
	Group, Resource, Subresource string
	Verbs                        []string
}

// EngineRules are the permissions the engine uses (backend/kubernetes), and no more:
// Jobs and LeaderWorkerSets it makes and deletes, the pods it reads and deletes, logs,
// port-forward for debugging, pod labels and the pod proxy for warm pods.
func EngineRules(lws bool) []Rule {
	r := []Rule{
		{Group: "batch", Resource: "jobs", Verbs: []string{"create", "delete", "get", "list", "patch"}},
		{Resource: "pods", Verbs: []string{"delete", "get", "list", "update"}},
		{Resource: "pods", Subresource: "log", Verbs: []string{"get"}},
		// Warm pods: a job is handed to an idle pod's runner through the pod proxy.
		{Resource: "pods", Subresource: "proxy", Verbs: []string{"create", "get"}},
		{Resource: "pods", Subresource: "portforward", Verbs: []string{"create", "get"}},
		// What GKE's cluster autoscaler says about a pending pod (FailedScaleUp: quota,
		// stockout): a job's reason. Without it the reason is the scheduler's alone.
		{Resource: "events", Verbs: []string{"list"}},
	}
	if lws {
		r = append(r, Rule{Group: LWSGroup, Resource: "leaderworkersets", Verbs: []string{"create", "delete", "get", "list", "patch"}})
	}
	return r
}

func policyRules(rules []Rule) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, r := range rules {
		res := r.Resource
		if r.Subresource != "" {
			res += "/" + r.Subresource
		}
		out = append(out, rbacv1.PolicyRule{APIGroups: []string{r.Group}, Resources: []string{res}, Verbs: r.Verbs})
	}
	return out
}

// HasLWS reports whether the cluster serves LeaderWorkerSets.
func HasLWS(cs kubernetes.Interface) bool {
	_, err := cs.Discovery().ServerResourcesForGroupVersion(LWSGroup + "/v1")
	return err == nil
}

// Step is one thing up makes sure of.
type Step struct {
	What   string `json:"what"`
	Action string `json:"action"` // "ok" (nothing to do), "create", "update", "publish"
	apply  func(ctx context.Context) error
}

// Plan is what up would change.
type Plan struct {
	Steps  []Step `json:"steps"`
	LWS    bool   `json:"leaderworkersets"`
	Server string `json:"server"`
	// RunnerImage is the runner image by digest when it is already there.
	RunnerImage string `json:"runner_image,omitempty"`
	target      *Target
	tag         string
}

// Changes is the number of steps with something to do.
func (p *Plan) Changes() int {
	n := 0
	for _, s := range p.Steps {
		if s.Action != "ok" {
			n++
		}
	}
	return n
}

// Print writes the plan.
func (p *Plan) Print(w io.Writer) {
	fmt.Fprintf(w, "cluster %s, namespace %s\n", p.Server, p.target.Namespace)
	for _, s := range p.Steps {
		mark := "="
		switch s.Action {
		case "create", "publish":
			mark = "+"
		case "update":
			mark = "~"
		}
		fmt.Fprintf(w, "  %s %-8s %s\n", mark, s.Action, s.What)
	}
	if p.LWS {
		fmt.Fprintln(w, "  LeaderWorkerSet: installed (multi-host jobs can run)")
	} else {
		fmt.Fprintln(w, "  LeaderWorkerSet: not installed (multi-host jobs cannot run; install it: https://lws.sigs.k8s.io/docs/installation/)")
	}
}

// PlanUp computes what up would do: only reads (GETs, discovery, one registry HEAD).
// Each resource is a step of upSteps, in the order apply makes them.
func PlanUp(ctx context.Context, t *Target) (*Plan, error) {
	cs, err := t.clientset()
	if err != nil {
		return nil, err
	}
	if _, err := cs.Discovery().ServerVersion(); err != nil {
		return nil, fmt.Errorf("the cluster at %s is not reachable: %w (check the kubeconfig and context)", t.host(), err)
	}
	p := &Plan{target: t, Server: t.host(), LWS: HasLWS(cs)}
	u := &upPlan{t: t, p: p, cs: cs, ns: t.Namespace}
	for _, step := range upSteps {
		s, err := step(u, ctx)
		if err != nil {
			return nil, err
		}
		p.Steps = append(p.Steps, s)
	}
	return p, nil
}

// upPlan is what PlanUp's steps share.
type upPlan struct {
	t  *Target
	p  *Plan
	cs kubernetes.Interface
	ns string
}

// upSteps are the resources up makes sure of, in order: each reads its resource and
// returns the step (ok, create, update or publish).
var upSteps = []func(u *upPlan, ctx context.Context) (Step, error){
	(*upPlan).namespace,
	(*upPlan).serviceAccount,
	(*upPlan).role,
	(*upPlan).roleBinding,
	(*upPlan).runnerImage,
}

func (u *upPlan) namespace(ctx context.Context) (Step, error) {
	core, ns := u.cs.CoreV1(), u.ns
	_, err := core.Namespaces().Get(ctx, ns, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return Step{What: "namespace " + ns, Action: "create", apply: func(ctx context.Context) error {
			_, err := core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels()}}, metav1.CreateOptions{})
			return ignoreExists(err)
		}}, nil
	case err != nil:
		return Step{}, fmt.Errorf("namespace %s: %w", ns, err)
	}
	return Step{What: "namespace " + ns, Action: "ok"}, nil
}

func (u *upPlan) serviceAccount(ctx context.Context) (Step, error) {
	core, ns := u.cs.CoreV1(), u.ns
	what := fmt.Sprintf("service account %s/%s (job pods; no API permissions)", ns, Name)
	_, err := core.ServiceAccounts(ns).Get(ctx, Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return Step{What: what, Action: "create", apply: func(ctx context.Context) error {
			_, err := core.ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: Name, Labels: labels()}}, metav1.CreateOptions{})
			return ignoreExists(err)
		}}, nil
	case err != nil:
		return Step{}, fmt.Errorf("service account %s/%s: %w", ns, Name, err)
	}
	return Step{What: what, Action: "ok"}, nil
}

func (u *upPlan) role(ctx context.Context) (Step, error) {
	rb, ns := u.cs.RbacV1(), u.ns
	want := policyRules(EngineRules(u.p.LWS))
	what := fmt.Sprintf("role %s/%s (what the engine needs: jobs, pods, pods/log, pods/proxy, pods/portforward, events%s)", ns, Name, map[bool]string{true: ", leaderworkersets"}[u.p.LWS])
	switch role, err := rb.Roles(ns).Get(ctx, Name, metav1.GetOptions{}); {
	case apierrors.IsNotFound(err):
		return Step{What: what, Action: "create", apply: func(ctx context.Context) error {
			_, err := rb.Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: Name, Labels: labels()}, Rules: want}, metav1.CreateOptions{})
			return ignoreExists(err)
		}}, nil
	case err != nil:
		return Step{}, fmt.Errorf("role %s/%s: %w", ns, Name, err)
	case !reflect.DeepEqual(role.Rules, want):
		return Step{What: what, Action: "update", apply: func(ctx context.Context) error {
			role.Rules = want
			_, err := rb.Roles(ns).Update(ctx, role, metav1.UpdateOptions{})
			return err
		}}, nil
	}
	return Step{What: what, Action: "ok"}, nil
}

func (u *upPlan) roleBinding(ctx context.Context) (Step, error) {
	rb, ns := u.cs.RbacV1(), u.ns
	subj := []rbacv1.Subject{{Kind: "ServiceAccount", Name: Name, Namespace: ns}}
	ref := rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: Name}
	create := func(ctx context.Context) error {
		_, err := rb.RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: Name, Labels: labels()}, Subjects: subj, RoleRef: ref}, metav1.CreateOptions{})
		return err
	}
	what := fmt.Sprintf("role binding %s/%s (role %s → service account %s, for submitters inside the cluster)", ns, Name, Name, Name)
	switch b, err := rb.RoleBindings(ns).Get(ctx, Name, metav1.GetOptions{}); {
	case apierrors.IsNotFound(err):
		return Step{What: what, Action: "create", apply: func(ctx context.Context) error { return ignoreExists(create(ctx)) }}, nil
	case err != nil:
		return Step{}, fmt.Errorf("role binding %s/%s: %w", ns, Name, err)
	case !reflect.DeepEqual(b.Subjects, subj) || b.RoleRef != ref:
		return Step{What: what, Action: "update", apply: func(ctx context.Context) error {
			if b.RoleRef != ref { // immutable: replace
				if err := rb.RoleBindings(ns).Delete(ctx, Name, metav1.DeleteOptions{}); err != nil {
					return err
				}
				return create(ctx)
			}
			b.Subjects = subj
			_, err := rb.RoleBindings(ns).Update(ctx, b, metav1.UpdateOptions{})
			return err
		}}, nil
	}
	return Step{What: what, Action: "ok"}, nil
}

// runnerImage is the runner_image as given, or the published runner image when the
// registry holds it, else its publication.
func (u *upPlan) runnerImage(ctx context.Context) (Step, error) {
	t, p := u.t, u.p
	if t.RunnerImage != "" {
		p.RunnerImage = t.RunnerImage
		return Step{What: "runner image " + t.RunnerImage + " (runner_image)", Action: "ok"}, nil
	}
	repo, bins, tag, err := t.runnerTag(ctx)
	if err != nil {
		return Step{}, err
	}
	ref := repo.Tag(tag)
	h, ok, err := t.Images.Lookup(ctx, ref)
	if err != nil {
		return Step{}, err
	}
	if ok {
		p.RunnerImage = repo.Digest(h.String()).Name()
		return Step{What: "runner image " + p.RunnerImage, Action: "ok"}, nil
	}
	return Step{What: "runner image " + ref.Name() + " (linux/amd64, linux/arm64)", Action: "publish", apply: func(ctx context.Context) error {
		d, err := t.Images.PublishRunner(ctx, repo, bins, nil)
		p.RunnerImage = d.Name()
		return err
	}}, nil
}

func (t *Target) runnerTag(ctx context.Context) (repoOut name.Repository, bins map[string]string, tag string, err error) {
	if strings.TrimSpace(t.Registry) == "" {
		return name.Repository{}, nil, "", errors.New("no registry to publish the runner image to: give --registry HOST/PATH (a registry the nodes can pull from), or set image_registry")
	}
	repo, err := image.ParseRepository(strings.TrimSuffix(t.Registry, "/") + "/" + image.RunnerRepoName)
	if err != nil {
		return name.Repository{}, nil, "", fmt.Errorf("registry: %w", err)
	}
	bins, err = t.Source.Binaries(ctx)
	if err != nil {
		return name.Repository{}, nil, "", err
	}
	tag, err = image.RunnerTag(bins)
	return repo, bins, tag, err
}

// Apply runs the plan's steps in order.
func (p *Plan) Apply(ctx context.Context, progress io.Writer) error {
	for _, s := range p.Steps {
		if s.Action == "ok" {
			continue
		}
		start := time.Now()
		if err := s.apply(ctx); err != nil {
			return fmt.Errorf("%s %s: %w", s.Action, s.What, err)
		}
		fmt.Fprintf(progress, "  %s %s (%.1fs)\n", s.Action, s.What, time.Since(start).Seconds())
	}
	return nil
}

func labels() map[string]string { return map[string]string{"app.kubernetes.io/managed-by": "kinetic"} }

func ignoreExists(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// CheckStoreHere writes, reads and deletes an object in the store from this machine.
func CheckStoreHere(ctx context.Context, url string) error {
	st, err := store.Open(ctx, url)
	if err != nil {
		return err
	}
	defer st.Close()
	key := "checks/" + nonce() + "/here"
	data := []byte("kinetic store check " + time.Now().UTC().Format(time.RFC3339))
	if err := st.Put(ctx, key, data); err != nil {
		return fmt.Errorf("write %s: %w", key, err)
	}
	got, err := st.Get(ctx, key)
	if err != nil {
		return fmt.Errorf("read %s: %w", key, err)
	}
	if string(got) != string(data) {
		return fmt.Errorf("read %s back: different bytes", key)
	}
	return st.Delete(ctx, key)
}

// CheckStoreFromPod writes an object here, runs a Job in the runner image that reads it
// and writes it back under another key (kinetic-runner check-store), and reads that.
func CheckStoreFromPod(ctx context.Context, t *Target, runnerImage string) error {
	cs, err := t.clientset()
	if err != nil {
		return err
	}
	st, err := store.Open(ctx, t.Store)
	if err != nil {
		return err
	}
	defer st.Close()
	id := nonce()
	in, out := "checks/"+id+"/to-pod", "checks/"+id+"/from-pod"
	data := []byte("kinetic pod store check " + id)
	if err := st.Put(ctx, in, data); err != nil {
		return fmt.Errorf("write %s: %w", in, err)
	}
	defer st.DeletePrefix(context.Background(), "checks/"+id+"/")
	name := "kinetic-check-" + id
	var vols []corev1.Volume
	var mounts []corev1.VolumeMount
	var env []corev1.EnvVar
	if t.StoreSecret != "" {
		vols = []corev1.Volume{{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: t.StoreSecret}}}}
		mounts = []corev1.VolumeMount{{Name: "creds", MountPath: "/var/run/kinetic/store-credentials", ReadOnly: true}}
		for _, v := range store.PodCredentials("/var/run/kinetic/store-credentials") {
			env = append(env, corev1.EnvVar{Name: v.Name, Value: v.Value})
		}
	}
	zero, ttl, deadline := int32(0), int32(60), int64(180)
	no := false
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: t.Namespace, Labels: labels()},
		Spec: batchv1.JobSpec{BackoffLimit: &zero, TTLSecondsAfterFinished: &ttl, ActiveDeadlineSeconds: &deadline,
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels()}, Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever, AutomountServiceAccountToken: &no, Volumes: vols,
				Containers: []corev1.Container{{Name: "check", Image: runnerImage, Env: env, VolumeMounts: mounts,
					Command:   []string{job.RunnerPath, "check-store", "--store", t.Store, "--read", in, "--write", out},
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: mustQ("10m")}}}},
			}}},
	}
	jobs := cs.BatchV1().Jobs(t.Namespace)
	if _, err := jobs.Create(ctx, j, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create the check Job: %w", err)
	}
	bg := metav1.DeletePropagationBackground
	defer jobs.Delete(context.Background(), name, metav1.DeleteOptions{PropagationPolicy: &bg})
	until := time.Now().Add(3 * time.Minute)
	for time.Now().Before(until) {
		if got, err := st.Get(ctx, out); err == nil {
			if string(got) != string(data) {
				return fmt.Errorf("the pod wrote different bytes to %s", out)
			}
			return nil
		}
		cur, err := jobs.Get(ctx, name, metav1.GetOptions{})
		if err == nil && cur.Status.Failed > 0 {
			return fmt.Errorf("the check pod failed: %s", podMessage(ctx, cs, t.Namespace, name))
		}
		if msg := pullProblem(ctx, cs, t.Namespace, name); msg != "" {
			return fmt.Errorf("the check pod cannot start: %s", msg)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	return fmt.Errorf("the check pod did not write %s within 3 minutes: %s", out, podMessage(ctx, cs, t.Namespace, name))
}

func podMessage(ctx context.Context, cs kubernetes.Interface, ns, job string) string {
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + job})
	if err != nil || len(pods.Items) == 0 {
		return "no pod"
	}
	p := pods.Items[0]
	tail := int64(5)
	if b, err := cs.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{TailLines: &tail}).DoRaw(ctx); err == nil && len(b) > 0 {
		return strings.TrimSpace(string(b))
	}
	return string(p.Status.Phase) + " " + p.Status.Message
}

func pullProblem(ctx context.Context, cs kubernetes.Interface, ns, job string) string {
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + job})
	if err != nil {
		return ""
	}
	for _, p := range pods.Items {
		for _, c := range p.Status.ContainerStatuses {
			if w := c.State.Waiting; w != nil && (w.Reason == "ErrImagePull" || w.Reason == "InvalidImageName") {
				return w.Reason + ": " + w.Message
			}
		}
	}
	return ""
}

func nonce() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func sortedStrings(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func mustQ(s string) resource.Quantity { return resource.MustParse(s) }

func (t *Target) host() string {
	if t.Config == nil {
		return "(client)"
	}
	return t.Config.Host
}

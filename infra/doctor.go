package infra

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"sort"
	"strings"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kinetic-run/kinetic/accel"
	"github.com/kinetic-run/kinetic/image"
	"github.com/kinetic-run/kinetic/store"
)

// Check is one line of kinetic doctor.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
	// Fix is the exact thing to do when !OK.
	Fix string `json:"fix,omitempty"`
	// Info checks report and never fail (LeaderWorkerSet, accelerators).
	Info bool `json:"info,omitempty"`
}

// Report is every check.
type Report struct {
	Checks []Check `json:"checks"`
	// OK is false when a job could not run.
	OK bool `json:"ok"`
	// WarmPods are the pods kept for the next job in the namespace (their check says
	// the same in a line).
	WarmPods []WarmPod `json:"warm_pods,omitempty"`
}

func (r *Report) add(c Check) { r.Checks = append(r.Checks, c) }

// Passed reports whether a job could run (OK): a provision.Report.
func (r *Report) Passed() bool { return r.OK }

// Print writes one ✓/✗ line per check, and the fix under each ✗.
func (r *Report) Print(w io.Writer) {
	for _, c := range r.Checks {
		mark := "✓"
		if !c.OK {
			mark = "✗"
		}
		if c.Info {
			mark = "•"
		}
		line := mark + " " + c.Name
		if c.Detail != "" {
			line += ": " + c.Detail
		}
		fmt.Fprintln(w, line)
		if !c.OK && c.Fix != "" {
			fmt.Fprintln(w, "    fix: "+c.Fix)
		}
	}
	if r.OK {
		fmt.Fprintln(w, "ready: jobs can run")
	} else {
		fmt.Fprintln(w, "not ready: a job could not run until every ✗ is fixed")
	}
}

// Doctor checks that a job can run on t. It makes no change but the store check's
// objects and the check Job (deleted after). Each check is a step of doctorChecks.
func Doctor(ctx context.Context, t *Target, kubeErr error) *Report {
	d := &doctorRun{t: t, r: &Report{OK: true}, kubeErr: kubeErr}
	for _, check := range doctorChecks {
		if !check(d, ctx) {
			break
		}
	}
	return d.r
}

// doctorRun is what Doctor's checks share: each may read what an earlier one found.
type doctorRun struct {
	t       *Target
	r       *Report
	kubeErr error
	cs      kubernetes.Interface
	user    string
	lws     bool
	// missing are the permissions the user lacks ("create jobs.batch").
	missing []string
	// storeHere: the store was read and written from this machine.
	storeHere   bool
	runnerImage string
}

func (d *doctorRun) fail(c Check) { c.OK = false; d.r.add(c); d.r.OK = false }

// doctorChecks are Doctor's checks in order; one that returns false ends the run
// (nothing after it can be checked).
var doctorChecks = []func(d *doctorRun, ctx context.Context) bool{
	(*doctorRun).kubeconfig,
	(*doctorRun).reachable,
	(*doctorRun).permissions,
	(*doctorRun).store,
	(*doctorRun).registryPush,
	(*doctorRun).runnerImageCheck,
	(*doctorRun).storeFromPod,
	(*doctorRun).info,
}

func (d *doctorRun) kubeconfig(context.Context) bool {
	if d.kubeErr != nil {
		d.fail(Check{Name: "kubeconfig", Detail: d.kubeErr.Error(), Fix: "point KUBECONFIG (or the profile's kubeconfig / kube_context) at a cluster: e.g. `gcloud container clusters get-credentials CLUSTER` or `kubectl config use-context NAME`"})
		return false
	}
	d.r.add(Check{Name: "kubeconfig", OK: true, Detail: fmt.Sprintf("context %s, server %s", orNone(d.t.Context), d.t.Config.Host)})
	return true
}

func (d *doctorRun) reachable(context.Context) bool {
	cs, err := d.t.clientset()
	if err == nil {
		_, err = cs.Discovery().ServerVersion()
	}
	if err != nil {
		d.fail(Check{Name: "cluster reachable", Detail: err.Error(), Fix: "check the network path to " + d.t.Config.Host + " and that the credentials in the kubeconfig are current"})
		return false
	}
	d.cs = cs
	v, _ := cs.Discovery().ServerVersion()
	d.r.add(Check{Name: "cluster reachable", OK: true, Detail: "Kubernetes " + v.GitVersion})
	return true
}

func (d *doctorRun) permissions(ctx context.Context) bool {
	cs, t := d.cs, d.t
	if ssr, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{}); err == nil {
		d.user = ssr.Status.UserInfo.Username
	}
	d.lws = HasLWS(cs)
	for _, rule := range EngineRules(d.lws) {
		d.missing = append(d.missing, deniedVerbs(ctx, cs, t.Namespace, rule)...)
	}
	who := d.user
	if who == "" {
		who = "you"
	}
	if len(d.missing) == 0 {
		d.r.add(Check{Name: "permissions", OK: true, Detail: fmt.Sprintf("%s may manage jobs, pods, logs and port-forwards%s in namespace %s", who, map[bool]string{true: " and LeaderWorkerSets"}[d.lws], t.Namespace)})
		return true
	}
	fix := fmt.Sprintf("a cluster admin runs `kinetic up --backend k8s --namespace %s` (it makes the role %s) and then %s", t.Namespace, Name, bindCommand(t.Namespace, d.user))
	if d.user == "system:serviceaccount:"+t.Namespace+":"+Name {
		fix = fmt.Sprintf("a cluster admin runs `kinetic up --backend k8s --namespace %s`: it makes the role %s and binds it to this service account (role binding %s)", t.Namespace, Name, Name)
	}
	d.fail(Check{Name: "permissions", Detail: fmt.Sprintf("%s cannot %s in namespace %s", who, strings.Join(d.missing, ", "), t.Namespace), Fix: fix})
	return true
}

// deniedVerbs are rule's verbs the caller may not use in ns ("create jobs.batch").
func deniedVerbs(ctx context.Context, cs kubernetes.Interface, ns string, rule Rule) []string {
	var missing []string
	for _, verb := range rule.Verbs {
		rev, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authzv1.SelfSubjectAccessReview{Spec: authzv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authzv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: rule.Group, Resource: rule.Resource, Subresource: rule.Subresource}}}, metav1.CreateOptions{})
		if err != nil || !rev.Status.Allowed {
			res := rule.Resource
			if rule.Subresource != "" {
				res += "/" + rule.Subresource
			}
			if rule.Group != "" {
				res += "." + rule.Group
			}
			missing = append(missing, verb+" "+res)
		}
	}
	return missing
}

func (d *doctorRun) store(ctx context.Context) bool {
	t := d.t
	if !store.FromPods(t.Store) {
		d.fail(Check{Name: "store", Detail: fmt.Sprintf("%q cannot be reached from pods", t.Store), Fix: "use a store of one of " + store.PodSchemes() + ": `kinetic up --backend k8s --store gs://BUCKET` (create one with `kinetic store create`)"})
	} else if err := CheckStoreHere(ctx, t.Store); err != nil {
		d.fail(Check{Name: "store from here", Detail: err.Error(), Fix: "check the bucket exists and your credentials may write to it (`gcloud auth application-default login`, AWS_PROFILE)"})
	} else {
		d.storeHere = true
		d.r.add(Check{Name: "store from here", OK: true, Detail: "read and write " + t.Store})
	}
	return true
}

func (d *doctorRun) registryPush(context.Context) bool {
	t := d.t
	d.runnerImage = t.RunnerImage
	if t.Registry == "" {
		if t.RunnerImage == "" {
			d.fail(Check{Name: "registry push", Detail: "no image_registry", Fix: "`kinetic up --backend k8s --registry HOST/PATH` with a registry the nodes can pull from"})
		}
		return true
	}
	repo, err := image.ParseRepository(strings.TrimSuffix(t.Registry, "/") + "/" + image.RunnerRepoName)
	if err == nil {
		err = remote.CheckPushPermission(repo.Tag("check"), t.Images.Credentials(), t.Images.RoundTripper())
	}
	if err != nil {
		d.fail(Check{Name: "registry push", Detail: err.Error(), Fix: fmt.Sprintf("log in to the registry (`gcloud auth configure-docker %s`, `podman login %s`) or set image_registry to one you may push to", registryHost(t.Registry), registryHost(t.Registry))})
	} else {
		d.r.add(Check{Name: "registry push", OK: true, Detail: t.Registry})
	}
	return true
}

func (d *doctorRun) runnerImageCheck(ctx context.Context) bool {
	t := d.t
	if d.runnerImage != "" {
		d.r.add(Check{Name: "runner image", OK: true, Detail: d.runnerImage + " (runner_image)"})
		return true
	}
	if t.Registry == "" {
		return true
	}
	repo, _, tag, err := t.runnerTag(ctx)
	if err != nil {
		d.fail(Check{Name: "runner image", Detail: err.Error(), Fix: "see the message; or set runner_image"})
		return true
	}
	h, ok, err := t.Images.Lookup(ctx, repo.Tag(tag))
	if err != nil || !ok {
		detail := repo.Tag(tag).Name() + " is not in the registry"
		if err != nil {
			detail = err.Error()
		}
		d.fail(Check{Name: "runner image", Detail: detail, Fix: "`kinetic up --backend k8s` publishes it (so does the first job)"})
		return true
	}
	d.runnerImage = repo.Digest(h.String()).Name()
	d.r.add(Check{Name: "runner image", OK: true, Detail: d.runnerImage})
	return true
}

func (d *doctorRun) storeFromPod(ctx context.Context) bool {
	t := d.t
	if !d.storeHere || d.runnerImage == "" || len(d.missing) > 0 {
		return true
	}
	if err := CheckStoreFromPod(ctx, t, d.runnerImage); err != nil {
		d.fail(Check{Name: "store from a pod", Detail: err.Error(), Fix: podStoreFix(t, d.runnerImage, err)})
	} else {
		d.r.add(Check{Name: "store from a pod", OK: true, Detail: "a pod in " + t.Namespace + " read and wrote " + t.Store})
	}
	return true
}

// podStoreFix is what to do when a pod could not reach the store (err).
func podStoreFix(t *Target, runnerImage string, err error) string {
	if strings.Contains(err.Error(), "ImagePull") || strings.Contains(err.Error(), "cannot start") {
		return "the nodes cannot pull " + runnerImage + ": give them pull access to the registry (on GKE: roles/artifactregistry.reader for the node service account)"
	}
	if h := loopbackEndpoint(t.Store); h != "" {
		return fmt.Sprintf("the store's endpoint %s is this machine's loopback address: inside a pod it is the pod itself. Use an address of the store the pods reach (`kinetic up --backend k8s --store 'gs://BUCKET?endpoint=http://ADDRESS:PORT'`), or a real gs:// or s3:// bucket", h)
	}
	if unreachable(err) {
		return "pods cannot reach the store's address: use a store address the pods resolve and reach (`kinetic up --backend k8s --store URL`), or allow the pods' egress to it"
	}
	return "pods must reach the store with their own credentials: on GKE bind the job's service account with Workload Identity (roles/storage.objectUser on the bucket); elsewhere create a Secret with key.json or credentials and set store_secret"
}

// info are the checks that report and never fail: LeaderWorkerSet, accelerators, warm pods.
func (d *doctorRun) info(ctx context.Context) bool {
	if d.lws {
		d.r.add(Check{Name: "LeaderWorkerSet", OK: true, Info: true, Detail: "installed (multi-host jobs can run)"})
	} else {
		d.r.add(Check{Name: "LeaderWorkerSet", OK: true, Info: true, Detail: "not installed: multi-host jobs cannot run (https://lws.sigs.k8s.io/docs/installation/)"})
	}
	d.r.add(Check{Name: "accelerators", OK: true, Info: true, Detail: accelerators(ctx, d.cs)})
	warm, werr := listWarmPods(ctx, d.cs, d.t.Namespace)
	d.r.WarmPods = warm
	d.r.add(Check{Name: "warm pods", OK: true, Info: true, Detail: warmPodsDetail(warm, werr, d.t.Namespace, time.Now())})
	return true
}

// accelerators names the catalog accelerators whose node selectors some node matches.
func accelerators(ctx context.Context, cs kubernetes.Interface) string {
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return "cannot list nodes (" + err.Error() + "): only CPU jobs are known to fit"
	}
	found := map[string]bool{}
	for _, n := range nodes.Items {
		for _, name := range accel.OnNode(n.Labels) {
			found[name] = true
		}
	}
	if len(found) == 0 {
		return fmt.Sprintf("%d node(s), CPU only (no GPU or TPU node labels)", len(nodes.Items))
	}
	names := sortedStrings(found)
	sort.Strings(names)
	return fmt.Sprintf("%d node(s) offer %s", len(nodes.Items), strings.Join(names, ", "))
}

func bindCommand(ns, user string) string {
	switch {
	case strings.HasPrefix(user, "system:serviceaccount:"):
		rest := strings.TrimPrefix(user, "system:serviceaccount:")
		sns, sa, _ := strings.Cut(rest, ":")
		return fmt.Sprintf("`kubectl create rolebinding kinetic-%s --namespace %s --role %s --serviceaccount %s:%s`", sa, ns, Name, sns, sa)
	case user != "":
		return fmt.Sprintf("`kubectl create rolebinding kinetic-%s --namespace %s --role %s --user %s`", sanitize(user), ns, Name, user)
	default:
		return fmt.Sprintf("`kubectl create rolebinding kinetic-USER --namespace %s --role %s --user YOUR_USER`", ns, Name)
	}
}

func sanitize(s string) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			b[i] = '-'
		}
	}
	return strings.Trim(string(b), "-")
}

func registryHost(r string) string { h, _, _ := strings.Cut(r, "/"); return h }

func orNone(s string) string {
	if s == "" {
		return "(in-cluster)"
	}
	return s
}

// loopbackEndpoint is the host of the store URL's endpoint= when it is a loopback
// address (reachable here, not from a pod), else "".
func loopbackEndpoint(storeURL string) string {
	u, err := url.Parse(storeURL)
	if err != nil {
		return ""
	}
	ep, err := url.Parse(u.Query().Get("endpoint"))
	if err != nil || ep.Host == "" {
		return ""
	}
	h := ep.Hostname()
	if ip := net.ParseIP(h); (ip != nil && ip.IsLoopback()) || strings.EqualFold(h, "localhost") {
		return ep.Host
	}
	return ""
}

// unreachable reports whether a pod's store error is about the network, not access.
func unreachable(err error) bool {
	s := err.Error()
	for _, w := range []string{"connection refused", "no such host", "i/o timeout", "did not answer", "network is unreachable", "dial tcp"} {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

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
// objects and the check Job (deleted after).
func Doctor(ctx context.Context, t *Target, kubeErr error) *Report {
	r := &Report{OK: true}
	fail := func(c Check) { c.OK = false; r.add(c); r.OK = false }
	if kubeErr != nil {
		fail(Check{Name: "kubeconfig", Detail: kubeErr.Error(), Fix: "point KUBECONFIG (or the profile's kubeconfig / kube_context) at a cluster: e.g. `gcloud container clusters get-credentials CLUSTER` or `kubectl config use-context NAME`"})
		return r
	}
	r.add(Check{Name: "kubeconfig", OK: true, Detail: fmt.Sprintf("context %s, server %s", orNone(t.Context), t.Config.Host)})
	cs, err := t.clientset()
	if err == nil {
		_, err = cs.Discovery().ServerVersion()
	}
	if err != nil {
		fail(Check{Name: "cluster reachable", Detail: err.Error(), Fix: "check the network path to " + t.Config.Host + " and that the credentials in the kubeconfig are current"})
		return r
	}
	v, _ := cs.Discovery().ServerVersion()
	r.add(Check{Name: "cluster reachable", OK: true, Detail: "Kubernetes " + v.GitVersion})

	user := ""
	if ssr, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{}); err == nil {
		user = ssr.Status.UserInfo.Username
	}
	lws := HasLWS(cs)
	var missing []string
	for _, rule := range EngineRules(lws) {
		for _, verb := range rule.Verbs {
			rev, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authzv1.SelfSubjectAccessReview{Spec: authzv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes: &authzv1.ResourceAttributes{Namespace: t.Namespace, Verb: verb, Group: rule.Group, Resource: rule.Resource, Subresource: rule.Subresource}}}, metav1.CreateOptions{})
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
	}
	who := user
	if who == "" {
		who = "you"
	}
	if len(missing) > 0 {
		fix := fmt.Sprintf("a cluster admin runs `kinetic up --backend k8s --namespace %s` (it makes the role %s) and then %s", t.Namespace, Name, bindCommand(t.Namespace, user))
		if user == "system:serviceaccount:"+t.Namespace+":"+Name {
			fix = fmt.Sprintf("a cluster admin runs `kinetic up --backend k8s --namespace %s`: it makes the role %s and binds it to this service account (role binding %s)", t.Namespace, Name, Name)
		}
		fail(Check{Name: "permissions", Detail: fmt.Sprintf("%s cannot %s in namespace %s", who, strings.Join(missing, ", "), t.Namespace), Fix: fix})
	} else {
		r.add(Check{Name: "permissions", OK: true, Detail: fmt.Sprintf("%s may manage jobs, pods, logs and port-forwards%s in namespace %s", who, map[bool]string{true: " and LeaderWorkerSets"}[lws], t.Namespace)})
	}

	storeHere := true
	if !store.FromPods(t.Store) {
		storeHere = false
		fail(Check{Name: "store", Detail: fmt.Sprintf("%q cannot be reached from pods", t.Store), Fix: "use a store of one of " + store.PodSchemes() + ": `kinetic up --backend k8s --store gs://BUCKET` (create one with `kinetic store create`)"})
	} else if err := CheckStoreHere(ctx, t.Store); err != nil {
		storeHere = false
		fail(Check{Name: "store from here", Detail: err.Error(), Fix: "check the bucket exists and your credentials may write to it (`gcloud auth application-default login`, AWS_PROFILE)"})
	} else {
		r.add(Check{Name: "store from here", OK: true, Detail: "read and write " + t.Store})
	}

	runnerImage := t.RunnerImage
	if t.Registry != "" {
		repo, err := image.ParseRepository(strings.TrimSuffix(t.Registry, "/") + "/" + image.RunnerRepoName)
		if err == nil {
			err = remote.CheckPushPermission(repo.Tag("check"), t.Images.Credentials(), t.Images.RoundTripper())
		}
		if err != nil {
			fail(Check{Name: "registry push", Detail: err.Error(), Fix: fmt.Sprintf("log in to the registry (`gcloud auth configure-docker %s`, `podman login %s`) or set image_registry to one you may push to", registryHost(t.Registry), registryHost(t.Registry))})
		} else {
			r.add(Check{Name: "registry push", OK: true, Detail: t.Registry})
		}
	} else if t.RunnerImage == "" {
		fail(Check{Name: "registry push", Detail: "no image_registry", Fix: "`kinetic up --backend k8s --registry HOST/PATH` with a registry the nodes can pull from"})
	}
	if runnerImage == "" && t.Registry != "" {
		if repo, _, tag, err := t.runnerTag(ctx); err != nil {
			fail(Check{Name: "runner image", Detail: err.Error(), Fix: "see the message; or set runner_image"})
		} else if h, ok, err := t.Images.Lookup(ctx, repo.Tag(tag)); err != nil || !ok {
			detail := repo.Tag(tag).Name() + " is not in the registry"
			if err != nil {
				detail = err.Error()
			}
			fail(Check{Name: "runner image", Detail: detail, Fix: "`kinetic up --backend k8s` publishes it (so does the first job)"})
		} else {
			runnerImage = repo.Digest(h.String()).Name()
			r.add(Check{Name: "runner image", OK: true, Detail: runnerImage})
		}
	} else if runnerImage != "" {
		r.add(Check{Name: "runner image", OK: true, Detail: runnerImage + " (runner_image)"})
	}

	if storeHere && runnerImage != "" && len(missing) == 0 {
		if err := CheckStoreFromPod(ctx, t, runnerImage); err != nil {
			fix := "pods must reach the store with their own credentials: on GKE bind the job's service account with Workload Identity (roles/storage.objectUser on the bucket); elsewhere create a Secret with key.json or credentials and set store_secret"
			if h := loopbackEndpoint(t.Store); h != "" {
				fix = fmt.Sprintf("the store's endpoint %s is this machine's loopback address: inside a pod it is the pod itself. Use an address of the store the pods reach (`kinetic up --backend k8s --store 'gs://BUCKET?endpoint=http://ADDRESS:PORT'`), or a real gs:// or s3:// bucket", h)
			} else if unreachable(err) {
				fix = "pods cannot reach the store's address: use a store address the pods resolve and reach (`kinetic up --backend k8s --store URL`), or allow the pods' egress to it"
			}
			if strings.Contains(err.Error(), "ImagePull") || strings.Contains(err.Error(), "cannot start") {
				fix = "the nodes cannot pull " + runnerImage + ": give them pull access to the registry (on GKE: roles/artifactregistry.reader for the node service account)"
			}
			fail(Check{Name: "store from a pod", Detail: err.Error(), Fix: fix})
		} else {
			r.add(Check{Name: "store from a pod", OK: true, Detail: "a pod in " + t.Namespace + " read and wrote " + t.Store})
		}
	}

	if lws {
		r.add(Check{Name: "LeaderWorkerSet", OK: true, Info: true, Detail: "installed (multi-host jobs can run)"})
	} else {
		r.add(Check{Name: "LeaderWorkerSet", OK: true, Info: true, Detail: "not installed: multi-host jobs cannot run (https://lws.sigs.k8s.io/docs/installation/)"})
	}
	r.add(Check{Name: "accelerators", OK: true, Info: true, Detail: accelerators(ctx, cs)})
	warm, werr := listWarmPods(ctx, cs, t.Namespace)
	r.WarmPods = warm
	r.add(Check{Name: "warm pods", OK: true, Info: true, Detail: warmPodsDetail(warm, werr, t.Namespace, time.Now())})
	return r
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

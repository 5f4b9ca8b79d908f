package kubernetes_test

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kinetic-run/kinetic/image"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/testkit/kubetest"
)

// TestUpFromBare is the generic path from nothing: a registry path with no runner image,
// no runner_image setting and no image_registry in the environment, a namespace that
// does not exist. `kinetic up --backend k8s -y` publishes the runner image (from the
// runner binaries beside the CLI, as a release ships them: TestMain), makes the
// namespace and RBAC and writes the profile; a Python
// @kinetic.run job then runs with the profile alone, its init container on the image the
// CLI pushed (by digest); a second `up` writes nothing; `doctor` passes as the admin and
// fails with the fix for a service account without the role.
func TestUpFromBare(t *testing.T) {
	shared(t)
	c := needCluster(t)
	st := newStore(t)
	ctx := context.Background()
	cs, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	stamp := time.Now().UnixNano()
	ns := fmt.Sprintf("kn-up-%d", stamp%1_000_000_000)
	registry := fmt.Sprintf("%s/bare-%d", kubetest.RegistryURL, stamp)
	runnerRepo, err := name.NewRepository(registry+"/kinetic-runner", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if tags, err := remote.List(runnerRepo); err == nil && len(tags) > 0 {
		t.Fatalf("the registry is not bare: %v", tags)
	}
	t.Cleanup(func() { cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })

	home := t.TempDir()
	profiles := filepath.Join(home, "profiles.json")
	// What the profile does not say: nothing of the harness's runner image or registry.
	// KINETIC_SOURCE_DIR names a directory with no source: a runner binary missing beside
	// the CLI fails at once instead of being compiled inside this test.
	env := []string{
		"KINETIC_HOME=" + home, "KINETIC_PROFILES_FILE=" + profiles,
		"KINETIC_RUNNER_IMAGE=", "KINETIC_IMAGE_REGISTRY=", "KINETIC_BACKEND=", "KINETIC_STORE=",
		"KINETIC_SOURCE_DIR=" + t.TempDir(),
	}

	// The test image has nothing of kinetic's: the runner can only come from the CLI.
	noKineticIn(t, kubetest.PythonImage)

	// --preview prints the plan and changes nothing; without -y and without a terminal
	// up refuses with the fix.
	upArgs := []string{"up", "--backend", "k8s", "--namespace", ns, "--registry", registry, "--store", st.URL()}
	out, errOut, err := kinetic(t, st, env, append(upArgs, "--preview")...)
	if err != nil || !strings.Contains(errOut, "+ create   namespace "+ns) || !strings.Contains(errOut, "+ publish  runner image") || !strings.Contains(errOut, "preview: 6 change(s) planned, nothing applied") {
		t.Fatalf("up --preview: %v\n%s\n%s", err, out, errOut)
	}
	out, errOut, err = kinetic(t, st, env, upArgs...)
	if err == nil || !strings.Contains(errOut, "no terminal to ask on: nothing applied; run again with -y") {
		t.Fatalf("up without -y and without a terminal: %v\n%s\n%s", err, out, errOut)
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err == nil {
		t.Fatal("up --preview or a refused up made the namespace")
	}
	if tags, err := remote.List(runnerRepo); err == nil && len(tags) > 0 {
		t.Fatalf("up --preview or a refused up pushed: %v", tags)
	}
	if _, err := os.Stat(profiles); err == nil {
		t.Fatal("up --preview or a refused up wrote the profiles file")
	}

	start := time.Now()
	out, errOut, err = kinetic(t, st, env, append(upArgs, "-y")...)
	if err != nil {
		t.Fatalf("up: %v\n%s\n%s", err, out, errOut)
	}
	t.Logf("first up (%.1fs):\n%s", time.Since(start).Seconds(), errOut)
	for _, want := range []string{"+ create   namespace " + ns, "+ publish  runner image", "+ create   profile default", "read and write from a pod"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("first up does not say %q", want)
		}
	}
	tags, err := remote.List(runnerRepo)
	if err != nil || len(tags) != 1 || !strings.HasPrefix(tags[0], "sha256-") {
		t.Fatalf("runner tags after up: %v %v", tags, err)
	}
	desc, err := remote.Head(runnerRepo.Tag(tags[0]))
	if err != nil {
		t.Fatal(err)
	}
	pushed := runnerRepo.Digest(desc.Digest.String()).Name()
	t.Logf("runner image pushed by the CLI: %s (%s)", pushed, desc.MediaType)

	// A second up: nothing to do, nothing written.
	before, _ := os.ReadFile(profiles)
	fiBefore, _ := os.Stat(profiles)
	rvs := func() string {
		sa, _ := cs.CoreV1().ServiceAccounts(ns).Get(ctx, "kinetic", metav1.GetOptions{})
		role, _ := cs.RbacV1().Roles(ns).Get(ctx, "kinetic", metav1.GetOptions{})
		rb, _ := cs.RbacV1().RoleBindings(ns).Get(ctx, "kinetic", metav1.GetOptions{})
		n, _ := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return n.ResourceVersion + "/" + sa.ResourceVersion + "/" + role.ResourceVersion + "/" + rb.ResourceVersion
	}
	rvBefore := rvs()
	start = time.Now()
	out, errOut, err = kinetic(t, st, env, append(upArgs, "-y")...)
	second := time.Since(start)
	if err != nil {
		t.Fatalf("second up: %v\n%s\n%s", err, out, errOut)
	}
	t.Logf("second up (%.2fs):\n%s", second.Seconds(), errOut)
	if !strings.Contains(errOut, "nothing to change") || strings.Contains(errOut, "+ ") || strings.Contains(errOut, "~ ") {
		t.Errorf("second up changed something:\n%s", errOut)
	}
	after, _ := os.ReadFile(profiles)
	fiAfter, _ := os.Stat(profiles)
	if string(after) != string(before) || !fiAfter.ModTime().Equal(fiBefore.ModTime()) {
		t.Errorf("second up rewrote the profile")
	}
	if rv := rvs(); rv != rvBefore {
		t.Errorf("second up changed cluster objects: %s → %s", rvBefore, rv)
	}
	if tags2, _ := remote.List(runnerRepo); len(tags2) != 1 {
		t.Errorf("second up pushed: tags %v", tags2)
	}

	// A Python job with the profile up wrote.
	pout, perr, err := python(t, st, env, `
import kinetic

@kinetic.run(accelerator="cpu")
def train(n):
    import socket
    return {"sum": sum(range(n)), "host": socket.gethostname()}

r = train.run_async(100).result(cleanup=False)  # keep the pod for the checks below
print("RESULT", r["sum"], r["host"])

@kinetic.run(accelerator="cpu")
def square(x):
    return x * x

b = square.run_async_map(range(20))
print("MAP", b.results(timeout=600, cleanup=False))
`)
	if err != nil || !strings.Contains(pout, "RESULT 4950 job-") || !strings.Contains(pout, "MAP [0, 1, 4, 9, 16, 25, 36, 49, 64, 81, 100, 121, 144, 169, 196, 225, 256, 289, 324, 361]") {
		t.Fatalf("python job: %v\n%s\n%s", err, pout, perr)
	}
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=kinetic"}) // the job's pod and the batch's (group-id, not job-id, labels)
	if err != nil || len(pods.Items) < 2 {
		t.Fatalf("the pods of the job and the batch in %s: %v %d", ns, err, len(pods.Items))
	}
	t.Logf("%d pods (the job's and the batch's)", len(pods.Items))
	// The job's image is a bundled one: the runner is in it, the pushed runner image's own
	// layer (docs/kubernetes.md, "The runner in the job's image"), and the pods have no
	// init container.
	runnerRef, err := name.NewDigest(pushed, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	runnerImg, err := remote.Image(runnerRef, remote.WithPlatform(v1.Platform{OS: "linux", Architecture: "amd64"}))
	if err != nil {
		t.Fatal(err)
	}
	runnerLayers, err := runnerImg.Layers()
	if err != nil || len(runnerLayers) != 1 {
		t.Fatalf("the pushed runner image: %d layers, %v", len(runnerLayers), err)
	}
	runnerLayer, _ := runnerLayers[0].Digest()
	for _, p := range pods.Items {
		c := p.Spec.Containers[0]
		if len(p.Spec.InitContainers) != 0 || c.Command[0] != job.RunnerPath {
			t.Errorf("pod %s: init containers %v, command %v: want the runner started from the job's image", p.Name, p.Spec.InitContainers, c.Command)
		}
		ref, err := name.NewDigest(c.Image, name.Insecure)
		if err != nil {
			t.Errorf("pod %s: image %s is not by digest: %v", p.Name, c.Image, err)
			continue
		}
		img, err := remote.Image(ref)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		m, err := img.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		if got := cf.Config.Labels[image.LabelRunner]; got != pushed || m.Layers[len(m.Layers)-1].Digest != runnerLayer {
			t.Errorf("pod %s: image %s holds the runner %q (last layer %s), want %s (layer %s)", p.Name, c.Image, got, m.Layers[len(m.Layers)-1].Digest, pushed, runnerLayer)
		}
		for _, s := range p.Status.ContainerStatuses {
			if s.Name == "job" && !strings.HasSuffix(s.ImageID, "@"+ref.DigestStr()) {
				t.Errorf("pod %s: the job container ran %q, want %s", p.Name, s.ImageID, ref.DigestStr())
			}
		}
	}

	// doctor as the admin: every check passes.
	out, errOut, err = kinetic(t, st, env, "doctor")
	if err != nil || !strings.Contains(out, "✓ store from a pod") || !strings.Contains(out, "✓ runner image: "+pushed) {
		t.Errorf("doctor as admin: %v\n%s\n%s", err, out, errOut)
	}
	t.Logf("doctor:\n%s", out)

	// doctor as a service account without the role: ✗ permissions with the exact fix.
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "nobody"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tok, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "nobody", &authnv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kc, err := clientcmd.LoadFromFile(c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, ctxName := range []string{kc.CurrentContext} {
		user := kc.Contexts[ctxName].AuthInfo
		kc.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	}
	nobody := filepath.Join(t.TempDir(), "nobody.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, nobody); err != nil {
		t.Fatal(err)
	}
	out, errOut, err = kinetic(t, st, append(env, "KUBECONFIG="+nobody), "doctor")
	t.Logf("doctor as nobody:\n%s", out)
	wantFix := fmt.Sprintf("kubectl create rolebinding kinetic-nobody --namespace %s --role kinetic --serviceaccount %s:nobody", ns, ns)
	if err == nil || !strings.Contains(out, "✗ permissions") || !strings.Contains(out, "cannot create jobs.batch") || !strings.Contains(out, wantFix) {
		t.Errorf("doctor without the role: %v, want exit 1, ✗ permissions and %q\n%s\n%s", err, wantFix, out, errOut)
	}

	// doctor as the service account up bound: ✓ permissions; with the role binding
	// deleted: ✗ permissions and the fix is `kinetic up`, which puts it back.
	tok, err = cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "kinetic", &authnv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ctxName := range []string{kc.CurrentContext} {
		kc.AuthInfos[kc.Contexts[ctxName].AuthInfo] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	}
	asSA := filepath.Join(t.TempDir(), "kinetic-sa.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, asSA); err != nil {
		t.Fatal(err)
	}
	out, errOut, err = kinetic(t, st, append(env, "KUBECONFIG="+asSA), "doctor")
	if !strings.Contains(out, "✓ permissions: system:serviceaccount:"+ns+":kinetic may manage jobs") {
		t.Errorf("doctor as the bound service account: %v\n%s\n%s", err, out, errOut)
	}
	if err := cs.RbacV1().RoleBindings(ns).Delete(ctx, "kinetic", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	out, errOut, err = kinetic(t, st, append(env, "KUBECONFIG="+asSA), "doctor")
	t.Logf("doctor without the role binding:\n%s", out)
	wantFix = fmt.Sprintf("`kinetic up --backend k8s --namespace %s`: it makes the role kinetic and binds it to this service account", ns)
	if err == nil || !strings.Contains(out, "✗ permissions: system:serviceaccount:"+ns+":kinetic cannot create jobs.batch") || !strings.Contains(out, wantFix) {
		t.Errorf("doctor without the role binding: %v, want exit 1, ✗ permissions and %q\n%s\n%s", err, wantFix, out, errOut)
	}
	out, errOut, err = kinetic(t, st, env, append(upArgs, "-y")...)
	if err != nil || !strings.Contains(errOut, "+ create   role binding "+ns+"/kinetic") {
		t.Fatalf("up after the binding was deleted: %v\n%s\n%s", err, out, errOut)
	}
	if out, _, err := kinetic(t, st, append(env, "KUBECONFIG="+asSA), "doctor", "--json"); err != nil || !strings.Contains(out, `"ok": true`) {
		t.Errorf("doctor after up put the binding back: %v\n%s", err, out)
	}

	// A store whose address works here and not in a pod: its endpoint is this machine's
	// loopback (a proxy to the emulator). ✓ from here, ✗ from a pod, with the fix.
	proxy := loopbackProxy(t, strings.TrimPrefix(cluster.GCS.URL(), "http://"))
	bucket := strings.TrimPrefix(strings.SplitN(st.URL(), "?", 2)[0], "gs://")
	local := "gs://" + bucket + "?endpoint=http://" + proxy
	start = time.Now()
	out, errOut, err = kinetic(t, st, append(env, "KINETIC_STORE="+local), "doctor")
	t.Logf("doctor with a loopback store endpoint (%.1fs):\n%s", time.Since(start).Seconds(), out)
	if err == nil || !strings.Contains(out, "✓ store from here") || !strings.Contains(out, "✗ store from a pod") ||
		!strings.Contains(out, "the store's endpoint "+proxy+" is this machine's loopback address") {
		t.Errorf("doctor with a store pods cannot reach: %v, want exit 1, ✗ store from a pod and the fix\n%s\n%s", err, out, errOut)
	}
}

// noKineticIn fails the test if the image holds any file of kinetic's (a runner baked
// in would hide a missing runner image).
func noKineticIn(t *testing.T, ref string) {
	t.Helper()
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(r)
	if err != nil {
		t.Fatal(err)
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	n := 0
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
		if strings.Contains(strings.ToLower(h.Name), "kinetic") {
			t.Fatalf("%s holds %s", ref, h.Name)
		}
	}
	t.Logf("%s: %d files, none of kinetic's", ref, n)
}

// loopbackProxy serves 127.0.0.1:PORT as a reverse proxy to target and returns
// 127.0.0.1:PORT. It sends the emulator's own Host: fake-gcs-server routes path-style
// reads (GET /bucket/object) only for its public host, and reads any other Host as a
// virtual-hosted bucket name (a raw TCP proxy made every read-back "not found").
func loopbackProxy(t *testing.T, target string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: target})
	director := rp.Director
	rp.Director = func(r *http.Request) { director(r); r.Host = target }
	srv := &http.Server{Handler: rp}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}

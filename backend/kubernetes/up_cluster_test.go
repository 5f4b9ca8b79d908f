package kubernetes_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kinetic-run/kinetic/internal/kubetest"
)

// TestUpFromBare is the generic path from nothing: a registry path with no runner image,
// no runner_image setting and no image_registry in the environment, a namespace that
// does not exist. `kinetic up --backend k8s -y` publishes the runner image (cross-compiled
// from this checkout), makes the namespace and RBAC and writes the profile; a Python
// @kinetic.run job then runs with the profile alone, its init container on the image the
// CLI pushed (by digest); a second `up` writes nothing; `doctor` passes as the admin and
// fails with the fix for a service account without the role.
func TestUpFromBare(t *testing.T) {
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
	_, file, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(file), "..", "..")
	// What the profile does not say: nothing of the harness's runner image or registry.
	env := []string{
		"KINETIC_HOME=" + home, "KINETIC_PROFILES_FILE=" + profiles,
		"KINETIC_RUNNER_IMAGE=", "KINETIC_IMAGE_REGISTRY=", "KINETIC_BACKEND=", "KINETIC_STORE=",
		"KINETIC_SOURCE_DIR=" + src,
	}

	start := time.Now()
	out, errOut, err := kinetic(t, st, env, "up", "--backend", "k8s", "-y", "--namespace", ns, "--registry", registry, "--store", st.URL())
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
	out, errOut, err = kinetic(t, st, env, "up", "--backend", "k8s", "-y", "--namespace", ns, "--registry", registry, "--store", st.URL())
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

r = train(100)
print("RESULT", r["sum"], r["host"])
`)
	if err != nil || !strings.Contains(pout, "RESULT 4950 job-") {
		t.Fatalf("python job: %v\n%s\n%s", err, pout, perr)
	}
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=kinetic,kinetic.dev/job-id"})
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("the job's pod in %s: %v %d", ns, err, len(pods.Items))
	}
	for _, p := range pods.Items {
		if got := p.Spec.InitContainers[0].Image; got != pushed {
			t.Errorf("pod %s: init container image %s, want %s", p.Name, got, pushed)
		}
		var ran string
		for _, s := range p.Status.InitContainerStatuses {
			if s.Name == "kinetic-runner" {
				ran = s.ImageID
				if s.State.Terminated == nil || s.State.Terminated.ExitCode != 0 {
					t.Errorf("pod %s: init container state %+v", p.Name, s.State)
				}
			}
		}
		if !strings.HasSuffix(ran, "@"+desc.Digest.String()) {
			t.Errorf("pod %s: the init container ran %q, want the pushed %s", p.Name, ran, desc.Digest)
		}
		t.Logf("pod %s: init container ran %s", p.Name, ran)
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
	// The fix works.
	out, errOut, err = runIn(t, st, t.TempDir(), nil, filepath.Join(c.Bins, "kubectl"), "--kubeconfig", c.Kubeconfig,
		"create", "rolebinding", "kinetic-nobody", "--namespace", ns, "--role", "kinetic", "--serviceaccount", ns+":nobody")
	if err != nil {
		t.Fatalf("kubectl: %v\n%s\n%s", err, out, errOut)
	}
	out, _, err = kinetic(t, st, append(env, "KUBECONFIG="+nobody), "doctor", "--json")
	if err != nil || !strings.Contains(out, `"ok": true`) {
		t.Errorf("doctor after the fix: %v\n%s", err, out)
	}
}

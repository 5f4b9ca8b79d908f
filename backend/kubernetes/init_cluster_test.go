package kubernetes_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kinetic-run/kinetic/testkit/kubetest"
	"github.com/kinetic-run/kinetic/testkit/tmuxtest"
)

// TestInitJoinsCluster: `kinetic init` in a real terminal (tmux) lists the kubeconfig's
// context, joins it with the answers typed, shows up's plan, asks, applies, and writes
// the profile it was told to.
func TestInitJoinsCluster(t *testing.T) {
	shared(t)
	c := needCluster(t)
	st := newStore(t)
	cs, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	kc, err := clientcmd.LoadFromFile(c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	stamp := time.Now().UnixNano()
	ns := fmt.Sprintf("kn-init-%d", stamp%1_000_000_000)
	registry := fmt.Sprintf("%s/init-%d", kubetest.RegistryURL, stamp)
	t.Cleanup(func() { cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })

	home := t.TempDir()
	profiles := filepath.Join(home, "profiles.json")
	// The runner image is published from the runner binaries beside kineticBin
	// (TestMain): KINETIC_SOURCE_DIR names a directory with no source, so that a missing
	// binary fails at once instead of being compiled inside this test's timeouts.
	env := []string{"HOME=" + home, "KINETIC_HOME=" + filepath.Join(home, "data"), "KINETIC_PROFILES_FILE=" + profiles,
		"KUBECONFIG=" + c.Kubeconfig, "KINETIC_SOURCE_DIR=" + t.TempDir(),
		"KINETIC_RUNNER_IMAGE=", "KINETIC_IMAGE_REGISTRY=", "KINETIC_BACKEND=", "KINETIC_STORE=", "KINETIC_NAMESPACE=",
		"KINETIC_PROFILE=", "CLOUDSDK_CORE_PROJECT=", "GOOGLE_CLOUD_PROJECT=", "CLOUDSDK_CONFIG="}
	term := tmuxtest.Start(t, t.TempDir(), env, kineticBin, "init")
	screen := term.WaitFor("choice [1]:", 30*time.Second)
	want := fmt.Sprintf("1) join Kubernetes context %s (%s)", kc.CurrentContext, kc.Clusters[kc.Contexts[kc.CurrentContext].Cluster].Server)
	if !strings.Contains(screen, want) || !strings.Contains(screen, "Profiles: none yet") {
		t.Fatalf("the screen does not show %q:\n%s", want, screen)
	}
	term.Type("1")
	term.WaitFor("Profile to write [default]:", 5*time.Second)
	term.Type("cluster")
	term.WaitFor("Namespace for jobs [default]:", 5*time.Second)
	term.Type(ns)
	term.WaitFor("Registry the nodes pull from (HOST/PATH):", 5*time.Second)
	term.Type(registry)
	term.WaitFor("Store the pods reach (gs://BUCKET or s3://BUCKET):", 5*time.Second)
	term.Type(st.URL())
	// The plan publishes the runner image from the prebuilt runner binaries: it hashes
	// them and asks the registry for the tag, nothing more.
	screen = term.WaitFor("apply 6 change(s)? [y/N]", 60*time.Second)
	for _, w := range []string{"+ create   namespace " + ns, "+ publish  runner image " + registry + "/kinetic-runner:sha256-", "+ create   profile cluster"} {
		if !strings.Contains(screen, w) {
			t.Errorf("the plan does not show %q:\n%s", w, screen)
		}
	}
	term.Type("y")
	screen = term.WaitFor("ready in", 3*time.Minute)
	if code := term.Exit(10 * time.Second); code != 0 {
		t.Fatalf("init exited %d:\n%s", code, screen)
	}
	t.Logf("screen:\n%s", screen)
	var f struct {
		Current  string
		Profiles map[string]map[string]any
	}
	b, _ := os.ReadFile(profiles)
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	p := f.Profiles["cluster"]
	if f.Current != "cluster" || p["backend"] != "k8s" || p["namespace"] != ns || p["image_registry"] != registry || p["store"] != st.URL() || p["kube_context"] != kc.CurrentContext {
		t.Errorf("profiles after init: %s", b)
	}
	if _, err := cs.RbacV1().RoleBindings(ns).Get(context.Background(), "kinetic", metav1.GetOptions{}); err != nil {
		t.Errorf("init did not make the role binding: %v", err)
	}
}

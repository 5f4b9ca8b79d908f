package lws

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestObjects: the embedded release parses into the objects the release has, the
// controller's image is replaced, and the CRD and Deployment carry the version.
func TestObjects(t *testing.T) {
	objs, err := Objects("10.85.0.1:5000/lws:test")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, u := range objs {
		kinds[u.GetKind()]++
		switch u.GetKind() {
		case "Deployment":
			j := mustJSON(t, u.Object)
			if !strings.Contains(j, `"image":"10.85.0.1:5000/lws:test"`) || !strings.Contains(j, `"replicas":1`) || !strings.Contains(j, `"cpu":"100m"`) {
				t.Errorf("deployment image, replicas or requests not set: %s", j)
			}
			fallthrough
		case "CustomResourceDefinition":
			if u.GetAnnotations()[VersionAnnotation] != Version {
				t.Errorf("%s %s: annotations %v", u.GetKind(), u.GetName(), u.GetAnnotations())
			}
		}
	}
	for k, n := range map[string]int{"Namespace": 1, "CustomResourceDefinition": 1, "Deployment": 1, "MutatingWebhookConfiguration": 1, "ValidatingWebhookConfiguration": 1, "Service": 2} {
		if kinds[k] != n {
			t.Errorf("%d %s, want %d (all: %v)", kinds[k], k, n, kinds)
		}
	}
	if objs[0].GetKind() != "Namespace" {
		t.Errorf("first object is a %s: the namespace must come first", objs[0].GetKind())
	}
	def, _ := Objects("")
	for _, u := range def {
		if u.GetKind() == "Deployment" && !strings.Contains(mustJSON(t, u.Object), DefaultImage) {
			t.Errorf("default image is not %s", DefaultImage)
		}
	}
}

func TestPlan(t *testing.T) {
	for _, c := range []struct {
		name   string
		s      State
		image  string
		action string
	}{
		{"absent", State{}, "", "create"},
		{"ours, current", State{Present: true, Ours: true, Version: Version, Image: DefaultImage}, "", "ok"},
		{"ours, older", State{Present: true, Ours: true, Version: "v0.6.2", Image: "registry.k8s.io/lws/lws:v0.6.2"}, "", "update"},
		{"ours, other image", State{Present: true, Ours: true, Version: Version, Image: DefaultImage}, "r/lws:x", "update"},
		{"someone else's, older", State{Present: true, Version: "v0.5.0"}, "", "ok"},
		{"someone else's, no deployment", State{Present: true}, "", "ok"},
	} {
		if got, detail := c.s.Plan(c.image); got != c.action {
			t.Errorf("%s: %s (%s), want %s", c.name, got, detail, c.action)
		}
	}
}

func TestOlder(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"v0.6.2", "v0.7.0", true}, {"v0.7.0", "v0.7.0", false}, {"v0.10.0", "v0.7.0", false},
		{"v0.7.0-rc.1", "v0.7.0", false}, {"", "v0.7.0", true}, {"main", "v0.7.0", true}, {"v1.0.0", "v0.7.0", false},
	} {
		if got := Older(c.a, c.b); got != c.want {
			t.Errorf("Older(%q, %q) = %v", c.a, c.b, got)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestLastError(t *testing.T) {
	logs := "I info line\n2026-11-26T03:55:15Z\tERROR\tsetup\tproblem running manager\t{\"error\": \"dial tcp: unreachable\", \"errorVerbose\": \"stack\\nmore\"}\nmain.main\n\tcmd/main.go:173\n"
	if got, want := lastError(logs), "2026-11-26T03:55:15Z\tERROR\tsetup\tproblem running manager\t{\"error\": \"dial tcp: unreachable\"}"; got != want {
		t.Errorf("lastError = %q, want %q", got, want)
	}
}

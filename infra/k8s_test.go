package infra

import (
	"bytes"
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kinetic-run/kinetic/image"
)

// TestPlanUpIdempotent: a bare cluster and registry get every step; a second plan has
// nothing to do; a Role with other rules is updated back.
func TestPlanUpIdempotent(t *testing.T) {
	ctx := context.Background()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	dir := t.TempDir()
	exe := filepath.Join(dir, "kinetic")
	os.WriteFile(exe, []byte("cli"), 0o755)
	for _, a := range []string{"amd64", "arm64"} {
		os.WriteFile(filepath.Join(dir, "kinetic-runner-linux-"+a), []byte("runner "+a), 0o755)
	}
	cs := fake.NewSimpleClientset()
	tg := &Target{Client: cs, Namespace: "ml", Registry: strings.TrimPrefix(srv.URL, "http://") + "/team",
		Source: image.RunnerSource{Exe: exe}, Images: &image.Client{}}
	p, err := PlanUp(ctx, tg)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	p.Print(&buf)
	if p.Changes() != 5 {
		t.Fatalf("bare plan has %d changes:\n%s", p.Changes(), buf.String())
	}
	if err := p.Apply(ctx, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.RunnerImage, "/team/kinetic-runner@sha256:") {
		t.Errorf("runner image %q", p.RunnerImage)
	}
	role, err := cs.RbacV1().Roles("ml").Get(ctx, Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range role.Rules {
		for _, res := range r.Resources {
			if res == "leaderworkersets" || res == "secrets" || res == "*" {
				t.Errorf("role grants %s", res)
			}
		}
	}
	p2, err := PlanUp(ctx, tg)
	if err != nil || p2.Changes() != 0 {
		buf.Reset()
		p2.Print(&buf)
		t.Fatalf("second plan: %v\n%s", err, buf.String())
	}
	if p2.RunnerImage != p.RunnerImage {
		t.Errorf("second plan's runner image %s, want %s", p2.RunnerImage, p.RunnerImage)
	}
	role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}})
	cs.RbacV1().Roles("ml").Update(ctx, role, metav1.UpdateOptions{})
	p3, _ := PlanUp(ctx, tg)
	if p3.Changes() != 1 || p3.Steps[2].Action != "update" {
		t.Errorf("a widened role is not narrowed back: %+v", p3.Steps)
	}
}

func TestBindCommand(t *testing.T) {
	if got := bindCommand("ml", "system:serviceaccount:ml:ci"); got != "`kubectl create rolebinding kinetic-ci --namespace ml --role kinetic --serviceaccount ml:ci`" {
		t.Error(got)
	}
	if got := bindCommand("ml", "ana@example.com"); !strings.Contains(got, "--user ana@example.com") || !strings.Contains(got, "kinetic-ana-example-com") {
		t.Error(got)
	}
}

func TestLoopbackEndpoint(t *testing.T) {
	for u, want := range map[string]string{
		"gs://b?endpoint=http://127.0.0.1:4443":  "127.0.0.1:4443",
		"gs://b?endpoint=http://localhost:9000/": "localhost:9000",
		"s3://b?endpoint=http://[::1]:9000":      "[::1]:9000",
		"gs://b?endpoint=http://10.85.0.1:4443":  "",
		"gs://b":                                 "",
		"gs://b?endpoint=%zz":                    "",
	} {
		if got := loopbackEndpoint(u); got != want {
			t.Errorf("loopbackEndpoint(%q) = %q, want %q", u, got, want)
		}
	}
}

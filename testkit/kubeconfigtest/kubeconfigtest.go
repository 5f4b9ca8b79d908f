// Package kubeconfigtest writes kubeconfig files that name clusters nobody serves: for
// tests that plan Kubernetes jobs (planning checks that a kubeconfig names a cluster
// before anything else, backend.Preflighter) and never reach a cluster.
package kubeconfigtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Write writes a kubeconfig with one context per name (the first is current; "stub"
// when none is given), each on a cluster at https://127.0.0.1:1, and returns its path.
func Write(t testing.TB, contexts ...string) string {
	t.Helper()
	if len(contexts) == 0 {
		contexts = []string{"stub"}
	}
	var clusters, ctxs strings.Builder
	for _, c := range contexts {
		fmt.Fprintf(&clusters, "- name: %s\n  cluster: {server: \"https://127.0.0.1:1\"}\n", c)
		fmt.Fprintf(&ctxs, "- name: %s\n  context: {cluster: %s, user: stub}\n", c, c)
	}
	doc := "apiVersion: v1\nkind: Config\nclusters:\n" + clusters.String() + "contexts:\n" + ctxs.String() +
		"users:\n- name: stub\n  user: {token: stub}\ncurrent-context: " + contexts[0] + "\n"
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

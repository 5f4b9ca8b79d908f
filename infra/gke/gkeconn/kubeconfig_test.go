package gkeconn_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kinetic-run/kinetic/infra/gke/gkeconn"
)

const otherKubeconfig = `apiVersion: v1
kind: Config
current-context: other
clusters: [{name: other, cluster: {server: "https://10.9.9.9"}}]
users: [{name: other, user: {token: other-token}}]
contexts: [{name: other, context: {cluster: other, user: other, namespace: team}}]
`

// TestWriteKubeconfig: the context kubectl users get (`kinetic up --write-kubeconfig`)
// is merged into a kubeconfig that has another one, which stays; the file is 0600; it
// is current, named as gcloud names it, and its user runs gke-gcloud-auth-plugin: with
// a plugin on PATH (a script standing in for Google's, printing a token) client-go
// reaches the cluster through it, CA verified. A second write changes nothing; a new CA
// is written again; down's removal takes kinetic's entries and leaves gcloud's.
func TestWriteKubeconfig(t *testing.T) {
	var auth atomic.Value
	s, ca := apiServer(t, "", &auth)
	path := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(path, []byte(otherKubeconfig), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", t.TempDir()) // no plugin yet
	po := gkeconn.KubeconfigAccess(path)
	in := gkeconn.Info{Endpoint: s.Listener.Addr().String(), CA: ca}

	res, err := gkeconn.WriteKubeconfig(po, cl, in)
	if err != nil {
		t.Fatal(err)
	}
	if res.Path != path || res.Context != "gke_proj_us-central1-a_kc" || !res.Changed || res.Plugin != "" {
		t.Fatalf("result %+v", res)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("kubeconfig mode: %v %v, want 0600", fi.Mode(), err)
	}
	raw, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if raw.CurrentContext != res.Context || raw.AuthInfos["other"].Token != "other-token" || raw.Contexts["other"].Namespace != "team" || raw.Clusters["other"].Server != "https://10.9.9.9" {
		t.Fatalf("after the write: current %q, other entries %+v %+v", raw.CurrentContext, raw.AuthInfos["other"], raw.Contexts["other"])
	}
	u := raw.AuthInfos[res.Context]
	if u == nil || u.Exec == nil || u.Exec.Command != gkeconn.AuthPlugin || !u.Exec.ProvideClusterInfo || !strings.Contains(u.Exec.InstallHint, "gke-gcloud-auth-plugin") {
		t.Fatalf("user entry: %+v", u)
	}
	if !gkeconn.Written(path, res.Context) || gkeconn.Written(path, "other") {
		t.Fatal("the marker is not on kinetic's context alone")
	}

	// kubectl's way in: the plugin on PATH.
	bin := t.TempDir()
	plugin := "#!/bin/sh\necho '{\"apiVersion\":\"client.authentication.k8s.io/v1beta1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"plugin-tok\"}}'\n"
	if err := os.WriteFile(filepath.Join(bin, gkeconn.AuthPlugin), []byte(plugin), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+"/usr/bin:/bin")
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(&clientcmd.ClientConfigLoadingRules{ExplicitPath: path}, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := cs.Discovery().ServerVersion(); err != nil || v.GitVersion != "v1.33.5-gke.1" || auth.Load() != "Bearer plugin-tok" {
		t.Fatalf("through the context: %v %v, Authorization %q", v, err, auth.Load())
	}

	res, err = gkeconn.WriteKubeconfig(po, cl, in)
	if err != nil || res.Changed || res.Plugin != filepath.Join(bin, gkeconn.AuthPlugin) {
		t.Fatalf("second write: %+v %v, want no change and the plugin found", res, err)
	}
	// The cluster was re-created: a new CA is written.
	_, ca2 := apiServer(t, "", &auth)
	if res, err = gkeconn.WriteKubeconfig(po, cl, gkeconn.Info{Endpoint: in.Endpoint, CA: ca2}); err != nil || !res.Changed {
		t.Fatalf("new CA: %+v %v", res, err)
	}
	if raw, _ = clientcmd.LoadFromFile(path); string(raw.Clusters[res.Context].CertificateAuthorityData) != string(ca2) {
		t.Fatal("the new CA was not written")
	}

	// Removal: kinetic's entries go, the other context stays and nothing is current.
	if ok, err := gkeconn.RemoveKubeconfig(po, cl); err != nil || !ok {
		t.Fatalf("remove: %v %v", ok, err)
	}
	raw, _ = clientcmd.LoadFromFile(path)
	if raw.Contexts[res.Context] != nil || raw.Clusters[res.Context] != nil || raw.AuthInfos[res.Context] != nil || raw.Contexts["other"] == nil || raw.CurrentContext != "" {
		t.Fatalf("after remove: %+v", raw)
	}
	if ok, err := gkeconn.RemoveKubeconfig(po, cl); err != nil || ok {
		t.Fatalf("second remove: %v %v, want nothing removed", ok, err)
	}
	// A context gcloud wrote under the same name is not kinetic's to remove.
	gcloud := strings.ReplaceAll(otherKubeconfig, "other", res.Context)
	os.WriteFile(path, []byte(gcloud), 0o600)
	if ok, err := gkeconn.RemoveKubeconfig(po, cl); err != nil || ok {
		t.Fatalf("gcloud's context: removed %v %v", ok, err)
	}

	// A file that is not a kubeconfig: named, with the fix, no parser text.
	os.WriteFile(path, []byte("clusters: [oops\n"), 0o600)
	_, err = gkeconn.WriteKubeconfig(po, cl, in)
	if err == nil || !strings.Contains(err.Error(), path+" cannot be read") || strings.Contains(err.Error(), "yaml:") {
		t.Fatalf("broken kubeconfig: %v", err)
	}
}

// TestWriteKubeconfigNew: no kubeconfig yet (~/.kube/config through KUBECONFIG unset):
// the directory and the file are made, the file 0600.
func TestWriteKubeconfigNew(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("KUBECONFIG", "")
	res, err := gkeconn.WriteKubeconfig(gkeconn.KubeconfigAccess(""), cl, gkeconn.Info{Endpoint: "10.0.0.2", CA: []byte("ca")})
	want := filepath.Join(home, ".kube", "config")
	if err != nil || res.Path != want {
		t.Fatalf("%+v %v, want path %s", res, err, want)
	}
	if fi, err := os.Stat(want); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%v %v", fi, err)
	}
}

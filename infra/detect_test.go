package infra

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDetect(t *testing.T) {
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, ".kube"), 0o755)
	os.WriteFile(filepath.Join(home, ".kube", "config"), []byte(`apiVersion: v1
kind: Config
current-context: b
clusters:
- {name: c, cluster: {server: "https://k"}}
contexts:
- {name: a, context: {cluster: c, user: u, namespace: ml}}
- {name: b, context: {cluster: c, user: u}}
users:
- {name: u, user: {token: x}}
`), 0o600)
	g := filepath.Join(home, ".config", "gcloud")
	os.MkdirAll(filepath.Join(g, "configurations"), 0o755)
	os.WriteFile(filepath.Join(g, "configurations", "config_default"), []byte("[core]\nproject = from-gcloud\n\n[compute]\nzone= us-east5-b\n"), 0o644)
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }

	f := Detect(getenv, home)
	if len(f.Contexts) != 2 || f.Contexts[0].Name != "b" || !f.Contexts[0].Current || f.Contexts[1].Namespace != "ml" || f.Contexts[1].Server != "https://k" {
		t.Errorf("contexts: %+v", f.Contexts)
	}
	if f.Project != "from-gcloud" || f.ProjectFrom != "gcloud configuration default" || f.Zone != "us-east5-b" || f.Credentials != "" {
		t.Errorf("gcloud: %+v", f)
	}
	env["GOOGLE_CLOUD_PROJECT"] = "from-env"
	if f := Detect(getenv, home); f.Project != "from-env" || f.ProjectFrom != "GOOGLE_CLOUD_PROJECT" {
		t.Errorf("GOOGLE_CLOUD_PROJECT: %+v", f)
	}
	env["CLOUDSDK_CORE_PROJECT"] = "from-sdk"
	creds := filepath.Join(home, "key.json")
	os.WriteFile(creds, []byte("{}"), 0o600)
	env["GOOGLE_APPLICATION_CREDENTIALS"] = creds
	if f := Detect(getenv, home); f.Project != "from-sdk" || f.Credentials != "GOOGLE_APPLICATION_CREDENTIALS ("+creds+")" {
		t.Errorf("CLOUDSDK_CORE_PROJECT: %+v", f)
	}
	env["KUBECONFIG"] = filepath.Join(home, "none")
	if f := Detect(getenv, home); len(f.Contexts) != 0 || f.Kubeconfig != env["KUBECONFIG"] {
		t.Errorf("KUBECONFIG to a missing file: %+v", f)
	}
}

// FuzzGcloudProperties: any configuration file parses without panicking.
func FuzzGcloudProperties(f *testing.F) {
	f.Add("[core]\nproject = p\n")
	f.Add("[\n=\n[]]\nk=v=w\n; c\n")
	f.Fuzz(func(t *testing.T, s string) {
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, "configurations"), 0o755)
		os.WriteFile(filepath.Join(dir, "configurations", "config_default"), []byte(s), 0o644)
		gcloudProperties(dir)
	})
}

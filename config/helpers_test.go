package config

import (
	"os"
	"path/filepath"
	"testing"
)

// env is a fake environment for Options.Getenv, so tests never see the real one.
type env map[string]string

func (e env) get(k string) string { return e[k] }

// writeFile writes content to a fresh profiles file and returns its path.
func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "profiles.json")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// twoProfiles is a reference-style file with an active profile, plus one of our keys.
const twoProfiles = `{
  "current": "dev",
  "profiles": {
    "dev":  {"project": "p-dev", "zone": "europe-west4-a", "cluster": "c-dev", "namespace": "ns-dev", "backend": "gke"},
    "prod": {"project": "p-prod", "zone": "us-east5-b", "cluster": "c-prod", "namespace": null}
  }
}`

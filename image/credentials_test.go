package image

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestUseGcloudCredentials(t *testing.T) {
	path := filepath.Join(t.TempDir(), "docker", "config.json")
	// A file with something of its own, kept.
	os.MkdirAll(filepath.Dir(path), 0o700)
	os.WriteFile(path, []byte(`{"auths": {"ghcr.io": {"auth": "eA=="}}, "credHelpers": {"quay.io": "quay"}}`), 0o600)
	changed, err := UseGcloudCredentials(path, "us-docker.pkg.dev")
	if err != nil || !changed {
		t.Fatalf("changed %v, %v", changed, err)
	}
	var doc struct {
		Auths       map[string]any    `json:"auths"`
		CredHelpers map[string]string `json:"credHelpers"`
	}
	raw, _ := os.ReadFile(path)
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.CredHelpers["us-docker.pkg.dev"] != "gcloud" || doc.CredHelpers["quay.io"] != "quay" || doc.Auths["ghcr.io"] == nil {
		t.Errorf("config after: %s", raw)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode())
	}
	if changed, err := UseGcloudCredentials(path, "us-docker.pkg.dev"); changed || err != nil {
		t.Errorf("second time: changed %v, %v", changed, err)
	}
	if _, err := UseGcloudCredentials(path, "ghcr.io"); err == nil || !strings.Contains(err.Error(), "docker login ghcr.io") {
		t.Errorf("another registry: %v", err)
	}
	os.WriteFile(path, []byte("{not json"), 0o600)
	if _, err := UseGcloudCredentials(path, "gcr.io"); err == nil || !strings.Contains(err.Error(), "not valid JSON") {
		t.Errorf("a damaged file: %v", err)
	}
	if raw, _ := os.ReadFile(path); string(raw) != "{not json" {
		t.Errorf("a damaged file was rewritten: %s", raw)
	}
	// No file at all: made.
	fresh := filepath.Join(t.TempDir(), "new", "config.json")
	if changed, err := UseGcloudCredentials(fresh, "europe-west4-docker.pkg.dev"); !changed || err != nil {
		t.Errorf("no file: changed %v, %v", changed, err)
	}
}

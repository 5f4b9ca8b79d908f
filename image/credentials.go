package image

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/kinetic-run/kinetic/internal/atomicfile"
)

// GoogleRegistry reports whether host is Artifact Registry's (REGION-docker.pkg.dev) or
// Container Registry's (gcr.io, REGION.gcr.io), whose credentials gcloud provides.
func GoogleRegistry(host string) bool {
	return strings.HasSuffix(host, "-docker.pkg.dev") || host == "gcr.io" || strings.HasSuffix(host, ".gcr.io")
}

// DockerConfigPath is the Docker configuration file go-containerregistry's default
// keychain reads: $DOCKER_CONFIG/config.json, else ~/.docker/config.json.
func DockerConfigPath() (string, error) {
	if d := os.Getenv("DOCKER_CONFIG"); d != "" {
		return filepath.Join(d, "config.json"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".docker", "config.json"), nil
}

// UseGcloudCredentials makes gcloud the credential helper for host in the Docker
// configuration file at path, as `gcloud auth configure-docker HOST` does (credHelpers),
// keeping everything else in the file; written whole or not at all. It reports whether
// the file changed. Only Google's registries are accepted.
func UseGcloudCredentials(path, host string) (changed bool, err error) {
	if !GoogleRegistry(host) {
		return false, fmt.Errorf("%s is not Artifact Registry (REGION-docker.pkg.dev) or Container Registry (gcr.io): its credentials are not gcloud's; log in with `docker login %s` or `podman login %s` instead", host, host, host)
	}
	doc := map[string]json.RawMessage{}
	raw, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return false, err
	case len(strings.TrimSpace(string(raw))) > 0:
		if err := json.Unmarshal(raw, &doc); err != nil {
			return false, fmt.Errorf("%s is not valid JSON (%v): fix or move it, then run again", path, err)
		}
	}
	helpers := map[string]string{}
	if h, ok := doc["credHelpers"]; ok {
		if err := json.Unmarshal(h, &helpers); err != nil {
			return false, fmt.Errorf("%s: credHelpers is not an object of host → helper (%v): fix it, then run again", path, err)
		}
	}
	if helpers[host] == "gcloud" {
		return false, nil
	}
	helpers[host] = "gcloud"
	b, err := json.Marshal(helpers)
	if err != nil {
		return false, err
	}
	doc["credHelpers"] = b
	out, err := json.MarshalIndent(doc, "", "\t")
	if err != nil {
		return false, err
	}
	return true, atomicfile.Write(path, append(out, '\n'), 0o600, 0o700)
}

package image

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/google"

	"github.com/kinetic-run/kinetic/internal/atomicfile"
)

// Keychain is the keychain of every push and lookup (Client's default): for Artifact
// Registry and Container Registry hosts, Application Default Credentials first (what a
// GKE user has after `gcloud auth application-default login`, or a service-account key
// in GOOGLE_APPLICATION_CREDENTIALS, or the metadata server), then the Docker/podman
// configuration (authn.DefaultKeychain: `docker login`, credential helpers such as
// `gcloud auth configure-docker`'s), then anonymous. Other hosts: the Docker/podman
// configuration, then anonymous.
var Keychain authn.Keychain = NewKeychain()

// NewKeychain is a keychain as Keychain is, with its own memory of the ADC token (tests
// that change the credentials between cases make one each).
func NewKeychain() authn.Keychain {
	return authn.NewMultiKeychain(&adcKeychain{}, authn.DefaultKeychain)
}

// TestGoogleRegistryHostsEnv names, for tests only, registry hosts (comma-separated
// host:port) whose credentials are taken as Artifact Registry's are: a local registry
// standing in for REGION-docker.pkg.dev, which listens on 127.0.0.1. Never set it
// otherwise: it sends this machine's Google access token to those hosts.
const TestGoogleRegistryHostsEnv = "KINETIC_TEST_GOOGLE_REGISTRY_HOSTS"

// adcKeychain authenticates to Google's registries with Application Default
// Credentials (go-containerregistry's google.NewEnvAuthenticator: golang.org/x/oauth2/
// google, the token reused until it expires); anonymous elsewhere and when there are
// none, so the next keychain is asked.
type adcKeychain struct {
	once sync.Once
	auth authn.Authenticator
}

func (k *adcKeychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	return k.ResolveContext(context.Background(), r)
}

func (k *adcKeychain) ResolveContext(ctx context.Context, r authn.Resource) (authn.Authenticator, error) {
	if !googleCredentialHost(r.RegistryStr()) {
		return authn.Anonymous, nil
	}
	k.once.Do(func() {
		// Not the caller's deadline: the answer is kept for the process.
		a, err := google.NewEnvAuthenticator(context.WithoutCancel(ctx))
		if err != nil || a == nil {
			k.auth = authn.Anonymous // no ADC (or none that gives a token): the Docker configuration's turn
			return
		}
		k.auth = a
	})
	return k.auth, nil
}

// googleCredentialHost: a host whose credentials are Google's (GoogleRegistry), or one
// a test named in TestGoogleRegistryHostsEnv.
func googleCredentialHost(host string) bool {
	if GoogleRegistry(host) {
		return true
	}
	v := os.Getenv(TestGoogleRegistryHostsEnv)
	return v != "" && slices.Contains(strings.Split(v, ","), host)
}

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

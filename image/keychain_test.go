package image_test

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kinetic-run/kinetic/image"
	"github.com/kinetic-run/kinetic/testkit/adctest"
)

// adcRegistry is a registry that takes only Artifact Registry's tokens, exchanged for
// an access token of an authorized_user ADC file (adctest), treated as a Google
// registry (image.TestGoogleRegistryHostsEnv); HOME has no Docker configuration.
func adcRegistry(t *testing.T) (host string, tokens *adctest.Server) {
	t.Helper()
	tokens = adctest.Start(t)
	srv := httptest.NewServer(tokens.Registry(registry.New(registry.Logger(log.New(io.Discard, "", 0))), nil))
	t.Cleanup(srv.Close)
	host = strings.TrimPrefix(srv.URL, "http://")
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("DOCKER_CONFIG", "")
	t.Setenv("REGISTRY_AUTH_FILE", "")
	t.Setenv("XDG_RUNTIME_DIR", home)
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", tokens.AuthorizedUser(t, home, ""))
	t.Setenv(image.TestGoogleRegistryHostsEnv, host)
	return host, tokens
}

// TestKeychainUsesADC: a push and a lookup to an Artifact Registry host with only user
// ADC (gcloud auth application-default login), no Docker login: the access token from
// the ADC file's token endpoint is exchanged for the registry's token.
func TestKeychainUsesADC(t *testing.T) {
	host, tokens := adcRegistry(t)
	ctx := context.Background()
	c := &image.Client{Keychain: image.NewKeychain()}
	ref, err := name.ParseReference(host + "/p/kn-c/app:v1")
	if err != nil {
		t.Fatal(err)
	}
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img, c.Options(ctx)...); err != nil {
		t.Fatalf("push with ADC: %v", err)
	}
	want, _ := img.Digest()
	got, ok, err := c.Lookup(ctx, ref)
	if err != nil || !ok || got != want {
		t.Fatalf("lookup with ADC: %v %v %v, want %v", got, ok, err, want)
	}
	if tokens.Minted() == 0 {
		t.Error("no access token was asked of the ADC's token endpoint")
	}
	// The zero Client (what every push and lookup uses) takes the same keychain.
	if _, ok, err := (&image.Client{}).Lookup(ctx, ref); err != nil || !ok {
		t.Errorf("lookup with the zero Client: %v %v", ok, err)
	}
}

// TestDockerKeychainAloneIsDenied: the old path, go-containerregistry's
// DefaultKeychain (Docker/podman configuration only), is refused by the same registry,
// with a fix that names ADC.
func TestDockerKeychainAloneIsDenied(t *testing.T) {
	host, _ := adcRegistry(t)
	ctx := context.Background()
	ref, _ := name.ParseReference(host + "/p/kn-c/app:v1")
	_, _, err := (&image.Client{Keychain: authn.DefaultKeychain}).Lookup(ctx, ref)
	if !errors.Is(err, image.ErrDenied) || !strings.Contains(err.Error(), "gcloud auth application-default login") {
		t.Fatalf("lookup with the Docker configuration only: %v, want ErrDenied naming ADC", err)
	}
}

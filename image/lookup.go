package image

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/kinetic-run/kinetic/errs"
)

// ErrUnreachable is wrapped when a registry cannot be reached at all (errs.Unavailable).
var ErrUnreachable = errs.New(errs.Unavailable, "registry unreachable")

// ErrDenied is wrapped when a registry refuses this machine's credentials, or asks for
// some it does not have (errs.PermissionDenied).
var ErrDenied = errs.New(errs.PermissionDenied, "registry denied access")

// manifestAccept is what Lookup accepts: every manifest and index type.
var manifestAccept = strings.Join([]string{
	"application/vnd.oci.image.manifest.v1+json",
	"application/vnd.oci.image.index.v1+json",
	"application/vnd.docker.distribution.manifest.v2+json",
	"application/vnd.docker.distribution.manifest.list.v2+json",
}, ", ")

// Client talks to registries. The zero value uses http.DefaultTransport and Keychain
// (Application Default Credentials for Google's registries, then docker/podman config
// files, then anonymous).
type Client struct {
	Transport http.RoundTripper
	Keychain  authn.Keychain
}

func (c *Client) transport() http.RoundTripper {
	if c != nil && c.Transport != nil {
		return c.Transport
	}
	return http.DefaultTransport
}

func (c *Client) keychain() authn.Keychain {
	if c != nil && c.Keychain != nil {
		return c.Keychain
	}
	return Keychain
}

// Options are the remote options for ctx.
func (c *Client) Options(ctx context.Context, extra ...remote.Option) []remote.Option {
	return append([]remote.Option{remote.WithContext(ctx), remote.WithTransport(c.transport()), remote.WithAuthFromKeychain(c.keychain())}, extra...)
}

// Lookup reports whether ref exists in its registry, and its digest. On a registry that
// answers anonymously it costs exactly one request (HEAD of the manifest); one that
// asks for credentials is then asked through go-containerregistry's authenticated
// transport (a ping, a token, the HEAD). Not found is (false, nil); anything else that
// goes wrong is an error naming the registry.
func (c *Client) Lookup(ctx context.Context, ref name.Reference) (v1.Hash, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	h, found, done, err := c.headAnonymous(ctx, ref)
	if done || err != nil {
		return h, found, err
	}
	// Credentials needed, or a registry that leaves the digest out: ask properly.
	d, err := remote.Head(ref, c.Options(ctx)...)
	if err != nil {
		return v1.Hash{}, false, lookupError(ref, err)
	}
	return d.Digest, true, nil
}

// headAnonymous is Lookup's one HEAD of the manifest, without credentials: done when it
// answers (found or not); not done when it asks for credentials, or leaves the digest
// out.
func (c *Client) headAnonymous(ctx context.Context, ref name.Reference) (h v1.Hash, found, done bool, err error) {
	reg := ref.Context().Registry
	u := fmt.Sprintf("%s://%s/v2/%s/manifests/%s", reg.Scheme(), reg.RegistryStr(), ref.Context().RepositoryStr(), ref.Identifier())
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, u, nil)
	if err != nil {
		return v1.Hash{}, false, true, err
	}
	req.Header.Set("Accept", manifestAccept)
	resp, err := (&http.Client{Transport: c.transport()}).Do(req)
	if err != nil {
		return v1.Hash{}, false, true, unreachable(reg, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		h, err := v1.NewHash(resp.Header.Get("Docker-Content-Digest"))
		return h, err == nil, err == nil, nil
	case http.StatusNotFound:
		return v1.Hash{}, false, true, nil
	case http.StatusUnauthorized, http.StatusForbidden:
		return v1.Hash{}, false, false, nil
	}
	return v1.Hash{}, false, true, fmt.Errorf("look up %s: registry answered %s", ref, resp.Status)
}

// lookupError words the authenticated HEAD's failure; not found is no error.
func lookupError(ref name.Reference, err error) error {
	var te *transport.Error
	if !errors.As(err, &te) {
		return fmt.Errorf("look up %s: %w", ref, err)
	}
	switch te.StatusCode {
	case http.StatusNotFound:
		return nil
	case http.StatusUnauthorized, http.StatusForbidden:
		return fmt.Errorf("look up %s: %w: %w (%s)", ref, ErrDenied, err, DeniedFix(ref.Context().Registry.RegistryStr()))
	}
	return fmt.Errorf("look up %s: %w", ref, err)
}

func unreachable(reg name.Registry, err error) error {
	return fmt.Errorf("%w: %s (%v): check image_registry and that the registry is running and reachable from this machine", ErrUnreachable, reg.RegistryStr(), err)
}

// RoundTripper is the client's HTTP transport.
func (c *Client) RoundTripper() http.RoundTripper { return c.transport() }

// Credentials is the client's keychain.
func (c *Client) Credentials() authn.Keychain { return c.keychain() }

// DeniedFix is what to do when registry host refuses this machine's credentials.
func DeniedFix(host string) string {
	if googleCredentialHost(host) {
		return fmt.Sprintf("sign in with `gcloud auth application-default login` (or set GOOGLE_APPLICATION_CREDENTIALS to a service-account key file), and make sure that account has roles/artifactregistry.writer on the repository; or log in with `gcloud auth configure-docker %s`", host)
	}
	return fmt.Sprintf("log in to %s, e.g. `podman login %s` or `docker login %s`", host, host, host)
}

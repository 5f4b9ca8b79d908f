package image

import (
	"fmt"
	"net"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/kinetic-run/kinetic/errs"
)

// ErrBadReference is wrapped by every error about a malformed image reference
// (errs.InvalidArgument).
var ErrBadReference = errs.New(errs.InvalidArgument, "invalid image reference")

// ParseReference parses an image reference given by a user or a configuration file
// ("registry/repo:tag", "registry/repo@sha256:...", "repo" meaning Docker Hub).
// Registries on loopback addresses (127.0.0.1, ::1, localhost) are spoken to over plain
// HTTP, as the container engines do; go-containerregistry also uses plain HTTP for
// RFC 1918 addresses (10.x, 172.16-31.x, 192.168.x) and *.local.
func ParseReference(s string) (name.Reference, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return nil, fmt.Errorf("%w: empty: give an image such as us-docker.pkg.dev/PROJECT/REPO/IMAGE:TAG", ErrBadReference)
	}
	if strings.ContainsAny(t, " \t\r\n") {
		return nil, fmt.Errorf("%w %q: it contains white space", ErrBadReference, s)
	}
	if strings.Contains(t, "://") {
		return nil, fmt.Errorf("%w %q: leave out the scheme (write HOST/REPO:TAG, not https://HOST/REPO:TAG)", ErrBadReference, s)
	}
	var opts []name.Option
	if isLoopback(registryPart(t)) {
		opts = append(opts, name.Insecure)
	}
	r, err := name.ParseReference(t, opts...)
	if err != nil {
		return nil, fmt.Errorf("%w %q: %v (expected REGISTRY/REPOSITORY[:TAG][@sha256:DIGEST], lower-case repository)", ErrBadReference, s, err)
	}
	return r, nil
}

// ParseRepository parses a repository ("registry/path", no tag) such as image_registry
// or base_image_repo.
func ParseRepository(s string) (name.Repository, error) {
	t := strings.TrimSuffix(strings.TrimSpace(s), "/")
	if t == "" {
		return name.Repository{}, fmt.Errorf("%w: empty repository: give one such as us-docker.pkg.dev/PROJECT/REPO", ErrBadReference)
	}
	if strings.Contains(t, "://") {
		return name.Repository{}, fmt.Errorf("%w %q: leave out the scheme (write HOST/PATH)", ErrBadReference, s)
	}
	if strings.ContainsAny(t, " \t\r\n@") {
		return name.Repository{}, fmt.Errorf("%w %q: a repository has no white space and no digest", ErrBadReference, s)
	}
	var opts []name.Option
	if isLoopback(registryPart(t)) {
		opts = append(opts, name.Insecure)
	}
	r, err := name.NewRepository(t, opts...)
	if err != nil {
		return name.Repository{}, fmt.Errorf("%w %q: %v (expected REGISTRY/PATH, lower-case)", ErrBadReference, s, err)
	}
	return r, nil
}

// registryPart is the registry host of a reference or repository string, "" when it
// names none (Docker Hub).
func registryPart(s string) string {
	first, _, ok := strings.Cut(s, "/")
	if !ok || !(strings.ContainsAny(first, ".:") || first == "localhost") {
		return ""
	}
	return first
}

func isLoopback(host string) bool {
	if host == "" {
		return false
	}
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	h = strings.Trim(h, "[]")
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

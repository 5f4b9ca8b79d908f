package image

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	"golang.org/x/sync/singleflight"

	"github.com/kinetic-run/kinetic/internal/filelock"
)

// Result is a resolved image.
type Result struct {
	// Ref is the image by digest when known (bundled), else as given.
	Ref name.Reference
	// Cached is true when a bundled image was found in the registry (nothing built).
	Cached bool
	// Builder names the builder that made it ("" when nothing was built).
	Builder string
}

// Ensurer makes sure bundled images exist: one registry lookup when they do, one build
// per tag when they do not, however many callers ask at once.
type Ensurer struct {
	Client *Client
	// Builder builds on a miss (default: Daemonless).
	Builder Builder
	// Fallback, if set, builds what Builder cannot because a requirement has no wheel
	// (ErrMissingWheel): an engine builder that compiles inside the image.
	Fallback Builder
	// LockDir holds one lock file per tag, so processes on this machine build a tag once
	// ("" = no cross-process lock; the registry check still applies).
	LockDir string

	group singleflight.Group
}

// Ensure returns req.Target by digest, building and pushing it first when the registry
// does not have it.
func (e *Ensurer) Ensure(ctx context.Context, req *BuildRequest) (Result, error) {
	key := req.Target.String()
	v, err, _ := e.group.Do(key, func() (any, error) { return e.ensure(ctx, req) })
	if err != nil {
		return Result{}, err
	}
	return v.(Result), nil
}

func (e *Ensurer) ensure(ctx context.Context, req *BuildRequest) (Result, error) {
	say(req.Progress, "looking up %s", req.Target)
	if r, ok, err := e.lookup(ctx, req.Target); err != nil || ok {
		if ok {
			say(req.Progress, "found %s (cached, nothing to build)", r.Ref)
		}
		return r, err
	}
	if e.LockDir != "" {
		unlock, r, done, err := e.lockBuild(ctx, req)
		if done {
			return r, err
		}
		defer unlock()
	}
	return e.build(ctx, req)
}

// lockBuild takes this machine's lock of req's build; done (and the lock given back)
// when it failed, or another process built the image while this one waited.
func (e *Ensurer) lockBuild(ctx context.Context, req *BuildRequest) (unlock func(), r Result, done bool, err error) {
	unlock, err = filelock.LockContext(ctx, filepath.Join(e.LockDir, lockName(req.Target)), func() {
		say(req.Progress, "waiting for another build of %s on this machine", req.Target)
	})
	if err != nil {
		return nil, Result{}, true, fmt.Errorf("lock the build of %s: %w", req.Target, err)
	}
	if r, ok, err := e.lookup(ctx, req.Target); err != nil || ok {
		unlock()
		return nil, r, true, err
	}
	return unlock, Result{}, false, nil
}

// build builds req with the Builder (the Fallback when a wheel is missing).
func (e *Ensurer) build(ctx context.Context, req *BuildRequest) (Result, error) {
	b := e.Builder
	if b == nil {
		b = &Daemonless{Client: e.Client}
	}
	if err := PrecheckPython(ctx, e.Client, b, req); err != nil {
		return Result{}, err
	}
	say(req.Progress, "building %s on %s over %s", req.Target, b.Name(), req.Base)
	dg, err := b.Build(ctx, req)
	if err != nil && errors.Is(err, ErrMissingWheel) && e.Fallback != nil {
		say(req.Progress, "%v", err)
		say(req.Progress, "building with %s instead, so source distributions compile inside the image", e.Fallback.Name())
		b = e.Fallback
		dg, err = b.Build(ctx, req)
	}
	if err != nil {
		return Result{}, fmt.Errorf("build image %s (%s builder): %w", req.Target, b.Name(), err)
	}
	return Result{Ref: dg, Builder: b.Name()}, nil
}

func (e *Ensurer) lookup(ctx context.Context, ref name.Tag) (Result, bool, error) {
	h, ok, err := e.Client.Lookup(ctx, ref)
	if err != nil || !ok {
		return Result{}, false, err
	}
	return Result{Ref: ref.Context().Digest(h.String()), Cached: true}, true, nil
}

func lockName(t name.Tag) string {
	s := []byte(t.String())
	for i, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-') {
			s[i] = '_'
		}
	}
	if len(s) > 200 {
		s = s[len(s)-200:]
	}
	return string(s) + ".lock"
}

// PrecheckPython refuses, before b builds req, a base whose configuration names another
// Python than req.Python (PythonMismatchError). The daemonless builder checks by itself
// (from the layers too when the configuration does not say), so for it this does
// nothing; for the engine and Cloud Build builders it reads the base's manifest and
// configuration, and lets the build go on when they cannot be read or do not say.
func PrecheckPython(ctx context.Context, c *Client, b Builder, req *BuildRequest) error {
	if _, ok := b.(*Daemonless); ok || req.Python == "" {
		return nil
	}
	if c == nil {
		c = &Client{}
	}
	if py, ok, err := c.ConfigPython(ctx, req.Base); err == nil && ok {
		return req.checkPython(py)
	}
	return nil
}

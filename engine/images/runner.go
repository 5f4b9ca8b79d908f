package images

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/image"
)

// AddRunner puts the runner image that runnerImage resolves into img, in the repository
// into (image.Client.AddRunner), for a backend whose pods would otherwise copy it in. An
// img that is not a digest (a user's image by tag) is looked up first, with one
// request. ok is false when it cannot: runnerImage's error is the backend's to report
// when it submits, and a failure to look img up or to add the runner is said through
// warn, since the job still runs without it.
func AddRunner(ctx context.Context, img name.Reference, into name.Repository, runnerImage func(context.Context) (string, error), progress io.Writer, warn func(string)) (w image.WithRunner, ok bool) {
	runner, err := runnerImage(ctx)
	if err != nil {
		return image.WithRunner{}, false
	}
	c := &image.Client{}
	d, ok := img.(name.Digest)
	if !ok {
		h, found, err := c.Lookup(ctx, img)
		if err != nil || !found {
			warn(fmt.Sprintf("kinetic: the runner stays out of the image %s (%s): its pods copy it in first, a few seconds more per pod\n", img, notLookedUp(img, err)))
			return image.WithRunner{}, false
		}
		d = img.Context().Digest(h.String())
	}
	w, err = c.AddRunner(ctx, d, into, runner, progress)
	if err != nil {
		warn(fmt.Sprintf("kinetic: the runner stays out of the image %s (%v): its pods copy it in first, a few seconds more per pod\n", img, err))
		return image.WithRunner{}, false
	}
	return w, true
}

// notLookedUp says in a person's words why img was not found (err nil) or could not be
// looked up (err).
func notLookedUp(img name.Reference, err error) string {
	reg := img.Context().RegistryStr()
	switch {
	case err == nil:
		return "it is not in " + reg + ": check container_image"
	case errors.Is(err, image.ErrDenied):
		return reg + " did not let this machine read it: log in to " + reg
	case errors.Is(err, image.ErrUnreachable):
		return reg + " could not be reached"
	case errs.Is(err, errs.Cancelled):
		return "the call was cancelled before " + reg + " answered"
	case errs.Is(err, errs.DeadlineExceeded):
		return reg + " did not answer in time"
	default:
		return "it could not be looked up in " + reg
	}
}

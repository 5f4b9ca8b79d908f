package images

import (
	"context"
	"fmt"
	"io"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/kinetic-run/kinetic/image"
)

// AddRunner puts the runner image that runnerImage resolves into img
// (image.Client.AddRunner), for a backend whose pods would otherwise copy it in; ok is
// false when it cannot: runnerImage's error is the backend's to report when it submits,
// and a failure to add it is said through warn, since the job still runs without it.
func AddRunner(ctx context.Context, img name.Digest, runnerImage func(context.Context) (string, error), progress io.Writer, warn func(string)) (w image.WithRunner, ok bool) {
	runner, err := runnerImage(ctx)
	if err != nil {
		return image.WithRunner{}, false
	}
	c := &image.Client{}
	w, err = c.AddRunner(ctx, img, runner, progress)
	if err != nil {
		warn(fmt.Sprintf("kinetic: the runner stays out of the image %s (%v): its pods copy it in first, a few seconds more per pod\n", img, err))
		return image.WithRunner{}, false
	}
	return w, true
}

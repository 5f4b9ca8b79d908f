package image

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/sync/singleflight"

	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/job"
)

// The runner in the job's image: an image Kinetic built for a job (a bundled
// environment) with the runner image's one layer appended, so that a pod starts the
// runner from its own image and needs no init container to copy it in (on the test
// node that container was most of a cold call's cost above a raw pod). The layer is the
// runner image's own blob for the environment's platform, not a copy: the registry
// stores it once (mounted from the runner's repository when both are in one registry),
// a node pulls it once. The image is tagged after the environment's digest and the
// runner's, so a new runner costs a manifest and a config, never a rebuild of the
// environment.

// LabelRunner is the label of an image with the runner in it: the runner image (by
// digest) whose binary it holds at job.RunnerPath.
const LabelRunner = "run.kinetic.runner"

// ErrRunnerNotAdded is wrapped when the runner cannot be put into an image (a runner
// image of more than one layer, none for the image's platform): the job's pods then
// copy the runner in as before (errs.FailedPrecondition).
var ErrRunnerNotAdded = errs.New(errs.FailedPrecondition, "the runner cannot be added to the image")

// WithRunner is an image with the runner in it: Image holds the binary of Runner at
// job.RunnerPath.
type WithRunner struct {
	Image  name.Digest
	Runner name.Digest
}

var (
	withRunnerGroup singleflight.Group
	withRunnerDone  sync.Map // env image + runner as given → WithRunner
)

// AddRunner returns env (an image by digest, in a repository this client may push to)
// with the runner image's binary added at job.RunnerPath. runner is the runner image as
// the backend has it (by digest, or a tag, resolved here with one request): an OCI
// index (the platform of env is taken from it) or one image, of one layer. The result
// is found in env's repository (one HEAD request) or made there and pushed: the
// manifest, the config, and the runner's layer mounted from its repository (or copied
// from another registry). Once per process for each env and runner.
func (c *Client) AddRunner(ctx context.Context, env name.Digest, runner string, progress io.Writer) (WithRunner, error) {
	key := env.String() + "|" + runner
	if v, ok := withRunnerDone.Load(key); ok {
		return v.(WithRunner), nil
	}
	v, err, _ := withRunnerGroup.Do(key, func() (any, error) {
		w, err := c.addRunner(ctx, env, runner, progress)
		if err != nil {
			return nil, err
		}
		withRunnerDone.Store(key, w)
		return w, nil
	})
	if err != nil {
		return WithRunner{}, err
	}
	return v.(WithRunner), nil
}

func (c *Client) addRunner(ctx context.Context, env name.Digest, runner string, progress io.Writer) (WithRunner, error) {
	rd, err := c.runnerDigest(ctx, runner)
	if err != nil {
		return WithRunner{}, err
	}
	target := env.Context().Tag(WithRunnerTag(env, rd))
	if h, ok, err := c.Lookup(ctx, target); err != nil {
		return WithRunner{}, err
	} else if ok {
		return WithRunner{Image: env.Context().Digest(h.String()), Runner: rd}, nil
	}
	start := time.Now()
	img, err := c.withRunnerImage(ctx, env, rd)
	if err != nil {
		return WithRunner{}, err
	}
	dg, err := push(ctx, c, target, img, progress)
	if err != nil {
		return WithRunner{}, err
	}
	say(progress, "added the runner to %s as %s in %s", env.DigestStr(), dg.DigestStr(), time.Since(start).Round(10*time.Millisecond))
	return WithRunner{Image: dg, Runner: rd}, nil
}

// WithRunnerTag is the tag of env with runner in it, in env's repository: a hash of
// both digests ("runner-" and 40 hex digits).
func WithRunnerTag(env, runner name.Digest) string {
	sum := sha256.Sum256([]byte(env.DigestStr() + " " + runner.DigestStr()))
	return "runner-" + hex.EncodeToString(sum[:])[:40]
}

// runnerDigest is the runner image by digest (a tag costs one request).
func (c *Client) runnerDigest(ctx context.Context, runner string) (name.Digest, error) {
	ref, err := ParseReference(runner)
	if err != nil {
		return name.Digest{}, fmt.Errorf("runner image: %w", err)
	}
	if d, ok := ref.(name.Digest); ok {
		return d, nil
	}
	h, ok, err := c.Lookup(ctx, ref)
	if err != nil {
		return name.Digest{}, fmt.Errorf("runner image: %w", err)
	}
	if !ok {
		return name.Digest{}, fmt.Errorf("runner image %s was not found in %s: check runner_image", ref, ref.Context().RegistryStr())
	}
	return ref.Context().Digest(h.String()), nil
}

// withRunnerImage is env with runner's layer for env's platform appended (reported with
// the media type of env's own layers: the same blob, whatever the manifest's schema),
// the runner's path in its history and the runner in the label LabelRunner.
func (c *Client) withRunnerImage(ctx context.Context, env, runner name.Digest) (v1.Image, error) {
	base, err := remote.Image(env, c.Options(ctx)...)
	if err != nil {
		return nil, fmt.Errorf("read the image %s: %w", env, err)
	}
	cf, err := base.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("read the configuration of %s: %w", env, err)
	}
	plat := v1.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant}
	if plat.OS == "" {
		plat.OS = "linux"
	}
	if plat.Architecture == "" {
		plat.Architecture = "amd64"
	}
	rimg, err := c.platformImage(ctx, runner, plat)
	if err != nil {
		return nil, err
	}
	layers, err := rimg.Layers()
	if err != nil {
		return nil, fmt.Errorf("read the runner image %s: %w", runner, err)
	}
	if len(layers) != 1 {
		return nil, fmt.Errorf("%w: the runner image %s has %d layers; only a runner image of one layer (the binary at %s, as Kinetic publishes it) can be added", ErrRunnerNotAdded, runner, len(layers), job.RunnerPath)
	}
	mt := types.DockerLayer
	if m, err := base.MediaType(); err == nil && m == types.OCIManifestSchema1 {
		mt = types.OCILayer
	}
	img, err := mutate.Append(base, mutate.Addendum{
		Layer: layers[0], MediaType: mt,
		History: v1.History{CreatedBy: "kinetic: the runner at " + job.RunnerPath + " from " + runner.String(), Created: v1.Time{Time: time.Unix(0, 0)}},
	})
	if err != nil {
		return nil, err
	}
	cf2, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf2 = cf2.DeepCopy()
	if cf2.Config.Labels == nil {
		cf2.Config.Labels = map[string]string{}
	}
	cf2.Config.Labels[LabelRunner] = runner.String()
	return mutate.ConfigFile(img, cf2)
}

// platformImage is ref's image for plat: the index's child of that platform, or the one
// image when ref is not an index (and is for plat).
func (c *Client) platformImage(ctx context.Context, ref name.Digest, plat v1.Platform) (v1.Image, error) {
	desc, err := remote.Get(ref, c.Options(ctx)...)
	if err != nil {
		return nil, fmt.Errorf("read the runner image %s: %w", ref, err)
	}
	if !desc.MediaType.IsIndex() {
		img, err := desc.Image()
		if err != nil {
			return nil, fmt.Errorf("read the runner image %s: %w", ref, err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, fmt.Errorf("read the configuration of the runner image %s: %w", ref, err)
		}
		if (cf.OS != "" && cf.OS != plat.OS) || (cf.Architecture != "" && cf.Architecture != plat.Architecture) {
			return nil, fmt.Errorf("%w: the runner image %s is for %s/%s, the job's image for %s", ErrRunnerNotAdded, ref, cf.OS, cf.Architecture, plat.String())
		}
		return img, nil
	}
	idx, err := desc.ImageIndex()
	if err != nil {
		return nil, fmt.Errorf("read the runner image %s: %w", ref, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("read the runner image %s: %w", ref, err)
	}
	for _, m := range im.Manifests {
		p := v1.Platform{OS: "linux", Architecture: "amd64"} // a child without one, as go-containerregistry reads it
		if m.Platform != nil {
			p = *m.Platform
		}
		if p.OS == plat.OS && p.Architecture == plat.Architecture && (plat.Variant == "" || p.Variant == plat.Variant) {
			img, err := idx.Image(m.Digest)
			if err != nil {
				return nil, fmt.Errorf("read the runner image %s for %s: %w", ref, plat.String(), err)
			}
			return img, nil
		}
	}
	return nil, fmt.Errorf("%w: the runner image %s has no image for %s", ErrRunnerNotAdded, ref, plat.String())
}

package image

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
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

// The runner in the job's image: an image a job runs in with the runner image's one
// layer appended, so that a pod starts the runner from its own image and needs no init
// container to copy it in (on the test node that container was most of a cold call's
// cost above a raw pod). The image is one Kinetic built (a bundled environment), or one
// the user gave (container_image=) that is in the registry of image_registry. The layer
// is the runner image's own blob for the image's platform, not a copy: the registry
// stores it once (mounted from the runner's repository when both are in one registry),
// a node pulls it once; the image's own layers are mounted too, never copied. The
// result is tagged after the image's digest and the runner's, so a new runner costs a
// manifest and a config, never a rebuild of the environment.

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
	withRunnerDone  sync.Map // image + repository + runner as given → WithRunner
)

// AddRunner returns img (an image by digest) with the runner image's binary added at
// job.RunnerPath, in the repository into (one this client may push to): img's own for
// an image Kinetic built, Kinetic's (Settings.RunnerRepository) for one a user gave,
// whose repository it may not push to. into is in img's registry: img's layers are
// found or mounted there, never copied (a registry that would not mount one fails the
// push, with ErrRunnerNotAdded). runner is the runner image as the backend has it (by
// digest, or a tag, resolved here with one request): an OCI index (the platform of img
// is taken from it) or one image, of one layer. The result is found in into (one HEAD
// request) or made there and pushed: the manifest, the config, and the runner's layer
// mounted from its repository (or copied from another registry). An img that has the
// runner already (its label LabelRunner names runner's digest) is img. Once per process
// for each img, into and runner.
func (c *Client) AddRunner(ctx context.Context, img name.Digest, into name.Repository, runner string, progress io.Writer) (WithRunner, error) {
	key := img.String() + "|" + into.String() + "|" + runner
	if v, ok := withRunnerDone.Load(key); ok {
		return v.(WithRunner), nil
	}
	v, err, _ := withRunnerGroup.Do(key, func() (any, error) {
		w, err := c.addRunner(ctx, img, into, runner, progress)
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

func (c *Client) addRunner(ctx context.Context, img name.Digest, into name.Repository, runner string, progress io.Writer) (WithRunner, error) {
	if into.RegistryStr() != img.Context().RegistryStr() {
		return WithRunner{}, fmt.Errorf("%w: %s is in another registry than %s, and its layers are not copied", ErrRunnerNotAdded, img, into)
	}
	rd, err := c.runnerDigest(ctx, runner)
	if err != nil {
		return WithRunner{}, err
	}
	target := into.Tag(WithRunnerTag(img, rd))
	if h, ok, err := c.Lookup(ctx, target); err != nil {
		return WithRunner{}, err
	} else if ok {
		return WithRunner{Image: into.Digest(h.String()), Runner: rd}, nil
	}
	start := time.Now()
	base, err := remote.Image(img, c.Options(ctx)...)
	if err != nil {
		return WithRunner{}, fmt.Errorf("read the image %s: %w", img, err)
	}
	cf, err := base.ConfigFile()
	if err != nil {
		return WithRunner{}, fmt.Errorf("read the configuration of %s: %w", img, err)
	}
	if _, d, ok := strings.Cut(cf.Config.Labels[LabelRunner], "@"); ok && d == rd.DigestStr() {
		return WithRunner{Image: img, Runner: rd}, nil // the runner is in it already
	}
	out, err := c.withRunnerImage(ctx, mountOnly{base}, cf, rd)
	if err != nil {
		return WithRunner{}, err
	}
	dg, err := push(ctx, c, target, out, progress)
	if err != nil {
		return WithRunner{}, err
	}
	say(progress, "added the runner to %s as %s in %s", img, dg.DigestStr(), time.Since(start).Round(10*time.Millisecond))
	return WithRunner{Image: dg, Runner: rd}, nil
}

// WithRunnerTag is the tag of env with runner in it (in the repository AddRunner puts
// it into): a hash of both digests ("runner-" and 40 hex digits).
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

// withRunnerImage is base (whose configuration is cf) with runner's layer for its
// platform appended (reported with the media type of base's own layers: the same blob,
// whatever the manifest's schema), the runner's path in its history and the runner in
// the label LabelRunner.
func (c *Client) withRunnerImage(ctx context.Context, base v1.Image, cf *v1.ConfigFile, runner name.Digest) (v1.Image, error) {
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
		return singlePlatformImage(desc, ref, plat)
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
		if !platformMatches(m.Platform, plat) {
			continue
		}
		img, err := idx.Image(m.Digest)
		if err != nil {
			return nil, fmt.Errorf("read the runner image %s for %s: %w", ref, plat.String(), err)
		}
		return img, nil
	}
	return nil, fmt.Errorf("%w: the runner image %s has no image for %s", ErrRunnerNotAdded, ref, plat.String())
}

// singlePlatformImage is the image desc, when it is for plat.
func singlePlatformImage(desc *remote.Descriptor, ref name.Digest, plat v1.Platform) (v1.Image, error) {
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

// platformMatches says an index's child of platform p (nil: linux/amd64, as
// go-containerregistry reads it) is for plat.
func platformMatches(p *v1.Platform, plat v1.Platform) bool {
	got := v1.Platform{OS: "linux", Architecture: "amd64"}
	if p != nil {
		got = *p
	}
	return got.OS == plat.OS && got.Architecture == plat.Architecture && (plat.Variant == "" || got.Variant == plat.Variant)
}

// mountOnly is an image whose layers in a registry (remote.MountableLayer) are found or
// mounted where it is pushed and never uploaded: a registry that would not mount one
// fails the push rather than have this machine copy a base of gigabytes through it.
type mountOnly struct{ v1.Image }

func (m mountOnly) Layers() ([]v1.Layer, error) {
	ls, err := m.Image.Layers()
	for i := range ls {
		ls[i] = notUploaded(ls[i])
	}
	return ls, err
}

func (m mountOnly) LayerByDigest(h v1.Hash) (v1.Layer, error) {
	l, err := m.Image.LayerByDigest(h)
	return notUploaded(l), err
}

func (m mountOnly) LayerByDiffID(h v1.Hash) (v1.Layer, error) {
	l, err := m.Image.LayerByDiffID(h)
	return notUploaded(l), err
}

func notUploaded(l v1.Layer) v1.Layer {
	if ml, ok := l.(*remote.MountableLayer); ok {
		return &remote.MountableLayer{Layer: mountedLayer{ml.Layer}, Reference: ml.Reference}
	}
	return l
}

// mountedLayer is a layer whose content is never read: remote.Write reads it only to
// upload it, when the registry did not mount it.
type mountedLayer struct{ v1.Layer }

func (l mountedLayer) Compressed() (io.ReadCloser, error) {
	d, _ := l.Digest()
	return nil, fmt.Errorf("%w: the registry did not mount the layer %s from the image's repository, and it is not copied", ErrRunnerNotAdded, d)
}

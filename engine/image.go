package engine

import (
	"context"

	"github.com/kinetic-run/kinetic/engine/images"
)

// BuildImageRequest publishes a prebuilt base (`kinetic build-image`).
type BuildImageRequest = images.BaseRequest

// BuildImageResult is what was published.
type BuildImageResult = images.BaseResult

// BaseFromDockerfile builds the user's Dockerfile with podman or docker and pushes it as
// REPO/base-dockerfile:TAG, by digest (images.Builders.BaseFromDockerfile).
func (e *Engine) BaseFromDockerfile(ctx context.Context, repoName, tag, dockerfile string) (string, error) {
	return images.BaseFromDockerfile(ctx, e.cfg, e.Notice, repoName, tag, dockerfile)
}

// BuildImage builds and pushes the prebuilt base for a category
// (images.Builders.BuildBase), with progress on e.Notice.
func (e *Engine) BuildImage(ctx context.Context, r BuildImageRequest) (*BuildImageResult, error) {
	return e.images.BuildBase(ctx, e.cfg, e.Exe, e.Notice, r)
}

package kubetest

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// File is one file of an image made by PushFiles.
type File struct {
	Path   string // inside the image, relative to /
	Source string // file on this machine
	Mode   int64
}

// PushFiles pushes a one-layer linux/amd64 image holding files to ref (a registry of
// this harness: plain HTTP).
func PushFiles(ctx context.Context, ref string, files []File, entrypoint, env []string) error {
	return PushFilesAs(ctx, ref, files, entrypoint, env, "")
}

// PushFilesAs is PushFiles with the image's user (e.g. "65532" for a pod that must run
// as non-root; "" is root).
func PushFilesAs(ctx context.Context, ref string, files []File, entrypoint, env []string, user string) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	for _, f := range files {
		for d := path.Dir(f.Path); d != "." && d != "/" && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	for d := range dirs {
		tw.WriteHeader(&tar.Header{Name: d + "/", Typeflag: tar.TypeDir, Mode: 0o755})
	}
	for _, f := range files {
		b, err := os.ReadFile(f.Source)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: f.Path, Typeflag: tar.TypeReg, Mode: f.Mode, Size: int64(len(b))}); err != nil {
			return err
		}
		tw.Write(b)
	}
	if err := tw.Close(); err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		return err
	}
	return pushLayers(ctx, ref, []v1.Layer{layer}, entrypoint, env, user)
}

// PushLayerTars pushes a linux/amd64 image whose layers are the tar files, in order.
func PushLayerTars(ctx context.Context, ref string, tarPaths []string, entrypoint, env []string) error {
	var layers []v1.Layer
	for _, p := range tarPaths {
		l, err := tarball.LayerFromFile(p)
		if err != nil {
			return err
		}
		layers = append(layers, l)
	}
	return pushLayers(ctx, ref, layers, entrypoint, env, "")
}

func pushLayers(ctx context.Context, ref string, layers []v1.Layer, entrypoint, env []string, user string) error {
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	cf.Config.Entrypoint = entrypoint
	if env == nil {
		env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	}
	cf.Config.Env = env
	cf.Config.User = user
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return err
	}
	if err := remote.Write(r, img, remote.WithContext(ctx)); err != nil {
		return fmt.Errorf("push %s: %w", ref, err)
	}
	return nil
}

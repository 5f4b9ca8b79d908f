package image

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
)

// DetectEngine returns the first of podman and docker found on PATH ("" for none).
func DetectEngine() string {
	for _, c := range []string{"podman", "docker"} {
		if _, err := exec.LookPath(c); err == nil {
			return c
		}
	}
	return ""
}

// EngineBuilder builds with a local container engine (podman or docker): a generated
// Dockerfile whose RUN installs the requirements with the image's own pip (so source
// distributions compile inside the image), then build and push.
type EngineBuilder struct {
	// Command is "podman" or "docker" (or a path to one).
	Command string
	// Env is added to the engine's environment (e.g. CONTAINERS_CONF for podman).
	Env    []string
	Client *Client
}

// Name implements Builder.
func (b *EngineBuilder) Name() string { return b.Command }

// Build implements Builder.
func (b *EngineBuilder) Build(ctx context.Context, req *BuildRequest) (name.Digest, error) {
	dir, err := os.MkdirTemp("", "kinetic-context-")
	if err != nil {
		return name.Digest{}, err
	}
	defer os.RemoveAll(dir)
	if err := buildContext(ctx, b.Client, req, dir); err != nil {
		return name.Digest{}, err
	}
	insecure := req.Target.Context().Registry.Scheme() == "http" || req.Base.Context().Registry.Scheme() == "http"
	podman := b.isPodman()
	args := []string{"build", "--network=host", "-t", req.Target.Name(), "-f", dir + "/Dockerfile"}
	if podman && insecure {
		args = append(args, "--tls-verify=false")
	}
	if p := req.platform(); podman {
		args = append(args, "--platform", p.OS+"/"+p.Architecture)
	}
	say(req.Progress, "%s build %s", b.Command, req.Target)
	if err := b.run(ctx, req.Progress, append(args, dir)...); err != nil {
		return name.Digest{}, fmt.Errorf("%s build over base image %s: %w", b.Command, req.Base, err)
	}
	return b.push(ctx, req.Target, insecure, podman, req.Progress)
}

// BuildFile builds the user's Dockerfile (its directory is the build context) and
// pushes the image to target (`kinetic build-image --dockerfile`).
func (b *EngineBuilder) BuildFile(ctx context.Context, dockerfile string, target name.Tag, progress io.Writer) (name.Digest, error) {
	insecure := target.Context().Registry.Scheme() == "http"
	podman := b.isPodman()
	args := []string{"build", "--network=host", "-t", target.Name(), "-f", dockerfile}
	if podman && insecure {
		args = append(args, "--tls-verify=false")
	}
	say(progress, "%s build %s from %s", b.Command, target, dockerfile)
	if err := b.run(ctx, progress, append(args, filepath.Dir(dockerfile))...); err != nil {
		return name.Digest{}, fmt.Errorf("%s build of %s: %w", b.Command, dockerfile, err)
	}
	return b.push(ctx, target, insecure, podman, progress)
}

// push pushes target and returns its digest as the registry has it.
func (b *EngineBuilder) push(ctx context.Context, target name.Tag, insecure, podman bool, progress io.Writer) (name.Digest, error) {
	args := []string{"push"}
	if podman && insecure {
		args = append(args, "--tls-verify=false")
	}
	if err := b.run(ctx, progress, append(args, target.Name())...); err != nil {
		return name.Digest{}, fmt.Errorf("%s push %s: %w", b.Command, target, err)
	}
	h, ok, err := b.Client.Lookup(ctx, target)
	if err != nil {
		return name.Digest{}, err
	}
	if !ok {
		return name.Digest{}, fmt.Errorf("%s pushed %s but the registry does not list it", b.Command, target)
	}
	return target.Context().Digest(h.String()), nil
}

func (b *EngineBuilder) isPodman() bool {
	out, err := exec.Command(b.Command, "--version").Output()
	return err == nil && bytes.Contains(bytes.ToLower(out), []byte("podman"))
}

// run runs the engine, showing its output on w and keeping its end for the error.
func (b *EngineBuilder) run(ctx context.Context, w io.Writer, args ...string) error {
	cmd := exec.CommandContext(ctx, b.Command, args...)
	cmd.Env = append(os.Environ(), b.Env...)
	var tail bytes.Buffer
	if w != nil {
		cmd.Stdout, cmd.Stderr = io.MultiWriter(w, &tail), io.MultiWriter(w, &tail)
	} else {
		cmd.Stdout, cmd.Stderr = &tail, &tail
	}
	if err := cmd.Run(); err != nil {
		t := tail.String()
		if len(t) > 4000 {
			t = "…" + t[len(t)-4000:]
		}
		return fmt.Errorf("%w\n%s", err, t)
	}
	return nil
}

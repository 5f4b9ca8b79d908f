package slurm

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/kinetic-run/kinetic/batch/layout"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// A job whose spec names a container engine and an image (the engine's image step: the
// setting container=podman or docker, and the image choice, bundled, prebuilt or
// container_image=) runs in that image on the node: the batch script runs `podman run`
// (or `docker run`) of the image with this kinetic binary mounted at job.RunnerPath as
// its entrypoint, the way the local backend's container isolation does (docs/slurm.md,
// "Container images"). Slurm's own OCI support (sbatch --container) was not used: it runs
// an unpacked OCI bundle on the node, not an image from a registry.

// specOf is the spec of job id in the store: nil when there is none (yet).
func (b *Backend) specOf(ctx context.Context, id string) (*job.Spec, error) {
	raw, err := b.st.Get(ctx, store.SpecKey(id))
	if store.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the spec of %s: %w", id, err)
	}
	spec, err := job.DecodeSpec(raw)
	if err != nil {
		return nil, fmt.Errorf("read the spec of %s: %w", id, err)
	}
	return spec, nil
}

// groupSpec is the spec every child of batch gid is made from (its template's).
func (b *Backend) groupSpec(ctx context.Context, gid string) (*job.Spec, error) {
	t, err := layout.ReadTemplate(ctx, b.st, gid)
	if store.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return t.Spec, nil
}

// inContainer reports whether spec runs in a container image.
func inContainer(spec *job.Spec) bool {
	return spec != nil && spec.Container != "" && spec.Image != ""
}

// containerName is the name of the container of the Slurm job (or array task) that runs
// runnerArgs: unique on the node while it runs.
const containerName = `"kinetic-slurm-${SLURM_JOB_ID}"`

// containerCommand is the script's command line that runs the runner (runnerArgs after
// --store) in spec.Image with spec.Container: the host's network (the store, a registry
// on 127.0.0.1), a file:// store and the job's output directory bind-mounted at their
// own paths, Slurm's variables (SLURM_*, with podman) and JAX_PLATFORMS passed in.
func (b *Backend) containerCommand(h *job.Handle, spec *job.Spec, runnerArgs []string) (string, error) {
	// --quiet: no pull progress in the job's output (which the user's call streams);
	// a pull that fails still says why.
	args := []string{spec.Container, "run", "--rm", "--quiet", "--name", containerName, "--network=host", "--pull=missing",
		"-v", shellQuote(b.o.Kinetic + ":" + job.RunnerPath + ":ro"), "-e", "KINETIC_HOST_INDEX=0", "-e", "JAX_PLATFORMS"}
	if spec.Container == "podman" {
		args = append(args, "-e", shellQuote("SLURM_*"))
		if plainHTTP(spec.Image) {
			args = append(args, "--tls-verify=false")
		}
	}
	mounts, err := containerMounts(h.Store, spec)
	if err != nil {
		return "", err
	}
	for _, m := range mounts {
		args = append(args, "-v", shellQuote(m+":"+m))
	}
	args = append(args, "--entrypoint", job.RunnerPath, shellQuote(spec.Image), "runner", "--store", shellQuote(h.Store))
	for _, a := range runnerArgs {
		args = append(args, shellQuote(a))
	}
	return strings.Join(args, " ") + ` --workspace "/tmp/kinetic/${SLURM_JOB_ID}"`, nil
}

// containerMounts are the directories of this machine a container needs at their own
// paths: a file:// store's, and the job's output directory outside it.
func containerMounts(storeURL string, spec *job.Spec) ([]string, error) {
	u, err := url.Parse(storeURL)
	if err != nil {
		return nil, fmt.Errorf("store %q: %w", storeURL, err)
	}
	var dirs []string
	if u.Scheme == "file" {
		dirs = append(dirs, filepath.Clean(u.Path))
	}
	if o := spec.OutputDir; filepath.IsAbs(o) && (len(dirs) == 0 || !strings.HasPrefix(o, dirs[0]+"/")) {
		dirs = append(dirs, filepath.Clean(o))
	}
	if strings.ContainsAny(strings.Join(dirs, ""), ":,") {
		return nil, errors.New("a directory a container mounts has ':' or ',' in its path, which podman's -v cannot take: use a store and output_dir without them")
	}
	return dirs, nil
}

// plainHTTP reports whether ref's registry is on a loopback address (podman then pulls
// without TLS, as the local backend does).
func plainHTTP(ref string) bool {
	host, _, _ := strings.Cut(ref, "/")
	if i := strings.LastIndex(host, ":"); i > 0 && !strings.HasSuffix(host, "]") {
		host = host[:i]
	}
	return host == "localhost" || strings.HasPrefix(host, "127.") || host == "[::1]"
}

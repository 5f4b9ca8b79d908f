package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/kinetic-run/kinetic/data"
	"github.com/kinetic-run/kinetic/internal/mountns"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/pyenv"
	"github.com/kinetic-run/kinetic/store"
)

// environment returns the interpreter for the job: the base one, or the environment
// built (once, cached by key) with the job's filtered requirements.
func environment(ctx context.Context, spec *job.Spec, o Options, out io.Writer) (string, error) {
	py := o.python(spec)
	if len(spec.Requirements) == 0 || o.EnvDir == "" {
		return py, nil
	}
	if spec.EnvKey == "" {
		return "", errors.New("the job has requirements but no environment key")
	}
	p, err := pyenv.EnsureSpec(ctx, o.EnvDir, spec.EnvKey, py, pyenv.Spec{Requirements: spec.Requirements, Constraints: spec.Constraints}, out)
	if err != nil {
		src := spec.RequirementsSource
		if src == "" {
			src = "the requirements"
		}
		return "", fmt.Errorf("installing %s: %w", src, err)
	}
	return p, nil
}

// materializeData puts every Data of the job on this machine and writes the map from
// the SDK's sentinels to local paths. Volumes: with o.PrivateMounts they are returned,
// to be mounted in the job's own mount namespace (nothing is made on this machine);
// otherwise (a pod, a container: the file system is the job's own) linked at their
// paths.
func materializeData(ctx context.Context, st *store.Store, spec *job.Spec, o Options, out io.Writer) (string, []mountns.Mount, error) {
	var mounts []mountns.Mount
	paths := map[string]string{}
	for i, ref := range spec.Data {
		path, fused, err := dataPath(ctx, st, spec, o, i, ref)
		if err != nil {
			return "", nil, err
		}
		if ref.Mount != "" {
			if mounts, err = volume(path, ref, fused, o, mounts); err != nil {
				return "", nil, err
			}
			path = ref.Mount
		}
		paths[job.Sentinel(ref.SlotAt(i))] = path
	}
	b, _ := json.Marshal(paths)
	mapPath := filepath.Join(o.Workspace, "data.json")
	return mapPath, mounts, os.WriteFile(mapPath, b, 0o600)
}

// dataPath is where the ith Data of the job is on this machine: mounted by the pod
// (fused), used in place, or materialised under the workspace.
func dataPath(ctx context.Context, st *store.Store, spec *job.Spec, o Options, i int, ref job.DataRef) (path string, fused bool, err error) {
	if p, ok := o.FusePaths[strconv.Itoa(ref.SlotAt(i))]; ok {
		// Mounted by the Cloud Storage FUSE CSI driver: read in place.
		if _, err := os.Stat(p); err != nil {
			return "", false, fmt.Errorf("Data(%q, fuse=True) is not at %s, where the pod mounts it with Cloud Storage FUSE (does the pod's service account have read access to the bucket? the gke-gcsfuse-sidecar container's log says): %w", ref.Source, p, err)
		}
		return p, true, nil
	}
	if p, ok := data.LocalPath(ref); ok && o.InPlaceData {
		return p, false, nil
	}
	dest := filepath.Join(o.Workspace, "data", fmt.Sprint(i))
	if ref.Kind == data.HF {
		path, err = data.MaterializeHF(ctx, ref, dest, o.python(spec))
	} else {
		path, err = data.Materialize(ctx, st, ref, dest, nil) // gs:// honours STORAGE_EMULATOR_HOST
	}
	if err != nil {
		return "", false, fmt.Errorf("Data(%q): %w", ref.Source, err)
	}
	return path, false, nil
}

// volume shows the data at path at ref.Mount: already there (fused at its own path), in
// the job's own mount namespace (added to mounts), or linked.
func volume(path string, ref job.DataRef, fused bool, o Options, mounts []mountns.Mount) ([]mountns.Mount, error) {
	switch {
	case fused && path == ref.Mount: // mounted at its own path already
	case o.PrivateMounts:
		mounts = append(mounts, mountns.Mount{Source: path, Target: ref.Mount})
	default:
		if err := mount(path, ref.Mount); err != nil {
			return nil, err
		}
	}
	return mounts, nil
}

// mount makes target (a volume's path) show the materialised data in a pod or a
// container, whose file system is the job's own (the local backend mounts volumes in a
// private mount namespace instead: o.PrivateMounts). An existing path that is not a link
// we made is never replaced.
func mount(path, target string) error {
	if fi, err := os.Lstat(target); err == nil {
		if fi.Mode()&os.ModeSymlink == 0 {
			return fmt.Errorf("volume %s: the path exists on this machine and is not a kinetic link; choose another mount path", target)
		}
		if err := os.Remove(target); err != nil {
			return fmt.Errorf("volume %s: %w", target, err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return fmt.Errorf("volume %s: %w", target, err)
	}
	if err := os.Symlink(path, target); err != nil {
		return fmt.Errorf("volume %s: %w", target, err)
	}
	return nil
}

package runner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kinetic-run/kinetic/data"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// TestFusedDataIsReadWhereMounted: in a pod, Data("gs://…", fuse=True) is where the
// Kubernetes backend mounted it (--fuse-paths): the runner does not download it (the
// bucket does not even exist here); a volume that is a directory is mounted at its own
// path, and one that is a single object (the driver mounts its directory elsewhere) is
// linked at its path to the file; a mount that is missing is a clear error.
func TestFusedDataIsReadWhereMounted(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	arg, err := data.Parse("gs://no-such-bucket/datasets/", true, false)
	if err != nil {
		t.Fatal(err)
	}
	vol, err := data.Parse("gs://no-such-bucket/models/w.bin", true, false)
	if err != nil {
		t.Fatal(err)
	}
	vol.Mount = filepath.Join(t.TempDir(), "models") // a pod's own file system
	dirVol, err := data.Parse("gs://no-such-bucket/corpus/", true, false)
	if err != nil {
		t.Fatal(err)
	}
	dirVol.Mount = filepath.Join(t.TempDir(), "corpus") // the driver's mount
	os.Mkdir(dirVol.Mount, 0o755)
	mounted := t.TempDir()
	if err := os.WriteFile(filepath.Join(mounted, "w.bin"), []byte("weights"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := &job.Spec{JobID: "job-x", Data: []job.DataRef{arg, vol, dirVol}}
	o := Options{Workspace: t.TempDir(), FusePaths: map[string]string{"0": mounted, "1": filepath.Join(mounted, "w.bin"), "2": dirVol.Mount}}
	mapPath, mounts, err := materializeData(ctx, st, spec, o, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(mapPath)
	if err != nil {
		t.Fatal(err)
	}
	var paths map[string]string
	json.Unmarshal(raw, &paths)
	if paths["\x00kinetic-data:0\x00"] != mounted || paths["\x00kinetic-data:1\x00"] != vol.Mount || paths["\x00kinetic-data:2\x00"] != dirVol.Mount || len(mounts) != 0 {
		t.Errorf("paths %q, mounts %v", paths, mounts)
	}
	if b, err := os.ReadFile(vol.Mount); string(b) != "weights" {
		t.Errorf("the volume of one object reads %q, %v", b, err)
	}
	if fi, err := os.Lstat(dirVol.Mount); err != nil || !fi.IsDir() {
		t.Errorf("the directory volume was replaced: %v, %v", fi, err)
	}
	o.FusePaths["0"] = filepath.Join(mounted, "absent")
	if _, _, err := materializeData(ctx, st, spec, o, os.Stderr); err == nil || !strings.Contains(err.Error(), "Cloud Storage FUSE") {
		t.Errorf("a missing mount: %v", err)
	}
}

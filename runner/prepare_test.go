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
// Kubernetes backend mounted it (--fuse-paths): the runner neither downloads it (the
// bucket does not even exist here) nor links a volume's path; a mount that is missing
// is a clear error.
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
	vol.Mount = "/kinetic-test-never-made"
	mounted := t.TempDir()
	if err := os.WriteFile(filepath.Join(mounted, "w.bin"), []byte("weights"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := &job.Spec{JobID: "job-x", Data: []job.DataRef{arg, vol}}
	o := Options{Workspace: t.TempDir(), FusePaths: map[string]string{"0": mounted, "1": filepath.Join(mounted, "w.bin")}}
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
	if paths["\x00kinetic-data:0\x00"] != mounted || paths["\x00kinetic-data:1\x00"] != vol.Mount || len(mounts) != 0 {
		t.Errorf("paths %q, mounts %v", paths, mounts)
	}
	if _, err := os.Lstat(vol.Mount); err == nil {
		t.Errorf("%s was made", vol.Mount)
	}
	o.FusePaths["0"] = filepath.Join(mounted, "absent")
	if _, _, err := materializeData(ctx, st, spec, o, os.Stderr); err == nil || !strings.Contains(err.Error(), "Cloud Storage FUSE") {
		t.Errorf("a missing mount: %v", err)
	}
}

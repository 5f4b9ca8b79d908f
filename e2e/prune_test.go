package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// kinetic prune removes what no job needs (ended jobs' workspaces, empty output
// directories, old tombstones) and nothing a running job may use or an output holds.
func TestPrune(t *testing.T) {
	e := newEnv(t)
	done := e.submitAsync(t, "sh", "-c", "exit 3")
	wrote := e.submitAsync(t, "sh", "-c", `echo kept > "$KINETIC_OUTPUT_DIR/model.txt"`)
	running := e.submitAsync(t, "sh", "-c", "sleep 300")
	e.waitStatus(t, done, "FAILED")
	e.waitStatus(t, wrote, "SUCCEEDED")
	e.waitStatus(t, running, "RUNNING")
	defer e.run("jobs", "cancel", running)
	ws := func(id string) string { return filepath.Join(e.home, "data", "local", "jobs", id) }
	out := func(id string) string { return filepath.Join(e.store, "outputs", id) }
	for _, p := range []string{ws(done), ws(running), out(wrote)} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("test setup: %v", err)
		}
	}
	os.MkdirAll(out(done), 0o700) // an empty output directory of an ended job
	spare := filepath.Join(e.store, "outputs", ".spare-grp-dead-0")
	os.MkdirAll(spare, 0o700) // a batch worker's spare, left by a worker that died
	time.Sleep(1500 * time.Millisecond)

	dry := e.run("prune", "--older-than", "1s", "--dry-run")
	if dry.code != 0 || !strings.Contains(dry.stdout, "would free") || !strings.Contains(dry.stdout, "workspace") {
		t.Fatalf("prune --dry-run: %d\n%s%s", dry.code, dry.stdout, dry.stderr)
	}
	if _, err := os.Stat(ws(done)); err != nil {
		t.Fatal("--dry-run removed a workspace")
	}

	r := e.run("prune", "--older-than", "1s", "--json")
	var got struct {
		Freed []struct{ Kind, Path string }
		Bytes int64
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); r.code != 0 || err != nil {
		t.Fatalf("prune --json: %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	removed := map[string]string{}
	for _, f := range got.Freed {
		removed[f.Path] = f.Kind
	}
	if removed[ws(done)] != "workspace" || removed[out(done)] != "output directory" || removed[spare] != "output directory" || got.Bytes <= 0 {
		t.Errorf("prune did not remove the ended job's workspace, empty outputs and a dead worker's spare: %+v", got)
	}
	if _, err := os.Stat(ws(done)); !os.IsNotExist(err) {
		t.Errorf("the ended job's workspace is still there: %v", err)
	}
	if _, err := os.Stat(ws(running)); err != nil {
		t.Errorf("prune removed a running job's workspace: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(out(wrote), "model.txt")); err != nil || string(b) != "kept\n" {
		t.Errorf("prune touched an output: %q %v", b, err)
	}
	if st := e.statusJSON(t, running); st["status"] != "RUNNING" {
		t.Errorf("the running job after prune: %v", st)
	}
	if r := e.run("prune", "--older-than", "soon"); r.code == 0 || !strings.Contains(r.stderr, `--older-than "soon"`) {
		t.Errorf("a bad --older-than: %d %s", r.code, r.stderr)
	}
}

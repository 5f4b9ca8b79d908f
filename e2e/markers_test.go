package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The objects of issue 30 item 3 not gone through before: a batch's gone/ markers, its
// children/ entries and env.json, and tombstones, each damaged the four ways. What a
// command says is either what it said before the damage (nothing reads the object any
// more) or names the object and the fix; never Go's words, never a wait.

// volatile is what differs between two runs of one command over the same batch (times,
// durations, process IDs).
var volatile = regexp.MustCompile(`[0-9]+(\.[0-9]+)?(ms|µs|s|m|h)\b|[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9:.]+Z?|pid [0-9]+`)

// batchReaders runs what reads batch gid: batch status, batch results and the SDK's
// results() (none cleans anything up).
func batchReaders(t *testing.T, e *env, gid string) map[string]result {
	t.Helper()
	sdk := e.sdk(t, fmt.Sprintf(`import kinetic
try:
    v = kinetic.attach_batch(%q).results(cleanup=False, timeout=30)
except Exception as e:
    print("RAISED", type(e).__name__, e)
else:
    print("VALUES", repr(v))
`, gid))
	return map[string]result{
		"batch status":  e.timed(t, "batch", "status", gid),
		"batch results": e.timed(t, "batch", "results", "--timeout", "20s", gid),
		"results()":     sdk,
	}
}

func faultBatchMarkersDamaged(t *testing.T, e *env) {
	// A batch run by executors whose input 2 was cleaned up by name: removed, it leaves
	// a marker (groups/G/gone/2) that it is not to be made again.
	cleaned := e.makeBatch(t, 3)
	if r := e.run("jobs", "cleanup", strings.Replace(cleaned, "grp-", "job-", 1)+"-2"); r.code != 0 {
		t.Fatalf("cleaning up input 2 of batch %s: %d %s", cleaned, r.code, r.stderr)
	}
	// A batch of a job per input: its children's entries (groups/G/children/).
	perJob := e.makeBatch(t, 3, "KINETIC_BATCH_ISOLATION=job")
	// A batch whose inputs capture a variable: groups/G/env.json.
	r := e.sdk(t, `import os, kinetic
os.environ["DAMAGED_BATCH_VAR"] = "v"
@kinetic.run(accelerator="cpu", capture_env_vars=["DAMAGED_BATCH_VAR"])
def f(x):
    import os
    return os.environ["DAMAGED_BATCH_VAR"] + str(x)
b = f.run_async_map(range(3))
b.wait()
print("GID", b.group_id)
`)
	_, withEnv, ok := strings.Cut(strings.TrimSpace(r.stdout), "GID ")
	if r.code != 0 || !ok {
		t.Fatalf("batch with a captured variable: %d %q", r.code, r.stdout)
	}
	objects := []struct {
		gid, path string
		// deleted is what the readers say instead of naming a deleted object: a gone
		// marker deleted leaves a removed input removed.
		deleted string
	}{
		{cleaned, "gone/2", "cleaned up"},
		{perJob, "children/00000001.json", ""},
		{withEnv, "env.json", ""},
	}
	restore := snapshot(t, e.store, e.store)
	before := map[string]map[string]result{}
	for _, o := range objects {
		if _, err := os.Stat(filepath.Join(e.store, "groups", o.gid, filepath.FromSlash(o.path))); err != nil {
			t.Fatalf("batch %s has no %s: %v", o.gid, o.path, err)
		}
		before[o.gid] = batchReaders(t, e, o.gid)
		for what, r := range before[o.gid] {
			if strings.Contains(r.stdout+r.stderr, "TimeoutError") || r.code == 124 {
				// A removed input was waited for, for ever.
				t.Errorf("%s of batch %s, undamaged, waits: %q", what, o.gid, r.stdout+r.stderr)
			}
		}
	}
	for _, o := range objects {
		for _, d := range damages {
			t.Run(strings.ReplaceAll(o.path, "/", "-")+"-"+d.name, func(t *testing.T) {
				defer restore()
				d.damage(t, filepath.Join(e.store, "groups", o.gid, filepath.FromSlash(o.path)))
				file := "groups/" + o.gid + "/" + o.path
				for what, r := range batchReaders(t, e, o.gid) {
					out, was := r.stdout+r.stderr, before[o.gid][what]
					t.Logf("%s (exit %d): %s", what, r.code, out)
					if g := hasGoText(out); g != "" {
						t.Errorf("%s says Go's %q: %q", what, g, out)
					}
					same := r.code == was.code && volatile.ReplaceAllString(out, "") == volatile.ReplaceAllString(was.stdout+was.stderr, "")
					if d.name == "deleted" && o.deleted != "" {
						if !strings.Contains(out, o.deleted) && !same {
							t.Errorf("%s does not say %q:\n%s", what, o.deleted, out)
						}
					} else if !same && (!strings.Contains(out, file) || !strings.Contains(out, "cleanup")) {
						t.Errorf("%s differs from before the damage (exit %d, was %d) and does not name %s and the fix:\n%s\nwas:\n%s", what, r.code, was.code, file, out, was.stdout+was.stderr)
					}
					if !same && r.code == 0 && what != "results()" && !strings.Contains(out, "DAMAGED") {
						t.Errorf("%s names the damage and exits 0: %q", what, out)
					}
				}
				if r := e.timed(t, "batch", "cleanup", o.gid); r.code != 0 {
					t.Errorf("batch cleanup: exit %d %q", r.code, r.stderr)
				}
				if left := e.childrenInStore(o.gid); len(left) > 0 {
					t.Errorf("batch cleanup left its children %v", left)
				}
				if _, err := os.Stat(filepath.Join(e.store, "groups", o.gid)); !os.IsNotExist(err) {
					t.Errorf("batch cleanup left groups/%s (%v)", o.gid, err)
				}
			})
		}
	}
}

func faultTombstoneDamaged(t *testing.T, e *env) {
	// A job whose result was collected (cleaned up, leaving its tombstone).
	r := e.sdk(t, `import kinetic
@kinetic.run(accelerator="cpu")
def f():
    return 7
h = f.run_async()
print("VALUE", h.result())
print("ID", h.job_id)
`)
	_, id, ok := strings.Cut(strings.TrimSpace(r.stdout), "ID ")
	if r.code != 0 || !ok || !strings.Contains(r.stdout, "VALUE 7") {
		t.Fatalf("collect a job: %d %q", r.code, r.stdout)
	}
	tomb := filepath.Join(e.store, "tombstones", id+".json")
	if _, err := os.Stat(tomb); err != nil {
		t.Fatalf("no tombstone: %v", err)
	}
	restore := snapshot(t, e.store, e.store)
	for _, d := range damages {
		t.Run(d.name, func(t *testing.T) {
			defer restore()
			e.timed(t, "jobs", "list") // indexed first: the index must not hide the damage
			d.damage(t, tomb)
			list := e.timed(t, "jobs", "list")
			status := e.timed(t, "jobs", "status", id)
			sdk := e.sdk(t, fmt.Sprintf(`import kinetic
try:
    print("VALUE", kinetic.attach(%q).result())
except Exception as e:
    print("RAISED", type(e).__name__, e)
`, id))
			for what, r := range map[string]result{"jobs list": list, "jobs status": status, "result()": sdk} {
				out := r.stdout + r.stderr
				t.Logf("%s (exit %d): %s", what, r.code, out)
				if g := hasGoText(out); g != "" {
					t.Errorf("%s says Go's %q: %q", what, g, out)
				}
			}
			if d.name == "deleted" {
				// Forgotten: the job reads as never having been (nothing is left to name).
				if status.code == 0 {
					t.Errorf("jobs status of a job gone with its tombstone: exit 0 %q", status.stdout)
				}
				return
			}
			if list.code != 0 || !strings.Contains(list.stdout+list.stderr, id) || !strings.Contains(list.stderr, "tombstones/"+id+".json") {
				t.Errorf("jobs list hides the damaged tombstone (exit %d): %q %q", list.code, list.stdout, list.stderr)
			}
			if status.code == 0 || !strings.Contains(status.stdout+status.stderr, "tombstones/"+id+".json") || !strings.Contains(status.stdout+status.stderr, "cleanup") {
				t.Errorf("jobs status does not name the damaged tombstone and the fix (exit %d): %q %q", status.code, status.stdout, status.stderr)
			}
			if !strings.Contains(sdk.stdout, "RAISED") || !strings.Contains(sdk.stdout, "tombstones/"+id+".json") {
				t.Errorf("result() does not name the damaged tombstone: %q", sdk.stdout)
			}
			if r := e.timed(t, "jobs", "cleanup", id); r.code != 0 {
				t.Errorf("jobs cleanup: exit %d %q", r.code, r.stderr)
			}
			if _, err := os.Stat(tomb); !os.IsNotExist(err) {
				t.Errorf("jobs cleanup left the damaged tombstone (%v)", err)
			}
		})
	}
}

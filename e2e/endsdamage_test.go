package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// A damaged envelope log of a local batch (issue 45, item 6): groups/G/ends/*.ends cut
// short or overwritten was reported as each lost input's cleanup ("no longer exists (it
// was cleaned up)"), the file unnamed. Now every reader names the log, every whole line
// of it still gives its input's value, and the inputs whose line is lost are damaged.
func TestBatchEndsLogDamaged(t *testing.T) {
	e := newEnv(t)
	gid := e.makeBatch(t, 8) // input 2 raises; the others return 10*x
	ends, _ := filepath.Glob(filepath.Join(e.store, "groups", gid, "ends", "*.ends"))
	// The log with the most lines (two workers share the inputs).
	var log string
	var raw []byte
	for _, p := range ends {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Count(b, []byte("\n")) > bytes.Count(raw, []byte("\n")) {
			log, raw = p, b
		}
	}
	if bytes.Count(raw, []byte("\n")) < 2 {
		t.Fatalf("no envelope log with two lines: %v", ends)
	}
	name := "groups/" + gid + "/ends/" + filepath.Base(log)
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	index := func(line string) int {
		i, err := strconv.Atoi(line[:strings.IndexByte(line, ' ')])
		if err != nil {
			t.Fatal(err)
		}
		return i
	}
	restore := snapshot(t, e.store, e.store)
	state := filepath.Join(e.home, "data", "local", "groups", gid)
	for _, c := range []struct {
		name   string
		damage func() []int // returns the inputs whose lines are lost
	}{
		{"truncated", func() []int {
			// Cut in the middle of the last line: every line before it stays whole.
			last := lines[len(lines)-1]
			os.WriteFile(log, raw[:len(raw)-1-len(last)/2], 0o600)
			return []int{index(last)}
		}},
		{"garbage", func() []int {
			os.WriteFile(log, []byte("\x00\x01garbage{"), 0o600)
			var lost []int
			for _, l := range lines {
				lost = append(lost, index(l))
			}
			return lost
		}},
	} {
		for _, pruned := range []bool{false, true} {
			sub := c.name
			if pruned {
				sub += "-state-pruned"
			}
			t.Run(sub, func(t *testing.T) {
				defer restore()
				lost := c.damage()
				if pruned {
					// The batch's local state is gone (kinetic prune, another machine):
					// the store alone says what happened.
					bak := state + ".bak"
					if err := os.Rename(state, bak); err != nil {
						t.Fatal(err)
					}
					defer os.Rename(bak, state)
				}
				r := e.timed(t, "batch", "results", gid)
				out := r.stdout + r.stderr
				t.Logf("batch results (exit %d):\n%s", r.code, out)
				if r.code == 0 || !strings.Contains(out, name) {
					t.Errorf("batch results does not name the damaged log %s", name)
				}
				if strings.Contains(out, "cleaned up") {
					t.Errorf("batch results reports damage as a cleanup")
				}
				for _, i := range lost {
					r := e.timed(t, "jobs", "status", strings.Replace(gid, "grp-", "job-", 1)+"-"+strconv.Itoa(i))
					if o := r.stdout + r.stderr; !strings.Contains(o, name) || !strings.Contains(o, "damaged") {
						t.Errorf("jobs status of input %d (its line lost): exit %d %q", i, r.code, o)
					}
				}
				if r.stdout != "" {
					// A listing (it may instead end at the first damaged input, as a wait
					// on a damaged job does: docs/store.md) lists every value still
					// readable.
					for i := 0; i < 8; i++ {
						if i == 2 || slices.Contains(lost, i) {
							continue
						}
						if !strings.Contains(r.stdout, strconv.Itoa(i)+"      SUCCEEDED  "+strconv.Itoa(10*i)) {
							t.Errorf("input %d's value is not listed", i)
						}
					}
				}
				// Every value still readable is there for the SDK.
				for i := 0; i < 8; i++ {
					if i == 2 || slices.Contains(lost, i) {
						continue
					}
					id := strings.Replace(gid, "grp-", "job-", 1) + "-" + strconv.Itoa(i)
					if r := e.timed(t, "jobs", "result", "--no-cleanup", id); r.code != 0 || strings.TrimSpace(r.stdout) != strconv.Itoa(10*i) {
						t.Errorf("input %d (its line whole): jobs result exit %d %q %q", i, r.code, r.stdout, r.stderr)
					}
				}
			})
		}
	}
}

// A derived batch whose template.json was deleted is damaged, named by that file (not
// each input's missing handle.json, nor NOT_FOUND inputs).
func TestBatchTemplateDeleted(t *testing.T) {
	e := newEnv(t)
	gid := e.makeBatch(t, 3)
	if err := os.Remove(filepath.Join(e.store, "groups", gid, "template.json")); err != nil {
		t.Fatal(err)
	}
	file := "groups/" + gid + "/template.json"
	for _, args := range [][]string{{"batch", "status", gid}, {"batch", "results", gid}} {
		r := e.timed(t, args...)
		out := r.stdout + r.stderr
		t.Logf("%v (exit %d): %s", args, r.code, out)
		if r.code == 0 || !strings.Contains(out, file) || !strings.Contains(out, "missing") || strings.Contains(out, "NOT_FOUND") || strings.Contains(out, "handle.json") {
			t.Errorf("%v does not say that %s is missing: exit %d %q", args, file, r.code, out)
		}
	}
	r := e.sdk(t, "import kinetic\ntry:\n    kinetic.attach_batch("+strconv.Quote(gid)+").results(cleanup=False)\nexcept Exception as e:\n    print(type(e).__name__, e)\n")
	if !strings.Contains(r.stdout, file) || strings.Contains(r.stdout, "handle.json") {
		t.Errorf("results() does not name %s: %q %q", file, r.stdout, r.stderr)
	}
	if r := e.timed(t, "batch", "cleanup", gid); r.code != 0 {
		t.Errorf("batch cleanup: exit %d %q", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(e.store, "groups", gid)); !os.IsNotExist(err) {
		t.Errorf("batch cleanup left groups/%s: %v", gid, err)
	}
}

// batch results of a batch with a job per input, one of whose result.json was deleted:
// the input's value cannot be printed, and the command says so (it printed SUCCEEDED
// with an empty value, exit 0).
func TestBatchResultJSONDeleted(t *testing.T) {
	e := newEnv(t)
	gid := e.makeBatch(t, 2, "KINETIC_BATCH_ISOLATION=job")
	before := e.timed(t, "batch", "results", "--json", gid)
	if before.code != 0 {
		t.Fatalf("batch results: %d %q", before.code, before.stderr)
	}
	jobs := e.jobsInStore()
	if len(jobs) != 2 {
		t.Fatalf("jobs in the store: %v", jobs)
	}
	if err := os.Remove(filepath.Join(e.store, "jobs", jobs[1], "result.json")); err != nil {
		t.Fatal(err)
	}
	r := e.timed(t, "batch", "results", gid)
	t.Logf("batch results (exit %d): %s %s", r.code, r.stdout, r.stderr)
	if r.code == 0 || !strings.Contains(r.stdout, "result.json") || !strings.Contains(r.stdout, "missing") {
		t.Errorf("batch results does not say that input's result.json is missing: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
}

package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/testkit/tmuxtest"
)

var submittedID = regexp.MustCompile(`job (job-[0-9a-z]+) submitted`)

// Ctrl-C in a real terminal, as a person presses it: the first cancels the job the
// blocking command started and says so, a second leaves at once with the job ID and what
// to do; exit 130 and never Go's "context canceled".
func TestCtrlC(t *testing.T) {
	e := newEnv(t)
	envs := []string{"KINETIC_HOME=" + filepath.Join(e.home, "data"), "KINETIC_PROFILES_FILE=" + filepath.Join(e.home, "profiles.json"), "HOME=" + e.home,
		"PATH=" + os.Getenv("PATH")}
	idOn := func(t *testing.T, screen string) string {
		m := submittedID.FindStringSubmatch(screen)
		if m == nil {
			t.Fatalf("no job ID on the screen:\n%s", screen)
		}
		return m[1]
	}
	noGoText := func(t *testing.T, screen string) {
		for _, s := range []string{"context canceled", "deadline exceeded", "panic:", "goroutine "} {
			if strings.Contains(screen, s) {
				t.Errorf("the terminal shows %q:\n%s", s, screen)
			}
		}
	}

	t.Run("run/once cancels the job", func(t *testing.T) {
		tm := tmuxtest.Start(t, e.dir, envs, e.bin, "run", "--", "sh", "-c", "echo started; sleep 300")
		id := idOn(t, tm.WaitFor("started", 60*time.Second))
		tm.Keys("C-c")
		s := tm.WaitFor("cancelled", 60*time.Second)
		if code := tm.Exit(30 * time.Second); code != 130 {
			t.Errorf("exit %d after Ctrl-C, want 130:\n%s", code, tm.Screen())
		}
		if !strings.Contains(s, "kinetic: interrupted: cancelling job "+id) || !strings.Contains(s, "kinetic: job "+id+" cancelled") {
			t.Errorf("what Ctrl-C said:\n%s", s)
		}
		noGoText(t, tm.Screen())
		if st := e.statusJSON(t, id); st["status"] != "FAILED" || !strings.Contains(st["reason"].(string), "cancel") {
			t.Errorf("the job after Ctrl-C: %v, want FAILED (cancelled)", st)
		}
	})

	t.Run("run/twice stops waiting at once", func(t *testing.T) {
		// The job takes 20 s to stop after SIGTERM, so the second Ctrl-C comes while the
		// cancellation is under way.
		tm := tmuxtest.Start(t, e.dir, envs, e.bin, "run", "--", "sh", "-c", `trap "sleep 20; exit 1" TERM; echo started; while :; do sleep 1; done`)
		id := idOn(t, tm.WaitFor("started", 60*time.Second))
		tm.Keys("C-c")
		tm.WaitFor("Ctrl-C again to stop waiting", 30*time.Second)
		start := time.Now()
		tm.Keys("C-c")
		if code := tm.Exit(10 * time.Second); code != 130 {
			t.Errorf("exit %d after the second Ctrl-C, want 130", code)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("the second Ctrl-C took %s to leave", d)
		}
		s := tm.Screen()
		if !strings.Contains(s, "kinetic: stopped waiting; job "+id) || !strings.Contains(s, "kinetic jobs status "+id) {
			t.Errorf("what the second Ctrl-C said:\n%s", s)
		}
		noGoText(t, s)
		e.waitStatus(t, id, "FAILED") // the cancellation still happens
	})

	t.Run("python/once cancels the job", func(t *testing.T) {
		py := "/usr/bin/python3"
		if _, err := os.Stat(py); err != nil {
			t.Skip("no /usr/bin/python3")
		}
		script := filepath.Join(e.dir, "slow.py")
		os.WriteFile(script, []byte("import time, kinetic\n\n@kinetic.run(accelerator='cpu')\ndef slow():\n    print('started', flush=True)\n    time.sleep(300)\n\nslow()\n"), 0o644)
		penv := append(append([]string{}, envs...), "KINETIC_BIN="+e.bin, "PYTHONPATH="+filepath.Join(repoRoot(), "python"))
		tm := tmuxtest.Start(t, e.dir, penv, py, "slow.py")
		tm.WaitFor("started", 90*time.Second)
		tm.Keys("C-c")
		s := tm.WaitFor("KeyboardInterrupt: job ", 60*time.Second)
		if code := tm.Exit(30 * time.Second); code != 130 {
			t.Errorf("python exit %d after Ctrl-C, want 130:\n%s", code, s)
		}
		m := regexp.MustCompile(`kinetic: job (job-[0-9a-z]+) cancelled`).FindStringSubmatch(s)
		if m == nil || !strings.Contains(s, "KeyboardInterrupt: job "+m[1]+" cancelled") {
			t.Fatalf("what Ctrl-C said in Python:\n%s", s)
		}
		noGoText(t, s)
		if st := e.statusJSON(t, m[1]); st["status"] != "FAILED" {
			t.Errorf("the job after Ctrl-C in Python: %v, want FAILED (cancelled)", st)
		}
	})

	t.Run("python/batch results() leaves the batch running", func(t *testing.T) {
		py := "/usr/bin/python3"
		if _, err := os.Stat(py); err != nil {
			t.Skip("no /usr/bin/python3")
		}
		// The batch was started by run_async_map, not by the wait: Ctrl-C in results()
		// stops waiting, leaves it running and says how to get it back.
		script := filepath.Join(e.dir, "slowbatch.py")
		os.WriteFile(script, []byte("import sys, time, kinetic\n\n@kinetic.run(accelerator='cpu')\ndef slow(i):\n    time.sleep(300)\n\n"+
			"b = slow.run_async_map(range(3))\nprint('batch', b.group_id, 'started', flush=True)\nb.results()\n"), 0o644)
		penv := append(append([]string{}, envs...), "KINETIC_BIN="+e.bin, "PYTHONPATH="+filepath.Join(repoRoot(), "python"))
		tm := tmuxtest.Start(t, e.dir, penv, py, "slowbatch.py")
		m := regexp.MustCompile(`batch (\S+) started`).FindStringSubmatch(tm.WaitFor(" started", 90*time.Second))
		if m == nil {
			t.Fatalf("no batch ID on the screen:\n%s", tm.Screen())
		}
		g := m[1]
		time.Sleep(2 * time.Second) // results() is waiting
		tm.Keys("C-c")
		s := tm.WaitFor("KeyboardInterrupt: batch ", 60*time.Second)
		if code := tm.Exit(30 * time.Second); code != 130 {
			t.Errorf("python exit %d after Ctrl-C, want 130:\n%s", code, s)
		}
		for _, want := range []string{"kinetic: stopped waiting for batch " + g + " (0 of 3 finished); it keeps running",
			"kinetic.attach_batch('" + g + "').results()", "kinetic batch cancel " + g, "KeyboardInterrupt: batch " + g + " left running"} {
			if !strings.Contains(strings.ReplaceAll(s, "\n", ""), want) {
				t.Errorf("Ctrl-C in results() does not say %q:\n%s", want, s)
			}
		}
		noGoText(t, s)
		if r := e.run("batch", "status", g, "--json"); r.code != 0 || !strings.Contains(r.stdout, "RUNNING") {
			t.Errorf("the batch after Ctrl-C in results() (exit %d):\n%s%s", r.code, r.stdout, r.stderr)
		}
		e.run("batch", "cancel", g)
		if r := e.run("batch", "status", g, "-f"); r.code != 0 { // until every child is final
			t.Errorf("batch status -f after cancel: exit %d\n%s", r.code, r.stderr)
		}
	})
}

// A per-job time limit (--timeout, timeout= in Python): the call is stopped at it and
// the job FAILS with a reason starting "timeout:".
func TestRunTimeout(t *testing.T) {
	e := newEnv(t)
	start := time.Now()
	r := e.run("run", "--timeout", "2s", "--", "sh", "-c", "echo started; sleep 120")
	took := time.Since(start)
	if r.code == 0 || took > 60*time.Second {
		t.Fatalf("run --timeout 2s: exit %d after %s\n%s", r.code, took, r.stderr)
	}
	m := submittedID.FindStringSubmatch(r.stderr)
	if m == nil {
		t.Fatalf("no job ID:\n%s", r.stderr)
	}
	st := e.statusJSON(t, m[1])
	if st["status"] != "FAILED" || !strings.HasPrefix(st["reason"].(string), "timeout: the call ran longer than its time limit of 2s") {
		t.Errorf("the job after its time limit: %v", st)
	}
	if !strings.Contains(r.stderr, "timeout") {
		t.Errorf("run did not say the job timed out:\n%s", r.stderr)
	}
	t.Logf("stopped after %s:\n%s", took, r.stderr)
	if r := e.run("run", "--timeout", "-5s", "--", "true"); r.code != 2 || !strings.Contains(r.stderr, `--timeout "-5s": a negative duration`) {
		t.Errorf("a negative timeout: exit %d\n%s", r.code, r.stderr)
	}
}

// jobs result as JobHandle.result(): --timeout says the job keeps running; a success is
// cleaned up (its tombstone says it succeeded) unless --no-cleanup; jobs cleanup takes
// cleanup(k8s=, gcs=)'s names; bare `kinetic config` is `config show`.
func TestJobsResultAndCleanupFlags(t *testing.T) {
	e := newEnv(t)
	slow := e.submitAsync(t, "sh", "-c", "sleep 60")
	r := e.run("jobs", "result", "--timeout", "1s", slow)
	if r.code == 0 || !strings.Contains(r.stderr, "did not finish within 1s; it keeps running") || strings.Contains(r.stderr, "deadline exceeded") {
		t.Errorf("jobs result --timeout: %d %q", r.code, r.stderr)
	}
	e.run("jobs", "cancel", slow)

	kept := e.submitAsync(t, "echo", "kept")
	if r := e.run("jobs", "result", "--no-cleanup", kept); r.code != 0 {
		t.Fatalf("result --no-cleanup: %d %s", r.code, r.stderr)
	}
	if st := e.statusJSON(t, kept); st["status"] != "SUCCEEDED" || st["collected"] == true {
		t.Errorf("after --no-cleanup: %v", st)
	}
	// A read removes nothing (issue 46): twice the value, and the job still whole.
	for i := 0; i < 2; i++ {
		if r := e.run("jobs", "result", kept); r.code != 0 || strings.Contains(r.stderr, "cleaned up") {
			t.Fatalf("result %d: %d %q %s", i, r.code, r.stdout, r.stderr)
		}
	}
	if st := e.statusJSON(t, kept); st["status"] != "SUCCEEDED" || st["collected"] == true {
		t.Errorf("after a plain jobs result: %v, want the job kept", st)
	}
	if r := e.run("jobs", "result", "--cleanup", kept); r.code != 0 || !strings.Contains(r.stderr, "cleaned up job "+kept) || !strings.Contains(r.stderr, "without --cleanup") {
		t.Fatalf("result --cleanup: %d %s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(e.store, "jobs", kept)); !os.IsNotExist(err) {
		t.Errorf("jobs result --cleanup did not clean up the success: %v", err)
	}
	// What is left says what removed it in the CLI's words, not Python's.
	if r := e.run("jobs", "logs", kept); r.code == 0 || !strings.Contains(r.stderr, "removed by cleanup") || !strings.Contains(r.stderr, "--cleanup") || strings.Contains(r.stderr, "cleanup=False") {
		t.Errorf("logs of a cleaned-up job: %d %s", r.code, r.stderr)
	}
	if st := e.statusJSON(t, kept); st["collected"] != true {
		t.Errorf("after jobs result: %v, want collected (a tombstone)", st)
	}

	other := e.submitAsync(t, "echo", "x")
	e.waitStatus(t, other, "SUCCEEDED")
	if r := e.run("jobs", "cleanup", "--no-gcs", other); r.code != 0 {
		t.Fatalf("cleanup --no-gcs: %d %s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(e.store, "jobs", other, "handle.json")); err != nil {
		t.Errorf("cleanup --no-gcs removed the store artifacts: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.home, "data", "local", "jobs", other)); !os.IsNotExist(err) {
		t.Errorf("cleanup --no-gcs kept the workspace: %v", err)
	}

	if r := e.run("config"); r.code != 0 || !strings.Contains(r.stdout, "KEY") || !strings.Contains(r.stdout, "SOURCE") {
		t.Errorf("bare kinetic config: %d %q %q", r.code, r.stdout, r.stderr)
	}
}

package kubernetes_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/kinetic-run/kinetic/backend/kubernetes"
	"github.com/kinetic-run/kinetic/testkit/srcroot"
)

// TestExampleMultihost runs examples/multihost.py, the example a multi-host program
// starts from, on two CPU hosts of the test cluster (tpu-v6e-8: one LeaderWorkerSet of
// two CPU pods, as in the other Pathways tests), twice side by side: as a user runs it
// (`python3 multihost.py`: a blocking call through the SDK that streams the leader's
// output, cleans up, and asserts the fit itself), and through the SDK with the job kept
// (run_async, result(cleanup=False)) to read what each host printed from the store.
// The test image has no JAX: each host fits the shards that are its own in plain Python
// (shard s on host s % 2) and the hosts exchange nothing; jax.distributed and pmean
// across hosts are not exercised here (docs/status.md).
func TestExampleMultihost(t *testing.T) {
	shared(t)
	needLWS(t)
	st := newStore(t)
	dir := t.TempDir()
	src, err := os.ReadFile(srcroot.Join("examples", "multihost.py"))
	if err != nil {
		t.Fatal(err)
	}
	kept := "import multihost\n" +
		"h = multihost.fit.run_async()\n" +
		"print('JOB', h.job_id, flush=True)\n" +
		"print('VALUE', h.result(timeout=300, cleanup=False), flush=True)\n"
	for name, b := range map[string][]byte{"multihost.py": src, "kept.py": []byte(kept), "requirements.txt": nil} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := append([]string{"EXAMPLE_ACCELERATOR=tpu-v6e-8"}, multiHostEnv...)
	type run struct {
		out, errOut string
		err         error
	}
	var asUser, asKept run
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		asUser.out, asUser.errOut, asUser.err = runIn(t, st, dir, env, "/usr/bin/python3", "multihost.py")
	}()
	go func() {
		defer wg.Done()
		asKept.out, asKept.errOut, asKept.err = runIn(t, st, dir, env, "/usr/bin/python3", "kept.py")
	}()
	wg.Wait()

	// As a user runs it: the example's own assertion passed (exit 0), the leader's line
	// was streamed, the value says two hosts.
	if asUser.err != nil {
		t.Errorf("python3 multihost.py: %v\n%s\n%s", asUser.err, asUser.out, asUser.errOut)
	} else {
		for _, re := range []string{
			`host 0/2 \(python\): w=3\.000 b=1\.000 from shards \[0, 2, 4, 6\]`,
			`(?m)^fitted: \{'w': 3\.0, 'b': 1\.0, 'hosts': 2, 'with': 'python'\}$`,
		} {
			if !regexp.MustCompile(re).MatchString(asUser.out) {
				t.Errorf("python3 multihost.py printed no line matching %q:\n%s\n%s", re, asUser.out, asUser.errOut)
			}
		}
	}

	// Kept: the leader's value, and each host's own line in the store.
	id := lineAfter(asKept.out, "JOB ")
	if asKept.err != nil || id == "" {
		t.Fatalf("the example through run_async: %v\n%s\n%s", asKept.err, asKept.out, asKept.errOut)
	}
	t.Cleanup(func() { kinetic(t, st, nil, "jobs", "cleanup", id) })
	if got, want := lineAfter(asKept.out, "VALUE "), "{'w': 3.0, 'b': 1.0, 'hosts': 2, 'with': 'python'}"; got != want {
		t.Errorf("the leader's value %q, want %q\n%s", got, want, asKept.errOut)
	}
	if h := handleOf(t, st, id); h.Backend != kubernetes.PathwaysName || h.Accelerator != "tpu-v6e-8" {
		t.Errorf("handle: backend %s, accelerator %s; want pathways, tpu-v6e-8", h.Backend, h.Accelerator)
	}
	for host, want := range map[string]string{
		"0": "host 0/2 (python): w=3.000 b=1.000 from shards [0, 2, 4, 6]",
		"1": "host 1/2 (python): w=3.000 b=1.000 from shards [1, 3, 5, 7]",
	} {
		got := jobLogs(t, st, id)
		if host != "0" {
			got = hostLogs(t, st, id, host)
		}
		if !strings.Contains(got, want) {
			t.Errorf("host %s's output in the store: %q, want a line %q\n%s", host, got, want, describeGroup(t, "default", id))
		}
	}
	if out, errOut, err := kinetic(t, st, nil, "jobs", "cleanup", id); err != nil {
		t.Fatalf("cleanup: %v\n%s\n%s", err, out, errOut)
	}
	waitLWSGone(t, id)
}

// Package tier sorts the tests into the tiers the Makefile runs (CONTRIBUTING.md, "Test
// tiers"):
//
//   - unit (make test-unit): `go test -short` over every package but e2e/..., in
//     seconds, with nothing started but the test's own process and small helpers;
//   - cluster (make test-cluster): every test of those packages, without -short: the
//     real single-node Kubernetes cluster, podman, the registries, the GCS emulator,
//     Slurm, virtual environments, the kinetic binary and what it starts;
//   - e2e (make test-e2e): the e2e/... packages and the Python SDK's tests.
//
// A test is in the unit tier unless it says otherwise, and it says so through the
// harness it needs: gcstest.Start, imagetest.NewPodman and StartDockerRegistry,
// testbin.Path and the test cluster's TestMains call Heavy or Short, so a test that uses
// them skips under -short without a line of its own. The cluster tier runs the unit
// tests again (seconds): no test can fall between tiers, whatever it forgets to say.
package tier

import (
	"flag"
	"testing"
)

// Heavy skips t in the unit tier (go test -short): it needs what is named in why (a
// process, an emulator, a cluster), which the cluster and e2e tiers provide.
func Heavy(t testing.TB, why string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("%s: not in the unit tier (-short); make test-cluster runs it", why)
	}
}

// Short reports whether the test binary runs the unit tier (-short). Unlike
// testing.Short it may be called from a TestMain before m.Run, which has not parsed the
// flags yet: it parses them (as a TestMain that reads its own flags does).
func Short() bool {
	if !flag.Parsed() {
		flag.Parse()
	}
	return testing.Short()
}

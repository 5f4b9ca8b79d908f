package gcstest_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/kinetic-run/kinetic/testkit/gcstest"
	"github.com/kinetic-run/kinetic/testkit/toolcache"
)

// TestColdCacheFromTestMain builds fake-gcs-server into an empty tools cache from a
// TestMain, as a fresh machine does on its first `make test`. Go's own build cache stays
// warm, so this costs a link, not a rebuild of the world.
func TestColdCacheFromTestMain(t *testing.T) {
	if testing.Short() {
		t.Skip("builds fake-gcs-server from scratch")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	gocache, err := exec.Command(goBin, "env", "GOCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	cmd := exec.Command(goBin, "test", "-count=1", "-v", "./coldprobe")
	cmd.Env = append(os.Environ(),
		"KINETIC_COLD_PROBE=1",
		toolcache.EnvDir+"="+cache,
		"GOCACHE="+strings.TrimSpace(string(gocache)),
		"KINETIC_FAKE_GCS_SERVER=", // never a prebuilt binary here
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("cold probe failed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "coldprobe: emulator answered") {
		t.Fatalf("the probe's TestMain did not start the emulator:\n%s", out)
	}
	if !toolcache.Executable(cache + "/fake-gcs-server-" + gcstest.Version + "/bin/fake-gcs-server") {
		t.Fatalf("nothing built into the empty cache %s:\n%s", cache, out)
	}
}

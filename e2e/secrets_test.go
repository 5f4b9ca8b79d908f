package e2e

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// secretScript submits two jobs (one collected, which leaves a tombstone, one kept)
// and one batch (derived children, run by the local backend's group workers) that
// capture KNTEST_SECRET, and prints the SHA-256 each saw: never the value itself, which
// would then be in their results. The engine starts before the variable is set (from
// stdin), so that a job can have it only by capture, not by inheriting the engine's.
const secretScript = `import hashlib, os, sys, kinetic, kinetic._engine
kinetic._engine.engine()
os.environ["KNTEST_SECRET"] = sys.stdin.readline().strip()
@kinetic.run(accelerator="cpu", capture_env_vars=["KNTEST_SECRET"])
def seen(x=0):
    return hashlib.sha256(os.environ.get("KNTEST_SECRET", "").encode()).hexdigest()
collected, kept = seen.run_async(), seen.run_async()
b = seen.run_async_map(range(3))
print("job", collected.result(timeout=300))
print("job", kept.result(timeout=300, cleanup=False))
for r in b.results(timeout=300):
    print("batch", r)
`

// faultSecretOnlyInEnvJSON: a captured variable's value is written only to env.json
// objects (mode 0600), for a single job and for a batch: not in a template, spec,
// handle, manifest, result, tombstone, listing index or any file of the local backend.
func faultSecretOnlyInEnvJSON(t *testing.T, e *env) {
	secret := "kntest-secret-" + randomHex(t)
	out := e.runSecretScript(t, secret)
	sum := sha256.Sum256([]byte(secret))
	want := hex.EncodeToString(sum[:])
	if n := strings.Count(out, want); n != 5 {
		t.Fatalf("the 2 jobs and the batch's 3 inputs should each have seen the secret (%d did):\n%s", n, out)
	}
	if strings.Contains(out, secret) {
		t.Fatalf("the secret reached the SDK's output:\n%s", out)
	}
	// Listings write index/listing.json, and must not show the value either.
	for _, args := range [][]string{{"jobs", "list", "--all", "--json"}, {"batch", "list", "--json"}} {
		if r := e.run(args...); r.code != 0 || strings.Contains(r.stdout+r.stderr, secret) {
			t.Fatalf("%s: exit %d, or the secret is in its output:\n%s%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
	}
	var found []string
	root := filepath.Join(e.home, "data") // KINETIC_HOME: the store and the local backend's state
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !bytes.Contains(b, []byte(secret)) {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		if d.Name() != "env.json" {
			t.Errorf("the secret is in %s", rel)
			return nil
		}
		found = append(found, filepath.ToSlash(rel))
		if fi, err := d.Info(); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600 (%v)", rel, fi.Mode().Perm(), err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The kept job's and the batch's: the only copies.
	for _, want := range []string{"store/jobs/", "store/groups/"} {
		if !slices.ContainsFunc(found, func(p string) bool { return strings.HasPrefix(p, want) }) {
			t.Errorf("no env.json under %s holds the secret (found %v): was it captured?", want, found)
		}
	}
}

// runSecretScript runs secretScript with KNTEST_SECRET set and returns its output.
func (e *env) runSecretScript(t *testing.T, secret string) string {
	t.Helper()
	script := filepath.Join(e.dir, "secret.py")
	if err := os.WriteFile(script, []byte(secretScript), 0o644); err != nil {
		t.Fatal(err)
	}
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		py = "python3"
	}
	cmd := exec.Command(py, script)
	cmd.Dir = e.dir
	cmd.Env = append(os.Environ(), "KINETIC_BIN="+e.bin, "KINETIC_HOME="+filepath.Join(e.home, "data"), "KINETIC_WARM_IDLE=5s",
		"KINETIC_PROFILES_FILE="+filepath.Join(e.home, "profiles.json"), "PYTHONPATH="+filepath.Join(repoRoot(), "python"))
	cmd.Stdin = strings.NewReader(secret + "\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("secret script: %v\n%s", err, out)
	}
	return string(out)
}

func randomHex(t *testing.T) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

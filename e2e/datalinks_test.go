package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Data(dir) with symlinks out of the dataset (issue 45, item 9): the outside file was
// uploaded into the store (a shared bucket on a cluster) while the working directory
// refused the same link. Now both leave such a link out with a warning naming it.
func TestDataLinksOutOfTheDataset(t *testing.T) {
	e := newEnv(t)
	const secret = "the-secret-value-9f3c1a"
	outside := filepath.Join(e.home, "secret.txt")
	os.WriteFile(outside, []byte(secret), 0o600)
	ds := filepath.Join(e.home, "dataset") // outside the working directory
	os.MkdirAll(filepath.Join(ds, "sub"), 0o755)
	os.WriteFile(filepath.Join(ds, "a.txt"), []byte("a"), 0o644)
	os.Symlink(outside, filepath.Join(ds, "leak"))
	os.Symlink("../a.txt", filepath.Join(ds, "sub", "inside")) // stays inside: kept
	r := e.sdk(t, `import os, kinetic
@kinetic.run(accelerator="cpu")
def f(d):
    out = []
    for root, dirs, files in os.walk(d):
        for n in files:
            out.append(os.path.relpath(os.path.join(root, n), d))
    return sorted(out)
print(f(kinetic.Data(`+"\""+ds+"\""+`)))
`)
	t.Logf("exit %d:\n%s", r.code, r.stdout)
	if r.code != 0 || !strings.Contains(r.stdout, "['a.txt', 'sub/inside']") {
		t.Fatalf("the job did not see the dataset without the link: exit %d %q", r.code, r.stdout)
	}
	if !strings.Contains(r.stdout, "left out symlink leak -> "+outside) {
		t.Errorf("no warning names the link left out: %q", r.stdout)
	}
	filepath.Walk(e.store, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), secret) {
				t.Errorf("the outside file's content is in the store: %s", p)
			}
		}
		return nil
	})
}

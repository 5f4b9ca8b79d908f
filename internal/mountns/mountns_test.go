package mountns

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The test binary is its own helper, as the kinetic binary is.
func TestMain(m *testing.M) {
	Main()
	os.Exit(m.Run())
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		target, dir, want string
	}{
		{"/data", "/tmp/ws/job", ""},
		{"/mnt/a/b", "/tmp/ws/job", ""},
		{"data", "/tmp/ws/job", "must be absolute"},
		{"/data/", "/tmp/ws/job", "write the path as"},
		{"/data/../etc", "/tmp/ws/job", "write the path as"},
		{"/", "/tmp/ws/job", "root cannot be a volume"},
		{"/tmp", "/tmp/ws/job", "overlaps the job's own directory"},
		{"/tmp/ws/job/x", "/tmp/ws/job", "overlaps the job's own directory"},
		{"/tmp/ws/jobs", "/tmp/ws/job", ""},
	} {
		err := Check(tc.target, tc.dir)
		if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Check(%q, %q) = %v, want %q", tc.target, tc.dir, err, tc.want)
		}
	}
}

// TestCommand: a program started through Command sees each volume at its path, read
// only, whether the path exists on the machine or not, and the machine gets nothing.
func TestCommand(t *testing.T) {
	if err := Available(); err != nil {
		t.Skip(err)
	}
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "f.txt"), []byte("from the volume"), 0o644); err != nil {
		t.Fatal(err)
	}
	existing := t.TempDir() // a path that exists: the mount goes over it
	missing := "/kinetic-mountns-test-" + filepath.Base(src) + "/deep/data"
	script := "cat " + missing + "/f.txt; echo; cat " + existing + "/f.txt; echo; " +
		"touch " + existing + "/new 2>/dev/null && echo WRITABLE; ls /usr/bin | head -1 >/dev/null && echo ROOT-OK; pwd"
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Dir = src
	if err := Command(cmd, os.Args[0], []Mount{{Source: src, Target: missing}, {Source: src, Target: existing}}, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := "from the volume\nfrom the volume\nROOT-OK\n" + src + "\n"
	if string(out) != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
	if _, err := os.Lstat(filepath.Dir(filepath.Dir(missing))); err == nil {
		t.Errorf("%s was made on this machine", missing)
	}
	if ents, _ := os.ReadDir(existing); len(ents) != 0 {
		t.Errorf("the machine's %s got %d entries", existing, len(ents))
	}
}

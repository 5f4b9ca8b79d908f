package mountns

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
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

// TestCommandAsAnotherUser: the mounts are set up the same way for a user who is not
// root (in the new namespace such a user keeps its own uid, so the helper must be given
// the capabilities it mounts with across its exec, and the program must not keep them).
// Run as root, the test starts itself as nobody.
func TestCommandAsAnotherUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("TestCommand runs as this (non-root) user already")
	}
	if err := Available(); err != nil {
		t.Skip(err)
	}
	d, err := os.MkdirTemp("", "mountns-user")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	os.Chmod(d, 0o755)
	bin, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	self := filepath.Join(d, "mountns.test")
	if err := os.WriteFile(self, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(d, "src")
	os.Mkdir(src, 0o755)
	if err := os.WriteFile(filepath.Join(src, "f.txt"), []byte("from the volume"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^TestAsAnotherUserChild$", "-test.v")
	cmd.Dir = d
	cmd.Env = append(os.Environ(), "KINETIC_MOUNTNS_TEST_SRC="+src, "TMPDIR=/tmp", "HOME=/tmp")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if strings.Contains(string(out), "SKIP:") {
		t.Skipf("as nobody: %s", out)
	}
	if err != nil || !strings.Contains(string(out), "--- PASS: TestAsAnotherUserChild") {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
}

// TestAsAnotherUserChild is TestCommandAsAnotherUser's other half, run as nobody.
func TestAsAnotherUserChild(t *testing.T) {
	src := os.Getenv("KINETIC_MOUNTNS_TEST_SRC")
	if src == "" {
		t.Skip("run by TestCommandAsAnotherUser")
	}
	if err := Available(); err != nil {
		fmt.Println("SKIP:", err)
		return
	}
	missing := "/kinetic-mountns-user-" + filepath.Base(filepath.Dir(src)) + "/data"
	// The program keeps no capability: CapEff of a non-root process is 0.
	cmd := exec.Command("/bin/sh", "-c", "cat "+missing+"/f.txt; echo; id -u; grep CapEff /proc/self/status")
	if err := Command(cmd, os.Args[0], []Mount{{Source: src, Target: missing}}, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := "from the volume\n65534\nCapEff:\t0000000000000000\n"
	if string(out) != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
}

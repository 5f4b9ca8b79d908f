package imagetest

import (
	"bytes"
	"context"
	"fmt"
	"github.com/kinetic-run/kinetic/testkit/tier"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Podman is podman with a configuration of its own: containers.conf (runtime runc,
// cgroup manager cgroupfs, events to a file, default ulimits nofile=20000:20000 and
// nproc=32768:32768, the limits this machine allows), storage under a temporary directory
// and a registries.conf with no search registries. Env holds the variables that select
// them (CONTAINERS_CONF, CONTAINERS_STORAGE_CONF, CONTAINERS_REGISTRIES_CONF): pass it to
// any process that runs podman for the test.
type Podman struct {
	Bin string
	Dir string
	Env []string
}

// NewPodman sets up an isolated podman and removes its storage when t ends. It skips
// the test when podman or runc is not installed.
func NewPodman(t testing.TB) *Podman {
	t.Helper()
	tier.Heavy(t, "runs podman")
	bin, err := exec.LookPath("podman")
	if err != nil {
		t.Skip("imagetest: podman is not installed (apt-get install podman runc); CI installs it")
	}
	if _, err := exec.LookPath("runc"); err != nil {
		t.Skip("imagetest: runc is not installed (apt-get install runc); CI installs it")
	}
	dir, err := os.MkdirTemp("", "kinetic-podman-")
	if err != nil {
		t.Fatal(err)
	}
	p := &Podman{Bin: bin, Dir: dir}
	files := map[string]string{
		"containers.conf": fmt.Sprintf(`[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
log_driver = "k8s-file"

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = %q
# Its own tmp_dir (the default, /run/libpod, holds the "alive" file every podman of the
# machine shares): a parallel test's "system reset" must not pull it from under this one.
tmp_dir = %q
`, filepath.Join(dir, "events.log"), filepath.Join(dir, "tmp")),
		"storage.conf": fmt.Sprintf(`[storage]
driver = "overlay"
graphroot = %q
runroot = %q
`, filepath.Join(dir, "root"), filepath.Join(dir, "run")),
		"registries.conf": "unqualified-search-registries = []\n",
	}
	for n, c := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p.Env = []string{
		"CONTAINERS_CONF=" + filepath.Join(dir, "containers.conf"),
		"CONTAINERS_STORAGE_CONF=" + filepath.Join(dir, "storage.conf"),
		"CONTAINERS_REGISTRIES_CONF=" + filepath.Join(dir, "registries.conf"),
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if out, err := p.Command(ctx, "system", "reset", "--force").CombinedOutput(); err != nil {
			t.Logf("imagetest: podman system reset: %v\n%s", err, out)
		}
		os.RemoveAll(dir)
	})
	return p
}

// Command returns podman args... with the test's configuration in its environment.
func (p *Podman) Command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, p.Bin, args...)
	cmd.Env = append(os.Environ(), p.Env...)
	return cmd
}

// Run runs podman args... and returns its standard output; it fails t (with stderr) on
// error.
func (p *Podman) Run(t testing.TB, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := p.Command(ctx, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("podman %v: %v\nstdout:\n%s\nstderr:\n%s", args, err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// Setenv puts the test's podman configuration in this process's environment for the
// rest of t (for code that starts podman itself, e.g. the local backend).
func (p *Podman) Setenv(t testing.TB) {
	for _, kv := range p.Env {
		k, v, _ := bytes.Cut([]byte(kv), []byte("="))
		t.Setenv(string(k), string(v))
	}
}

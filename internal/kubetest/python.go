package kubetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/kinetic-run/kinetic/internal/filelock"
)

// PythonImage is the image job pods run in the tests: Debian bookworm's python3 with
// cloudpickle, and nothing of Kinetic's (the runner is injected by the init container).
const PythonImage = RegistryURL + "/kinetic-test/python:3.11"

// pythonRecipe is everything that decides the rootfs; its hash keys the cache.
var pythonRecipe = []string{"debootstrap", "--variant=minbase",
	"--include=python3-minimal,libpython3.11-stdlib,python3-cloudpickle,ca-certificates",
	"bookworm"}

// PythonRootfs returns a tar of a Debian root filesystem with python3 and cloudpickle,
// made once with debootstrap from the machine's apt mirror (about 1.5 minutes) and
// cached in the tools cache keyed by the recipe.
func PythonRootfs(ctx context.Context, log func(string, ...any)) (string, error) {
	mirror := aptMirror()
	sum := sha256.Sum256([]byte(strings.Join(append(pythonRecipe, mirror), "\x00")))
	tools, err := ToolsDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(filepath.Dir(tools), "python-rootfs-"+hex.EncodeToString(sum[:6]))
	out := filepath.Join(dir, "rootfs.tar")
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	unlock, err := filelock.Lock(filepath.Join(dir, ".lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	if _, err := exec.LookPath("debootstrap"); err != nil {
		return "", fmt.Errorf("debootstrap is needed to make the test Python image (apt-get install debootstrap): %w", err)
	}
	root := filepath.Join(dir, "root")
	os.RemoveAll(root)
	log("kubetest: debootstrap of a Python rootfs from %s (about 1.5 minutes, once)", mirror)
	start := time.Now()
	args := append(append([]string{}, pythonRecipe...), root, mirror)
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("debootstrap: %v\n%s", err, tail(b, 3000))
	}
	// Trim what a job never needs: apt lists, docs, caches.
	for _, p := range []string{"var/lib/apt/lists", "var/cache/apt", "usr/share/doc", "usr/share/man", "usr/share/locale"} {
		os.RemoveAll(filepath.Join(root, p))
	}
	tmp := out + ".tmp"
	if b, err := exec.CommandContext(ctx, "tar", "-C", root, "--numeric-owner", "-cf", tmp, ".").CombinedOutput(); err != nil {
		return "", fmt.Errorf("tar rootfs: %v: %s", err, b)
	}
	os.RemoveAll(root)
	if err := os.Rename(tmp, out); err != nil {
		return "", err
	}
	log("kubetest: Python rootfs ready in %s", time.Since(start).Round(time.Second))
	return out, nil
}

// PushPythonImage makes sure PythonImage is in the harness registry.
func (c *Cluster) PushPythonImage(ctx context.Context) error {
	tarPath, err := PythonRootfs(ctx, c.log)
	if err != nil {
		return err
	}
	return PushLayerTar(ctx, PythonImage, tarPath, []string{"/usr/bin/python3"}, []string{"LANG=C.UTF-8", "PYTHON_VERSION=3.11"})
}

// aptMirror is the first Debian mirror the machine's apt uses.
func aptMirror() string {
	for _, f := range []string{"/etc/apt/sources.list.d/debian.sources", "/etc/apt/sources.list"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			fs := strings.Fields(line)
			if len(fs) >= 2 && fs[0] == "URIs:" && !strings.Contains(fs[1], "security") {
				return fs[1]
			}
			if len(fs) >= 3 && fs[0] == "deb" && !strings.Contains(fs[1], "security") {
				return fs[1]
			}
		}
	}
	return "http://deb.debian.org/debian"
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// DebugPythonImage is PythonImage plus debugpy, copied from this machine's Debian
// python3-debugpy and its pure-Python dependencies (debootstrap cannot configure the
// packages' gdb dependency).
const DebugPythonImage = RegistryURL + "/kinetic-test/python-debugpy:3.11"

// debugPackages are the Debian packages whose Python files make debugpy work.
var debugPackages = []string{"python3-debugpy", "python3-pydevd", "python3-bytecode"}

// PushDebugPythonImage pushes DebugPythonImage: the Python rootfs and a layer with the
// debugpy packages' files under /usr/lib/python3/dist-packages from this machine.
func (c *Cluster) PushDebugPythonImage(ctx context.Context) error {
	rootfs, err := PythonRootfs(ctx, c.log)
	if err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, "dpkg", append([]string{"-L"}, debugPackages...)...).Output()
	if err != nil {
		return fmt.Errorf("dpkg -L %v: %w (apt-get install python3-debugpy)", debugPackages, err)
	}
	var files []string
	for _, f := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(f, "/usr/lib/python3/dist-packages/") {
			files = append(files, strings.TrimPrefix(f, "/"))
		}
	}
	list := filepath.Join(c.Dir, "debugpy.list")
	if err := os.WriteFile(list, []byte(strings.Join(files, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	layer := filepath.Join(c.Dir, "debugpy.tar")
	if b, err := exec.CommandContext(ctx, "tar", "-C", "/", "--no-recursion", "-cf", layer, "-T", list).CombinedOutput(); err != nil {
		return fmt.Errorf("tar debugpy: %v: %s", err, b)
	}
	return PushLayerTars(ctx, DebugPythonImage, []string{rootfs, layer}, []string{"/usr/bin/python3"}, []string{"LANG=C.UTF-8", "PYTHON_VERSION=3.11"})
}

package kubetest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/kinetic-run/kinetic/testkit/imagetest"
)

// PythonImage is the image job pods run in the tests: Debian bookworm's python3 with
// cloudpickle, and nothing of Kinetic's (the runner is injected by the init container).
const PythonImage = RegistryURL + "/kinetic-test/python:3.11"

// PythonRootfs returns the layer (a gzipped tar of a Debian root filesystem with
// python3 and cloudpickle) of the Python base that the image tests make, cached by its
// recipe (testkit/imagetest).
func PythonRootfs() (string, error) {
	if _, err := exec.LookPath("debootstrap"); err != nil {
		return "", fmt.Errorf("debootstrap is needed to make the test Python image (apt-get install debootstrap): %w", err)
	}
	return imagetest.MakePythonBaseLayer()
}

// PushPythonImage makes sure PythonImage is in the harness registry.
func (c *Cluster) PushPythonImage(ctx context.Context) error {
	tarPath, err := PythonRootfs()
	if err != nil {
		return err
	}
	return PushLayerTars(ctx, PythonImage, []string{tarPath}, []string{"/usr/bin/python3"}, imagetest.Env)
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
	rootfs, err := PythonRootfs()
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
	return PushLayerTars(ctx, DebugPythonImage, []string{rootfs, layer}, []string{"/usr/bin/python3"}, imagetest.Env)
}

package imagetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/kinetic-run/kinetic/testkit/toolcache"
)

// The bases of the tests with real frameworks (docs/images.md, "Tests with real
// frameworks"): Python with nothing of the runtime layer's in it, so that a job that
// imports cloudpickle, jax or keras proves the layer brought them.
//
//   - The bare base (MakeBareBaseLayer): Debian bookworm's python3 (3.11) without
//     cloudpickle and without pip, plus the shared libraries pyenv's CPython 3.12 loads
//     (ldd of its binary and of lib-dynload/*.so, tkinter's X and Tk libraries left out).
//     With Env311 it is a 3.11 base.
//   - The 3.12 layer (MakePython312Layer): the tree of this machine's CPython 3.12
//     (Python312: pyenv's) at the same path, without its tests, tkinter, IDLE
//     and site-packages, and python3 and python3.12 links in /usr/local/bin, which PATH
//     puts first. The bare base plus this layer, with Env312, is a 3.12 base, made
//     without the network.
//
// Both are cached in the tools cache by recipe and made by `make test-tools`.

// EnvPython312 names the CPython 3.12 of the 3.12 layer and of the second client
// (testkit/pywheels) when set.
const EnvPython312 = "KINETIC_TEST_PYTHON312"

// DefaultPython312 is pyenv's CPython 3.12 on this kind of machine.
const DefaultPython312 = "/root/.pyenv/versions/3.12.1/bin/python3"

// Python312 is $KINETIC_TEST_PYTHON312, else DefaultPython312.
func Python312() string {
	if p := os.Getenv(EnvPython312); p != "" {
		return p
	}
	return DefaultPython312
}

// ErrNoPython312 is wrapped when the machine has no CPython 3.12 at Python312().
var ErrNoPython312 = fmt.Errorf("no CPython 3.12 (set %s to one, e.g. a pyenv or uv python)", EnvPython312)

// BarePackages is the bare base's debootstrap --include.
const BarePackages = "python3-minimal,libpython3.11-stdlib," +
	"libffi8,libssl3,libsqlite3-0,libncursesw6,libreadline8,libuuid1,libnsl2,libtirpc3,libgssapi-krb5-2,libexpat1,libbz2-1.0,liblzma5,zlib1g"

// bareRecipeVersion and py312RecipeVersion change the keys when the steps change.
const (
	bareRecipeVersion  = "1"
	py312RecipeVersion = "1"
)

// Env311 and Env312 are the configuration environments of the 3.11 and 3.12 bases.
var (
	Env311 = envFor("3.11")
	Env312 = envFor("3.12")
)

func envFor(py string) []string {
	return []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8", "PYTHON_VERSION=" + py}
}

// BareRecipeKey is the hash the bare base is cached by.
func BareRecipeKey() string {
	h := sha256.New()
	fmt.Fprintf(h, "imagetest bare python base v%s\nsuite %s\ninclude %s\nmirror %s\narch %s\n", bareRecipeVersion, Suite, BarePackages, Mirror(), runtime.GOARCH)
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// MakeBareBaseLayer makes (once per recipe, under a lock) and returns the bare base's
// one layer, a gzipped tar of the rootfs.
func MakeBareBaseLayer() (string, error) {
	if _, err := exec.LookPath("debootstrap"); err != nil {
		return "", fmt.Errorf("debootstrap is needed to make the bare Python base (apt-get install debootstrap): %w", err)
	}
	dir, err := toolcache.Dir("python-bare-" + BareRecipeKey())
	if err != nil {
		return "", err
	}
	return makeRootfsLayer(dir, BarePackages)
}

// py312Excludes are left out of the 3.12 tree: what no job needs and what is this
// machine's own (site-packages holds pip and a .pth file of the machine's).
var py312Excludes = []string{
	"lib/python3.12/test", "lib/python3.12/idlelib", "lib/python3.12/tkinter", "lib/python3.12/turtledemo",
	"lib/python3.12/lib-dynload/_tkinter*", "lib/python3.12/site-packages/*", "lib/python3.12/config-3.12-*",
	"lib/*.a", "bin/idle*", "bin/2to3*", "bin/pip*",
}

// python312Prefix returns sys.prefix and the full version of the 3.12 interpreter.
func python312Prefix(ctx context.Context) (prefix, version string, err error) {
	py := Python312()
	out, err := exec.CommandContext(ctx, py, "-I", "-c", "import sys; print(sys.base_prefix); print('%d.%d.%d' % sys.version_info[:3])").Output()
	if err != nil {
		return "", "", fmt.Errorf("%s: %w: %w", py, ErrNoPython312, err)
	}
	f := strings.Fields(string(out))
	if len(f) != 2 || !strings.HasPrefix(f[1], "3.12.") {
		return "", "", fmt.Errorf("%s is %q, not CPython 3.12: %w", py, out, ErrNoPython312)
	}
	return f[0], f[1], nil
}

// MakePython312Layer makes (once per interpreter and recipe, under a lock) and returns
// the 3.12 layer, a gzipped tar.
func MakePython312Layer(ctx context.Context) (string, error) {
	prefix, version, err := python312Prefix(ctx)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "imagetest python 3.12 layer v%s\n%s\n%s\n%q\n", py312RecipeVersion, prefix, version, py312Excludes)
	dir, err := toolcache.Dir("python312-layer-" + hex.EncodeToString(h.Sum(nil))[:16])
	if err != nil {
		return "", err
	}
	return cachedLayer(dir, func(tmp string) (string, error) {
		links, err := os.MkdirTemp(dir, "links-")
		if err != nil {
			return "", err
		}
		defer os.RemoveAll(links)
		if err := os.MkdirAll(filepath.Join(links, "usr/local/bin"), 0o755); err != nil {
			return "", err
		}
		for _, n := range []string{"python3", "python3.12"} {
			if err := os.Symlink(filepath.Join(prefix, "bin", "python3.12"), filepath.Join(links, "usr/local/bin", n)); err != nil {
				return "", err
			}
		}
		rel := strings.TrimPrefix(prefix, "/")
		args := []string{"--numeric-owner", "--owner=0", "--group=0", "--sort=name"}
		for _, x := range py312Excludes {
			args = append(args, "--exclude="+rel+"/"+x)
		}
		args = append(args, "-czf", tmp, "-C", "/", rel, "-C", links, "usr")
		if out, err := exec.CommandContext(ctx, "tar", args...).CombinedOutput(); err != nil {
			return "", fmt.Errorf("tar the Python %s tree %s: %v\n%s", version, prefix, err, tail(out, 4000))
		}
		return fmt.Sprintf("from Python %s at %s", version, prefix), nil
	})
}

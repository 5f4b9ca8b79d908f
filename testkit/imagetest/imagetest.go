// Package imagetest gives tests real container images and registries, made here without
// any outside registry:
//
//   - PythonBase: a Debian bookworm rootfs with python3 (full standard library) and
//     cloudpickle and pip, made once with debootstrap from the machine's apt mirror and cached
//     under python-base-<recipe hash>/ in the tools cache (testkit/toolcache),
//     under a file lock so parallel test packages make it once; PushPythonBase pushes it
//     to a registry.
//   - TinyBase: a few-kilobyte image (busybox-static if present, else one file) for
//     structure-only tests.
//   - StartRegistry: go-containerregistry's in-process registry on 127.0.0.1;
//     StartDockerRegistry: Debian's docker-registry (distribution 2.x) on a free port with
//     its own config and storage, stopped when the test ends.
//   - NewPodman: podman with its own containers.conf (runc, cgroupfs, file events,
//     ulimits this machine allows), storage and registries.conf, isolated from the
//     machine's.
//   - Push: any image to a registry; LayerFromFiles: a layer from a map of files.
//   - Wheel, WheelWithMetadata: a pure-Python wheel built in Go (extra METADATA lines
//     such as Requires-Dist), for installs without an index.
//
// Tests that need a tool (debootstrap, podman, docker-registry) that is truly absent are
// skipped with a message naming the Debian package; CI installs them all (.ci/run).
package imagetest

import (
	"archive/tar"
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/kinetic-run/kinetic/internal/filelock"
	"github.com/kinetic-run/kinetic/testkit/toolcache"
)

// Suite and Packages are the recipe of the Python base: debootstrap --variant=minbase
// --include=Packages Suite. Changing either (or recipeVersion) changes the cache key.
const (
	Suite         = "bookworm"
	Packages      = "python3-minimal,libpython3.11-stdlib,python3-cloudpickle,python3-pip"
	PythonVersion = "3.11"
	recipeVersion = "3" // bump when the steps below change
)

// Env is the image configuration's environment of the bases made here.
var Env = []string{
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"LANG=C.UTF-8",
	"PYTHON_VERSION=" + PythonVersion, // as the official python images say it
}

// Mirror is the Debian mirror debootstrap uses: $KINETIC_DEBIAN_MIRROR, else the first
// bookworm URI of the machine's apt sources, else deb.debian.org.
func Mirror() string {
	if m := os.Getenv("KINETIC_DEBIAN_MIRROR"); m != "" {
		return m
	}
	if m := mirrorFromDeb822("/etc/apt/sources.list.d/debian.sources"); m != "" {
		return m
	}
	if m := mirrorFromList("/etc/apt/sources.list"); m != "" {
		return m
	}
	return "http://deb.debian.org/debian"
}

func mirrorFromDeb822(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	for _, stanza := range strings.Split(string(b), "\n\n") {
		var uri string
		suites := false
		for _, l := range strings.Split(stanza, "\n") {
			k, v, ok := strings.Cut(l, ":")
			if !ok {
				continue
			}
			switch strings.TrimSpace(k) {
			case "URIs":
				uri = strings.Fields(v)[0]
			case "Suites":
				for _, s := range strings.Fields(v) {
					suites = suites || s == Suite
				}
			}
		}
		if uri != "" && suites {
			return uri
		}
	}
	return ""
}

func mirrorFromList(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) >= 3 && fs[0] == "deb" && fs[len(fs)-2] == Suite || len(fs) >= 4 && fs[0] == "deb" && fs[2] == Suite {
			for _, f := range fs[1:] {
				if strings.Contains(f, "://") {
					return f
				}
			}
		}
	}
	return ""
}

// RecipeKey is the hash the cached Python base is keyed by.
func RecipeKey() string {
	h := sha256.New()
	fmt.Fprintf(h, "imagetest python base v%s\nsuite %s\ninclude %s\nmirror %s\narch %s\nenv %q\n", recipeVersion, Suite, Packages, Mirror(), runtime.GOARCH, Env)
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// CacheDir is where the Python base for the current recipe is kept.
func CacheDir() (string, error) {
	return toolcache.Dir("python-base-" + RecipeKey())
}

var (
	baseOnce  sync.Once
	baseLayer string
	baseErr   error
)

// PythonBaseLayer returns the path of the Python base's single layer (a gzipped tar of
// the rootfs), making it if the cache does not hold it yet (~1.5 min with a busy CPU).
func PythonBaseLayer(t testing.TB) string {
	t.Helper()
	if _, err := exec.LookPath("debootstrap"); err != nil {
		t.Skip("imagetest: debootstrap is not installed (apt-get install debootstrap); CI installs it")
	}
	baseOnce.Do(func() { baseLayer, baseErr = MakePythonBaseLayer() })
	if baseErr != nil {
		t.Fatalf("imagetest: make the Python base image: %v", baseErr)
	}
	return baseLayer
}

// MakePythonBaseLayer is PythonBaseLayer outside a test (the test cluster's images): it
// makes the layer once per recipe under a file lock and returns its path.
func MakePythonBaseLayer() (string, error) {
	dir, err := CacheDir()
	if err != nil {
		return "", err
	}
	return makeRootfsLayer(dir, Packages)
}

// makeRootfsLayer makes dir/layer.tar.gz, once, under a lock on dir/lock: a gzipped tar
// of debootstrap --variant=minbase --include=packages Suite.
func makeRootfsLayer(dir, packages string) (string, error) {
	return cachedLayer(dir, func(tmp string) (string, error) {
		return "from " + Mirror(), debootstrapLayer(dir, packages, tmp)
	})
}

// cachedLayer returns dir/layer.tar.gz, made once by build (which writes the gzipped tar
// to tmp) under a lock on dir/lock, so parallel test packages make it once; made.txt
// says how long it took and what build said of it.
func cachedLayer(dir string, build func(tmp string) (string, error)) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	layer := filepath.Join(dir, "layer.tar.gz")
	unlock, err := filelock.Lock(filepath.Join(dir, "lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := os.Stat(layer); err == nil {
		return layer, nil
	}
	start := time.Now()
	tmp := layer + ".tmp"
	note, err := build(tmp)
	if err != nil {
		return "", err
	}
	if err := os.Rename(tmp, layer); err != nil {
		return "", err
	}
	os.WriteFile(filepath.Join(dir, "made.txt"), []byte(fmt.Sprintf("made in %s %s\n", time.Since(start).Round(time.Second), note)), 0o644)
	return layer, nil
}

// debootstrapLayer writes to tmp a gzipped tar of debootstrap --variant=minbase
// --include=packages Suite, made in a directory under dir.
func debootstrapLayer(dir, packages, tmp string) error {
	root, err := os.MkdirTemp(dir, "rootfs-")
	if err != nil {
		return err
	}
	defer func() {
		unmountUnder(root) // debootstrap mounts /proc and /sys in the target while it works
		os.RemoveAll(root)
	}()
	cmd := exec.Command("debootstrap", "--variant=minbase", "--include="+packages, Suite, root, Mirror())
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("debootstrap %s from %s: %v\n%s", Suite, Mirror(), err, tail(out, 4000))
	}
	// Smaller and reproducible enough: no docs, apt caches or device nodes.
	for _, p := range []string{"usr/share/doc", "usr/share/man", "usr/share/info", "usr/share/locale", "var/cache/apt", "var/lib/apt/lists", "dev", "var/log"} {
		if err := os.RemoveAll(filepath.Join(root, p)); err != nil {
			return err
		}
	}
	for _, p := range []string{"dev", "var/log", "var/lib/apt/lists", "var/cache/apt"} {
		os.MkdirAll(filepath.Join(root, p), 0o755)
	}
	tarCmd := exec.Command("tar", "--numeric-owner", "--sort=name", "-C", root, "-czf", tmp, ".")
	if out, err := tarCmd.CombinedOutput(); err != nil {
		return fmt.Errorf("tar the rootfs: %v\n%s", err, out)
	}
	return nil
}

// PythonBase returns the Python base as an image (linux/GOARCH, one layer, Env).
func PythonBase(t testing.TB) v1.Image {
	t.Helper()
	l, err := tarball.LayerFromFile(PythonBaseLayer(t))
	if err != nil {
		t.Fatalf("imagetest: %v", err)
	}
	return withConfig(t, l)
}

func withConfig(t testing.TB, layers ...v1.Layer) v1.Image {
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		t.Fatalf("imagetest: %v", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatalf("imagetest: %v", err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config.Env = append([]string(nil), Env...)
	cf.Config.Cmd = []string{"python3"}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatalf("imagetest: %v", err)
	}
	return img
}

// PythonBaseTag is the repository:tag the Python base is pushed as.
func PythonBaseTag() string { return "kinetic-test/python-base:" + RecipeKey() }

// PushPythonBase pushes the Python base to the registry at host ("127.0.0.1:PORT", plain
// HTTP) as PythonBaseTag and returns its reference (by tag).
func PushPythonBase(t testing.TB, host string) name.Reference {
	t.Helper()
	return Push(t, PythonBase(t), host+"/"+PythonBaseTag())
}

// Push writes img to ref (plain HTTP for 127.0.0.1 and localhost) and returns the
// parsed reference.
func Push(t testing.TB, img v1.Image, ref string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatalf("imagetest: %v", err)
	}
	if err := remote.Write(r, img); err != nil {
		t.Fatalf("imagetest: push %s: %v", ref, err)
	}
	return r
}

// TinyBase returns a structure-only image: busybox-static's /bin/busybox (with sh and
// python3 links that cannot run Python) when installed, else a single text file; Env
// says PYTHON_VERSION=3.11 so builders can plan for it.
func TinyBase(t testing.TB) v1.Image {
	t.Helper()
	files := map[string][]byte{"etc/os-release": []byte("ID=kinetic-tiny\n")}
	if b, err := os.ReadFile("/bin/busybox"); err == nil {
		files["bin/busybox"] = b
	}
	l, err := LayerFromFiles(files)
	if err != nil {
		t.Fatalf("imagetest: %v", err)
	}
	return withConfig(t, l)
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// unmountUnder lazily unmounts every mount point at or below dir, deepest first.
func unmountUnder(dir string) {
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return
	}
	var points []string
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) > 1 && (f[1] == dir || strings.HasPrefix(f[1], dir+"/")) {
			points = append(points, f[1])
		}
	}
	for i := len(points) - 1; i >= 0; i-- {
		exec.Command("umount", "-l", points[i]).Run()
	}
}

// HasFile reports whether the image ref (plain HTTP for 127.0.0.1) holds a file whose
// path ends in name, in any of its layers.
func HasFile(t testing.TB, ref, name string) bool {
	t.Helper()
	r, err := parseInsecure(ref)
	if err != nil {
		t.Fatalf("imagetest: %v", err)
	}
	img, err := remote.Image(r)
	if err != nil {
		t.Fatalf("imagetest: pull %s: %v", ref, err)
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err != nil {
			return false
		}
		if strings.HasSuffix(h.Name, name) {
			return true
		}
	}
}

// HasTag reports whether the repository repo (plain HTTP for 127.0.0.1) has any tag.
func HasTag(t testing.TB, repo string) bool {
	t.Helper()
	r, err := name.NewRepository(repo, name.Insecure)
	if err != nil {
		t.Fatalf("imagetest: %v", err)
	}
	tags, err := remote.List(r)
	return err == nil && len(tags) > 0
}

func parseInsecure(ref string) (name.Reference, error) {
	return name.ParseReference(ref, name.Insecure)
}

package image

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/kinetic-run/kinetic/testkit/imagetest"
)

// sdist writes kn_sdist-1.0.tar.gz: a source distribution whose in-tree PEP 517 backend
// makes the wheel where pip runs, marking the module as built there.
func sdist(t *testing.T, dir string) {
	t.Helper()
	backend := `import os, zipfile, hashlib, base64
def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name = "kn_sdist-1.0-py3-none-any.whl"
    src = open(os.path.join("kn_sdist", "__init__.py"), "rb").read()
    files = {
        "kn_sdist/__init__.py": src + b"BUILT_ON = " + repr(os.uname().nodename).encode() + b"\n",
        "kn_sdist-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: kn-sdist\nVersion: 1.0\n",
        "kn_sdist-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    rec = []
    for n, b in files.items():
        d = base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b"=").decode()
        rec.append("%s,sha256=%s,%d" % (n, d, len(b)))
    rec.append("kn_sdist-1.0.dist-info/RECORD,,")
    files["kn_sdist-1.0.dist-info/RECORD"] = ("\n".join(rec) + "\n").encode()
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w") as z:
        for n, b in files.items():
            z.writestr(n, b)
    return name
`
	files := map[string]string{
		"PKG-INFO":             "Metadata-Version: 2.1\nName: kn-sdist\nVersion: 1.0\n",
		"pyproject.toml":       "[build-system]\nrequires = []\nbuild-backend = \"backend\"\nbackend-path = [\".\"]\n",
		"backend.py":           backend,
		"kn_sdist/__init__.py": "SOURCE = True\n",
	}
	f, err := os.Create(filepath.Join(dir, "kn_sdist-1.0.tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	for n, c := range files {
		tw.WriteHeader(&tar.Header{Name: "kn_sdist-1.0/" + n, Mode: 0o644, Size: int64(len(c)), Typeflag: tar.TypeReg})
		tw.Write([]byte(c))
	}
	tw.Close()
	zw.Close()
	f.Close()
}

// TestSourceDistributionFallsBackToPodman: the daemonless builder finds no wheel for a
// source-only requirement, and the engine builder (podman with runc and cgroupfs) builds
// it inside the image with the image's pip; the module then imports in the image.
func TestSourceDistributionFallsBackToPodman(t *testing.T) {
	if testing.Short() {
		t.Skip("runs podman build")
	}
	pm := imagetest.NewPodman(t)
	reg := imagetest.StartDockerRegistry(t)
	base := imagetest.PushPythonBase(t, reg.Host)
	links := wheelDir(t, "kn-demo", "1.0")
	sdist(t, links)
	target, err := name.NewTag(reg.Host+"/kinetic-env:"+strings.Repeat("5", 64), name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	e := &Ensurer{Builder: &Daemonless{}, Fallback: &EngineBuilder{Command: pm.Bin, Env: pm.Env}}
	var progress strings.Builder
	res, err := e.Ensure(context.Background(), &BuildRequest{
		Base: base, Target: target, Progress: &progress,
		Requirements: []string{"--no-index", "--find-links " + links, "kn-demo==1.0", "kn-sdist==1.0"},
	})
	if err != nil {
		t.Fatalf("%v\nprogress:\n%s", err, progress.String())
	}
	if res.Builder != pm.Bin || !strings.Contains(progress.String(), "kn-sdist==1.0 has no wheel") {
		t.Fatalf("builder %q; progress:\n%s", res.Builder, progress.String())
	}
	out := pm.Run(t, "run", "--rm", "--network=host", "--tls-verify=false", res.Ref.Name(),
		"python3", "-c", "import kn_sdist, kn_demo, os; print(kn_sdist.SOURCE, kn_demo.VALUE, os.environ['PYTHONPATH'], os.path.exists('/kinetic/bin'))")
	// No kinetic binary in a bundled image: the backends inject theirs.
	if got := strings.TrimSpace(out); got != "True 1.0 /kinetic/site-packages False" {
		t.Fatalf("in the image: %q", got)
	}
}

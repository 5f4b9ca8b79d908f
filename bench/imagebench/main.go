// Command imagebench measures bundled image builds against the raw cost of pushing the
// same bytes to the same registry, in the same run, and prints a Markdown table
// (docs/benchmarks.md keeps the results).
//
//	go run ./bench/imagebench [-mb 50] [-n 3]
//
// Each round starts Debian's docker-registry with empty storage, pushes a small base
// (busybox with PYTHON_VERSION in its config), makes fresh wheels of -mb MB in total
// (random, stored: they do not compress, as real wheels hardly do), then times:
//
//   - raw push: the wheels' bytes uploaded as one uncompressed blob (remote.WriteLayer);
//   - cold build, first image: Ensure on a new tag (lookup miss, the pinned wheels layered
//     straight from the wheel files, the requirements layer, push; bundled images carry
//     no kinetic binary: the backends inject theirs);
//   - cold build, new requirements: the same with other fresh wheels (the usual cold
//     build: requirements changed);
//   - warm lookup: Ensure of the first tag again from a new Ensurer (one HEAD);
//   - cold build through pip: other fresh wheels, required as kn-big>=1.0 so the
//     builder runs pip (pip install --target for the image's platform).
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/kinetic-run/kinetic/image"
	"github.com/kinetic-run/kinetic/testkit/imagetest"
)

func main() {
	mb := flag.Int("mb", 50, "total size of the wheels, MB")
	n := flag.Int("n", 3, "rounds")
	flag.Parse()
	var raw, cold1, cold2, warm, pip []time.Duration
	cache, err := os.MkdirTemp("", "kinetic-imagebench-cache-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(cache)
	for i := 0; i < *n; i++ {
		r, c1, c2, w, p, err := round(*mb, cache)
		if err != nil {
			log.Fatal(err)
		}
		raw, cold1, cold2, warm, pip = append(raw, r), append(cold1, c1), append(cold2, c2), append(warm, w), append(pip, p)
		fmt.Fprintf(os.Stderr, "round %d: raw %s, cold (first) %s, cold (new reqs) %s, warm %s, pip %s\n", i+1, r, c1, c2, w, p)
	}
	fmt.Printf("%d rounds, %d MB of wheels, %d CPUs\n\n", *n, *mb, runtime.NumCPU())
	fmt.Println("| measurement | median | min | max | ratio to raw push (median) |")
	fmt.Println("|---|---|---|---|---|")
	rawMed := median(raw)
	row := func(name string, ds []time.Duration, ratio bool) {
		r := ""
		if ratio {
			r = fmt.Sprintf("%.2f×", float64(median(ds))/float64(rawMed))
		}
		fmt.Printf("| %s | %s | %s | %s | %s |\n", name, fmtD(median(ds)), fmtD(minD(ds)), fmtD(maxD(ds)), r)
	}
	row("raw push of the wheels' bytes (one blob)", raw, false)
	row("cold bundled build, first image", cold1, true)
	row("cold bundled build, new requirements", cold2, true)
	row("cold bundled build through pip (requirement not pinned: `kn-big>=1.0`)", pip, true)
	row("warm lookup (cache hit)", warm, false)
}

func round(mb int, cache string) (raw, cold1, cold2, warm, pip time.Duration, err error) {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "kinetic-imagebench-")
	if err != nil {
		return
	}
	defer os.RemoveAll(dir)
	host, stop, err := startRegistry(dir)
	if err != nil {
		return
	}
	defer stop()
	base, err := pushBase(host)
	if err != nil {
		return
	}
	links1, blob1, err := wheels(filepath.Join(dir, "w1"), "kn-big", mb)
	if err != nil {
		return
	}
	links2, _, err := wheels(filepath.Join(dir, "w2"), "kn-big", mb)
	if err != nil {
		return
	}
	links3, _, err := wheels(filepath.Join(dir, "w3"), "kn-big", mb)
	if err != nil {
		return
	}
	repo, _ := name.NewRepository(host+"/raw", name.Insecure)
	t := time.Now()
	if err = remote.WriteLayer(repo, static.NewLayer(blob1, types.DockerUncompressedLayer)); err != nil {
		return
	}
	raw = time.Since(t)

	build := func(links, key string, spec ...string) (time.Duration, error) {
		req := "kn-big==1.0"
		if len(spec) > 0 {
			req = "kn-big" + spec[0]
		}
		tag, _ := name.NewTag(host+"/kinetic-env:"+strings.Repeat(key, 64), name.Insecure)
		e := &image.Ensurer{Builder: &image.Daemonless{CacheDir: cache}}
		t := time.Now()
		_, err := e.Ensure(ctx, &image.BuildRequest{Base: base, Target: tag,
			Requirements: []string{"--no-index", "--find-links " + links, req}})
		return time.Since(t), err
	}
	if cold1, err = build(links1, "a"); err != nil {
		return
	}
	if cold2, err = build(links2, "b"); err != nil {
		return
	}
	if warm, err = build(links1, "a"); err != nil {
		return
	}
	pip, err = build(links3, "c", ">=1.0")
	return
}

// wheels writes one wheel of mb MB of random data files (stored) and returns its
// directory and the wheel's bytes.
func wheels(dir, project string, mb int) (string, []byte, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, err
	}
	files := map[string][]byte{"kn_big/__init__.py": []byte("X = 1\n")}
	for i := 0; i < mb; i++ {
		b := make([]byte, 1<<20)
		rand.Read(b)
		files[fmt.Sprintf("kn_big/data/%03d.bin", i)] = b
	}
	p, err := imagetest.Wheel(dir, project, "1.0", files)
	if err != nil {
		return "", nil, err
	}
	b, err := os.ReadFile(p)
	return dir, b, err
}

func pushBase(host string) (name.Reference, error) {
	files := map[string][]byte{"etc/os-release": []byte("ID=bench\n")}
	if b, err := os.ReadFile("/bin/busybox"); err == nil {
		files["bin/busybox"] = b
	}
	l, err := imagetest.LayerFromFiles(files)
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		return nil, err
	}
	cf, _ := img.ConfigFile()
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config.Env = []string{"PATH=/usr/bin:/bin", "PYTHON_VERSION=3.11.2"}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return nil, err
	}
	ref, _ := name.NewTag(host+"/base:1", name.Insecure)
	return ref, remote.Write(ref, img)
}

func startRegistry(dir string) (string, func(), error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	addr := l.Addr().String()
	l.Close()
	conf := filepath.Join(dir, "registry.yml")
	os.WriteFile(conf, []byte(fmt.Sprintf("version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: %s\n", filepath.Join(dir, "registry"), addr)), 0o644)
	cmd := exec.Command("docker-registry", "serve", conf)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("docker-registry (apt-get install docker-registry): %w", err)
	}
	stop := func() { cmd.Process.Kill(); cmd.Wait() }
	for i := 0; i < 200; i++ {
		if resp, err := http.Get("http://" + addr + "/v2/"); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return addr, stop, nil
		}
		time.Sleep(25 * time.Millisecond)
	}
	stop()
	return "", nil, fmt.Errorf("docker-registry did not start: %s", out.String())
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
func minD(ds []time.Duration) time.Duration { s := median2(ds); return s[0] }
func maxD(ds []time.Duration) time.Duration { s := median2(ds); return s[len(s)-1] }
func median2(ds []time.Duration) []time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s
}
func fmtD(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%.0f ms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

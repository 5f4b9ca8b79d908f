package image

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kinetic-run/kinetic/testkit/imagetest"
	"github.com/kinetic-run/kinetic/testkit/tier"
)

var py311 = Target{Python: "3.11", Arch: "amd64", Glibc: "2.36"}

func TestCompatible(t *testing.T) {
	for _, tc := range []struct {
		tags string
		want bool
	}{
		{"py3-none-any", true},
		{"py2.py3-none-any", true},
		{"py311-none-any", true},
		{"py312-none-any", false},
		{"cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64", true},
		{"cp311-cp311-manylinux_2_38_x86_64", false},
		{"cp310-abi3-manylinux_2_28_x86_64", true},
		{"cp312-abi3-manylinux_2_28_x86_64", false},
		{"cp312-cp312-manylinux_2_17_x86_64", false},
		{"cp311-cp311-musllinux_1_1_x86_64", false},
		{"cp311-cp311-manylinux_2_17_aarch64", false},
		{"cp311-cp311-win_amd64", false},
	} {
		p := strings.Split(tc.tags, "-")
		if got := compatible(py311, p[0], p[1], p[2]); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.tags, got, tc.want)
		}
	}
}

func TestSatisfies(t *testing.T) {
	for _, tc := range []struct {
		v, spec string
		want    bool
	}{
		{"1.2", "", true}, {"1.2", ">=1.0", true}, {"1.2", ">=1.0,<2", true}, {"2.0", ">=1.0,<2", false},
		{"1.2.0", "==1.2", true}, {"1.2", "!=1.2", false}, {"3.11", ">=3.8", true}, {"3.11", "<3.9", false},
		{"1.2rc1", ">=1", false}, {"1.2", "~=1.1", false}, {"1.2", "==1.*", false},
	} {
		if got := satisfies(tc.v, tc.spec); got != tc.want {
			t.Errorf("satisfies(%q, %q) = %v, want %v", tc.v, tc.spec, got, tc.want)
		}
	}
}

func wheelsWith(t *testing.T, specs map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for nv, meta := range specs {
		n, v, _ := strings.Cut(nv, "==")
		mod := strings.ReplaceAll(n, "-", "_")
		if _, err := imagetest.WheelWithMetadata(dir, n, v, meta, map[string][]byte{mod + "/__init__.py": []byte("V = '" + v + "'\n"), mod + "/data/blob.bin": []byte(strings.Repeat("x", 1000))}); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestPinnedLocalWheelsDecides(t *testing.T) {
	dir := wheelsWith(t, map[string]string{
		"kn-app==1.0": "Requires-Dist: kn-lib (>=1.0)\nRequires-Dist: kn-test ; extra == 'test'\nRequires-Python: >=3.8\n",
		"kn-lib==1.5": "",
		"kn-win==1.0": "Requires-Dist: pywin32 ; sys_platform == 'win32'\n",
		"kn-new==1.0": "Requires-Python: >=3.12\n",
		"kn-old==1.0": "Requires-Dist: kn-lib<1.2\n",
	})
	fl := "--find-links " + dir
	for _, tc := range []struct {
		name  string
		lines []string
		cons  []string
		want  []string // chosen projects; nil = pip decides
	}{
		{"closed pinned set", []string{"--no-index", fl, "kn-app==1.0", "kn-lib==1.5"}, nil, []string{"kn-app", "kn-lib"}},
		{"dependency not pinned", []string{"--no-index", fl, "kn-app==1.0"}, nil, nil},
		{"unpinned", []string{"--no-index", fl, "kn-lib>=1.0"}, nil, nil},
		{"index allowed", []string{fl, "kn-lib==1.5"}, nil, nil},
		{"constraints", []string{"--no-index", fl, "kn-lib==1.5"}, []string{"kn-lib<2"}, nil},
		{"platform marker", []string{"--no-index", fl, "kn-win==1.0"}, nil, nil},
		{"requires newer python", []string{"--no-index", fl, "kn-new==1.0"}, nil, nil},
		{"dependency specifier unmet", []string{"--no-index", fl, "kn-old==1.0", "kn-lib==1.5"}, nil, nil},
		{"no such wheel", []string{"--no-index", fl, "kn-lib==9.9"}, nil, nil},
		{"extras", []string{"--no-index", fl, "kn-app[test]==1.0", "kn-lib==1.5"}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws, err := pinnedLocalWheels(tc.lines, tc.cons, py311)
			if tc.want == nil {
				if !errors.Is(err, errNotSimple) {
					t.Fatalf("got %v, %v; want pip to decide", ws, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range ws {
				got = append(got, w.project)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatal(diff)
			}
		})
	}
}

// TestWheelLayoutMatchesPip builds the same requirements three ways — straight from a
// closed pinned set (no pip), from the wheels pip download chose, and with pip install
// --target — and checks the requirements layers hold the same files. The wheels have
// a dependency, a console script, a .data/scripts script and .data/data.
func TestWheelLayoutMatchesPip(t *testing.T) {
	tier.Heavy(t, "installs with pip")
	reg := imagetest.StartRegistry(t)
	base := imagetest.Push(t, imagetest.TinyBase(t), reg.Host+"/tiny:base")
	dir := wheelsWith(t, map[string]string{"kn-app==1.0": "Requires-Dist: kn-lib>=1.0\n", "kn-lib==1.5": ""})
	if _, err := imagetest.Wheel(dir, "kn-tool", "2.0", map[string][]byte{
		"kn_tool/__init__.py":                    []byte("def main():\n    print('tool')\n"),
		"kn_tool-2.0.dist-info/entry_points.txt": []byte("[console_scripts]\nkn-tool = kn_tool:main\n"),
		"kn_tool-2.0.data/scripts/kn-raw":        []byte("#!python\nprint('raw')\n"),
		"kn_tool-2.0.data/data/share/kn/x.txt":   []byte("x\n"),
	}); err != nil {
		t.Fatal(err)
	}
	build := func(b *Daemonless, lines []string, key string) (map[string]int64, map[string]string, string) {
		tag, _ := name.NewTag(reg.Host+"/kinetic-env:"+strings.Repeat(key, 64), name.Insecure)
		var progress strings.Builder
		r, err := (&Ensurer{Builder: b}).Ensure(context.Background(), &BuildRequest{Base: base, Target: tag, Requirements: lines, Progress: &progress})
		if err != nil {
			t.Fatal(err)
		}
		img, err := remote.Image(r.Ref)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int64{}
		for f, m := range imageFiles(t, img) {
			if strings.HasPrefix(f, "kinetic/site-packages/") && !strings.HasSuffix(f, "/") {
				out[f] = m
			}
		}
		return out, fileContents(t, img, "kinetic/site-packages/bin/"), progress.String()
	}
	fl := "--find-links " + dir
	fast, fastBin, p1 := build(&Daemonless{}, []string{"--no-index", fl, "kn-app==1.0", "kn-lib==1.5", "kn-tool==2.0"}, "6")
	down, _, p2 := build(&Daemonless{}, []string{"--no-index", fl, "kn-app==1.0", "kn-lib>=1.5", "kn-tool==2.0"}, "7")
	pip, pipBin, p3 := build(&Daemonless{PipInstall: true}, []string{"--no-index", fl, "kn-app==1.0", "kn-lib>=1.5", "kn-tool==2.0"}, "9")
	if !strings.Contains(p1, "layering 3 pinned local wheels") || !strings.Contains(p2, "resolving") || strings.Contains(p2, "installing") || !strings.Contains(p3, "installing") {
		t.Fatalf("paths not taken as expected:\n%s\n%s\n%s", p1, p2, p3)
	}
	keys := func(m map[string]int64) []string {
		var ks []string
		for k := range m {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		return ks
	}
	if diff := cmp.Diff(keys(pip), keys(fast)); diff != "" {
		t.Errorf("files (-pip install +pinned):\n%s", diff)
	}
	if diff := cmp.Diff(keys(pip), keys(down)); diff != "" {
		t.Errorf("files (-pip install +pip download):\n%s", diff)
	}
	for _, f := range []string{"kinetic/site-packages/bin/kn-tool", "kinetic/site-packages/bin/kn-raw", "kinetic/site-packages/share/kn/x.txt"} {
		if _, ok := fast[f]; !ok {
			t.Errorf("no %s in %v", f, keys(fast))
		}
	}
	for _, n := range []string{"kn-tool", "kn-raw"} {
		if got := fastBin[n]; !strings.HasPrefix(got, "#!/usr/bin/env python3\n") {
			t.Errorf("bin/%s starts %q (pip --target wrote %q)", n, firstLine(got), firstLine(pipBin[n]))
		}
		if fast["kinetic/site-packages/bin/"+n]&0o111 == 0 {
			t.Errorf("bin/%s is not executable", n)
		}
	}
	if !strings.Contains(fastBin["kn-tool"], "from kn_tool import main") || !strings.Contains(fastBin["kn-raw"], "print('raw')") {
		t.Errorf("scripts: %q", fastBin)
	}
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }

// fileContents returns the files of img under prefix (base names → contents).
func fileContents(t *testing.T, img v1.Image, prefix string) map[string]string {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	out := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.TrimPrefix(h.Name, "/"); strings.HasPrefix(n, prefix) && h.Typeflag == tar.TypeReg {
			b, _ := io.ReadAll(tr)
			out[strings.TrimPrefix(n, prefix)] = string(b)
		}
	}
}

// Package archstats measures the numbers docs/architecture.md quotes about the code's
// shape: lines of Go (without tests) per package, how many packages a package links
// (`go list -deps`, the standard library included), and the sizes of the two binaries.
// `go run ./testkit/archstats/cmd/archstats` prints them as the doc's table (and -w
// rewrites the table in the doc); TestDocNumbers fails when the doc's numbers drift from
// what Measure computes.
package archstats

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// Module is this module's path.
const Module = "github.com/kinetic-run/kinetic"

// LinePackages are the packages whose size the doc quotes (lines of Go without tests,
// the package's own directory only).
var LinePackages = []string{
	"engine", "batch", "batch/layout", "server", "cli", "config", "backend",
	"backend/local", "backend/kubernetes", "store", "runner", "jobview", "job", "image",
	"infra", "dashboard",
}

// DepPackages are the packages whose dependency counts the doc quotes.
var DepPackages = []string{"cmd/kinetic", "cmd/kinetic-runner", "engine", "backend", "store", "job", "backend/backendtest"}

// Binaries are the two binaries and their build flags: the CLI as `make build` builds
// it, stripped; the runner as image.RunnerBuildFlags (and `make runner`) build it.
var Binaries = []struct {
	Name, Pkg string
	Flags     []string
}{
	{"kinetic", "cmd/kinetic", []string{"-trimpath", "-ldflags=-s -w"}},
	{"kinetic-runner", "cmd/kinetic-runner", []string{"-trimpath", "-tags=disable_grpc_modules", "-ldflags=-s -w"}},
}

// Stat is one measured number: its row in the doc's table, e.g. "lines engine",
// "deps cmd/kinetic", "size kinetic (MB)".
type Stat struct {
	Name  string
	Value float64
}

// Tolerance is how far (a fraction) the doc may be from a measure before the test
// fails: lines and dependency counts move a little with every change, so the doc is
// re-measured when they have moved by more; binary sizes vary with the toolchain.
func Tolerance(name string) float64 {
	switch {
	case strings.HasPrefix(name, "size "):
		return 0.10
	case strings.HasPrefix(name, "lines "):
		return 0.05
	default:
		return 0.02
	}
}

// Measure computes the line and dependency numbers of the module at dir (go list only:
// cheap enough for a test); with binaries, it also builds the two binaries into a
// temporary directory and measures them.
func Measure(dir string, binaries bool) ([]Stat, error) {
	var out []Stat
	n, err := lines(dir, LinePackages)
	if err != nil {
		return nil, err
	}
	for _, p := range LinePackages {
		out = append(out, Stat{"lines " + p, float64(n[p])})
	}
	d, err := deps(dir, DepPackages)
	if err != nil {
		return nil, err
	}
	for _, p := range DepPackages {
		out = append(out, Stat{"deps " + p, float64(d[p])})
	}
	// go test caches a pass by the files the test read: the module's requirements too.
	os.Stat(filepath.Join(dir, "go.mod"))
	os.Stat(filepath.Join(dir, "go.sum"))
	if binaries {
		tmp, err := os.MkdirTemp("", "archstats-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		for _, b := range Binaries {
			bin := filepath.Join(tmp, b.Name)
			args := append(append([]string{"build"}, b.Flags...), "-o", bin, "./"+b.Pkg)
			if o, err := goCmd(dir, args...); err != nil {
				return nil, fmt.Errorf("build %s: %w\n%s", b.Pkg, err, o)
			}
			fi, err := os.Stat(bin)
			if err != nil {
				return nil, err
			}
			out = append(out, Stat{"size " + b.Name + " (MB)", float64(fi.Size()) / 1e6})
		}
	}
	return out, nil
}

func goCmd(dir string, args ...string) ([]byte, error) {
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		gobin = "go"
	}
	cmd := exec.Command(gobin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=") // the same count under make's GOFLAGS (its build tag drops packages)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return stderr.Bytes(), err
	}
	return out, nil
}

// lines counts the lines of each package's Go files, tests excluded (one go list).
func lines(dir string, pkgs []string) (map[string]int, error) {
	out, err := goCmd(dir, append([]string{"list", "-json=ImportPath,Dir,GoFiles"}, dotted(pkgs)...)...)
	if err != nil {
		return nil, fmt.Errorf("go list: %w\n%s", err, out)
	}
	n := map[string]int{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p struct {
			ImportPath, Dir string
			GoFiles         []string
		}
		if err := dec.Decode(&p); err != nil {
			return nil, err
		}
		rel := strings.TrimPrefix(p.ImportPath, Module+"/")
		for _, f := range p.GoFiles {
			b, err := os.ReadFile(filepath.Join(p.Dir, f))
			if err != nil {
				return nil, err
			}
			n[rel] += bytes.Count(b, []byte("\n"))
		}
	}
	return n, nil
}

// deps counts the packages each of pkgs links, itself and the standard library
// included: one go list -deps over all of them, closed per package here.
func deps(dir string, pkgs []string) (map[string]int, error) {
	out, err := goCmd(dir, append([]string{"list", "-deps", "-json=ImportPath,Imports,Dir,GoFiles"}, dotted(pkgs)...)...)
	if err != nil {
		return nil, fmt.Errorf("go list -deps: %w\n%s", err, out)
	}
	imports := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p struct {
			ImportPath, Dir  string
			Imports, GoFiles []string
		}
		if err := dec.Decode(&p); err != nil {
			return nil, err
		}
		imports[p.ImportPath] = p.Imports
		if strings.HasPrefix(p.ImportPath, Module) {
			// For go test's cache: the files whose imports make the counts.
			for _, f := range p.GoFiles {
				os.Stat(filepath.Join(p.Dir, f))
			}
		}
	}
	n := map[string]int{}
	for _, p := range pkgs {
		seen := map[string]bool{}
		var walk func(string)
		walk = func(q string) {
			if seen[q] {
				return
			}
			seen[q] = true
			for _, i := range imports[q] {
				walk(i)
			}
		}
		walk(Module + "/" + p)
		n[p] = len(seen)
	}
	return n, nil
}

func dotted(pkgs []string) []string {
	out := make([]string, len(pkgs))
	for i, p := range pkgs {
		out[i] = "./" + p
	}
	return out
}

// The doc's table sits between these two lines.
const (
	BeginMarker = "<!-- archstats: generated by `go run ./testkit/archstats/cmd/archstats -w`; TestDocNumbers checks it -->"
	EndMarker   = "<!-- /archstats -->"
)

// Table renders stats as the doc's Markdown table.
func Table(stats []Stat) string {
	var b strings.Builder
	b.WriteString("| measure | value |\n|---|---|\n")
	for _, s := range stats {
		v := strconv.FormatFloat(s.Value, 'f', -1, 64)
		if strings.HasPrefix(s.Name, "size ") {
			v = strconv.FormatFloat(s.Value, 'f', 1, 64)
		}
		fmt.Fprintf(&b, "| %s | %s |\n", s.Name, v)
	}
	return b.String()
}

var row = regexp.MustCompile(`^\| ([a-z].*?) \| ([0-9.]+) \|$`)

// Parse reads the doc's table: the rows between the markers.
func Parse(r io.Reader) ([]Stat, error) {
	var out []Stat
	in := false
	found := false
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		switch {
		case l == BeginMarker:
			in, found = true, true
		case l == EndMarker:
			in = false
		case in:
			if m := row.FindStringSubmatch(l); m != nil {
				v, err := strconv.ParseFloat(m[2], 64)
				if err != nil {
					return nil, fmt.Errorf("row %q: %w", l, err)
				}
				out = append(out, Stat{m[1], v})
			}
		}
	}
	if !found {
		return nil, fmt.Errorf("no table between %q and %q", BeginMarker, EndMarker)
	}
	return out, sc.Err()
}

// Replace returns doc with the table between the markers replaced by stats' table.
func Replace(doc string, stats []Stat) (string, error) {
	i := strings.Index(doc, BeginMarker)
	j := strings.Index(doc, EndMarker)
	if i < 0 || j < i {
		return "", fmt.Errorf("no table between %q and %q", BeginMarker, EndMarker)
	}
	return doc[:i+len(BeginMarker)] + "\n" + Table(stats) + doc[j:], nil
}

// Drift compares the doc's numbers with measured ones: a measured number the doc
// lacks, or one the doc quotes further off than Tolerance allows. Doc rows that were
// not measured (binary sizes, in a test) are not checked.
func Drift(doc, measured []Stat) []string {
	var bad []string
	for _, m := range measured {
		k := slices.IndexFunc(doc, func(d Stat) bool { return d.Name == m.Name })
		if k < 0 {
			bad = append(bad, fmt.Sprintf("%s: measured %v, missing from the doc", m.Name, m.Value))
			continue
		}
		d := doc[k].Value
		if tol := Tolerance(m.Name); d < m.Value*(1-tol) || d > m.Value*(1+tol) {
			bad = append(bad, fmt.Sprintf("%s: the doc says %v, measured %v (more than %.0f%% off)", m.Name, d, m.Value, tol*100))
		}
	}
	return bad
}

// Package importrules checks the module's import rules (docs/architecture.md, "Import
// rules"): which packages a package may link, written as data and checked by
// TestImportRules against the graph `go list -deps -json` reports, in the manner of
// go-cloud's dependency allowlist test. A violation names the import chain that brings
// the forbidden package in, so the fix starts at the right edge.
package importrules

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// Module is this module's path.
const Module = "github.com/kinetic-run/kinetic"

// Graph is an import graph: each package's direct imports, and which packages are the
// standard library's.
type Graph struct {
	Imports  map[string][]string
	Standard map[string]bool
}

// Rule is one import rule: Pkg may link (directly or not) no package that Forbid
// matches.
type Rule struct {
	Pkg    string
	Why    string
	Forbid Matcher
	// Exception, when set, says why the rule does not hold yet and where that is
	// tracked: a violation is reported as known instead of failing, and a rule that
	// holds again must lose its exception.
	Exception string
}

// Matcher says whether a package (with the graph, to know the standard library) is
// forbidden, and describes what it forbids.
type Matcher struct {
	Desc  string
	Match func(g *Graph, pkg string) bool
}

// Under matches each of paths and the packages below it ("k8s.io/client-go" matches
// k8s.io/client-go/kubernetes).
func Under(paths ...string) Matcher {
	return Matcher{
		Desc: strings.Join(paths, ", ") + " (and below)",
		Match: func(_ *Graph, pkg string) bool {
			for _, p := range paths {
				if pkg == p || strings.HasPrefix(pkg, p+"/") {
					return true
				}
			}
			return false
		},
	}
}

// Packages matches each of paths alone, not the packages below it: "batch" forbids the
// orchestration and leaves batch/driver and batch/layout, which sit below it, allowed.
func Packages(paths ...string) Matcher {
	return Matcher{
		Desc:  strings.Join(paths, ", "),
		Match: func(_ *Graph, pkg string) bool { return slices.Contains(paths, pkg) },
	}
}

// Or matches what m or o matches.
func (m Matcher) Or(o Matcher) Matcher {
	return Matcher{
		Desc:  m.Desc + "; " + o.Desc,
		Match: func(g *Graph, pkg string) bool { return m.Match(g, pkg) || o.Match(g, pkg) },
	}
}

// Outside forbids every package that is neither the standard library's nor under one of
// paths (paths themselves included): a leaf that may link these and nothing else.
func Outside(paths ...string) Matcher {
	under := Under(paths...)
	return Matcher{
		Desc:  "anything but the standard library and " + under.Desc,
		Match: func(g *Graph, pkg string) bool { return !g.Standard[pkg] && !under.Match(g, pkg) },
	}
}

// NotStandard matches every package outside the standard library: the rule of a leaf.
func NotStandard() Matcher {
	return Matcher{
		Desc:  "anything but the standard library",
		Match: func(g *Graph, pkg string) bool { return !g.Standard[pkg] },
	}
}

// Violation is a rule broken: the chain of imports from the rule's package to a
// forbidden one.
type Violation struct {
	Rule  Rule
	Chain []string
}

func (v Violation) Error() string {
	return fmt.Sprintf("%s must not link %s (%s); it does: %s",
		short(v.Rule.Pkg), v.Rule.Forbid.Desc, v.Rule.Why, strings.Join(mapSlice(v.Chain, short), " -> "))
}

// Check returns the first violation of r in g (the shortest chain to the first
// forbidden package met, breadth first over sorted imports), or nil. It is an error for
// r.Pkg to be missing from g.
func Check(g *Graph, r Rule) (*Violation, error) {
	if _, ok := g.Imports[r.Pkg]; !ok {
		return nil, fmt.Errorf("package %s is not in the import graph", r.Pkg)
	}
	parent := map[string]string{r.Pkg: ""}
	queue := []string{r.Pkg}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		imports := slices.Clone(g.Imports[p])
		slices.Sort(imports)
		for _, q := range imports {
			if _, seen := parent[q]; seen {
				continue
			}
			parent[q] = p
			if r.Forbid.Match(g, q) {
				var chain []string
				for at := q; at != ""; at = parent[at] {
					chain = append(chain, at)
				}
				slices.Reverse(chain)
				return &Violation{Rule: r, Chain: chain}, nil
			}
			queue = append(queue, q)
		}
	}
	return nil, nil
}

// Load runs `go list -deps -json` (CGO_ENABLED=0, as the binaries are built) on pkgs in
// the module at dir and returns their graph.
func Load(dir string, pkgs ...string) (*Graph, error) {
	goCmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goCmd); err != nil {
		if goCmd, err = exec.LookPath("go"); err != nil {
			return nil, fmt.Errorf("no go command: %w", err)
		}
	}
	cmd := exec.Command(goCmd, append([]string{"list", "-deps", "-json=ImportPath,Imports,Standard,Module,Dir,GoFiles"}, pkgs...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w\n%s", err, stderr.String())
	}
	g, files, err := decode(bytes.NewReader(out))
	if err != nil {
		return nil, err
	}
	// go test caches a passing result by the files the test looked at, and it does not
	// see what the go list child read: stat the module's source files (and their
	// directories, for files added) here, so that an edit that breaks a rule is not
	// answered by a cached pass.
	for _, f := range append(files, filepath.Join(dir, "go.mod")) {
		os.Stat(f)
	}
	return g, nil
}

// decode reads go list's output: the graph, and the directories and source files of
// this module's packages.
func decode(r io.Reader) (*Graph, []string, error) {
	g := &Graph{Imports: map[string][]string{}, Standard: map[string]bool{}}
	var files []string
	dec := json.NewDecoder(r)
	for {
		var p struct {
			ImportPath string
			Imports    []string
			Standard   bool
			Module     *struct{ Path string }
			Dir        string
			GoFiles    []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			return g, files, nil
		} else if err != nil {
			return nil, nil, fmt.Errorf("go list output: %w", err)
		}
		g.Imports[p.ImportPath] = p.Imports
		if p.Standard {
			g.Standard[p.ImportPath] = true
		}
		if p.Module != nil && p.Module.Path == Module {
			files = append(files, p.Dir)
			for _, f := range p.GoFiles {
				files = append(files, filepath.Join(p.Dir, f))
			}
		}
	}
}

// short is pkg without the module's prefix.
func short(pkg string) string {
	if s, ok := strings.CutPrefix(pkg, Module+"/"); ok {
		return s
	}
	return pkg
}

func mapSlice(xs []string, f func(string) string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

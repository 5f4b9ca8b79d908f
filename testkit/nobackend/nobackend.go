// Package nobackend checks that the packages above the backends name none (issue 48):
// cli, config, job and engine reach backends through registries (backend, provision,
// config's declarations), and cmd/kinetic links the backends in with blank imports.
package nobackend

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Module is this module's import path.
const Module = "github.com/kinetic-run/kinetic"

// Names are the backend names no such package may spell as a string.
var Names = []string{"gke", "k8s", "kubernetes", "pathways", "slurm", "local"}

// Packages are the backends' packages (and below) no such package may import.
var Packages = []string{Module + "/backend/kubernetes", Module + "/backend/local", Module + "/backend/slurm", Module + "/infra/gke"}

// Finding is one place a file names a backend.
type Finding struct {
	Pos  token.Position
	What string
}

func (f Finding) String() string { return fmt.Sprintf("%s: %s", f.Pos, f.What) }

// CheckFile returns where the Go source src (named name) imports a backend's package or
// spells a backend's name as a string literal.
func CheckFile(fset *token.FileSet, name string, src []byte) ([]Finding, error) {
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var out []Finding
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		if slices.ContainsFunc(Packages, func(b string) bool { return p == b || strings.HasPrefix(p, b+"/") }) {
			out = append(out, Finding{fset.Position(im.Pos()), "imports " + p})
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		if _, ok := n.(*ast.ImportSpec); ok {
			return false
		}
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		if v, err := strconv.Unquote(lit.Value); err == nil && slices.Contains(Names, v) {
			out = append(out, Finding{fset.Position(lit.Pos()), "names backend " + lit.Value})
		}
		return true
	})
	return out, nil
}

// CheckDirs checks every non-test Go file under the module root's dirs.
func CheckDirs(root string, dirs ...string) ([]Finding, error) {
	fset := token.NewFileSet()
	var out []Finding
	for _, d := range dirs {
		err := filepath.WalkDir(filepath.Join(root, d), func(path string, e os.DirEntry, err error) error {
			if err != nil || e.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			fs, err := CheckFile(fset, rel, src)
			out = append(out, fs...)
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Mentions returns where the non-test Go files of the module at root, outside the
// backend package dir (say "backend/slurm") and testkit (the tests' own kits), import that package or spell word in a
// string literal (case-insensitive, as a part: "slurm_partition"): the product code that
// knows the backend other than through its registries. Comments are not code.
func Mentions(root, dir, word string) ([]Finding, error) {
	fset := token.NewFileSet()
	pkg := Module + "/" + dir
	word = strings.ToLower(word)
	var out []Finding
	err := filepath.WalkDir(root, func(path string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if e.IsDir() {
			if rel == dir || rel == "testkit" || (rel != "." && strings.HasPrefix(e.Name(), ".")) || e.Name() == "testdata" || e.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, rel, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			v, _ := strconv.Unquote(lit.Value)
			if v == pkg || strings.HasPrefix(v, pkg+"/") {
				out = append(out, Finding{fset.Position(lit.Pos()), "imports " + v})
			} else if strings.Contains(strings.ToLower(v), word) {
				out = append(out, Finding{fset.Position(lit.Pos()), "names " + lit.Value})
			}
			return true
		})
		return nil
	})
	return out, err
}

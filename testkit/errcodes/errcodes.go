// Package errcodes checks that every exported Err… variable of the module's product
// code is made with an errs code (errs.New, errs.Wrap, errs.Errorf) or is another such
// variable, so that no sentinel reaches the protocol's edge as Internal by default
// (issue 48). A few leaves that may link only the standard library (TestImportRules)
// are Exempt, each with its reason.
package errcodes

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
)

// Exempt are the variables (package directory, relative to the module, and name) that
// cannot carry a code, and why.
var Exempt = map[string]string{
	"job.ErrDamaged":                "job links the standard library only (TestImportRules): no errs",
	"job.ErrTombstoneDamaged":       "job links the standard library only (TestImportRules): no errs",
	"batch/driver.ErrUnsupported":   "batch/driver links job only (TestImportRules): no errs",
	"internal/atomicfile.ErrExists": "it is fs.ErrExist itself, so that errors.Is(err, fs.ErrExist) holds for what the OS returns",
}

// Finding is one exported Err… variable made without a code.
type Finding struct {
	Pos  string // file:line
	Name string // dir.Name
	Expr string // how it is made
}

func (f Finding) String() string {
	return fmt.Sprintf("%s: %s = %s is made without an errs code", f.Pos, f.Name, f.Expr)
}

// Check parses the non-test Go files under root (the module) and returns the exported
// Err… variables made without a code, not Exempt. Test harnesses (testkit), the
// examples and testdata are not product code.
func Check(root string) ([]Finding, error) {
	var out []Finding
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if skipDir(rel, d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		fs, err := CheckFile(p, filepath.ToSlash(filepath.Dir(rel)), nil)
		out = append(out, fs...)
		return err
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Pos < out[j].Pos })
	return out, err
}

func skipDir(rel, name string) bool {
	if rel == "." {
		return false
	}
	return strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor" || name == "node_modules" ||
		rel == "testkit" || rel == "examples" || rel == "python" || rel == "bench" || rel == "e2e"
}

// CheckFile checks one file of package directory dir (src: its text, or nil to read
// path).
func CheckFile(path, dir string, src any) ([]Finding, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, 0)
	if err != nil {
		return nil, err
	}
	var out []Finding
	for _, decl := range f.Decls {
		g, ok := decl.(*ast.GenDecl)
		if !ok || g.Tok != token.VAR {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if !strings.HasPrefix(n.Name, "Err") || !n.IsExported() || Exempt[dir+"."+n.Name] != "" {
					continue
				}
				var v ast.Expr
				if i < len(vs.Values) {
					v = vs.Values[i]
				}
				if !coded(v) {
					out = append(out, Finding{Pos: fmt.Sprintf("%s:%d", path, fset.Position(n.Pos()).Line), Name: dir + "." + n.Name, Expr: text(v)})
				}
			}
		}
	}
	return out, nil
}

// coded: a call of errs.New, errs.Wrap or errs.Errorf, or another Err… variable (of
// this package or another of the module's, itself checked).
func coded(v ast.Expr) bool {
	switch e := v.(type) {
	case *ast.CallExpr:
		sel, ok := e.Fun.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		pkg, ok := sel.X.(*ast.Ident)
		return ok && pkg.Name == "errs" && (sel.Sel.Name == "New" || sel.Sel.Name == "Wrap" || sel.Sel.Name == "Errorf")
	case *ast.Ident:
		return strings.HasPrefix(e.Name, "Err")
	case *ast.SelectorExpr:
		pkg, ok := e.X.(*ast.Ident)
		return ok && strings.HasPrefix(e.Sel.Name, "Err") && !stdlib[pkg.Name]
	}
	return false
}

// stdlib are the standard library's packages whose Err… variables have no code.
var stdlib = map[string]bool{"fs": true, "os": true, "io": true, "errors": true, "context": true, "http": true, "exec": true, "sql": true}

func text(v ast.Expr) string {
	switch e := v.(type) {
	case nil:
		return "(no value)"
	case *ast.CallExpr:
		return text(e.Fun) + "(…)"
	case *ast.SelectorExpr:
		return text(e.X) + "." + e.Sel.Name
	case *ast.Ident:
		return e.Name
	}
	return fmt.Sprintf("%T", v)
}

// Uncoded returns the calls of errors.New and fmt.Errorf in the non-test files of dir
// that are not the argument of a call that gives a code (errs.Wrap, or a package's own
// withCode): in a package whose every error must carry a code (engine/plan, whose
// errors are the caller's), each such call is an error that would reach the protocol's
// edge as Internal.
func Uncoded(dir string) ([]Finding, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var out []Finding
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		fs, err := UncodedFile(p, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, fs...)
	}
	return out, nil
}

// UncodedFile is Uncoded of one file (src: its text, or nil to read path).
func UncodedFile(path string, src any) ([]Finding, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, 0)
	if err != nil {
		return nil, err
	}
	var out []Finding
	coding := map[ast.Node]bool{} // the calls that are a coding call's arguments
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		name := text(call.Fun)
		if name == "withCode" || name == "errs.Wrap" {
			for _, a := range call.Args {
				coding[a] = true
			}
		}
		if (name == "errors.New" || name == "fmt.Errorf") && !coding[call] {
			out = append(out, Finding{Pos: fmt.Sprintf("%s:%d", path, fset.Position(call.Pos()).Line), Name: name, Expr: name + "(…)"})
		}
		return true
	})
	return out, nil
}

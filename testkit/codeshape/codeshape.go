// Package codeshape measures two numbers about the shape of the product's code that
// docs/architecture.md promises: the average cyclomatic complexity of its functions
// (gocyclo's count: 1 plus one per if, for, case, && and ||) and the functions longer
// than MaxLines lines. Tests, test-only packages (testkit/ and every package whose name
// ends in "test"), generated files and files built only by `go run` are not product code
// and are not measured. TestShape holds the code to the limits in limits.txt.
package codeshape

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fzipp/gocyclo"
)

// MaxLines is the longest a product function may be, from its func line to its closing
// brace.
const MaxLines = 80

// Func is one measured function.
type Func struct {
	File       string // slash-separated, relative to the module root
	Name       string // Recv.Name for a method
	Lines      int
	Complexity int
}

// Shape is what Measure found.
type Shape struct {
	Funcs []Func
}

// Average is the mean cyclomatic complexity of all measured functions.
func (s Shape) Average() float64 {
	if len(s.Funcs) == 0 {
		return 0
	}
	sum := 0
	for _, f := range s.Funcs {
		sum += f.Complexity
	}
	return float64(sum) / float64(len(s.Funcs))
}

// Long lists the functions over MaxLines lines, longest first.
func (s Shape) Long() []Func {
	var long []Func
	for _, f := range s.Funcs {
		if f.Lines > MaxLines {
			long = append(long, f)
		}
	}
	slices.SortFunc(long, func(a, b Func) int { return b.Lines - a.Lines })
	return long
}

// Measure walks the module rooted at root.
func Measure(root string) (Shape, error) {
	var shape Shape
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if skipDir(rel, d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		funcs, err := measureFile(path, rel)
		shape.Funcs = append(shape.Funcs, funcs...)
		return err
	})
	return shape, err
}

func skipDir(rel, name string) bool {
	if rel == "." {
		return false
	}
	return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") ||
		name == "testdata" || name == "python" || name == "bin" || name == "node_modules" ||
		strings.HasSuffix(name, "test") || rel == "testkit" || rel == "e2e"
}

func measureFile(path, rel string) ([]Func, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	if ast.IsGenerated(f) || buildIgnored(f) {
		return nil, nil
	}
	var out []Func
	for _, decl := range f.Decls {
		fd, ok := decl.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		out = append(out, Func{
			File:       rel,
			Name:       funcName(fd),
			Lines:      fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1,
			Complexity: gocyclo.Complexity(fd),
		})
	}
	return out, nil
}

func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	if st, ok := t.(*ast.StarExpr); ok {
		t = st.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}

// buildIgnored reports a file built only by `go run file.go` (//go:build ignore), such
// as a generator.
func buildIgnored(f *ast.File) bool {
	for _, cg := range f.Comments {
		if cg.Pos() > f.Package {
			break
		}
		for _, c := range cg.List {
			if strings.TrimSpace(c.Text) == "//go:build ignore" {
				return true
			}
		}
	}
	return false
}

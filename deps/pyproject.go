package deps

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// errNoProject: pyproject.toml has no [project] table (tool configuration only).
var errNoProject = errors.New("no [project] table")

// ParsePyprojectFile reads pyproject.toml and parses [project.dependencies].
func ParsePyprojectFile(path string) (*Requirements, error) {
	data, err := readDepFile(path)
	if err != nil {
		return nil, fmt.Errorf("read pyproject: %w", err)
	}
	return ParsePyproject(path, data)
}

// ParsePyproject parses the [project.dependencies] array of a pyproject.toml. Each entry
// is a PEP 508 requirement, parsed like a requirements-file line without options; a
// "# kn:keep" TOML comment on the entry's line keeps it from the JAX filter. When
// "dependencies" is listed in [project.dynamic], the files named by
// [tool.setuptools.dynamic.dependencies] are read as requirements files. A file without
// a [project] table yields an error wrapping errNoProject, which Discover skips.
func ParsePyproject(path string, data []byte) (*Requirements, error) {
	return parsePyprojectWith(readDepFile, path, data)
}

func parsePyprojectWith(read readFunc, path string, data []byte) (*Requirements, error) {
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		fe := &FileError{File: path, Err: wrapf(ErrSyntax, "malformed TOML: %v", err)}
		var de *toml.DecodeError
		if errors.As(err, &de) {
			fe.Line, _ = de.Position()
		}
		return nil, fe
	}
	out := &Requirements{Source: path, Files: []string{path}}
	projAny, ok := doc["project"]
	if !ok {
		return nil, &FileError{File: path, Err: errNoProject}
	}
	proj, ok := projAny.(map[string]any)
	if !ok {
		return nil, &FileError{File: path, Err: wrapf(ErrSyntax, "project must be a table")}
	}
	if dyn, ok := proj["dynamic"].([]any); ok && slices.Contains(dyn, any("dependencies")) {
		return dynamicDeps(read, path, doc, out)
	}
	depsAny, ok := proj["dependencies"]
	if !ok {
		return out, nil
	}
	list, ok := depsAny.([]any)
	if !ok {
		return nil, &FileError{File: path, Err: wrapf(ErrSyntax, "project.dependencies must be an array of strings")}
	}
	keep := keptLiterals(string(data))
	for i, v := range list {
		s, ok := v.(string)
		if !ok {
			return nil, &FileError{File: path, Line: lineOf(string(data), fmt.Sprint(v)),
				Err: wrapf(ErrSyntax, "project.dependencies[%d] must be a string, got %T", i, v)}
		}
		line := lineOf(string(data), s)
		r, err := parsePyprojectDep(s)
		if err != nil {
			return nil, &FileError{File: path, Line: line, Err: err}
		}
		r.File, r.Line, r.Keep = path, line, keep[s]
		out.Entries = append(out.Entries, Entry{Req: &r})
	}
	return out, nil
}

// parsePyprojectDep parses one dependency string and checks that its canonical line
// survives the requirements-file grammar (comments, option splitting, continuation)
// unchanged, since that is how it reaches pip.
func parsePyprojectDep(s string) (Requirement, error) {
	if strings.ContainsAny(s, "\n\r") {
		return Requirement{}, wrapf(ErrSyntax, "dependency %q spans lines", s)
	}
	r, err := parseReqArgPEP508(s)
	if err != nil {
		return Requirement{}, err
	}
	r.Text = strings.TrimSpace(s)
	canon := r.String()
	lls := logicalLines([]byte(canon))
	if len(lls) != 1 || lls[0].text != canon {
		return Requirement{}, wrapf(ErrSyntax, "dependency %q cannot be written to a requirements file (a '#' after a space, or a trailing backslash)", s)
	}
	if args, opts := splitArgsOptions(canon); opts != "" || args != canon {
		return Requirement{}, wrapf(ErrSyntax, "dependency %q contains a word starting with '-' that pip would read as an option", s)
	}
	return r, nil
}

// parseReqArgPEP508 parses a PEP 508 string, refusing local paths like a line would.
func parseReqArgPEP508(s string) (Requirement, error) {
	if looksLocal(s) {
		return Requirement{}, &localPathError{what: strings.TrimSpace(s)}
	}
	return parsePEP508(s)
}

func dynamicDeps(read readFunc, path string, doc map[string]any, out *Requirements) (*Requirements, error) {
	files := dynamicFiles(doc)
	if len(files) == 0 {
		return nil, &FileError{File: path, Err: wrapf(ErrUnsupported, "dependencies are dynamic and not read from a file kinetic can see; list them in requirements.txt")}
	}
	p := &reqParser{read: read, out: out}
	for _, f := range files {
		target := f
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(path), f)
		}
		data, err := read(target)
		if err != nil {
			return nil, &FileError{File: path, Err: wrapf(ErrInclude, "dynamic dependencies file %s: %v", f, err)}
		}
		if err := p.parse(target, data, false); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// dynamicFiles are the files of [tool.setuptools.dynamic] dependencies = {file = ...}:
// one, or a list.
func dynamicFiles(doc map[string]any) []string {
	d := tomlTable(doc, "tool", "setuptools", "dynamic", "dependencies")
	switch f := d["file"].(type) {
	case string:
		return []string{f}
	case []any:
		var files []string
		for _, x := range f {
			if s, ok := x.(string); ok {
				files = append(files, s)
			}
		}
		return files
	}
	return nil
}

// tomlTable is the table at path under doc, nil if there is none.
func tomlTable(doc map[string]any, path ...string) map[string]any {
	t := doc
	for _, k := range path {
		next, ok := t[k].(map[string]any)
		if !ok {
			return nil
		}
		t = next
	}
	return t
}

// lineOf returns the 1-based line of the first quoted occurrence of s in the TOML
// text, or 0.
func lineOf(text, s string) int {
	for _, q := range []string{`"` + s + `"`, `'` + s + `'`, s} {
		if k := strings.Index(text, q); k >= 0 {
			return strings.Count(text[:k], "\n") + 1
		}
	}
	return 0
}

// keptLiterals returns the string literals that appear on a TOML line whose comment
// carries kn:keep. Literals with escapes are compared in their raw form.
func keptLiterals(text string) map[string]bool {
	out := map[string]bool{}
	for _, line := range strings.Split(text, "\n") {
		lits, comment := tomlLineLiterals(line)
		if hasKeep(comment) {
			for _, l := range lits {
				out[l] = true
			}
		}
	}
	return out
}

// tomlLineLiterals scans one TOML line for single-line string literals and the comment.
func tomlLineLiterals(line string) (lits []string, comment string) {
	for i := 0; i < len(line); i++ {
		switch c := line[i]; c {
		case '#':
			return lits, line[i+1:]
		case '"', '\'':
			j := i + 1
			for j < len(line) && line[j] != c {
				if c == '"' && line[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(line) {
				return lits, ""
			}
			lits = append(lits, line[i+1:j])
			i = j
		}
	}
	return lits, ""
}

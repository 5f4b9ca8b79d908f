package cli

import (
	"context"
	"encoding/json"
	"os/exec"
	"regexp"
	"strings"
	"time"

	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/internal/textdist"
)

// kwArg is NAME=VALUE on `kinetic run FILE.py::FUNC`: a keyword argument.
var kwArg = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)=(.*)$`)

// splitArgs splits the ARGS of FILE.py::FUNC into positional and keyword arguments, as
// Python's call syntax does: NAME=VALUE is a keyword argument (VALUE read as the
// positional ones are: a Python literal, else a string), and no positional argument
// may follow one. A positional string holding "=" is written as a Python literal:
// "'a=b'".
func splitArgs(args []string) (pos []string, kw map[string]string, err error) {
	for i, a := range args {
		if m := kwArg.FindStringSubmatch(a); m != nil {
			if kw == nil {
				kw = map[string]string{}
			}
			if _, dup := kw[m[1]]; dup {
				return nil, nil, usageErrorf("argument %d (%s): keyword argument %s given twice", i+1, errs.Quote(a), m[1])
			}
			kw[m[1]] = m[2]
			continue
		}
		if kw != nil {
			return nil, nil, usageErrorf("argument %d (%s) comes after a keyword argument: put the positional ARGS first, then NAME=VALUE (as in Python)", i+1, errs.Quote(a))
		}
		pos = append(pos, a)
	}
	return pos, kw, nil
}

// entryScan lists what a Python file binds at its top level (functions, classes with
// their methods, assignments, imports), without importing it: ast.parse only. "dynamic"
// says the file may bind names no scan sees (a star import, globals(), __getattr__); a
// file that does not parse here (another Python's syntax) is not judged.
const entryScan = `
import ast, json, sys
try:
    tree = ast.parse(open(sys.argv[1], "rb").read(), sys.argv[1])
except Exception:
    print(json.dumps({"unparsed": True})); sys.exit(0)
names, defs, classes, dynamic = set(), set(), {}, False
def targets(t):
    if isinstance(t, ast.Name):
        yield t.id
    elif isinstance(t, (ast.Tuple, ast.List)):
        for e in t.elts:
            yield from targets(e)
def scan(body):
    global dynamic
    for n in body:
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(n.name)
            defs.add(n.name)
            if n.name == "__getattr__":
                dynamic = True
        elif isinstance(n, ast.ClassDef):
            names.add(n.name)
            defs.add(n.name)
            members = set()
            for m in n.body:
                if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    members.add(m.name)
                elif isinstance(m, ast.Assign):
                    for t in m.targets:
                        members.update(targets(t))
                elif isinstance(m, (ast.AnnAssign, ast.AugAssign)):
                    members.update(targets(m.target))
            classes[n.name] = {"members": sorted(members), "bases": bool(n.bases or n.keywords or n.decorator_list)}
        elif isinstance(n, ast.Assign):
            for t in n.targets:
                names.update(targets(t))
        elif isinstance(n, (ast.AnnAssign, ast.AugAssign)):
            names.update(targets(n.target))
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            for a in n.names:
                if a.name == "*":
                    dynamic = True
                names.add((a.asname or a.name).split(".")[0])
        elif isinstance(n, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
            for part in ("body", "orelse", "finalbody"):
                scan(getattr(n, part, []) or [])
            for h in getattr(n, "handlers", []) or []:
                scan(h.body)
            if isinstance(n, ast.For):
                names.update(targets(n.target))
        elif isinstance(n, (ast.FunctionDef,)):
            pass
    for n in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("globals", "setattr", "exec", "vars"):
            dynamic = True
scan(tree.body)
print(json.dumps({"names": sorted(names), "defs": sorted(defs), "classes": classes, "dynamic": dynamic}))
`

// checkEntry refuses FILE.py::FUNC when FUNC is surely not in FILE (its top level as
// Python's ast reads it, with python), naming the closest names: a typo found here costs
// nothing, found in the job it costs a submission (a pod, on a cluster). Anything this
// cannot judge (no interpreter, a file that does not parse here, names bound at run
// time) is left to the job.
func checkEntry(ctx context.Context, python, file, fn string) error {
	if python == "" {
		p, err := exec.LookPath("python3")
		if err != nil {
			return nil
		}
		python = p
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	// -I -S: no user site, no site module: the standard library alone, started fast.
	out, err := exec.CommandContext(ctx, python, "-I", "-S", "-c", entryScan, file).Output()
	if err != nil {
		return nil
	}
	var scan struct {
		Unparsed bool     `json:"unparsed"`
		Names    []string `json:"names"`
		Defs     []string `json:"defs"`
		Classes  map[string]struct {
			Members []string `json:"members"`
			Bases   bool     `json:"bases"`
		} `json:"classes"`
		Dynamic bool `json:"dynamic"`
	}
	if json.Unmarshal(out, &scan) != nil || scan.Unparsed || scan.Dynamic {
		return nil
	}
	head, rest, dotted := strings.Cut(fn, ".")
	if !contains(scan.Names, head) {
		return usageErrorf("%s has no function '%s'%s", file, head, suggestNames(head, functionNames(scan.Defs)))
	}
	if !dotted {
		return nil
	}
	c, ok := scan.Classes[head]
	if !ok || c.Bases { // not a class here (a module, an instance), or members may be inherited
		return nil
	}
	member, _, _ := strings.Cut(rest, ".")
	if !contains(c.Members, member) {
		return usageErrorf("%s has no function '%s'%s", file, fn, suggestNames(member, prefixed(head+".", c.Members)))
	}
	return nil
}

func contains(xs []string, x string) bool {
	for _, s := range xs {
		if s == x {
			return true
		}
	}
	return false
}

func functionNames(names []string) []string {
	var out []string
	for _, n := range names {
		if !strings.HasPrefix(n, "_") {
			out = append(out, n)
		}
	}
	return out
}

func prefixed(p string, xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = p + x
	}
	return out
}

// suggestNames is "; did you mean X?" (the closest names by edit distance), else the
// names there are, or "".
func suggestNames(typed string, names []string) string {
	var close []string
	for _, n := range names {
		last := n[strings.LastIndexByte(n, '.')+1:]
		if d := textdist.EditDistance(strings.ToLower(typed), strings.ToLower(last)); d <= max(2, len(typed)/3) && d < len(typed) {
			close = append(close, n)
		}
	}
	switch {
	case len(close) > 0:
		return "; did you mean " + strings.Join(close, " or ") + "?"
	case len(names) > 0 && len(names) <= 12:
		return " (it has " + strings.Join(names, ", ") + ")"
	}
	return ""
}

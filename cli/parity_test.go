package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/testkit/srcroot"
)

// docs/parity.md lists every public name of the Python SDK, every command and flag of the
// CLI and every KINETIC_* variable of the configuration, each in the first cell of a table
// row (as `name` in backquotes) with ours and the test that shows it. These tests fail when
// something public has no row, so a new parameter or flag cannot ship without saying how it
// compares.

// parityRows returns the table rows of docs/parity.md: for each, the backquoted spans of its
// first cell and the whole row.
type parityRow struct {
	spans []string
	text  string
}

func parityRows(t *testing.T) []parityRow {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(srcroot.MustDir(), "docs", "parity.md"))
	if err != nil {
		t.Fatal(err)
	}
	span := regexp.MustCompile("`([^`]+)`")
	var rows []parityRow
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "|---") {
			continue
		}
		// The first cell: up to the first | outside backquotes.
		in, end := false, len(line)
		for i := 1; i < len(line); i++ {
			if line[i] == '`' {
				in = !in
			} else if line[i] == '|' && !in {
				end = i
				break
			}
		}
		r := parityRow{text: line}
		for _, m := range span.FindAllStringSubmatch(line[1:end], -1) {
			r.spans = append(r.spans, m[1])
		}
		rows = append(rows, r)
	}
	return rows
}

// find returns the span and row whose span is name, or name followed by "(" or " ".
func find(rows []parityRow, name string) (string, *parityRow) {
	for i := range rows {
		for _, s := range rows[i].spans {
			if s == name || strings.HasPrefix(s, name+"(") || strings.HasPrefix(s, name+" ") {
				return s, &rows[i]
			}
		}
	}
	return "", nil
}

// sdkNames is what the Python SDK makes public: kinetic.__all__ (modules' public names
// too), the public attributes of its classes, and the parameters of each callable.
const sdkNames = `
import enum, inspect, json, kinetic
out, seen = {}, {}
def params(o):
    try:
        sig = inspect.signature(o)
    except (TypeError, ValueError):
        return []
    return [p.name for p in sig.parameters.values()
            if p.name not in ("self", "cls") and not p.name.startswith("_")
            and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
def add(key, o):
    if id(o) in seen:  # an alias (RemoteFunction, kinetic.job_status.JobStatus): its name only
        out[key] = {"params": [], "alias_of": seen[id(o)]}
        return
    seen[id(o)] = key
    if inspect.isclass(o):
        out[key] = {"params": [] if issubclass(o, (BaseException, enum.Enum)) else params(o)}
        cls = key.split(".")[-1]
        for c in o.__mro__:
            if not c.__module__.startswith("kinetic"):
                continue
            for name, v in vars(c).items():
                if name.startswith("_") or cls + "." + name in out:
                    continue
                f = v.__func__ if isinstance(v, (classmethod, staticmethod)) else v
                out[cls + "." + name] = {"params": params(f) if callable(f) and not isinstance(v, property) else [],
                                         "field_of": key}
    else:
        out[key] = {"params": params(o) if callable(o) else []}
for n in kinetic.__all__:
    o = getattr(kinetic, n)
    if inspect.ismodule(o):
        out["kinetic." + n] = {"params": []}
        for m in dir(o):
            v = getattr(o, m)
            if not m.startswith("_") and getattr(v, "__module__", None) == o.__name__:
                add("kinetic.%s.%s" % (n, m), v)
    else:
        add("kinetic." + n, o)
print(json.dumps(out))
`

type sdkName struct {
	Params  []string `json:"params"`
	FieldOf string   `json:"field_of"`
}

func pythonNames(t *testing.T) map[string]sdkName {
	t.Helper()
	py := os.Getenv("PYTHON")
	if py == "" {
		py = "python3"
	}
	cmd := exec.Command(py, "-c", sdkNames)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join(srcroot.MustDir(), "python"))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("reading the SDK's public names with %s: %v %s", py, err, exitStderr(err))
	}
	var names map[string]sdkName
	if err := json.Unmarshal(out, &names); err != nil {
		t.Fatal(err)
	}
	if len(names) < 40 {
		t.Fatalf("only %d public names read from the SDK: %s", len(names), out)
	}
	return names
}

func exitStderr(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

// wordIn says whether w appears in s as a whole name (not as part of a longer one).
func wordIn(s, w string) bool {
	return regexp.MustCompile(`(^|[^A-Za-z0-9_-])` + regexp.QuoteMeta(w) + `($|[^A-Za-z0-9_-])`).MatchString(s)
}

// TestParityListsEverySDKName: every public name of the SDK has a row whose first cell
// names it (`kinetic.run(...)`, `JobHandle.result(...)`), with every parameter it takes in
// that span. A field of a class is covered by the class's constructor row naming it.
func TestParityListsEverySDKName(t *testing.T) {
	rows := parityRows(t)
	names := pythonNames(t)
	keys := make([]string, 0, len(names))
	for k := range names {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		n := names[k]
		span, row := find(rows, k)
		if row == nil && n.FieldOf != "" {
			// A dataclass field: a parameter of its class's row.
			if cs, crow := find(rows, n.FieldOf); crow != nil && len(n.Params) == 0 && wordIn(cs, k[strings.LastIndex(k, ".")+1:]) {
				continue
			}
		}
		if row == nil {
			t.Errorf("docs/parity.md has no row for the SDK's %s: add one (`%s(...)` in the first cell) saying how it compares", k, k)
			continue
		}
		for _, p := range n.Params {
			if !wordIn(span, p) {
				t.Errorf("docs/parity.md's row for %s does not name its parameter %s in `%s`", k, p, span)
			}
		}
	}
}

// TestParityListsEveryCommandAndFlag: every command a user sees (hidden ones are the
// machinery's) has a row whose first cell is `kinetic PATH`, and each of its flags is named
// in that row.
func TestParityListsEveryCommandAndFlag(t *testing.T) {
	rows := parityRows(t)
	var walk func(c *cobra.Command)
	n := 0
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			return
		}
		n++
		path := c.CommandPath()
		var row *parityRow // the first row naming it: the table of every command
		for i := range rows {
			if row == nil && slices.Contains(rows[i].spans, path) {
				row = &rows[i]
			}
		}
		if row == nil {
			t.Errorf("docs/parity.md has no row for `%s`: add one (`%s` in the first cell) with its flags", path, path)
		} else {
			c.LocalFlags().VisitAll(func(f *pflag.Flag) {
				if f.Name == "help" {
					return
				}
				if !wordIn(row.text, "--"+f.Name) {
					t.Errorf("docs/parity.md's row for `%s` does not name its flag --%s", path, f.Name)
				}
			})
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(NewRoot())
	if n < 30 {
		t.Fatalf("walked only %d commands", n)
	}
}

// TestParityListsEveryVariable: every configuration key's KINETIC_* variable has a row.
func TestParityListsEveryVariable(t *testing.T) {
	rows := parityRows(t)
	for _, k := range config.Keys() {
		if _, row := find(rows, k.EnvVar()); row == nil {
			t.Errorf("docs/parity.md has no row for %s (the %s key): add one to its variables table", k.EnvVar(), k)
		}
	}
}

// sdkSignatures prints each public callable of the SDK with its signature and defaults, one
// per line: the Python half of docs/parity-api.txt.
const sdkSignatures = `
import inspect, kinetic
lines, seen = [], set()
def sig(o):
    # Names, kinds and defaults only: annotations print differently across Pythons.
    try:
        ps = inspect.signature(o).parameters.values()
    except (TypeError, ValueError):
        return None
    out, star = [], False
    for p in ps:
        if p.kind == p.VAR_POSITIONAL:
            out.append("*" + p.name); star = True; continue
        if p.kind == p.VAR_KEYWORD:
            out.append("**" + p.name); continue
        if p.kind == p.KEYWORD_ONLY and not star:
            out.append("*"); star = True
        out.append(p.name if p.default is p.empty else "%s=%r" % (p.name, p.default))
    return "(" + ", ".join(out) + ")"
def add(key, o):
    if id(o) in seen:
        return
    seen.add(id(o))
    if inspect.isclass(o):
        if not issubclass(o, BaseException):
            s = sig(o)
            if s is not None:
                lines.append(key + s)
        for c in o.__mro__:
            if not c.__module__.startswith("kinetic"):
                continue
            for name, v in sorted(vars(c).items()):
                if name.startswith("_") or isinstance(v, property):
                    continue
                f = v.__func__ if isinstance(v, (classmethod, staticmethod)) else v
                if callable(f):
                    s = sig(f)
                    if s is not None:
                        lines.append("%s.%s%s" % (key, name, s))
                elif isinstance(f, (int, float, str)):
                    lines.append("%s.%s = %r" % (key, name, f))
    elif callable(o):
        s = sig(o)
        if s is not None:
            lines.append(key + s)
    elif isinstance(o, (int, float, str)):
        lines.append("%s = %r" % (key, o))
for n in kinetic.__all__:
    o = getattr(kinetic, n)
    if inspect.ismodule(o):
        for m in sorted(dir(o)):
            v = getattr(o, m)
            if m.startswith("_"):
                continue
            if getattr(v, "__module__", None) == o.__name__ or (isinstance(v, (int, float, str)) and m.isupper()):
                add("kinetic.%s.%s" % (n, m), v)
    else:
        add("kinetic." + n, o)
print("\n".join(sorted(set(lines))))
`

var updateParityAPI = os.Getenv("KINETIC_UPDATE_PARITY_API") != ""

// TestParityAPITable: docs/parity-api.txt holds every public Python signature with its
// defaults and every CLI command's flags with their types and defaults. A changed name,
// parameter, default or flag breaks this test until the table (and the parity.md row that
// says how it compares with the reference) is updated: regenerate it with
// KINETIC_UPDATE_PARITY_API=1 go test ./cli -run TestParityAPITable, and read the diff.
func TestParityAPITable(t *testing.T) {
	py := os.Getenv("PYTHON")
	if py == "" {
		py = "python3"
	}
	cmd := exec.Command(py, "-c", sdkSignatures)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join(srcroot.MustDir(), "python"))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("reading the SDK's signatures with %s: %v %s", py, err, exitStderr(err))
	}
	var b strings.Builder
	b.WriteString("# Generated by cli/parity_test.go TestParityAPITable (KINETIC_UPDATE_PARITY_API=1 to\n")
	b.WriteString("# regenerate): the public Python API with its defaults, and every CLI command's flags\n")
	b.WriteString("# with their types and defaults. docs/parity.md says, row by row, how each compares.\n\n")
	b.WriteString("## Python\n\n")
	b.Write(out)
	b.WriteString("\n## CLI\n\n")
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" {
			return
		}
		fmt.Fprintf(&b, "%s\n", c.CommandPath())
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Name == "help" || f.Hidden {
				return
			}
			short := ""
			if f.Shorthand != "" {
				short = " -" + f.Shorthand
			}
			fmt.Fprintf(&b, "  --%s%s %s = %q\n", f.Name, short, f.Value.Type(), f.DefValue)
		})
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(NewRoot())
	path := filepath.Join(srcroot.MustDir(), "docs", "parity-api.txt")
	if updateParityAPI {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: generate it with KINETIC_UPDATE_PARITY_API=1 go test ./cli -run TestParityAPITable", err)
	}
	if d := cmp.Diff(string(want), b.String()); d != "" {
		t.Errorf("the public API or the CLI's flags changed (-docs/parity-api.txt +now):\n%s\nIf that is meant, regenerate the table (KINETIC_UPDATE_PARITY_API=1 go test ./cli -run TestParityAPITable) and update the parity.md rows that compare them with the reference.", d)
	}
}

package pack

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	ignore "github.com/sabhiram/go-gitignore"

	"github.com/kinetic-run/kinetic/errs"
)

// AlwaysExcludes are the names left out even with KINETIC_NO_DEFAULT_EXCLUDES set.
var AlwaysExcludes = []string{".git", "__pycache__"}

// IgnoreFile is the name of the gitignore-syntax file, at the shipped root, listing paths
// that are not shipped.
const IgnoreFile = ".kineticignore"

// EnvSizeWarnMB is the variable SizeWarning names to raise the threshold (the setting
// context_size_warn_mb, which config resolves).
const EnvSizeWarnMB = "KINETIC_CONTEXT_SIZE_WARN_MB"

// DefaultWarnBytes is the working-directory size above which SizeWarning speaks.
const DefaultWarnBytes = 100 << 20

// SkipPaths turns local paths (absolute, or relative to cwd) into the root-relative slash
// paths Options.Skip wants. Paths outside root are dropped: they are not shipped anyway.
func SkipPaths(root, cwd string, paths []string) []string {
	var out []string
	for _, p := range paths {
		if !filepath.IsAbs(p) {
			p = filepath.Join(cwd, p)
		}
		rel, err := filepath.Rel(root, filepath.Clean(p))
		if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			continue
		}
		out = append(out, filepath.ToSlash(rel))
	}
	return out
}

// walkEntry is one path the walk keeps.
type walkEntry struct {
	rel  string // slash path relative to the root
	abs  string
	info fs.FileInfo
}

// filter decides what a walk keeps.
type filter struct {
	names map[string]bool
	skip  map[string]bool
	ign   *ignoreRules
}

func newFilter(root string, o Options) (*filter, error) {
	f := &filter{names: map[string]bool{}, skip: map[string]bool{}}
	for _, n := range AlwaysExcludes {
		f.names[n] = true
	}
	excl := o.Excludes
	if excl == nil && !o.NoDefaultExcludes {
		excl = DefaultExcludes
	}
	for _, n := range excl {
		f.names[n] = true
	}
	for _, s := range o.Skip {
		s = path.Clean("/" + strings.Trim(filepath.ToSlash(s), "/"))[1:]
		if s != "" {
			f.skip[s] = true
		}
	}
	// Only .kineticignore: the working directory travels whole (seed 001), so a file git
	// ignores (a local data folder, a generated config) that the job reads by relative
	// path reaches it, as in the reference; .gitignore is not read.
	b, err := os.ReadFile(filepath.Join(root, IgnoreFile))
	switch {
	case err == nil:
		if f.ign, err = parseIgnore(string(b)); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(root, IgnoreFile), err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("read %s: %w", IgnoreFile, err)
	}
	return f, nil
}

func (f *filter) excluded(rel string, name string, isDir bool) bool {
	if f.names[name] || f.skip[rel] {
		return true
	}
	return f.ign != nil && f.ign.match(rel, isDir)
}

// walk lists what is shipped from root, sorted by path. Directories, regular files and
// symlinks are kept; other types (sockets, devices, fifos) are dropped.
func walk(root string, o Options) ([]walkEntry, error) {
	out, _, err := walkNoted(root, o)
	return out, err
}

// walkNoted is walk, with a note for each path left out that a user may want to know
// about: a name that is not valid UTF-8 (a manifest's paths are JSON strings, which
// would carry it renamed, each bad byte made U+FFFD; it is left out instead, named with
// its bytes escaped).
func walkNoted(root string, o Options) ([]walkEntry, []string, error) {
	f, err := newFilter(root, o)
	if err != nil {
		return nil, nil, err
	}
	w := &walker{root: root, f: f}
	if err := filepath.WalkDir(root, w.visit); err != nil {
		return nil, nil, err
	}
	sort.Slice(w.out, func(i, j int) bool { return w.out[i].rel < w.out[j].rel })
	return w.out, w.notes, nil
}

// walker is one walkNoted: what it keeps, and its notes.
type walker struct {
	root  string
	f     *filter
	notes []string
	out   []walkEntry
}

// visit keeps p (a WalkDir callback) unless it is left out.
func (w *walker) visit(p string, d fs.DirEntry, err error) error {
	if err != nil {
		return fmt.Errorf("read working directory: %w (make it readable, or list it in %s)", err, IgnoreFile)
	}
	if p == w.root {
		return nil
	}
	rel, _ := filepath.Rel(w.root, p)
	rel = filepath.ToSlash(rel)
	if !utf8.ValidString(d.Name()) {
		w.notes = append(w.notes, fmt.Sprintf("left out %s %s: its name is not valid UTF-8, which a job's tree cannot carry unchanged; rename it", kindOf(d), strconv.Quote(rel)))
		return leaveOut(d)
	}
	if w.f.excluded(rel, d.Name(), d.IsDir()) {
		return leaveOut(d)
	}
	info, err := d.Info()
	if err != nil {
		return fmt.Errorf("read working directory: %w (make it readable, or list it in %s)", err, IgnoreFile)
	}
	if m := info.Mode(); m.IsRegular() || m.IsDir() || m&fs.ModeSymlink != 0 {
		w.out = append(w.out, walkEntry{rel: rel, abs: p, info: info})
	}
	return nil
}

// leaveOut is what WalkDir is told of a path left out: a directory's contents go too.
func leaveOut(d fs.DirEntry) error {
	if d.IsDir() {
		return filepath.SkipDir
	}
	return nil
}

func kindOf(d fs.DirEntry) string {
	if d.IsDir() {
		return "directory"
	}
	return "file"
}

// ignoreRules is a .kineticignore: gitignore syntax, last matching pattern wins, a
// pattern ending in "/" matches directories only, a pattern with a "/" before its end is
// anchored at the root. Matching is done by github.com/sabhiram/go-gitignore one pattern
// at a time; the pattern text is adjusted first for what that library gets wrong ("?",
// regexp metacharacters, anchoring, "[!...]").
type ignoreRules struct {
	rules []ignoreRule
}

type ignoreRule struct {
	m       *ignore.GitIgnore
	negate  bool
	dirOnly bool
}

func parseIgnore(text string) (*ignoreRules, error) {
	r := &ignoreRules{}
	for i, line := range strings.Split(text, "\n") {
		rule, ok, err := parseIgnoreLine(i+1, line)
		if err != nil {
			return nil, err
		}
		if ok {
			r.rules = append(r.rules, rule)
		}
	}
	return r, nil
}

// parseIgnoreLine parses line n of a .kineticignore; ok is false for a line without a
// pattern (blank, a comment).
func parseIgnoreLine(n int, line string) (rule ignoreRule, ok bool, err error) {
	line = trimTrailingSpaces(strings.TrimRight(line, "\r"))
	if line == "" || strings.HasPrefix(line, "#") {
		return rule, false, nil
	}
	if strings.HasPrefix(line, "!") {
		rule.negate = true
		line = line[1:]
	} else if strings.HasPrefix(line, `\!`) || strings.HasPrefix(line, `\#`) {
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") {
		rule.dirOnly = true
		line = strings.TrimRight(line, "/")
	}
	if line == "" {
		return rule, false, nil
	}
	if strings.Contains(line, "/") && !strings.HasPrefix(line, "/") && !strings.HasPrefix(line, "**/") {
		line = "/" + line // a slash before the end anchors the pattern at the root
	}
	pat := escapePattern(line)
	if rule.dirOnly {
		pat += "/"
	}
	rule.m = ignore.CompileIgnoreLines(pat)
	// The library silently drops a pattern it cannot compile; say so instead.
	if reflect.ValueOf(rule.m).Elem().FieldByName("patterns").Len() != 1 {
		return rule, false, errs.Errorf(errs.InvalidArgument, "line %d: invalid pattern %q", n, line)
	}
	return rule, true, nil
}

func trimTrailingSpaces(s string) string {
	for strings.HasSuffix(s, " ") && !strings.HasSuffix(s, `\ `) {
		s = s[:len(s)-1]
	}
	return s
}

// escapePattern rewrites a gitignore glob so go-gitignore's regexp translation gives the
// gitignore meaning: "?" is one character other than "/", "[!" negates a class, and regexp
// metacharacters outside classes are literal.
func escapePattern(p string) string {
	e := &patternEscaper{p: p}
	for ; e.i < len(p); e.i++ {
		e.next()
	}
	return e.b.String()
}

// patternEscaper is one escapePattern: p is read from i on.
type patternEscaper struct {
	p       string
	i       int
	inClass bool
	b       strings.Builder
}

func (e *patternEscaper) next() {
	c := e.p[e.i]
	switch {
	case c == '\\' && e.i+1 < len(e.p):
		e.escaped()
	case e.inClass:
		e.inClassByte(c)
	case c == '[' && strings.IndexByte(e.p[e.i+1:], ']') > 0:
		e.openClass()
	case c == '?':
		e.b.WriteString(`[^\x2f]`)
	case strings.IndexByte(`()+{}|^$]`, c) >= 0:
		e.b.WriteByte('\\')
		e.b.WriteByte(c)
	default:
		e.b.WriteByte(c)
	}
}

// escaped writes the character after a backslash as the literal it is.
func (e *patternEscaper) escaped() {
	e.i++
	switch n := e.p[e.i]; {
	case n == '.' || n == '?':
		e.b.WriteString(`\x` + strconv.FormatInt(int64(n), 16))
	case n == '*' || strings.IndexByte(`()+{}|^$[]\`, n) >= 0:
		e.b.WriteByte('\\')
		e.b.WriteByte(n)
	default:
		e.b.WriteByte(n)
	}
}

// inClassByte writes c of a [class]; "/" never matches.
func (e *patternEscaper) inClassByte(c byte) {
	if c == ']' {
		e.inClass = false
	}
	if c == '/' {
		e.b.WriteString(`\x2f`)
		return
	}
	e.b.WriteByte(c)
}

// openClass starts a [class]; "[!" negates it.
func (e *patternEscaper) openClass() {
	e.inClass = true
	e.b.WriteByte('[')
	if e.i+1 < len(e.p) && e.p[e.i+1] == '!' {
		e.b.WriteByte('^')
		e.i++
	}
}

// match reports whether rel (a root-relative slash path) is ignored.
func (r *ignoreRules) match(rel string, isDir bool) bool {
	ignored := false
	for _, rule := range r.rules {
		if rule.dirOnly && !isDir {
			continue
		}
		p := rel
		if rule.dirOnly {
			p += "/"
		}
		if rule.m.MatchesPath(p) {
			ignored = !rule.negate
		}
	}
	return ignored
}

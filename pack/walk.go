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
	f, err := newFilter(root, o)
	if err != nil {
		return nil, err
	}
	var out []walkEntry
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("read working directory: %w (make it readable, or list it in %s)", err, IgnoreFile)
		}
		if p == root {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if f.excluded(rel, d.Name(), d.IsDir()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return fmt.Errorf("read working directory: %w (make it readable, or list it in %s)", err, IgnoreFile)
		}
		m := info.Mode()
		if !m.IsRegular() && !m.IsDir() && m&fs.ModeSymlink == 0 {
			return nil
		}
		out = append(out, walkEntry{rel: rel, abs: p, info: info})
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].rel < out[j].rel })
	return out, nil
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
		line = strings.TrimRight(line, "\r")
		line = trimTrailingSpaces(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var rule ignoreRule
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
			continue
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
			return nil, errs.Errorf(errs.InvalidArgument, "line %d: invalid pattern %q", i+1, line)
		}
		r.rules = append(r.rules, rule)
	}
	return r, nil
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
	var b strings.Builder
	inClass := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\' && i+1 < len(p):
			n := p[i+1]
			i++
			switch {
			case n == '.' || n == '?':
				b.WriteString(`\x` + strconv.FormatInt(int64(n), 16))
			case n == '*' || strings.IndexByte(`()+{}|^$[]\`, n) >= 0:
				b.WriteByte('\\')
				b.WriteByte(n)
			default:
				b.WriteByte(n)
			}
		case inClass:
			if c == ']' {
				inClass = false
			}
			if c == '/' {
				b.WriteString(`\x2f`)
				continue
			}
			b.WriteByte(c)
		case c == '[' && strings.IndexByte(p[i+1:], ']') > 0:
			inClass = true
			b.WriteByte(c)
			if i+1 < len(p) && p[i+1] == '!' {
				b.WriteByte('^')
				i++
			}
		case c == '?':
			b.WriteString(`[^\x2f]`)
		case strings.IndexByte(`()+{}|^$]`, c) >= 0:
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
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

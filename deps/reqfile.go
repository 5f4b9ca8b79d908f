package deps

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Requirements is a project's dependency list: requirements and pip directives in file
// order (-r includes inlined where they appear), plus the constraints of -c files.
type Requirements struct {
	// Source is the dependency file discovered (requirements.txt or pyproject.toml);
	// "" when there is none and the job gets the base environment only.
	Source string
	// Files are all files read, Source first, then includes in the order first read.
	Files []string
	// Entries are the requirements and directives, in order.
	Entries []Entry
	// Constraints are the entries of -c/--constraint files (Constraint set on each).
	Constraints []Requirement
}

// Entry is one line of a requirements list: exactly one of Req and Dir is set.
type Entry struct {
	Req *Requirement
	Dir *Directive
}

// String returns the canonical line of the entry.
func (e Entry) String() string {
	if e.Req != nil {
		return e.Req.String()
	}
	if e.Dir != nil {
		return e.Dir.String()
	}
	return ""
}

// Directive is a pip option line kept with the requirements: --index-url,
// --extra-index-url, --no-index, --find-links, --pre, --trusted-host,
// --prefer-binary, --only-binary, --no-binary.
type Directive struct {
	// Option is the canonical long option name ("--index-url" for -i).
	Option string
	// Value is the option's value, "" for a flag.
	Value string
	// Local is set for a --find-links (or file:// index) that names a directory of this
	// machine: usable by the local backend only. Relative paths are made absolute
	// against the directory of the file that names them, as pip does.
	Local bool
	File  string
	Line  int
}

// String returns the canonical line: the long option, a space, the value (quoted for
// pip's shell-like splitting only when it needs to be).
func (d Directive) String() string {
	if d.Value == "" && !optionTable[d.Option].value {
		return d.Option
	}
	return d.Option + " " + shellQuote(d.Value)
}

// Requirements returns the requirements of the list (directives left out), in order.
func (r *Requirements) Requirements() []Requirement {
	if r == nil {
		return nil
	}
	var out []Requirement
	for _, e := range r.Entries {
		if e.Req != nil {
			out = append(out, *e.Req)
		}
	}
	return out
}

// Lines returns the canonical requirement and directive lines, in order, ready to be
// written to a requirements file for pip. Constraints are in ConstraintLines.
func (r *Requirements) Lines() []string {
	if r == nil {
		return nil
	}
	var out []string
	for _, e := range r.Entries {
		out = append(out, e.String())
	}
	return out
}

// ConstraintLines returns the canonical lines of the constraints, in order, ready to be
// written to a constraints file (pip install -c).
func (r *Requirements) ConstraintLines() []string {
	if r == nil {
		return nil
	}
	var out []string
	for _, c := range r.Constraints {
		out = append(out, c.String())
	}
	return out
}

// LocalPaths returns the local directories the list refers to (--find-links to a
// path), which exist only on this machine.
func (r *Requirements) LocalPaths() []string {
	if r == nil {
		return nil
	}
	var out []string
	for _, e := range r.Entries {
		if e.Dir != nil && e.Dir.Local {
			out = append(out, e.Dir.Value)
		}
	}
	return out
}

// ParseRequirementsFile reads a pip requirements file, following -r and -c includes
// relative to the including file.
func ParseRequirementsFile(path string) (*Requirements, error) {
	data, err := readDepFile(path)
	if err != nil {
		return nil, fmt.Errorf("read requirements: %w", err)
	}
	return ParseRequirements(path, data)
}

// ParseRequirements parses the content of the requirements file at path (the path is
// used in messages and to resolve includes and relative --find-links).
func ParseRequirements(path string, data []byte) (*Requirements, error) {
	return parseRequirementsWith(readDepFile, path, data)
}

func parseRequirementsWith(read readFunc, path string, data []byte) (*Requirements, error) {
	p := &reqParser{read: read, out: &Requirements{Source: path}}
	if err := p.parse(path, data, false); err != nil {
		return nil, err
	}
	return p.out, nil
}

const (
	maxIncludeDepth = 32
	maxFileSize     = 16 << 20
)

// readFunc reads a dependency file; tests and fuzzers substitute their own.
type readFunc func(path string) ([]byte, error)

// readDepFile reads a regular file of at most maxFileSize bytes.
func readDepFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if fi.Size() > maxFileSize {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, maxFileSize)
	}
	return io.ReadAll(io.LimitReader(f, maxFileSize+1))
}

type reqParser struct {
	read  readFunc
	stack []string // absolute paths of the files being read, outermost first
	out   *Requirements
}

func (p *reqParser) parse(path string, data []byte, constraint bool) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	if slices.Contains(p.stack, abs) {
		chain := append(slices.Clone(p.stack), abs)
		return wrapf(ErrInclude, "include cycle: %s", strings.Join(chain, " -> "))
	}
	if len(p.stack) >= maxIncludeDepth {
		return wrapf(ErrInclude, "includes nested more than %d deep", maxIncludeDepth)
	}
	p.stack = append(p.stack, abs)
	defer func() { p.stack = p.stack[:len(p.stack)-1] }()
	if !slices.Contains(p.out.Files, path) {
		p.out.Files = append(p.out.Files, path)
	}
	for _, ll := range logicalLines(data) {
		if err := p.line(path, ll, constraint); err != nil {
			var fe *FileError
			if errors.As(err, &fe) {
				return err
			}
			return &FileError{File: path, Line: ll.num, Err: err}
		}
	}
	return nil
}

type logicalLine struct {
	num     int    // first physical line
	text    string // without comment, trimmed
	comment string // comment text after '#', "" if none
}

// commentRE is pip's: a comment starts at a '#' at the start of the line or after
// whitespace.
var commentRE = regexp.MustCompile(`(^|\s+)#.*$`)

// logicalLines splits a requirements file into logical lines the way pip does: join
// lines ending in a backslash with the next (a comment line ends the continuation),
// then strip comments and surrounding whitespace; blank results are dropped.
func logicalLines(data []byte) []logicalLine {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	phys := strings.Split(string(data), "\n")
	type joined struct {
		num  int
		text string
	}
	var js []joined
	var cur []string
	curNum := 0
	isComment := func(l string) bool {
		return commentRE.FindStringIndex(l) != nil && commentRE.FindStringIndex(l)[0] == 0
	}
	for i, l := range phys {
		l = strings.TrimSuffix(l, "\r")
		num := i + 1
		if !strings.HasSuffix(l, `\`) || isComment(l) {
			if isComment(l) {
				l = " " + l
			}
			if cur != nil {
				cur = append(cur, l)
				js = append(js, joined{curNum, strings.Join(cur, "")})
				cur = nil
			} else {
				js = append(js, joined{num, l})
			}
			continue
		}
		if cur == nil {
			curNum = num
		}
		cur = append(cur, strings.Trim(l, `\`))
	}
	if cur != nil {
		js = append(js, joined{curNum, strings.Join(cur, "")})
	}
	var out []logicalLine
	for _, j := range js {
		ll := logicalLine{num: j.num}
		text := j.text
		if loc := commentRE.FindStringIndex(text); loc != nil {
			c := text[loc[0]:]
			ll.comment = c[strings.IndexByte(c, '#')+1:]
			text = text[:loc[0]]
		}
		ll.text = strings.TrimSpace(text)
		if ll.text == "" {
			continue
		}
		out = append(out, ll)
	}
	return out
}

var keepRE = regexp.MustCompile(`(^|[^A-Za-z0-9_:-])kn:keep($|[^A-Za-z0-9_:-])`)

// hasKeep reports whether a comment carries the kn:keep marker.
func hasKeep(comment string) bool { return keepRE.MatchString(comment) }

type optSpec struct {
	long    string // canonical name
	value   bool   // takes a value
	perReq  bool   // allowed after a requirement on its line
	include bool   // -r / -c
}

var optionTable = map[string]optSpec{
	"--index-url":       {long: "--index-url", value: true},
	"--extra-index-url": {long: "--extra-index-url", value: true},
	"--no-index":        {long: "--no-index"},
	"--find-links":      {long: "--find-links", value: true},
	"--pre":             {long: "--pre"},
	"--trusted-host":    {long: "--trusted-host", value: true},
	"--prefer-binary":   {long: "--prefer-binary"},
	"--only-binary":     {long: "--only-binary", value: true},
	"--no-binary":       {long: "--no-binary", value: true},
	"--requirement":     {long: "--requirement", value: true, include: true},
	"--constraint":      {long: "--constraint", value: true, include: true},
	"--editable":        {long: "--editable", value: true},
	"--hash":            {long: "--hash", value: true, perReq: true},
}

var shortOptions = map[byte]string{
	'i': "--index-url", 'f': "--find-links", 'r': "--requirement", 'c': "--constraint", 'e': "--editable",
}

type option struct {
	name  string // canonical long name
	value string
}

// parseOptions splits an option string shell-style and resolves each option against
// optionTable (long names, "--name=value", "--name value", "-X value", "-Xvalue").
func parseOptions(s string) ([]option, error) {
	toks, err := shellSplit(s)
	if err != nil {
		return nil, err
	}
	var out []option
	for i := 0; i < len(toks); i++ {
		name, val, hasVal, err := optionName(toks[i])
		if err != nil {
			return nil, err
		}
		spec, ok := optionTable[name]
		if !ok {
			return nil, fmt.Errorf("%w: %s (kinetic passes on index and source options only: "+
				"--index-url, --extra-index-url, --no-index, --find-links, --pre, --trusted-host, "+
				"--prefer-binary, --only-binary, --no-binary, --hash, -r, -c)", ErrUnsupported, name)
		}
		if spec.value && !hasVal {
			if i+1 >= len(toks) {
				return nil, wrapf(ErrSyntax, "%s needs a value", name)
			}
			i++
			val = toks[i]
		} else if !spec.value && hasVal {
			return nil, wrapf(ErrSyntax, "%s takes no value", name)
		}
		out = append(out, option{name: spec.long, value: val})
	}
	return out, nil
}

// optionName reads an option token: "--name", "--name=value", "-X" or "-Xvalue" (a
// short option is named by its long name).
func optionName(t string) (name, val string, hasVal bool, err error) {
	switch {
	case strings.HasPrefix(t, "--"):
		if k := strings.IndexByte(t, '='); k >= 0 {
			return t[:k], t[k+1:], true, nil
		}
		return t, "", false, nil
	case strings.HasPrefix(t, "-") && len(t) >= 2:
		long, ok := shortOptions[t[1]]
		if !ok {
			return "", "", false, wrapf(ErrUnsupported, "unsupported requirements-file option %s", t)
		}
		if len(t) > 2 {
			return long, t[2:], true, nil
		}
		return long, "", false, nil
	}
	return "", "", false, wrapf(ErrSyntax, "unexpected %q among options", t)
}

// splitArgsOptions splits a logical line where its first whitespace-separated token
// starting with '-' begins (pip's break_args_options).
func splitArgsOptions(s string) (args, opts string) {
	for i := 0; i < len(s); i++ {
		if s[i] == '-' && (i == 0 || isSpace(s[i-1])) {
			return strings.TrimSpace(s[:i]), s[i:]
		}
	}
	return s, ""
}

func (p *reqParser) line(path string, ll logicalLine, constraint bool) error {
	args, optStr := splitArgsOptions(ll.text)
	opts, err := parseOptions(optStr)
	if err != nil {
		return err
	}
	if args == "" {
		for _, o := range opts {
			if err := p.option(path, ll, o); err != nil {
				return err
			}
		}
		return nil
	}
	req, err := parseReqArg(args)
	if err != nil {
		return err
	}
	for _, o := range opts {
		if !optionTable[o.name].perReq {
			return wrapf(ErrSyntax, "option %s after a requirement; put it on a line of its own", o.name)
		}
		h, err := parseHash(o.value)
		if err != nil {
			return err
		}
		req.Hashes = append(req.Hashes, h)
	}
	slices.Sort(req.Hashes)
	req.Hashes = slices.Compact(req.Hashes)
	req.Keep = hasKeep(ll.comment)
	req.File, req.Line, req.Text = path, ll.num, ll.text
	req.Constraint = constraint
	if constraint {
		if req.URL != "" || len(req.Extras) > 0 {
			return wrapf(ErrSyntax, "a constraint must be a name, a version specifier and an optional marker, not %q", args)
		}
		p.out.Constraints = append(p.out.Constraints, req)
		return nil
	}
	p.out.Entries = append(p.out.Entries, Entry{Req: &req})
	return nil
}

var hashRE = regexp.MustCompile(`^(sha256|sha384|sha512):[0-9a-f]+$`)

func parseHash(v string) (string, error) {
	v = strings.ToLower(v)
	if !hashRE.MatchString(v) {
		return "", wrapf(ErrSyntax, "invalid --hash %q (want sha256:HEX, sha384:HEX or sha512:HEX)", v)
	}
	return v, nil
}

var eggRE = regexp.MustCompile(`[#&]egg=([A-Za-z0-9._-]+)`)

// parseReqArg parses the requirement part of a line: a PEP 508 requirement or a bare
// URL whose project name can be told (#egg=name, or a wheel or sdist file name).
func parseReqArg(args string) (Requirement, error) {
	if looksLocal(args) {
		first := args
		if k := strings.IndexAny(first, " \t;"); k >= 0 {
			first = first[:k]
		}
		return Requirement{}, &localPathError{what: first}
	}
	first := args
	if k := strings.IndexAny(first, " \t"); k >= 0 {
		first = first[:k]
	}
	if strings.Contains(first, "://") {
		return parseBareURL(args, first)
	}
	return parsePEP508(args)
}

func parseBareURL(args, u string) (Requirement, error) {
	if err := checkReqURL(u); err != nil {
		return Requirement{}, err
	}
	name := ""
	if m := eggRE.FindStringSubmatch(u); m != nil {
		name = m[1]
	} else {
		base := u
		if k := strings.IndexAny(base, "?#"); k >= 0 {
			base = base[:k]
		}
		base = base[strings.LastIndexByte(base, '/')+1:]
		lower := strings.ToLower(base)
		switch {
		case strings.HasSuffix(lower, ".whl"):
			name, _, _ = strings.Cut(base, "-")
		default:
			for _, ext := range archiveExts {
				if strings.HasSuffix(lower, ext) {
					stem := base[:len(base)-len(ext)]
					if k := strings.LastIndexByte(stem, '-'); k > 0 {
						name = stem[:k]
					}
					break
				}
			}
		}
	}
	if name == "" || !nameRE.MatchString(name) {
		return Requirement{}, wrapf(ErrSyntax, "cannot tell the project name of %q: write it as \"name @ URL\"", redact(u))
	}
	rest := strings.TrimSpace(args[len(u):])
	line := name + " @ " + u
	if rest != "" {
		line += " " + rest
	}
	return parsePEP508(line)
}

func (p *reqParser) option(path string, ll logicalLine, o option) error {
	spec := optionTable[o.name]
	switch {
	case spec.perReq:
		return wrapf(ErrSyntax, "%s must follow a requirement on the same line", o.name)
	case o.name == "--editable":
		return &localPathError{what: o.value, editable: true}
	case spec.include:
		// As in pip, -r inside a constraints file still names requirements.
		return p.include(path, o, o.name == "--constraint")
	}
	d := Directive{Option: o.name, Value: o.value, File: path, Line: ll.num}
	if check := directiveChecks[o.name]; check != nil {
		if err := check(&d, path); err != nil {
			return err
		}
	}
	p.out.Entries = append(p.out.Entries, Entry{Dir: &d})
	return nil
}

// directiveChecks check (and canonicalise) the value of the options that need it, in a
// directive of the file at path.
var directiveChecks = map[string]func(d *Directive, path string) error{
	"--index-url":       checkIndexURL,
	"--extra-index-url": checkIndexURL,
	"--find-links":      checkFindLinks,
	"--trusted-host":    checkTrustedHost,
	"--only-binary":     checkBinaryNames,
	"--no-binary":       checkBinaryNames,
}

func checkIndexURL(d *Directive, _ string) error {
	if !strings.Contains(d.Value, "://") {
		return wrapf(ErrSyntax, "%s needs a URL, got %q", d.Option, d.Value)
	}
	if err := checkCredentials(d.Value); err != nil {
		return err
	}
	if hasPrefixFold(d.Value, "file:") {
		d.Local = true
	}
	return nil
}

// checkFindLinks checks a URL, or makes a path absolute (relative to the file's
// directory).
func checkFindLinks(d *Directive, path string) error {
	v := d.Value
	if strings.Contains(v, "://") {
		if err := checkCredentials(v); err != nil {
			return err
		}
		d.Local = hasPrefixFold(v, "file:")
		return nil
	}
	d.Local = true
	if strings.HasPrefix(v, "~") {
		return wrapf(ErrSyntax, "--find-links %q: write the path without '~'", v)
	}
	if !filepath.IsAbs(v) {
		v = filepath.Join(filepath.Dir(absOr(path)), v)
	}
	d.Value = filepath.Clean(v)
	return nil
}

func checkTrustedHost(d *Directive, _ string) error {
	if strings.ContainsAny(d.Value, "@/") {
		return wrapf(ErrSyntax, "--trusted-host takes a host[:port], got %q", redact("x://" + d.Value)[4:])
	}
	return nil
}

// checkBinaryNames normalises the project names of --only-binary and --no-binary.
func checkBinaryNames(d *Directive, _ string) error {
	var names []string
	for _, n := range strings.Split(d.Value, ",") {
		n = strings.TrimSpace(n)
		switch {
		case n == ":all:" || n == ":none:":
		case nameRE.MatchString(n):
			n = NormalizeName(n)
		default:
			return wrapf(ErrSyntax, "%s takes :all:, :none: or project names, got %q", d.Option, n)
		}
		names = append(names, n)
	}
	d.Value = strings.Join(names, ",")
	return nil
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

func absOr(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

func (p *reqParser) include(from string, o option, constraint bool) error {
	target := o.value
	if strings.Contains(target, "://") {
		return fmt.Errorf("%w: %s %s: includes must be local files (a remote file would not be "+
			"part of the environment key); copy its lines in", ErrInclude, o.name, redact(target))
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(filepath.Dir(from), target)
	}
	data, err := p.read(target)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return wrapf(ErrInclude, "%s %s: file %s does not exist", o.name, o.value, target)
		}
		return wrapf(ErrInclude, "%s %s: cannot read %s: %v", o.name, o.value, target, err)
	}
	return p.parse(target, data, constraint)
}

// shellSplit splits s into words like Python's shlex.split (POSIX mode, no comments).
func shellSplit(s string) ([]string, error) {
	w := &shellWords{s: s}
	for ; w.i < len(s); w.i++ {
		if err := w.next(); err != nil {
			return nil, err
		}
	}
	w.endWord()
	return w.out, nil
}

// shellWords is one shellSplit: s is read from i on.
type shellWords struct {
	s      string
	i      int
	out    []string
	cur    strings.Builder
	inWord bool
}

func (w *shellWords) next() error {
	c := w.s[w.i]
	if isSpace(c) {
		w.endWord()
		return nil
	}
	w.inWord = true
	switch c {
	case '\'':
		return w.singleQuoted()
	case '"':
		return w.doubleQuoted()
	case '\\':
		if w.i+1 < len(w.s) {
			w.i++
			w.cur.WriteByte(w.s[w.i])
		}
	default:
		w.cur.WriteByte(c)
	}
	return nil
}

func (w *shellWords) endWord() {
	if w.inWord {
		w.out = append(w.out, w.cur.String())
		w.cur.Reset()
		w.inWord = false
	}
}

// singleQuoted reads '...' (no escapes), leaving i at the closing quote.
func (w *shellWords) singleQuoted() error {
	end := strings.IndexByte(w.s[w.i+1:], '\'')
	if end < 0 {
		return wrapf(ErrSyntax, "unterminated quote in %q", w.s)
	}
	w.cur.WriteString(w.s[w.i+1 : w.i+1+end])
	w.i += end + 1
	return nil
}

// doubleQuoted reads "..." (a backslash escapes \ " $ ` and newline), leaving i at the
// closing quote.
func (w *shellWords) doubleQuoted() error {
	s, i := w.s, w.i+1
	for ; i < len(s) && s[i] != '"'; i++ {
		if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\\\"$`\n", s[i+1]) >= 0 {
			i++
		}
		w.cur.WriteByte(s[i])
	}
	if i >= len(s) {
		return wrapf(ErrSyntax, "unterminated quote in %q", s)
	}
	w.i = i
	return nil
}

var safeWordRE = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./~^!?&*\[\]{}()$<>|;-]+$`)

// shellQuote quotes s for shellSplit when it needs quoting.
func shellQuote(s string) string {
	if s != "" && safeWordRE.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}

package deps

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Requirement is one PEP 508 requirement, normalised.
//
// Two requirements that pip would treat the same print the same (String): the name and
// extras are PEP 503-normalised, the extras sorted, the version specifiers stripped of
// whitespace, lowercased and sorted, and the marker re-printed from its parse tree.
type Requirement struct {
	// Name is the PEP 503-normalised project name: lowercase, runs of "-", "_", "."
	// replaced by one "-".
	Name string
	// Extras are the normalised extras, sorted and without duplicates.
	Extras []string
	// Specifier is the canonical version specifier set: clauses without whitespace,
	// sorted, joined by ","; "" when the requirement has none.
	Specifier string
	// URL is the direct reference of "name @ URL" (or of a bare URL line), as written.
	URL string
	// Marker is the canonical environment marker, "" when there is none.
	Marker string
	// Hashes are the --hash values ("sha256:…"), lowercase, sorted, unique.
	Hashes []string
	// Keep is set when the line carried a "# kn:keep" comment.
	Keep bool
	// Constraint is set for an entry of a -c/--constraint file: it pins a version if the
	// project is installed at all, but does not ask for it to be installed.
	Constraint bool
	// File and Line locate the requirement (Line is 1-based, the first physical line of a
	// continued line; 0 when unknown).
	File string
	Line int
	// Text is the logical line as written, without its comment.
	Text string
}

// String returns the canonical form of the requirement, as pip reads it in a
// requirements file: name[extras]specifier ; marker, or name[extras] @ URL ; marker,
// followed by any --hash options.
func (r Requirement) String() string {
	var b strings.Builder
	b.WriteString(r.Name)
	if len(r.Extras) > 0 {
		b.WriteString("[" + strings.Join(r.Extras, ",") + "]")
	}
	if r.URL != "" {
		b.WriteString(" @ " + r.URL)
	} else {
		b.WriteString(r.Specifier)
	}
	if r.Marker != "" {
		b.WriteString(" ; " + r.Marker)
	}
	for _, h := range r.Hashes {
		b.WriteString(" --hash=" + h)
	}
	return b.String()
}

// location formats File:Line for messages.
func (r Requirement) location() string {
	if r.File == "" {
		return ""
	}
	if r.Line == 0 {
		return r.File
	}
	return fmt.Sprintf("%s:%d", r.File, r.Line)
}

var (
	nameRE      = regexp.MustCompile(`^(?i:[A-Z0-9]|[A-Z0-9][A-Z0-9._-]*[A-Z0-9])$`)
	normRunRE   = regexp.MustCompile(`[-_.]+`)
	versionRE   = regexp.MustCompile(`^[vV]?[0-9][A-Za-z0-9_.*+!-]*$`)
	arbitraryRE = regexp.MustCompile(`^[^\s,;]+$`)
)

// NormalizeName returns the PEP 503 normalised form of a project name, the form pip
// compares names in: lowercase, with every run of "-", "_" and "." replaced by "-".
func NormalizeName(name string) string {
	return normRunRE.ReplaceAllString(strings.ToLower(name), "-")
}

// ParseRequirement parses one PEP 508 requirement string (no requirements-file options,
// no comment), as found in pyproject.toml's [project.dependencies].
// Local paths and URLs with embedded credentials are refused.
func ParseRequirement(s string) (Requirement, error) {
	return parsePyprojectDep(s)
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v'
}

func skipSpace(s string, i int) int {
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return i
}

func isNameChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
}

// parsePEP508 parses name[extras] (specifier | @ URL) ; marker.
func parsePEP508(s string) (Requirement, error) {
	p := &pep508{s: s}
	for _, step := range pep508Steps {
		if err := step(p); err != nil {
			return p.r, err
		}
	}
	return p.r, nil
}

// pep508 is one requirement being parsed: s from i on is what is left.
type pep508 struct {
	s    string
	i    int
	name string // the project name as written
	r    Requirement
}

// pep508Steps parse a requirement's parts, in order.
var pep508Steps = []func(*pep508) error{
	(*pep508).projectName,
	(*pep508).extras,
	(*pep508).versionOrURL,
	(*pep508).marker,
}

// at reports whether the next byte is c.
func (p *pep508) at(c byte) bool { return p.i < len(p.s) && p.s[p.i] == c }

func (p *pep508) projectName() error {
	p.i = skipSpace(p.s, 0)
	start := p.i
	for p.i < len(p.s) && isNameChar(p.s[p.i]) {
		p.i++
	}
	p.name = p.s[start:p.i]
	switch {
	case p.name == "" && p.i < len(p.s):
		return wrapf(ErrSyntax, "expected a project name at %q", p.s[p.i:])
	case p.name == "":
		return wrapf(ErrSyntax, "expected a project name")
	case !nameRE.MatchString(p.name):
		return wrapf(ErrSyntax, "invalid project name %q", p.name)
	}
	p.r.Name = NormalizeName(p.name)
	p.i = skipSpace(p.s, p.i)
	return nil
}

// extras parses [extra, ...]: sorted, normalised, without duplicates.
func (p *pep508) extras() error {
	if !p.at('[') {
		return nil
	}
	end := strings.IndexByte(p.s[p.i:], ']')
	if end < 0 {
		return wrapf(ErrSyntax, "missing ']' after extras")
	}
	inner := p.s[p.i+1 : p.i+end]
	p.i += end + 1
	if strings.TrimSpace(inner) != "" {
		for _, e := range strings.Split(inner, ",") {
			e = strings.TrimSpace(e)
			if !nameRE.MatchString(e) {
				return wrapf(ErrSyntax, "invalid extra %q", e)
			}
			p.r.Extras = append(p.r.Extras, NormalizeName(e))
		}
		slices.Sort(p.r.Extras)
		p.r.Extras = slices.Compact(p.r.Extras)
	}
	p.i = skipSpace(p.s, p.i)
	return nil
}

// versionOrURL parses "@ URL", "(specifier)" or a bare specifier, if there is one.
func (p *pep508) versionOrURL() error {
	switch {
	case p.at('@'):
		return p.url()
	case p.at('('):
		return p.parenSpecifier()
	case p.i < len(p.s) && strings.IndexByte("<>=!~", p.s[p.i]) >= 0:
		return p.bareSpecifier()
	}
	return nil
}

func (p *pep508) url() error {
	i := skipSpace(p.s, p.i+1)
	start := i
	for i < len(p.s) && !isSpace(p.s[i]) {
		i++
	}
	u := p.s[start:i]
	if u == "" {
		return wrapf(ErrSyntax, "expected a URL after '@'")
	}
	if err := checkReqURL(u); err != nil {
		return err
	}
	p.r.URL = u
	j := skipSpace(p.s, i)
	if j < len(p.s) && p.s[j] != ';' {
		return wrapf(ErrSyntax, "unexpected %q after URL", p.s[j:])
	}
	if j < len(p.s) && j == i {
		// unreachable: a ';' directly after the URL is part of the URL.
		return wrapf(ErrSyntax, "a marker after a URL needs a space before ';'")
	}
	p.i = j
	return nil
}

func (p *pep508) parenSpecifier() error {
	end := strings.IndexByte(p.s[p.i:], ')')
	if end < 0 {
		return wrapf(ErrSyntax, "missing ')' after version specifier")
	}
	spec, err := parseSpecifier(p.s[p.i+1 : p.i+end])
	if err != nil {
		return err
	}
	p.r.Specifier = spec
	p.i = skipSpace(p.s, p.i+end+1)
	return nil
}

// bareSpecifier parses a specifier that runs to the marker or the end.
func (p *pep508) bareSpecifier() error {
	end := strings.IndexByte(p.s[p.i:], ';')
	if end < 0 {
		end = len(p.s) - p.i
	}
	spec, err := parseSpecifier(p.s[p.i : p.i+end])
	if err != nil {
		return err
	}
	p.r.Specifier = spec
	p.i += end
	return nil
}

// marker parses "; marker", which must be all that is left.
func (p *pep508) marker() error {
	if p.i >= len(p.s) {
		return nil
	}
	if p.s[p.i] != ';' {
		return wrapf(ErrSyntax, "unexpected %q after %q", p.s[p.i:], p.name)
	}
	m, err := parseMarker(p.s[p.i+1:])
	if err != nil {
		return err
	}
	p.r.Marker = m
	return nil
}

var specOps = []string{"===", "==", "!=", "<=", ">=", "~=", "<", ">"}

// parseSpecifier parses a comma-separated list of version clauses and returns their
// canonical form.
func parseSpecifier(s string) (string, error) {
	if strings.TrimSpace(s) == "" {
		return "", nil
	}
	var clauses []string
	for _, c := range strings.Split(s, ",") {
		c = strings.TrimSpace(c)
		op := ""
		for _, o := range specOps {
			if strings.HasPrefix(c, o) {
				op = o
				break
			}
		}
		if op == "" {
			return "", wrapf(ErrSyntax, "invalid version specifier %q (expected one of == != <= >= < > ~= ===)", c)
		}
		v := strings.TrimSpace(c[len(op):])
		ok := versionRE.MatchString(v)
		if op == "===" {
			ok = arbitraryRE.MatchString(v)
		}
		if !ok {
			return "", wrapf(ErrSyntax, "invalid version %q in %q", v, c)
		}
		clauses = append(clauses, op+strings.ToLower(v))
	}
	slices.Sort(clauses)
	clauses = slices.Compact(clauses)
	return strings.Join(clauses, ","), nil
}

// checkReqURL vets the URL of a direct reference.
func checkReqURL(raw string) error {
	if !strings.Contains(raw, "://") {
		if looksLocal(raw) || !strings.Contains(raw, ":") {
			return &localPathError{what: raw}
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return wrapf(ErrSyntax, "invalid URL %q", redact(raw))
	}
	if strings.EqualFold(u.Scheme, "file") {
		return &localPathError{what: raw}
	}
	return checkCredentials(raw)
}

// checkCredentials refuses a URL that carries a user name or password. The one
// exception is a bare user name on an ssh URL (git+ssh://git@host/…), which names an
// account, not a secret.
func checkCredentials(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		// Catch "user:secret@host" that url.Parse could not make sense of.
		if err != nil && strings.Contains(raw, "@") && strings.Contains(raw, "://") {
			rest := raw[strings.Index(raw, "://")+3:]
			if at := strings.IndexByte(rest, '@'); at >= 0 && !strings.ContainsAny(rest[:at], "/?#") {
				return &credentialsError{url: redact(raw)}
			}
		}
		return nil
	}
	_, hasPassword := u.User.Password()
	if !hasPassword && strings.HasSuffix(strings.ToLower(u.Scheme), "ssh") {
		return nil
	}
	return &credentialsError{url: redact(raw)}
}

// redact replaces the user information of a URL with "***".
func redact(raw string) string {
	i := strings.Index(raw, "://")
	if i < 0 {
		return raw
	}
	rest := raw[i+3:]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	at := strings.LastIndexByte(rest[:end], '@')
	if at < 0 {
		return raw
	}
	return raw[:i+3] + "***" + rest[at:]
}

var archiveExts = []string{".whl", ".zip", ".tar.gz", ".tgz", ".tar.bz2", ".tbz", ".tar.xz", ".txz", ".tar"}

// looksLocal reports whether a requirement argument names a local path, the way pip
// decides that a line is a path rather than a project name.
func looksLocal(s string) bool {
	s = strings.TrimSpace(s)
	if s == "" {
		return false
	}
	return startsLikePath(s) || firstWordIsPath(s)
}

// startsLikePath: a path start (".", "/", "~", a backslash), "file:", or a drive letter.
func startsLikePath(s string) bool {
	switch s[0] {
	case '.', '/', '~', '\\':
		return true
	}
	if len(s) >= 5 && strings.EqualFold(s[:5], "file:") {
		return true
	}
	return len(s) >= 3 && isASCIILetter(s[0]) && s[1] == ':' && (s[2] == '\\' || s[2] == '/')
}

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// firstWordIsPath: the first word (up to a space, marker, extras, URL or specifier) has
// a path separator and is not a URL, or names an archive.
func firstWordIsPath(s string) bool {
	first := s
	if k := strings.IndexAny(first, " \t;[@<>=!~(,"); k >= 0 {
		first = first[:k]
	}
	if strings.Contains(first, "://") {
		return false
	}
	if strings.ContainsAny(first, `/\`) {
		return true
	}
	lower := strings.ToLower(first)
	for _, ext := range archiveExts {
		if strings.HasSuffix(lower, ext) {
			return true
		}
	}
	return false
}

// --- environment markers -------------------------------------------------------------

var markerVars = map[string]bool{
	"python_version": true, "python_full_version": true, "os_name": true, "sys_platform": true,
	"platform_release": true, "platform_system": true, "platform_version": true,
	"platform_machine": true, "platform_python_implementation": true,
	"implementation_name": true, "implementation_version": true, "extra": true,
	"dependency_groups": true, "extras": true,
}

type markerToken struct {
	kind string // "var", "str", "op", "and", "or", "(", ")"
	text string
}

func lexMarker(s string) ([]markerToken, error) {
	l := &markerLexer{s: s}
	for {
		l.i = skipSpace(s, l.i)
		if l.i >= len(s) {
			return l.toks, nil
		}
		if err := l.next(); err != nil {
			return nil, err
		}
	}
}

// markerLexer is a marker being split into tokens: s from i on is what is left.
type markerLexer struct {
	s    string
	i    int
	toks []markerToken
}

func (l *markerLexer) emit(kind, text string) {
	l.toks = append(l.toks, markerToken{kind: kind, text: text})
}

// next reads one token at i (not a space).
func (l *markerLexer) next() error {
	switch c := l.s[l.i]; {
	case c == '(' || c == ')':
		l.emit(string(c), "")
		l.i++
		return nil
	case c == '"' || c == '\'':
		return l.str(c)
	case strings.IndexByte("<>=!~", c) >= 0:
		return l.op()
	case isMarkerLetter(c):
		return l.word()
	}
	return wrapf(ErrSyntax, "unexpected %q in marker", l.s[l.i:])
}

func isMarkerLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' }

func isMarkerWordChar(c byte) bool { return isMarkerLetter(c) || c >= '0' && c <= '9' || c == '.' }

// str reads a string quoted with q.
func (l *markerLexer) str(q byte) error {
	end := strings.IndexByte(l.s[l.i+1:], q)
	if end < 0 {
		return wrapf(ErrSyntax, "unterminated string in marker")
	}
	l.emit("str", l.s[l.i+1:l.i+1+end])
	l.i += end + 2
	return nil
}

// op reads a comparison operator, the longest that matches.
func (l *markerLexer) op() error {
	for _, o := range specOps {
		if strings.HasPrefix(l.s[l.i:], o) {
			l.emit("op", o)
			l.i += len(o)
			return nil
		}
	}
	return wrapf(ErrSyntax, "invalid operator in marker at %q", l.s[l.i:])
}

// word reads and, or, in, not in, or a marker variable.
func (l *markerLexer) word() error {
	start := l.i
	for l.i < len(l.s) && isMarkerWordChar(l.s[l.i]) {
		l.i++
	}
	switch w := l.s[start:l.i]; w {
	case "and", "or":
		l.emit(w, "")
	case "in":
		l.emit("op", "in")
	case "not":
		return l.notIn()
	default:
		if !markerVars[w] {
			return wrapf(ErrSyntax, "unknown marker variable %q", w)
		}
		l.emit("var", w)
	}
	return nil
}

// notIn reads the "in" after "not".
func (l *markerLexer) notIn() error {
	j := skipSpace(l.s, l.i)
	if !strings.HasPrefix(l.s[j:], "in") || (j+2 < len(l.s) && isNameChar(l.s[j+2])) {
		return wrapf(ErrSyntax, "expected 'in' after 'not' in marker")
	}
	l.emit("op", "not in")
	l.i = j + 2
	return nil
}

type markerParser struct {
	toks  []markerToken
	pos   int
	depth int
}

func (p *markerParser) peek() string {
	if p.pos < len(p.toks) {
		return p.toks[p.pos].kind
	}
	return ""
}

// parseMarker parses a PEP 508 marker expression and returns its canonical text:
// tokens separated by single spaces, strings double-quoted (single-quoted if they
// contain a double quote), the user's parentheses kept.
func parseMarker(s string) (string, error) {
	toks, err := lexMarker(s)
	if err != nil {
		return "", err
	}
	if len(toks) == 0 {
		return "", wrapf(ErrSyntax, "empty marker after ';'")
	}
	p := &markerParser{toks: toks}
	out, err := p.or()
	if err != nil {
		return "", err
	}
	if p.pos != len(p.toks) {
		return "", wrapf(ErrSyntax, "unexpected %s in marker", describe(p.toks[p.pos]))
	}
	return out, nil
}

func describe(t markerToken) string {
	if t.text != "" {
		return fmt.Sprintf("%q", t.text)
	}
	return fmt.Sprintf("%q", t.kind)
}

func (p *markerParser) or() (string, error) {
	l, err := p.and()
	if err != nil {
		return "", err
	}
	for p.peek() == "or" {
		p.pos++
		r, err := p.and()
		if err != nil {
			return "", err
		}
		l = l + " or " + r
	}
	return l, nil
}

func (p *markerParser) and() (string, error) {
	l, err := p.atom()
	if err != nil {
		return "", err
	}
	for p.peek() == "and" {
		p.pos++
		r, err := p.atom()
		if err != nil {
			return "", err
		}
		l = l + " and " + r
	}
	return l, nil
}

func (p *markerParser) atom() (string, error) {
	if p.peek() == "(" {
		p.depth++
		if p.depth > 100 {
			return "", wrapf(ErrSyntax, "marker nested too deeply")
		}
		p.pos++
		inner, err := p.or()
		if err != nil {
			return "", err
		}
		if p.peek() != ")" {
			return "", wrapf(ErrSyntax, "missing ')' in marker")
		}
		p.pos++
		p.depth--
		return "(" + inner + ")", nil
	}
	l, err := p.value()
	if err != nil {
		return "", err
	}
	if p.peek() != "op" {
		return "", wrapf(ErrSyntax, "expected a comparison operator after %s in marker", l)
	}
	op := p.toks[p.pos].text
	p.pos++
	r, err := p.value()
	if err != nil {
		return "", err
	}
	return l + " " + op + " " + r, nil
}

func (p *markerParser) value() (string, error) {
	if p.pos >= len(p.toks) {
		return "", wrapf(ErrSyntax, "marker ends early")
	}
	t := p.toks[p.pos]
	switch t.kind {
	case "var":
		p.pos++
		return t.text, nil
	case "str":
		p.pos++
		if strings.Contains(t.text, `"`) {
			return "'" + t.text + "'", nil
		}
		return `"` + t.text + `"`, nil
	}
	return "", wrapf(ErrSyntax, "expected a marker variable or a quoted string, got %s", describe(t))
}

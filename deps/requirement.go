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
	var r Requirement
	i := skipSpace(s, 0)
	start := i
	for i < len(s) && isNameChar(s[i]) {
		i++
	}
	name := s[start:i]
	if name == "" {
		if i < len(s) {
			return r, wrapf(ErrSyntax, "expected a project name at %q", s[i:])
		}
		return r, wrapf(ErrSyntax, "expected a project name")
	}
	if !nameRE.MatchString(name) {
		return r, wrapf(ErrSyntax, "invalid project name %q", name)
	}
	r.Name = NormalizeName(name)
	i = skipSpace(s, i)

	if i < len(s) && s[i] == '[' {
		end := strings.IndexByte(s[i:], ']')
		if end < 0 {
			return r, wrapf(ErrSyntax, "missing ']' after extras")
		}
		inner := s[i+1 : i+end]
		i += end + 1
		if strings.TrimSpace(inner) != "" {
			for _, e := range strings.Split(inner, ",") {
				e = strings.TrimSpace(e)
				if !nameRE.MatchString(e) {
					return r, wrapf(ErrSyntax, "invalid extra %q", e)
				}
				r.Extras = append(r.Extras, NormalizeName(e))
			}
			slices.Sort(r.Extras)
			r.Extras = slices.Compact(r.Extras)
		}
		i = skipSpace(s, i)
	}

	switch {
	case i < len(s) && s[i] == '@':
		i = skipSpace(s, i+1)
		start := i
		for i < len(s) && !isSpace(s[i]) {
			i++
		}
		u := s[start:i]
		if u == "" {
			return r, wrapf(ErrSyntax, "expected a URL after '@'")
		}
		if err := checkReqURL(u); err != nil {
			return r, err
		}
		r.URL = u
		j := skipSpace(s, i)
		if j < len(s) && s[j] != ';' {
			return r, wrapf(ErrSyntax, "unexpected %q after URL", s[j:])
		}
		if j < len(s) && j == i {
			// unreachable: a ';' directly after the URL is part of the URL.
			return r, wrapf(ErrSyntax, "a marker after a URL needs a space before ';'")
		}
		i = j
	case i < len(s) && s[i] == '(':
		end := strings.IndexByte(s[i:], ')')
		if end < 0 {
			return r, wrapf(ErrSyntax, "missing ')' after version specifier")
		}
		spec, err := parseSpecifier(s[i+1 : i+end])
		if err != nil {
			return r, err
		}
		r.Specifier = spec
		i = skipSpace(s, i+end+1)
	case i < len(s) && strings.IndexByte("<>=!~", s[i]) >= 0:
		end := strings.IndexByte(s[i:], ';')
		if end < 0 {
			end = len(s) - i
		}
		spec, err := parseSpecifier(s[i : i+end])
		if err != nil {
			return r, err
		}
		r.Specifier = spec
		i += end
	}

	if i < len(s) {
		if s[i] != ';' {
			return r, wrapf(ErrSyntax, "unexpected %q after %q", s[i:], name)
		}
		m, err := parseMarker(s[i+1:])
		if err != nil {
			return r, err
		}
		r.Marker = m
	}
	return r, nil
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
	switch s[0] {
	case '.', '/', '~', '\\':
		return true
	}
	if len(s) >= 5 && strings.EqualFold(s[:5], "file:") {
		return true
	}
	if len(s) >= 3 && (s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z') && s[1] == ':' && (s[2] == '\\' || s[2] == '/') {
		return true
	}
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
	var toks []markerToken
	i := 0
	for {
		i = skipSpace(s, i)
		if i >= len(s) {
			return toks, nil
		}
		c := s[i]
		switch {
		case c == '(' || c == ')':
			toks = append(toks, markerToken{kind: string(c)})
			i++
		case c == '"' || c == '\'':
			end := strings.IndexByte(s[i+1:], c)
			if end < 0 {
				return nil, wrapf(ErrSyntax, "unterminated string in marker")
			}
			toks = append(toks, markerToken{kind: "str", text: s[i+1 : i+1+end]})
			i += end + 2
		case strings.IndexByte("<>=!~", c) >= 0:
			op := ""
			for _, o := range specOps {
				if strings.HasPrefix(s[i:], o) {
					op = o
					break
				}
			}
			if op == "" {
				return nil, wrapf(ErrSyntax, "invalid operator in marker at %q", s[i:])
			}
			toks = append(toks, markerToken{kind: "op", text: op})
			i += len(op)
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_':
			start := i
			for i < len(s) && (s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z' || s[i] >= '0' && s[i] <= '9' || s[i] == '_' || s[i] == '.') {
				i++
			}
			w := s[start:i]
			switch w {
			case "and", "or":
				toks = append(toks, markerToken{kind: w})
			case "in":
				toks = append(toks, markerToken{kind: "op", text: "in"})
			case "not":
				j := skipSpace(s, i)
				if !strings.HasPrefix(s[j:], "in") || (j+2 < len(s) && isNameChar(s[j+2])) {
					return nil, wrapf(ErrSyntax, "expected 'in' after 'not' in marker")
				}
				toks = append(toks, markerToken{kind: "op", text: "not in"})
				i = j + 2
			default:
				if !markerVars[w] {
					return nil, wrapf(ErrSyntax, "unknown marker variable %q", w)
				}
				toks = append(toks, markerToken{kind: "var", text: w})
			}
		default:
			return nil, wrapf(ErrSyntax, "unexpected %q in marker", s[i:])
		}
	}
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

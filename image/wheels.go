package image

import (
	"archive/zip"
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/kinetic-run/kinetic/deps"
)

// errNotSimple means a requirement set is not a closed set of pinned local wheels: the
// daemonless builder then asks pip.
var errNotSimple = errors.New("not a closed set of pinned local wheels")

// wheelFile is one wheel chosen for the image.
type wheelFile struct {
	path    string
	project string // normalised
	version string
}

// pinnedLocalWheels resolves requirement lines without pip when they are a closed set
// of pinned wheels in local directories — what `pip freeze` and `pip wheel -w DIR`
// make for offline installs: only --no-index, --find-links DIR and name==version lines,
// no constraints; exactly one wheel per pin compatible with t; every dependency a wheel
// declares (Requires-Dist without a marker other than extras) pinned in the set and
// satisfied by simple numeric comparisons; no .data directories other than purelib,
// platlib, scripts, data and headers. Anything else returns errNotSimple, and pip decides, so
// the result is always what pip would install.
func pinnedLocalWheels(lines, constraints []string, t Target) ([]wheelFile, error) {
	if len(constraints) > 0 {
		return nil, errNotSimple
	}
	p := pinSet{pins: map[string]string{}}
	for _, l := range lines {
		if err := p.add(l); err != nil {
			return nil, err
		}
	}
	if !p.noIndex || len(p.dirs) == 0 || len(p.pins) == 0 {
		return nil, errNotSimple
	}
	var out []wheelFile
	for _, name := range p.order {
		w, err := findWheel(p.dirs, name, p.pins[name], t)
		if err != nil {
			return nil, err
		}
		if err := checkWheelMetadata(w.path, p.pins, t); err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}

// pinSet is what pinnedLocalWheels reads of the requirement lines.
type pinSet struct {
	dirs    []string          // --find-links directories
	noIndex bool              // --no-index
	pins    map[string]string // name: version
	order   []string          // the names, in order
}

// add reads one requirement line; errNotSimple when it is not one of a closed set.
func (p *pinSet) add(l string) error {
	switch {
	case l == "--no-index":
		p.noIndex = true
	case strings.HasPrefix(l, "--find-links "):
		d := strings.Trim(strings.TrimPrefix(l, "--find-links "), `'"`)
		if !filepath.IsAbs(d) {
			return errNotSimple
		}
		p.dirs = append(p.dirs, d)
	case strings.HasPrefix(l, "-"):
		return errNotSimple
	default:
		r, err := deps.ParseRequirement(l)
		if err != nil || !plainPin(r) {
			return errNotSimple
		}
		if _, dup := p.pins[r.Name]; dup {
			return errNotSimple
		}
		p.pins[r.Name] = r.Specifier[2:]
		p.order = append(p.order, r.Name)
	}
	return nil
}

// plainPin says r is name==version and nothing more.
func plainPin(r deps.Requirement) bool {
	return len(r.Extras) == 0 && r.URL == "" && r.Marker == "" && len(r.Hashes) == 0 && strings.HasPrefix(r.Specifier, "==") && !strings.ContainsAny(r.Specifier[2:], ",*")
}

var wheelNameRE = regexp.MustCompile(`^([A-Za-z0-9_.]+)-([A-Za-z0-9_.!+]+)(?:-\d[^-]*)?-([^-]+)-([^-]+)-([^-]+)\.whl$`)

func normalize(s string) string { return deps.NormalizeName(s) }

// findWheel returns the one wheel for name==version in dirs compatible with t.
func findWheel(dirs []string, name, version string, t Target) (wheelFile, error) {
	var found []wheelFile
	for _, d := range dirs {
		ents, err := os.ReadDir(d)
		if err != nil {
			return wheelFile{}, errNotSimple
		}
		for _, e := range ents {
			m := wheelNameRE.FindStringSubmatch(e.Name())
			if m == nil || normalize(m[1]) != name || m[2] != version {
				continue
			}
			if compatible(t, m[3], m[4], m[5]) {
				found = append(found, wheelFile{path: filepath.Join(d, e.Name()), project: name, version: version})
			}
		}
	}
	if len(found) != 1 {
		return wheelFile{}, errNotSimple // none (pip says why) or a choice pip makes
	}
	return found[0], nil
}

// compatible reports whether a wheel's tags (each possibly a dotted set) load in t.
func compatible(t Target, pys, abis, plats string) bool {
	nodot := strings.ReplaceAll(t.Python, ".", "")
	minor, _ := strconv.Atoi(strings.TrimPrefix(nodot, "3"))
	platOK := map[string]bool{"any": true}
	for _, p := range t.Platforms() {
		platOK[p] = true
	}
	for _, py := range strings.Split(pys, ".") {
		for _, abi := range strings.Split(abis, ".") {
			for _, plat := range strings.Split(plats, ".") {
				if platOK[plat] && tagLoads(py, abi, nodot, minor) {
					return true
				}
			}
		}
	}
	return false
}

// tagLoads reports whether Python tag py with ABI tag abi loads in CPython 3.minor
// (nodot: "3" and minor).
func tagLoads(py, abi, nodot string, minor int) bool {
	switch {
	case abi == "none" && (py == "py3" || py == "py"+nodot || py == "cp"+nodot):
		return true
	case abi == "cp"+nodot && py == "cp"+nodot:
		return true
	case abi == "abi3" && strings.HasPrefix(py, "cp3"):
		y, err := strconv.Atoi(py[3:])
		return err == nil && y <= minor
	case abi == "none" && strings.HasPrefix(py, "py3"):
		y, err := strconv.Atoi(py[3:])
		return err == nil && y <= minor
	}
	return false
}

var requiresRE = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*\(?([^;()]*)\)?\s*(?:;(.*))?$`)
var extraOnlyRE = regexp.MustCompile(`^\s*\(?\s*extra\s*==\s*["'][^"']*["']\s*\)?\s*(?:or\s+\(?\s*extra\s*==\s*["'][^"']*["']\s*\)?\s*)*$`)

// checkWheelMetadata checks a wheel's Requires-Python and Requires-Dist against the pins,
// and that it has nothing pip would have to generate or place elsewhere.
func checkWheelMetadata(p string, pins map[string]string, t Target) error {
	zr, err := zip.OpenReader(p)
	if err != nil {
		return fmt.Errorf("wheel %s: %w", p, err)
	}
	defer zr.Close()
	meta, err := metadataFile(zr.File)
	if err != nil {
		return err
	}
	rc, err := meta.Open()
	if err != nil {
		return err
	}
	defer rc.Close()
	sc := bufio.NewScanner(io.LimitReader(rc, 4<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			break // the body (description) follows
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		if err := checkMetadataField(strings.ToLower(k), strings.TrimSpace(v), pins, t); err != nil {
			return err
		}
	}
	return sc.Err()
}

// metadataFile is the wheel's .dist-info/METADATA; errNotSimple when it has none, or a
// .data directory pip would place elsewhere.
func metadataFile(files []*zip.File) (*zip.File, error) {
	var meta *zip.File
	for _, f := range files {
		top, rest, _ := strings.Cut(f.Name, "/")
		switch {
		case strings.HasSuffix(top, ".dist-info") && rest == "METADATA":
			meta = f
		case strings.HasSuffix(top, ".data") && rest != "" && !knownDataDir(rest):
			return nil, errNotSimple
		}
	}
	if meta == nil {
		return nil, errNotSimple
	}
	return meta, nil
}

// checkMetadataField checks one header of METADATA (k in lower case): Requires-Python
// against t, Requires-Dist against the pins.
func checkMetadataField(k, v string, pins map[string]string, t Target) error {
	switch k {
	case "requires-python":
		if !satisfies(t.Python, v) {
			return errNotSimple
		}
	case "requires-dist":
		return checkRequiresDist(v, pins)
	}
	return nil
}

// checkRequiresDist checks that a dependency is pinned in the set and satisfied (one
// only for extras nobody asked for is left out).
func checkRequiresDist(v string, pins map[string]string) error {
	m := requiresRE.FindStringSubmatch(v)
	if m == nil {
		return errNotSimple
	}
	if m[4] != "" {
		if extraOnlyRE.MatchString(m[4]) {
			return nil
		}
		return errNotSimple
	}
	if m[2] != "" && strings.Trim(m[2], "[] ") != "" {
		return errNotSimple
	}
	pin, ok := pins[normalize(m[1])]
	if !ok || !satisfies(pin, strings.TrimSpace(m[3])) {
		return errNotSimple
	}
	return nil
}

// satisfies evaluates a specifier set on a version when both are plain numeric release
// segments; anything it cannot judge is false (and pip decides).
func satisfies(version, spec string) bool {
	v, ok := numeric(version)
	if !ok {
		return false
	}
	if strings.TrimSpace(spec) == "" {
		return true
	}
	for _, clause := range strings.Split(spec, ",") {
		if !clauseHolds(v, strings.TrimSpace(clause)) {
			return false
		}
	}
	return true
}

// clauseHolds evaluates one clause (OP VERSION) of a specifier set on version v; false
// for anything it cannot judge.
func clauseHolds(v []int, clause string) bool {
	op := ""
	for _, o := range []string{"===", "==", "!=", ">=", "<=", "~=", ">", "<"} {
		if strings.HasPrefix(clause, o) {
			op = o
			break
		}
	}
	if op == "" || op == "===" || op == "~=" || strings.Contains(clause, "*") {
		return false
	}
	w, ok := numeric(strings.TrimSpace(clause[len(op):]))
	if !ok {
		return false
	}
	c := cmpVersions(v, w)
	return map[string]bool{"==": c == 0, "!=": c != 0, ">=": c >= 0, "<=": c <= 0, ">": c > 0, "<": c < 0}[op]
}

func numeric(s string) ([]int, bool) {
	if s == "" {
		return nil, false
	}
	var out []int
	for _, p := range strings.Split(s, ".") {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return nil, false
		}
		out = append(out, n)
	}
	return out, true
}

func cmpVersions(a, b []int) int {
	for i := 0; i < len(a) || i < len(b); i++ {
		x, y := 0, 0
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}

// knownDataDir reports whether rest (the path below NAME.data/) is in a directory pip
// knows how to place.
func knownDataDir(rest string) bool {
	kind, _, _ := strings.Cut(rest, "/")
	switch kind {
	case "purelib", "platlib", "scripts", "data", "headers":
		return true
	}
	return false
}

// wheelEntry is one file of the requirements layer.
type wheelEntry struct {
	target string
	zf     *zip.File
	data   []byte // when zf is nil
	mode   int64
	script bool // a .data/scripts file: its "#!python" line is rewritten
}

// wheelEntries lists the files of the wheels as layer entries under site, where pip
// --target puts them: the archive's top level and .data/purelib and platlib at site,
// .data/scripts and console and GUI scripts in site/bin (with "#!/usr/bin/env python3":
// pip --target would write this machine's interpreter there), .data/data at site,
// .data/headers under site/include/site/pythonX.Y/PROJECT, plus INSTALLER and
// REQUESTED in each .dist-info. Two wheels with the same file is errNotSimple (pip then
// decides what wins).
func wheelEntries(ws []wheelFile, site, pyVersion string) ([]wheelEntry, func(), error) {
	l := &wheelLayer{site: site, pyVersion: pyVersion, seen: map[string]bool{}}
	for _, w := range ws {
		if err := l.addWheel(w); err != nil {
			l.close()
			return nil, nil, err
		}
	}
	sort.Slice(l.out, func(i, j int) bool { return l.out[i].target < l.out[j].target })
	return l.out, l.close, nil
}

// wheelLayer collects the entries of wheelEntries, and the open wheels they read from.
type wheelLayer struct {
	site, pyVersion string
	closers         []io.Closer
	seen            map[string]bool
	out             []wheelEntry
}

func (l *wheelLayer) close() {
	for _, c := range l.closers {
		c.Close()
	}
}

func (l *wheelLayer) add(e wheelEntry) error {
	if l.seen[e.target] {
		return errNotSimple
	}
	l.seen[e.target] = true
	l.out = append(l.out, e)
	return nil
}

// addWheel adds the files of wheel w (kept open: l.close closes it).
func (l *wheelLayer) addWheel(w wheelFile) error {
	zr, err := zip.OpenReader(w.path)
	if err != nil {
		return fmt.Errorf("wheel %s: %w", w.path, err)
	}
	l.closers = append(l.closers, zr)
	for _, f := range zr.File {
		if strings.HasSuffix(f.Name, "/") {
			continue
		}
		if err := l.addFile(w, f); err != nil {
			return err
		}
	}
	return nil
}

// addFile adds file f of wheel w, and what pip makes of its .dist-info's METADATA and
// entry_points.txt.
func (l *wheelLayer) addFile(w wheelFile, f *zip.File) error {
	if strings.HasPrefix(f.Name, "/") || slices.Contains(strings.Split(f.Name, "/"), "..") {
		return errNotSimple // pip refuses it, with its own message
	}
	e, err := l.entry(w, f)
	if err != nil {
		return err
	}
	if err := l.add(e); err != nil {
		return err
	}
	top, rest, _ := strings.Cut(f.Name, "/")
	if !strings.HasSuffix(top, ".dist-info") {
		return nil
	}
	switch rest {
	case "METADATA":
		// What pip adds: INSTALLER, and REQUESTED (every pin was asked for).
		for n, b := range map[string][]byte{"INSTALLER": []byte("kinetic\n"), "REQUESTED": {}} {
			if err := l.add(wheelEntry{target: path.Join(l.site, top, n), data: b, mode: 0o644}); err != nil {
				return err
			}
		}
	case "entry_points.txt":
		return l.addScripts(w, f)
	}
	return nil
}

// entry is where file f of wheel w goes, and its mode.
func (l *wheelLayer) entry(w wheelFile, f *zip.File) (wheelEntry, error) {
	mode := int64(0o644)
	if (f.ExternalAttrs>>16)&0o111 != 0 {
		mode = 0o755
	}
	e := wheelEntry{zf: f, mode: mode}
	top, rest, _ := strings.Cut(f.Name, "/")
	if !strings.HasSuffix(top, ".data") {
		e.target = path.Join(l.site, f.Name)
		return e, nil
	}
	kind, p, _ := strings.Cut(rest, "/")
	switch kind {
	case "purelib", "platlib", "data":
		e.target = path.Join(l.site, p)
	case "scripts":
		e.target, e.mode, e.script = path.Join(l.site, "bin", p), 0o755, true
	case "headers":
		e.target = path.Join(l.site, "include", "site", "python"+l.pyVersion, w.project, p)
	default:
		return e, errNotSimple
	}
	return e, nil
}

// addScripts adds the console and GUI scripts of entry_points.txt f.
func (l *wheelLayer) addScripts(w wheelFile, f *zip.File) error {
	scripts, err := consoleScripts(f)
	if err != nil {
		return fmt.Errorf("wheel %s: entry_points.txt: %w", w.path, err)
	}
	for _, sc := range scripts {
		if err := l.add(wheelEntry{target: path.Join(l.site, "bin", sc.name), data: sc.body, mode: 0o755}); err != nil {
			return err
		}
	}
	return nil
}

type script struct {
	name string
	body []byte
}

var entryRE = regexp.MustCompile(`^([A-Za-z0-9_.]+)\s*:\s*([A-Za-z0-9_.]+)\s*(?:\[.*\])?$`)

// consoleScripts reads [console_scripts] and [gui_scripts] and makes pip's wrappers.
func consoleScripts(f *zip.File) ([]script, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	var out []script
	section := ""
	sc := bufio.NewScanner(io.LimitReader(rc, 1<<20))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		switch {
		case l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, ";"):
		case strings.HasPrefix(l, "["):
			section = strings.Trim(l, "[] ")
		case section == "console_scripts" || section == "gui_scripts":
			s, err := entryScript(l)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
	}
	return out, sc.Err()
}

// entryScript is pip's wrapper of entry point line l (NAME = MODULE:ATTR).
func entryScript(l string) (script, error) {
	name, ref, ok := strings.Cut(l, "=")
	name = strings.TrimSpace(name)
	m := entryRE.FindStringSubmatch(strings.TrimSpace(ref))
	if !ok || m == nil || name == "" || strings.ContainsAny(name, "/\\") || name == "." || name == ".." {
		return script{}, fmt.Errorf("entry %q", l)
	}
	attr := m[2]
	head, _, _ := strings.Cut(attr, ".")
	body := fmt.Sprintf("#!/usr/bin/env python3\n# -*- coding: utf-8 -*-\nimport re\nimport sys\nfrom %s import %s\nif __name__ == \"__main__\":\n    sys.argv[0] = re.sub(r\"(-script\\.pyw|\\.exe)?$\", \"\", sys.argv[0])\n    sys.exit(%s())\n", m[1], head, attr)
	return script{name: name, body: []byte(body)}, nil
}

// rewriteShebang replaces a script's "#!python" (or pythonw) first line, which pip
// rewrites to the installing interpreter, with "#!/usr/bin/env python3".
func rewriteShebang(r io.Reader) (io.Reader, int64, error) {
	br := bufio.NewReader(r)
	first, err := br.Peek(9)
	if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
		return nil, 0, err
	}
	if !bytes.HasPrefix(first, []byte("#!python")) {
		return br, 0, nil
	}
	line, err := br.ReadString('\n')
	if err != nil && err != io.EOF {
		return nil, 0, err
	}
	repl := "#!/usr/bin/env python3\n"
	return io.MultiReader(strings.NewReader(repl), br), int64(len(repl) - len(line)), nil
}

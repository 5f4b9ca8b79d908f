package pack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/kinetic-run/kinetic/errs"
)

// ManifestVersion is the manifest format this package writes and reads.
const ManifestVersion = 1

// Entry types.
const (
	TypeFile    = "file"
	TypeDir     = "dir"
	TypeSymlink = "symlink"
)

// Limits ParseManifest enforces on untrusted manifests.
const (
	MaxManifestEntries = 10_000_000
	maxLinkHops        = 40
)

// ErrBadManifest is wrapped by every error ParseManifest returns for a manifest that is
// malformed or hostile.
var ErrBadManifest = errs.New(errs.Internal, "bad working directory manifest")

// Manifest describes a shipped tree: every directory, file and symlink, sorted by path,
// and where each file's bytes live in the store. Scan fills everything but the locations;
// Upload fills those.
type Manifest struct {
	Version int     `json:"version"`
	Entries []Entry `json:"entries"`
	// Packs are the pack objects files point into (by index), sorted by SHA-256. A pack
	// is stored at store.BlobKey(SHA256).
	Packs []PackRef `json:"packs,omitempty"`

	// Root is the local directory Scan read (not serialised; Upload reads files from it).
	Root string `json:"-"`
	// Scan reports what Scan did (not serialised).
	Scan ScanStats `json:"-"`
	// Notes are things Scan left out that a user may want to know about (not
	// serialised), e.g. a symlink pointing outside the tree.
	Notes []string `json:"-"`
}

// Entry is one path of the tree.
type Entry struct {
	// Path is slash-separated and relative to the root: no "", ".", ".." or empty
	// components, no leading or trailing "/".
	Path string `json:"path"`
	Type string `json:"type"` // TypeFile, TypeDir or TypeSymlink
	// Mode is the permission bits (0o777 at most) of files and directories.
	Mode fs.FileMode `json:"mode,omitempty"`
	// Size and SHA256 (lower-case hex) are the file's content.
	Size   int64  `json:"size,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	// Target is a symlink's target, relative and inside the tree.
	Target string `json:"target,omitempty"`
	// Pack, if set, is the index in Manifest.Packs of the pack holding the file's bytes
	// at Offset. Otherwise a non-empty file is the blob store.BlobKey(SHA256).
	Pack   *int  `json:"pack,omitempty"`
	Offset int64 `json:"offset,omitempty"`
}

// PackRef names one pack: small files' bytes concatenated, content addressed.
type PackRef struct {
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// ScanStats report what Scan did.
type ScanStats struct {
	Files       int   // regular files
	Bytes       int64 // their total size
	HashedFiles int   // files read and hashed (the rest came from the hash cache)
	HashedBytes int64
}

// TotalBytes is the size of all files in the tree.
func (m *Manifest) TotalBytes() int64 {
	var n int64
	for _, e := range m.Entries {
		if e.Type == TypeFile {
			n += e.Size
		}
	}
	return n
}

// Marshal returns the manifest's canonical JSON: the same tree and locations always give
// the same bytes, so the same manifest is stored once.
func (m *Manifest) Marshal() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ParseManifest decodes and validates an untrusted manifest. It refuses unknown versions,
// paths that are absolute, unclean or contain "..", unsorted or duplicate paths, entries
// below a file or symlink, symlinks whose target (following the tree's other symlinks)
// leaves the tree, modes beyond the permission bits, negative sizes, malformed hashes,
// pack references out of range and totals above MaxExtractBytes.
func ParseManifest(data []byte) (*Manifest, error) {
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadManifest, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: trailing data", ErrBadManifest)
	}
	if err := m.validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

func bad(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrBadManifest}, args...)...)
}

func (m *Manifest) validate() error {
	if m.Version != ManifestVersion {
		return bad("version %d, this runner reads version %d (update the runner)", m.Version, ManifestVersion)
	}
	if len(m.Entries) > MaxManifestEntries {
		return bad("%d entries, at most %d", len(m.Entries), MaxManifestEntries)
	}
	if err := m.validatePacks(); err != nil {
		return err
	}
	v := &entryValidator{m: m, types: make(map[string]string, len(m.Entries)), links: map[string]string{}}
	for i := range m.Entries {
		if err := v.check(i, &m.Entries[i]); err != nil {
			return err
		}
	}
	for name, target := range v.links {
		if err := linkStaysInside(v.links, name, target); err != nil {
			return err
		}
	}
	return nil
}

func (m *Manifest) validatePacks() error {
	for i, p := range m.Packs {
		if !isHex256(p.SHA256) {
			return bad("pack %d: SHA-256 %q is not 64 lower-case hex digits", i, p.SHA256)
		}
		if p.Size <= 0 || p.Size > MaxExtractBytes {
			return bad("pack %d: size %d", i, p.Size)
		}
	}
	return nil
}

// entryValidator checks a manifest's entries in order.
type entryValidator struct {
	m     *Manifest
	types map[string]string // path → type, of the entries so far
	links map[string]string // symlink path → target
	total int64             // the files' bytes so far
	prev  string            // the previous entry's path
}

// entryChecks check the fields of an entry of each type.
var entryChecks = map[string]func(*entryValidator, *Entry) error{
	TypeDir:     (*entryValidator).checkDir,
	TypeSymlink: (*entryValidator).checkSymlink,
	TypeFile:    (*entryValidator).checkFile,
}

func (v *entryValidator) check(i int, e *Entry) error {
	if err := v.checkPlace(i, e); err != nil {
		return err
	}
	if e.Mode&^fs.ModePerm != 0 {
		return bad("entry %q: mode %#o has bits beyond the permissions", e.Path, uint32(e.Mode))
	}
	check, ok := entryChecks[e.Type]
	if !ok {
		return bad("entry %q: unknown type %q", e.Path, e.Type)
	}
	return check(v, e)
}

// checkPlace checks e's path: relative, after the previous one, below directories only.
func (v *entryValidator) checkPlace(i int, e *Entry) error {
	if err := checkPath(e.Path); err != nil {
		return err
	}
	if i > 0 && e.Path <= v.prev {
		return bad("entry %q: paths must be sorted and unique (after %q)", e.Path, v.prev)
	}
	v.prev = e.Path
	for d := path.Dir(e.Path); d != "."; d = path.Dir(d) {
		if t, ok := v.types[d]; ok && t != TypeDir {
			return bad("entry %q: its parent %q is a %s", e.Path, d, t)
		}
	}
	v.types[e.Path] = e.Type
	return nil
}

func (v *entryValidator) checkDir(e *Entry) error {
	if e.Size != 0 || e.SHA256 != "" || e.Target != "" || e.Pack != nil || e.Offset != 0 {
		return bad("directory %q carries file or link fields", e.Path)
	}
	return nil
}

func (v *entryValidator) checkSymlink(e *Entry) error {
	if e.Size != 0 || e.SHA256 != "" || e.Mode != 0 || e.Pack != nil || e.Offset != 0 {
		return bad("symlink %q carries file fields", e.Path)
	}
	if e.Target == "" || strings.ContainsRune(e.Target, 0) || strings.Contains(e.Target, `\`) {
		return bad("symlink %q has an invalid target %q", e.Path, e.Target)
	}
	v.links[e.Path] = e.Target
	return nil
}

func (v *entryValidator) checkFile(e *Entry) error {
	if e.Target != "" {
		return bad("file %q carries a link target", e.Path)
	}
	if !isHex256(e.SHA256) {
		return bad("file %q: SHA-256 %q is not 64 lower-case hex digits", e.Path, e.SHA256)
	}
	if e.Size < 0 || e.Size > MaxExtractBytes {
		return bad("file %q: size %d", e.Path, e.Size)
	}
	if v.total += e.Size; v.total > MaxExtractBytes {
		return bad("more than %d bytes in all", int64(MaxExtractBytes))
	}
	return v.checkFileLocation(e)
}

// checkFileLocation checks that a file in a pack lies inside it.
func (v *entryValidator) checkFileLocation(e *Entry) error {
	if e.Pack == nil {
		if e.Offset != 0 {
			return bad("file %q: an offset without a pack", e.Path)
		}
		return nil
	}
	if *e.Pack < 0 || *e.Pack >= len(v.m.Packs) {
		return bad("file %q: pack %d does not exist", e.Path, *e.Pack)
	}
	if e.Offset < 0 || e.Offset > v.m.Packs[*e.Pack].Size-e.Size {
		return bad("file %q: bytes %d+%d lie outside its pack", e.Path, e.Offset, e.Size)
	}
	return nil
}

func checkPath(p string) error {
	if p == "" || strings.HasPrefix(p, "/") || strings.ContainsRune(p, 0) || strings.Contains(p, `\`) {
		return bad("entry %q: not a relative slash path", p)
	}
	for _, part := range strings.Split(p, "/") {
		if part == "" || part == "." || part == ".." {
			return bad("entry %q: not a clean path inside the tree", p)
		}
	}
	return nil
}

// linkStaysInside resolves name's target lexically, expanding the tree's own symlinks on
// the way (so a chain of individually harmless links cannot climb out), and refuses it if
// it ever goes above the root or is absolute.
func linkStaysInside(links map[string]string, name, target string) error {
	refuse := func() error {
		return bad("symlink %q -> %q points outside the working directory", name, target)
	}
	if path.IsAbs(target) {
		return refuse()
	}
	var cur []string
	if d := path.Dir(name); d != "." {
		cur = strings.Split(d, "/")
	}
	rest := strings.Split(target, "/")
	hops := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(cur) == 0 {
				return refuse()
			}
			cur = cur[:len(cur)-1]
			continue
		}
		cur = append(cur, c)
		t, ok := links[strings.Join(cur, "/")]
		if !ok {
			continue
		}
		if hops++; hops > maxLinkHops {
			return bad("symlink %q -> %q: too many levels of symlinks", name, target)
		}
		if path.IsAbs(t) {
			return refuse()
		}
		cur = cur[:len(cur)-1]
		rest = append(strings.Split(t, "/"), rest...)
	}
	return nil
}

func isHex256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// SizeEntry is one top-level entry of the tree and what it holds.
type SizeEntry struct {
	Path  string // top-level name; directories end in "/"
	Size  int64  // bytes of all files under it
	Files int
}

// LargestEntries returns the n largest top-level entries (files, or directories with
// everything below them), largest first.
func (m *Manifest) LargestEntries(n int) []SizeEntry {
	idx := map[string]int{}
	var out []SizeEntry
	for _, e := range m.Entries {
		if e.Type != TypeFile {
			continue
		}
		top, _, isDir := strings.Cut(e.Path, "/")
		if isDir {
			top += "/"
		}
		i, ok := idx[top]
		if !ok {
			i = len(out)
			idx[top] = i
			out = append(out, SizeEntry{Path: top})
		}
		out[i].Size += e.Size
		out[i].Files++
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Size != out[j].Size {
			return out[i].Size > out[j].Size
		}
		return out[i].Path < out[j].Path
	})
	if n >= 0 && len(out) > n {
		out = out[:n]
	}
	return out
}

// SizeWarning returns a warning naming the largest entries if the tree holds more than
// threshold bytes, and "" otherwise (or if threshold <= 0).
func SizeWarning(m *Manifest, threshold int64) string {
	total, files := int64(0), 0
	for _, e := range m.Entries {
		if e.Type == TypeFile {
			total += e.Size
			files++
		}
	}
	if threshold <= 0 || total <= threshold {
		return ""
	}
	var b strings.Builder
	where := ""
	if m.Root != "" {
		where = " " + m.Root
	}
	fmt.Fprintf(&b, "the working directory%s holds %s in %d files, more than %s (%s); largest entries:",
		where, HumanBytes(total), files, HumanBytes(threshold), EnvSizeWarnMB)
	for _, e := range m.LargestEntries(5) {
		fmt.Fprintf(&b, "\n  %10s  %s (%d files)", HumanBytes(e.Size), e.Path, e.Files)
	}
	b.WriteString("\nlist what the job does not need in " + IgnoreFile + " (gitignore syntax), or pass data as Data(\"path\") so it is uploaded once and cached by content")
	return b.String()
}

// secretPatterns are file names that look like credentials (the reference's list): they
// are shipped, as the rest of the tree is, but SecretWarning names them.
var secretPatterns = []string{".env*", "*.pem", "id_rsa*"}

// SecretWarning returns a warning naming the shipped files whose names look like
// credentials (.env*, *.pem, id_rsa*), and "" when there are none. They travel to the
// store with the code; the warning says how to keep them out.
func SecretWarning(m *Manifest) string {
	var names []string
	for _, e := range m.Entries {
		if e.Type != TypeFile {
			continue
		}
		base := path.Base(e.Path)
		for _, pat := range secretPatterns {
			if ok, _ := path.Match(pat, base); ok {
				names = append(names, e.Path)
				break
			}
		}
	}
	if len(names) == 0 {
		return ""
	}
	const most = 10
	more := ""
	if len(names) > most {
		more = fmt.Sprintf(" and %d more", len(names)-most)
		names = names[:most]
	}
	where := "the working directory"
	if m.Root != "" {
		where = m.Root
	}
	return fmt.Sprintf("files that look like credentials are shipped with the code to the job's store: %s%s; list them in %s at %s to keep them out",
		strings.Join(names, ", "), more, IgnoreFile, where)
}

// HumanBytes is n in B, KiB, MiB, ... with one decimal: how Kinetic writes sizes for a
// person (the size warning, upload lines, prune).
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

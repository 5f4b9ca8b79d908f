// Package data is Kinetic's Data(...): a reference to data that must be available on the
// worker as a plain filesystem path.
//
// A Ref is made on the submitting machine by Parse, from what the user wrote:
//
//	local-file  ./config.json                  hashed, uploaded once per hash
//	local-dir   ./dataset/                     hashed, uploaded once per hash
//	gs-dir      gs://bucket/prefix/            travels as a reference (trailing slash)
//	gs-object   gs://bucket/path/weights.h5    travels as a reference (no trailing slash)
//	hf          hf://repo?split=&config_name=&revision=
//	                                           downloaded on the worker with `datasets`
//
// Local data is identified by ContentHash (the reference's two-level SHA-256, computed in
// parallel), uploaded by Upload under data/sha256/<hash>/ with a completion marker written
// last, and turned back into files on the worker by Materialize. See docs/data.md for the
// exact byte layout of the hash and the store layout.
package data

import (
	"errors"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/job"
)

// Kind says what a Ref points at (job.DataKind: the spec carries it).
type Kind = job.DataKind

// The kinds of data.
const (
	LocalFile = job.DataLocalFile
	LocalDir  = job.DataLocalDir
	GSDir     = job.DataGSDir
	GSObject  = job.DataGSObject
	HF        = job.DataHF
)

// Ref is one Data(...) reference. It is JSON in the job spec (job.DataRef), so that
// package job needs nothing of this one.
type Ref = job.DataRef

// HFSource is a parsed hf:// URI.
type HFSource struct {
	Repo       string // "imdb" or "owner/name"
	Split      string // "" = all splits (a DatasetDict)
	ConfigName string // "" = the default configuration
	Revision   string // "" = the default branch
}

// Parse turns Data(path, fuse=..., hf_trust_remote_code=...) into a Ref.
//
// A local path must exist (it is resolved against the current directory). gs:// needs a
// bucket, and a trailing slash makes it a directory. hf:// takes only the query
// parameters split, config_name and revision, taken literally (no percent-decoding; '+'
// is a plus). fuse=True is refused for hf://. fuse=True on a local path is accepted: the
// local backend then uses the path in place (LocalPath); a remote backend must refuse it
// (there is no bucket to mount). hf_trust_remote_code=True is refused for anything but
// hf://.
func Parse(p string, fuse, hfTrust bool) (Ref, error) {
	switch {
	case p == "":
		return Ref{}, errs.New(errs.InvalidArgument, "Data(): the path is empty; give a local file or directory, gs://bucket/prefix/, gs://bucket/object or hf://repo")
	case strings.ContainsRune(p, 0):
		return Ref{}, errs.Errorf(errs.InvalidArgument, "Data(%q): the path contains a NUL byte", p)
	case strings.HasPrefix(p, "hf://"):
		return parseHFRef(p, fuse, hfTrust)
	case hfTrust:
		return Ref{}, errs.Errorf(errs.InvalidArgument, "Data(%q, hf_trust_remote_code=True): hf_trust_remote_code applies only to hf:// datasets; drop it", p)
	case strings.HasPrefix(p, "gs://"):
		return parseGSRef(p, fuse)
	}
	if i := strings.Index(p, "://"); i > 0 && !strings.ContainsAny(p[:i], `/\.`) {
		return Ref{}, errs.Errorf(errs.InvalidArgument, "Data(%q): unsupported scheme %q; use a local path, gs://bucket/... or hf://repo", p, p[:i])
	}
	return parseLocalRef(p, fuse)
}

func parseHFRef(p string, fuse, hfTrust bool) (Ref, error) {
	src, err := ParseHF(p)
	if err != nil {
		return Ref{}, err
	}
	if fuse {
		return Ref{}, errs.Errorf(errs.InvalidArgument, "Data(%q, fuse=True): a Hugging Face dataset cannot be FUSE-mounted: it is downloaded on the worker with the datasets library; drop fuse=True", p)
	}
	return Ref{Kind: HF, Source: p, URI: src.URI(), HFTrustRemoteCode: hfTrust}, nil
}

// parseGSRef: a key that is empty or ends in "/" makes a directory.
func parseGSRef(p string, fuse bool) (Ref, error) {
	bucket, key, err := splitGS(p)
	if err != nil {
		return Ref{}, err
	}
	r := Ref{Kind: GSObject, Source: p, URI: "gs://" + bucket + "/" + key, Fuse: fuse}
	if key == "" || strings.HasSuffix(key, "/") {
		r.Kind = GSDir
	}
	return r, nil
}

// parseLocalRef: a local file or directory, which must exist.
func parseLocalRef(p string, fuse bool) (Ref, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return Ref{}, errs.Errorf(errs.InvalidArgument, "Data(%q): %w", p, err)
	}
	fi, err := os.Stat(abs)
	if errors.Is(err, os.ErrNotExist) {
		return Ref{}, errs.Errorf(errs.InvalidArgument, "Data(%q): %s does not exist; a relative path is taken from the current directory, so check the spelling and where you run from, or give an absolute path", p, abs)
	}
	if err != nil {
		return Ref{}, errs.Errorf(errs.InvalidArgument, "Data(%q): %w", p, err)
	}
	r := Ref{Source: p, Path: abs, Fuse: fuse}
	switch {
	case fi.Mode().IsRegular():
		r.Kind = LocalFile
	case fi.IsDir():
		r.Kind = LocalDir
	default:
		return Ref{}, errs.Errorf(errs.InvalidArgument, "Data(%q): %s is neither a regular file nor a directory (%s)", p, abs, fi.Mode().Type())
	}
	return r, nil
}

// GCS returns the bucket and object key (GSObject) or prefix (GSDir, ending in "/" or
// empty for the whole bucket) of a gs:// ref.
func GCS(r Ref) (bucket, key string, ok bool) {
	if r.Kind != GSDir && r.Kind != GSObject {
		return "", "", false
	}
	b, k, err := splitGS(r.URI)
	if err != nil {
		return "", "", false
	}
	return b, k, true
}

// Validate checks a Ref read from a job spec: a known kind with the fields it needs, and
// Mount empty or an absolute, clean path other than "/".
func Validate(r Ref) error {
	check, ok := kindChecks[r.Kind]
	if !ok {
		return errs.Errorf(errs.InvalidArgument, "data %q: unknown kind %q", r.Source, r.Kind)
	}
	if err := check(r); err != nil {
		return err
	}
	if r.Mount != "" && (!path.IsAbs(r.Mount) || path.Clean(r.Mount) != r.Mount || r.Mount == "/") {
		return errs.Errorf(errs.InvalidArgument, "volume %q: a mount path must be absolute and clean, and not /, e.g. /data", r.Mount)
	}
	return nil
}

// kindChecks check the fields a Ref of each kind needs.
var kindChecks = map[Kind]func(Ref) error{
	LocalFile: validateLocal,
	LocalDir:  validateLocal,
	GSDir:     validateGS,
	GSObject:  validateGS,
	HF:        validateHF,
}

func validateLocal(r Ref) error {
	if !hexHash.MatchString(r.Hash) {
		return errs.Errorf(errs.InvalidArgument, "data %q: hash %q is not a hex SHA-256 (was the data uploaded?)", r.Source, r.Hash)
	}
	if r.Prefix != "" && r.Prefix != Prefix(r.Hash) {
		return errs.Errorf(errs.InvalidArgument, "data %q: store prefix %q does not match hash %s", r.Source, r.Prefix, r.Hash)
	}
	return nil
}

func validateGS(r Ref) error {
	q, err := Parse(r.URI, r.Fuse, false)
	if err != nil {
		return err
	}
	if q.Kind != r.Kind {
		return errs.Errorf(errs.InvalidArgument, "data %q: URI %q is a %s, not a %s", r.Source, r.URI, q.Kind, r.Kind)
	}
	return nil
}

func validateHF(r Ref) error {
	if _, err := ParseHF(r.URI); err != nil {
		return err
	}
	if r.Fuse {
		return errs.Errorf(errs.InvalidArgument, "data %q: fuse is not supported for hf://", r.Source)
	}
	return nil
}

// LocalPath returns the original local path of a local ref with Fuse set: a job on the
// submitting machine (the local backend) uses it in place, without a copy. It returns
// false for every other ref, which must be materialised.
func LocalPath(r Ref) (string, bool) {
	if !r.Kind.IsLocal() || !r.Fuse || r.Path == "" {
		return "", false
	}
	return r.Path, true
}

var (
	hexHash    = regexp.MustCompile(`^[0-9a-f]{64}$`)
	bucketName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$`)
	hfRepoPart = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,95}$`)
	hfSplit    = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.:%+\[\]-]{0,199}$`)
	hfConfig   = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.+-]{0,199}$`)
	hfRevision = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_./-]{0,199}$`)
)

// splitGS splits gs://bucket/key. key may be empty (the whole bucket).
func splitGS(uri string) (bucket, key string, err error) {
	rest, ok := strings.CutPrefix(uri, "gs://")
	if !ok {
		return "", "", errs.Errorf(errs.InvalidArgument, "Data(%q): not a gs:// URI", uri)
	}
	bucket, key, _ = strings.Cut(rest, "/")
	if bucket == "" {
		return "", "", errs.Errorf(errs.InvalidArgument, "Data(%q): no bucket; write gs://BUCKET/prefix/ for a directory or gs://BUCKET/object for one object", uri)
	}
	if !bucketName.MatchString(bucket) || strings.Contains(bucket, "..") {
		return "", "", errs.Errorf(errs.InvalidArgument, "Data(%q): %q is not a valid bucket name (3-222 characters: lower-case letters, digits, '-', '_', '.')", uri, bucket)
	}
	if strings.ContainsAny(key, "\r\n") {
		return "", "", errs.Errorf(errs.InvalidArgument, "Data(%q): the object name contains a line break", uri)
	}
	for _, seg := range strings.Split(strings.TrimSuffix(key, "/"), "/") {
		if key != "" && (seg == "" || seg == "." || seg == "..") {
			return "", "", errs.Errorf(errs.InvalidArgument, "Data(%q): the object path has an empty, '.' or '..' segment; it could not be a local path on the worker", uri)
		}
	}
	return bucket, key, nil
}

// ParseHF parses hf://repo[?split=...&config_name=...&revision=...].
func ParseHF(uri string) (HFSource, error) {
	rest, ok := strings.CutPrefix(uri, "hf://")
	if !ok {
		return HFSource{}, errs.Errorf(errs.InvalidArgument, "Data(%q): not an hf:// URI", uri)
	}
	repo, query, _ := strings.Cut(rest, "?")
	repo = strings.TrimSuffix(repo, "/")
	if err := checkHFRepo(uri, repo); err != nil {
		return HFSource{}, err
	}
	src := HFSource{Repo: repo}
	if query == "" {
		return src, nil
	}
	seen := map[string]bool{}
	for _, kv := range strings.Split(query, "&") {
		if err := src.setParam(uri, kv, seen); err != nil {
			return HFSource{}, err
		}
	}
	return src, nil
}

// checkHFRepo checks NAME or OWNER/NAME.
func checkHFRepo(uri, repo string) error {
	parts := strings.Split(repo, "/")
	if repo == "" || len(parts) > 2 {
		return errs.Errorf(errs.InvalidArgument, "Data(%q): write hf://NAME or hf://OWNER/NAME, e.g. hf://imdb?split=train", uri)
	}
	for _, p := range parts {
		if !hfRepoPart.MatchString(p) || strings.Contains(p, "..") {
			return errs.Errorf(errs.InvalidArgument, "Data(%q): %q is not a valid Hugging Face repository name", uri, repo)
		}
	}
	return nil
}

// hfParams are the query parameters of hf://: what a value may be, and the field it
// sets.
var hfParams = map[string]struct {
	re  *regexp.Regexp
	set func(*HFSource, string)
}{
	"split":       {hfSplit, func(s *HFSource, v string) { s.Split = v }},
	"config_name": {hfConfig, func(s *HFSource, v string) { s.ConfigName = v }},
	"revision":    {hfRevision, func(s *HFSource, v string) { s.Revision = v }},
}

// setParam sets the parameter kv (key=value), which must be known, given once, and
// have a value of the allowed characters.
func (s *HFSource) setParam(uri, kv string, seen map[string]bool) error {
	k, val, hasEq := strings.Cut(kv, "=")
	if !hasEq {
		return errs.Errorf(errs.InvalidArgument, "Data(%q): %q is not key=value; hf:// takes split=, config_name= and revision=", uri, kv)
	}
	if seen[k] {
		return errs.Errorf(errs.InvalidArgument, "Data(%q): %s is given more than once", uri, k)
	}
	seen[k] = true
	param, ok := hfParams[k]
	if !ok {
		return errs.Errorf(errs.InvalidArgument, "Data(%q): unknown parameter %q; hf:// takes split, config_name and revision", uri, k)
	}
	param.set(s, val)
	if val == "" {
		return errs.Errorf(errs.InvalidArgument, "Data(%q): %s is empty; give a value or leave it out", uri, k)
	}
	if !param.re.MatchString(val) || strings.Contains(val, "..") {
		return errs.Errorf(errs.InvalidArgument, "Data(%q): %s=%q has characters that are not allowed", uri, k, val)
	}
	return nil
}

// URI returns the canonical hf:// URI (parameters in a fixed order).
func (s HFSource) URI() string {
	var q []string
	if s.Split != "" {
		q = append(q, "split="+s.Split)
	}
	if s.ConfigName != "" {
		q = append(q, "config_name="+s.ConfigName)
	}
	if s.Revision != "" {
		q = append(q, "revision="+s.Revision)
	}
	if len(q) == 0 {
		return "hf://" + s.Repo
	}
	return "hf://" + s.Repo + "?" + strings.Join(q, "&")
}

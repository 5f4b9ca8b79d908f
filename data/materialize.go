package data

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	"gocloud.dev/blob"
	_ "gocloud.dev/blob/gcsblob" // gs://
	"gocloud.dev/gcerrors"
	"golang.org/x/sync/errgroup"

	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/store"
)

// ErrIncomplete means local data's completion marker is missing: the upload never
// finished (or the data was cleaned up), so the data must not be used.
var ErrIncomplete = errs.New(errs.FailedPrecondition, "data upload is incomplete")

// ErrNoDatasets means the worker's Python cannot import the Hugging Face datasets library.
var ErrNoDatasets = errs.New(errs.FailedPrecondition, "the Hugging Face datasets library is not installed in the job's Python environment")

// OpenBucket opens a bucket URL such as "gs://bucket". Materialize uses it for gs:// refs.
type OpenBucket func(ctx context.Context, bucketURL string) (*blob.Bucket, error)

// Materialize makes ref available under dest on the worker and returns the path the
// user's function receives:
//
//   - local-dir, gs-dir: the files are written under dest at their relative paths; the
//     path is dest.
//   - local-file, gs-object: the file is written to dest/<base name>; the path is that file.
//   - hf: datasets.load_dataset(...).save_to_disk(dest) in python3 (MaterializeHF takes
//     the job's interpreter); the path is dest.
//
// Local data is read from st, and only when its completion marker exists (ErrIncomplete
// otherwise); the marker's manifest is checked against ref.Hash and every file against
// its digest. open opens gs://bucket URLs (nil means blob.OpenBucket). Object keys that
// are not clean relative paths (absolute, "..", empty segments) are refused. Fuse refs
// are downloaded too: mounting is the Kubernetes backend's job (see docs/data.md).
func Materialize(ctx context.Context, st *store.Store, ref Ref, dest string, open OpenBucket) (string, error) {
	if dest == "" {
		return "", errors.New("materialize data: no destination directory")
	}
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return "", fmt.Errorf("materialize data %q: %w", ref.Source, err)
	}
	switch ref.Kind {
	case LocalFile, LocalDir:
		return materializeLocal(ctx, st, ref, dest)
	case GSDir, GSObject:
		if open == nil {
			open = openGCSBucket
		}
		return materializeGS(ctx, ref, dest, open)
	case HF:
		return MaterializeHF(ctx, ref, dest, "python3") // a runner calls MaterializeHF with the job's interpreter
	default:
		return "", fmt.Errorf("materialize data %q: unknown kind %q", ref.Source, ref.Kind)
	}
}

// openGCSBucket opens gs://bucket the way the store does, honouring the endpoint
// parameter and STORAGE_EMULATOR_HOST (docs/store.md).
func openGCSBucket(ctx context.Context, u string) (*blob.Bucket, error) {
	return store.OpenGCSBucket(ctx, u)
}

func materializeLocal(ctx context.Context, st *store.Store, ref Ref, dest string) (string, error) {
	if !hexHash.MatchString(ref.Hash) {
		return "", fmt.Errorf("materialize data %q: hash %q is not a hex SHA-256", ref.Source, ref.Hash)
	}
	entries, err := readMarker(ctx, st, ref)
	if err != nil {
		return "", err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(UploadWorkers)
	for _, e := range entries {
		g.Go(func() error { return fetchDataFile(gctx, st, ref.Hash, dest, e) })
	}
	if err := g.Wait(); err != nil {
		return "", fmt.Errorf("materialize data %q: %w", ref.Source, err)
	}
	if ref.Kind != LocalDir {
		return filepath.Join(dest, filepath.FromSlash(entries[0].rel)), nil
	}
	return dest, nil
}

// readMarker reads the completion marker of ref's data and returns its files; the
// marker must describe exactly the data ref.Hash names.
func readMarker(ctx context.Context, st *store.Store, ref Ref) ([]*fileEntry, error) {
	body, err := st.Get(ctx, MarkerKey(ref.Hash))
	if store.IsNotFound(err) {
		return nil, fmt.Errorf("materialize data %q (hash %s): %w: %s is missing; submit the job again to re-upload it", ref.Source, ref.Hash, ErrIncomplete, MarkerKey(ref.Hash))
	}
	if err != nil {
		return nil, fmt.Errorf("materialize data %q: %w", ref.Source, err)
	}
	var m manifest
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("materialize data %q: bad marker %s: %w", ref.Source, MarkerKey(ref.Hash), err)
	}
	entries := make([]*fileEntry, len(m.Files))
	for i, f := range m.Files {
		if entries[i], err = markerEntry(ref, f); err != nil {
			return nil, err
		}
	}
	isDir := ref.Kind == LocalDir
	if m.Kind != ref.Kind || (!isDir && len(entries) != 1) {
		return nil, fmt.Errorf("materialize data %q: the marker is for a %s, the job expects a %s", ref.Source, m.Kind, ref.Kind)
	}
	if got := combine(isDir, entries); hex.EncodeToString(got[:]) != ref.Hash {
		return nil, fmt.Errorf("materialize data %q: the marker's files hash to %x, not %s: the store was changed", ref.Source, got, ref.Hash)
	}
	return entries, nil
}

// markerEntry is file f of a marker: a digest and a clean relative path.
func markerEntry(ref Ref, f manifestFile) (*fileEntry, error) {
	e := &fileEntry{rel: f.Path, size: f.Size}
	d, err := hex.DecodeString(f.Digest)
	if err != nil || len(d) != 32 {
		return nil, fmt.Errorf("materialize data %q: bad digest %q in the marker", ref.Source, f.Digest)
	}
	copy(e.sum[:], d)
	if !cleanRel(f.Path) {
		return nil, fmt.Errorf("materialize data %q: the marker names %q, which is not a clean relative path; refusing it", ref.Source, f.Path)
	}
	return e, nil
}

// fetchDataFile writes file e of the data with hash sum under dest, checked against its
// digest.
func fetchDataFile(ctx context.Context, st *store.Store, sum, dest string, e *fileEntry) error {
	key := FilesPrefix(sum) + e.rel
	r, err := st.NewReader(ctx, key)
	if store.IsNotFound(err) {
		return fmt.Errorf("%s is missing although the marker lists it: the store was changed", key)
	}
	if err != nil {
		return err
	}
	defer r.Close()
	h := sha256.New()
	newFileHash(h, e.rel)
	return writeFile(filepath.Join(dest, filepath.FromSlash(e.rel)), r, func(n int64) error {
		var got [32]byte
		h.Sum(got[:0])
		if got != e.sum || n != e.size {
			return fmt.Errorf("%s does not match its digest (%d bytes, expected %d): the store was changed or corrupted", key, n, e.size)
		}
		return nil
	}, h)
}

func materializeGS(ctx context.Context, ref Ref, dest string, open OpenBucket) (string, error) {
	bucket, key, ok := GCS(ref)
	if !ok {
		return "", fmt.Errorf("materialize data %q: bad gs:// URI %q", ref.Source, ref.URI)
	}
	b, err := open(ctx, "gs://"+bucket)
	if err != nil {
		return "", fmt.Errorf("materialize data %q: open gs://%s: %w", ref.Source, bucket, err)
	}
	defer b.Close()

	if ref.Kind == GSObject {
		out := filepath.Join(dest, path.Base(key))
		if err := download(ctx, b, key, out); err != nil {
			return "", fmt.Errorf("materialize data %q: %w", ref.Source, err)
		}
		return out, nil
	}

	objs, err := listGS(ctx, b, ref, bucket, key, dest)
	if err != nil {
		return "", err
	}
	if len(objs) == 0 {
		return "", fmt.Errorf("materialize data %q: there are no objects under %s; check the bucket and prefix (for a single object, drop the trailing slash)", ref.Source, ref.URI)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(UploadWorkers)
	for _, o := range objs {
		g.Go(func() error {
			return download(gctx, b, o.key, filepath.Join(dest, filepath.FromSlash(o.rel)))
		})
	}
	if err := g.Wait(); err != nil {
		return "", fmt.Errorf("materialize data %q: %w", ref.Source, err)
	}
	return dest, nil
}

// gsObject is an object of a gs:// directory and where it goes, relative to dest.
type gsObject struct{ key, rel string }

// listGS lists the objects under key (folder placeholders left out), each of which must
// make a clean local path.
func listGS(ctx context.Context, b *blob.Bucket, ref Ref, bucket, key, dest string) ([]gsObject, error) {
	var objs []gsObject
	it := b.List(&blob.ListOptions{Prefix: key})
	for {
		o, err := it.Next(ctx)
		if err == io.EOF {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("materialize data %q: list %s: %w", ref.Source, ref.URI, err)
		}
		if o.IsDir || strings.HasSuffix(o.Key, "/") {
			continue // folder placeholder objects
		}
		rel := strings.TrimPrefix(o.Key, key)
		if !cleanRel(rel) {
			return nil, fmt.Errorf("materialize data %q: object gs://%s/%s cannot be a local path under %s (empty, '.' or '..' segment); rename it", ref.Source, bucket, o.Key, dest)
		}
		objs = append(objs, gsObject{o.Key, rel})
	}
}

func download(ctx context.Context, b *blob.Bucket, key, out string) error {
	r, err := b.NewReader(ctx, key, nil)
	if err != nil {
		if isNotFound(err) {
			return fmt.Errorf("object %s does not exist (for a directory, end the URI with a slash)", key)
		}
		return fmt.Errorf("read %s: %w", key, err)
	}
	defer r.Close()
	return writeFile(out, r, nil, nil)
}

// writeFile streams r into a temporary file next to out, runs check (with the byte
// count; h, if not nil, has seen every byte), and renames it into place.
func writeFile(out string, r io.Reader, check func(n int64) error, h hash.Hash) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(out), ".kinetic-tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	var w io.Writer = f
	if h != nil {
		w = io.MultiWriter(f, h)
	}
	n, err := io.CopyBuffer(w, r, make([]byte, readBuf))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && check != nil {
		err = check(n)
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, out)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", out, err)
	}
	return nil
}

// cleanRel reports whether p is a non-empty, "/"-separated relative path with no empty,
// "." or ".." segment and no backslash or NUL: safe to join under a directory.
func cleanRel(p string) bool {
	if p == "" || strings.ContainsAny(p, "\\\x00") {
		return false
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return filepath.IsLocal(filepath.FromSlash(p))
}

// hfScript loads a dataset and saves it to disk. argv[1] is a JSON object; nothing the
// user wrote is pasted into code. Exit status 3 means `datasets` cannot be imported.
const hfScript = `
import inspect, json, sys
a = json.loads(sys.argv[1])
try:
    import datasets
except ImportError as e:
    sys.stderr.write("kinetic: cannot import datasets: %s\n" % e)
    sys.exit(3)
kw = {}
for k in ("name", "split", "revision"):
    if a.get(k):
        kw[k] = a[k]
try:
    params = inspect.signature(datasets.load_dataset).parameters
except (TypeError, ValueError):
    params = {}
if a["trust_remote_code"] or "trust_remote_code" in params:
    kw["trust_remote_code"] = a["trust_remote_code"]
ds = datasets.load_dataset(a["repo"], **kw)
ds.save_to_disk(a["dest"])
`

// MaterializeHF downloads an hf:// dataset on the worker with python's datasets library:
// load_dataset(repo, name=config_name, split=split, revision=revision,
// trust_remote_code=...) then save_to_disk(dest). It returns dest. When python cannot
// import datasets the error wraps ErrNoDatasets and says to add it to the requirements.
func MaterializeHF(ctx context.Context, ref Ref, dest, python string) (string, error) {
	src, err := ParseHF(ref.URI)
	if err != nil {
		return "", err
	}
	args, _ := json.Marshal(map[string]any{
		"repo": src.Repo, "name": src.ConfigName, "split": src.Split, "revision": src.Revision,
		"trust_remote_code": ref.HFTrustRemoteCode, "dest": dest,
	})
	cmd := exec.CommandContext(ctx, python, "-c", hfScript, string(args))
	var stderr bytes.Buffer
	cmd.Stdout = io.Discard
	cmd.Stderr = &stderr
	err = cmd.Run()
	if err == nil {
		return dest, nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 3 {
		return "", fmt.Errorf("materialize data %q: %w (%s); add `datasets` to the job's requirements.txt (or pyproject.toml dependencies)", ref.Source, ErrNoDatasets, python)
	}
	if ee == nil {
		return "", fmt.Errorf("materialize data %q: cannot run %s: %w (install Python 3 or set KINETIC_PYTHON)", ref.Source, python, err)
	}
	return "", fmt.Errorf("materialize data %q: datasets.load_dataset(%q) failed: %w\n%s", ref.Source, src.Repo, err, tail(stderr.String(), 4000))
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

func isNotFound(err error) bool { return gcerrors.Code(err) == gcerrors.NotFound }

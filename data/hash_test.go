package data

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// pyContentHash is the reference algorithm written independently in Python with
// hashlib and os.walk, as docs/data.md states it. The Go implementation must agree with
// it byte for byte: this is the conformance check.
const pyContentHash = `
import hashlib, os, sys

def file_digest(rel, full):
    h = hashlib.sha256()
    h.update(rel.encode("utf-8"))
    h.update(b"\0")
    with open(full, "rb") as f:  # follows a symlinked file
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.digest()

def content_hash(path):
    if os.path.isfile(path):
        name = os.path.basename(os.path.normpath(path))
        return hashlib.sha256(b"file:" + file_digest(name, path)).hexdigest()
    h = hashlib.sha256(b"dir:")
    for dirpath, dirnames, filenames in os.walk(path, followlinks=False):
        dirnames.sort()
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, path).replace(os.sep, "/")
            h.update(file_digest(rel, full))
    return h.hexdigest()

for p in sys.argv[1:]:
    print(content_hash(p))
`

// pythonHashes runs pyContentHash over paths.
func pythonHashes(t *testing.T, paths ...string) []string {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not found: cannot run the conformance check")
	}
	out, err := exec.Command("python3", append([]string{"-c", pyContentHash}, paths...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("python reference: %v\n%s", err, out)
	}
	return strings.Fields(string(out))
}

// buildTree builds a tree from a map of relative path to content; a value starting with "->"
// makes a symlink to the rest, "/" at the end of a key makes an (empty) directory.
func buildTree(t testing.TB, root string, files map[string]string) string {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if strings.HasSuffix(rel, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(content, "->"); ok {
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func randBytes(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return string(b)
}

func TestContentHashMatchesPythonReference(t *testing.T) {
	base := t.TempDir()
	buildTree(t, filepath.Join(base, "outside"), map[string]string{
		"target.bin":  "symlinked file contents",
		"tdir/x.txt":  "in a symlinked directory",
		"tdir/y/z.md": "deeper",
	})
	cases := map[string]map[string]string{
		"flat": {"a.txt": "alpha", "b.txt": "beta", "c": ""},
		"nested": {
			"z.txt": "root file sorted before subdirectories", "a/1": "one", "a/b/2": "two",
			"a/b/c/3": "three", "a-b/x": "dash sorts before slash", "a.b/y": "dot", "B/upper": "U",
			"é/unicode": "ü", "big": randBytes(3<<20 + 17),
		},
		"empty":        {},
		"emptysubdirs": {"e/": "", "f/g/": "", "k.txt": "k"},
		// A link to a file is hashed by that file's content (a link that leaves the
		// dataset is left out instead, which the reference does not do:
		// TestLinksOutOfTheDatasetLeftOut).
		"symlinked-file":   {"data.bin": "->" + filepath.Join(base, "cases", "symlinked-file", "inner", "target.bin"), "inner/target.bin": "symlinked file contents", "plain": "p"},
		"symlinked-dir":    {"linked": "->" + filepath.Join(base, "outside", "tdir"), "plain": "p"},
		"relative-link":    {"real/f": "f", "alias": "->real/f", "dirlink": "->real"},
		"only-one-file":    {"weights.h5": "W"},
		"many-small":       manySmall(300),
		"name-vs-content":  {"ab": "c"},
		"name-vs-content2": {"a": "bc"},
	}
	var paths []string
	var names []string
	for name, files := range cases {
		root := filepath.Join(base, "cases", name)
		os.MkdirAll(root, 0o755)
		buildTree(t, root, files)
		paths = append(paths, root)
		names = append(names, name)
	}
	// Single files: a plain file, a symlink to a file, and a file inside a case.
	single := filepath.Join(base, "cases", "only-one-file", "weights.h5")
	linkToFile := filepath.Join(base, "link-to-weights.h5")
	if err := os.Symlink(single, linkToFile); err != nil {
		t.Fatal(err)
	}
	paths = append(paths, single, linkToFile, filepath.Join(base, "outside")+"/")
	names = append(names, "single file", "symlink to a file as root", "trailing slash root")

	want := pythonHashes(t, paths...)
	if len(want) != len(paths) {
		t.Fatalf("python printed %d hashes for %d paths", len(want), len(paths))
	}
	got := map[string]string{}
	for i, p := range paths {
		h, err := ContentHash(p)
		if err != nil {
			t.Fatalf("%s: %v", names[i], err)
		}
		if h != want[i] {
			t.Errorf("%s: Go %s, Python reference %s", names[i], h, want[i])
		}
		got[names[i]] = h
	}

	// Properties the reference text promises.
	if got["only-one-file"] == got["single file"] {
		t.Error("a file and a directory containing only that file hash the same")
	}
	if got["name-vs-content"] == got["name-vs-content2"] {
		t.Error("{ab: c} and {a: bc} hash the same: the path/content boundary is ambiguous")
	}
	a := buildTree(t, filepath.Join(base, "e1"), map[string]string{"k.txt": "k"})
	b := buildTree(t, filepath.Join(base, "e2"), map[string]string{"k.txt": "k", "empty/": ""})
	ha, _ := ContentHash(a)
	hb, _ := ContentHash(b)
	if ha != hb {
		t.Error("an empty directory changed the hash; the reference's os.walk ignores it")
	}
	plain := buildTree(t, filepath.Join(base, "p"), map[string]string{"plain": "p"})
	hp, _ := ContentHash(plain)
	if hp != got["symlinked-dir"] {
		t.Error("a symlinked directory was followed")
	}
}

func manySmall(n int) map[string]string {
	m := map[string]string{}
	for i := 0; i < n; i++ {
		m[filepath.ToSlash(filepath.Join("d"+string(rune('a'+i%7)), "sub"+string(rune('a'+i%3)), "f"+strconv.Itoa(i)))] = strconv.Itoa(i * i)
	}
	return m
}

func TestContentHashStable(t *testing.T) {
	root := buildTree(t, t.TempDir(), manySmall(500))
	first, err := ContentHash(root)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if h, _ := ContentHash(root); h != first {
			t.Fatalf("run %d: %s, first %s", i, h, first)
		}
	}
	os.WriteFile(filepath.Join(root, "da", "suba", "f0"), []byte("changed"), 0o644)
	if h, _ := ContentHash(root); h == first {
		t.Fatal("changing a file did not change the hash")
	}
}

func TestContentHashErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := ContentHash(filepath.Join(dir, "missing")); err == nil {
		t.Error("missing path: no error")
	}
	broken := buildTree(t, filepath.Join(dir, "broken"), map[string]string{"l": "->nowhere"})
	if _, err := ContentHash(broken); err == nil || !strings.Contains(err.Error(), "broken symlink") {
		t.Errorf("broken symlink: %v", err)
	}
	fifo := filepath.Join(dir, "fifo")
	os.MkdirAll(fifo, 0o755)
	if err := mkfifo(filepath.Join(fifo, "p")); err == nil {
		if _, err := ContentHash(fifo); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("fifo: %v", err)
		}
	}
}

func mkfifo(p string) error { return exec.Command("mkfifo", p).Run() }

func newSHA() hash.Hash { return sha256.New() }

// A file that shrinks while it is hashed from its mapping faults (SIGBUS) on the pages it
// lost: the hash reports the change instead of crashing the process.
func TestHashMappedShrunkFileIsAnError(t *testing.T) {
	p := filepath.Join(t.TempDir(), "shrinks.bin")
	if err := os.WriteFile(p, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(p, unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// As if the file had 8 MiB when it was looked at and 1 MiB now.
	m, err := unix.Mmap(fd, 0, 8<<20, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	lanes := []laneFile{{e: &fileEntry{abs: p}, fd: fd, mapped: m, laneStream: laneStream{data: m}}}
	h := sha256.New()
	func() {
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		err = guardFaults(lanes, func() { h.Write(lanes[0].data) })
	}()
	if err == nil || !strings.Contains(err.Error(), "changed (shrank) while it was hashed") {
		t.Fatalf("hash of a shrunk mapping: err=%v", err)
	}
	// The same file hashed as it is now: all of its bytes.
	e := &fileEntry{rel: "shrinks.bin", abs: p}
	if err := hashFile(context.Background(), sha256.New(), e, make([]byte, 4096)); err != nil || e.size != 1<<20 {
		t.Fatalf("hashFile of the file as it is: %d %v", e.size, err)
	}
}

// Large files (read, then mapped), small ones (read) and those around the size of one
// read hash to the same digests as a plain read of every byte would give.
func TestMappedAndReadDigestsAgree(t *testing.T) {
	dir := t.TempDir()
	big := make([]byte, 3<<20+17)
	for i := range big {
		big[i] = byte(i * 7)
	}
	files := []struct {
		name string
		size int
	}{
		{"big.bin", len(big)},           // one read, then a mapping
		{"one-read.bin", readBuf},       // exactly one full read and an empty one
		{"read-on.bin", readBuf + 4097}, // too little left to map: read on
		{"small.bin", 1000},
	}
	for _, f := range files {
		os.WriteFile(filepath.Join(dir, f.name), big[:f.size], 0o644)
	}
	got, err := ContentHash(dir)
	if err != nil {
		t.Fatal(err)
	}
	file := func(rel string, b []byte) []byte {
		h := sha256.New()
		h.Write([]byte(rel))
		h.Write([]byte{0})
		h.Write(b)
		return h.Sum(nil)
	}
	h := sha256.New()
	h.Write([]byte("dir:"))
	for _, f := range files {
		h.Write(file(f.name, big[:f.size]))
	}
	if want := hex.EncodeToString(h.Sum(nil)); got != want {
		t.Errorf("ContentHash = %s, want %s", got, want)
	}
}

// Trees of files of many sizes hash the same several files at a time (hashLanes: pieces of
// different lengths paired, files that end while the other lane goes on, reads, mappings
// and reads after a mapping) as one at a time with crypto/sha256.
func TestLanesAgreeWithOneAtATime(t *testing.T) {
	ks := kernels()
	if len(ks) == 0 {
		t.Skip("no lane kernel on this CPU: files are hashed one at a time")
	}
	dir := t.TempDir()
	rng := mrand.New(mrand.NewPCG(7, 8))
	sizes := []int{0, 1, 55, 56, 63, 64, 65, 4095, 4096, 128 << 10, readBuf - 1, readBuf, readBuf + 1,
		readBuf + mmapMin - 1, readBuf + mmapMin, 3<<20 + 17}
	for i := 0; i < 60; i++ {
		sizes = append(sizes, rng.IntN(300<<10))
	}
	for i, n := range sizes {
		b := make([]byte, n)
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		sub := filepath.Join(dir, fmt.Sprintf("d%d", i%3), strings.Repeat("n", i%70)) // names of many lengths
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%03d", i)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	defer func() { laneKernelInUse = bestKernel() }()
	laneKernelInUse = nil
	one, err := ContentHash(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range ks {
		laneKernelInUse = k
		lanes, err := ContentHash(dir)
		if err != nil {
			t.Fatal(err)
		}
		if lanes != one {
			t.Errorf("%s: %s, one at a time %s", k.name, lanes, one)
		}
	}
}

// A fault on a lane's mapping (its file shrank after it was mapped) is that file's error,
// whichever lane it is on, and the other lane's file is not blamed.
func TestLaneFaultNamesTheFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "shrinks.bin")
	if err := os.WriteFile(p, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, k := range kernels() {
		for faulty := 0; faulty < k.lanes; faulty++ {
			fd, err := unix.Open(p, unix.O_RDONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			// Mapped as if the file still had 8 MiB.
			m, err := unix.Mmap(fd, 0, 8<<20, unix.PROT_READ, unix.MAP_SHARED)
			if err != nil {
				t.Fatal(err)
			}
			lanes := make([]laneFile, k.lanes)
			open := make([]*laneStream, k.lanes)
			for i := range lanes {
				if i == faulty {
					lanes[i] = laneFile{e: &fileEntry{abs: p}, fd: fd, mapped: m, laneStream: laneStream{data: m}}
				} else {
					other, err := unix.Open(os.DevNull, unix.O_RDONLY, 0)
					if err != nil {
						t.Fatal(err)
					}
					lanes[i] = laneFile{e: &fileEntry{abs: "other"}, fd: other, laneStream: laneStream{data: make([]byte, 16<<20)}}
				}
				lanes[i].d.reset()
				open[i] = &lanes[i].laneStream
			}
			func() {
				defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
				err = guardFaults(lanes, func() { k.step(open, nil) })
			}()
			if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "changed (shrank) while it was hashed") {
				t.Fatalf("%s, lane %d: err = %v", k.name, faulty, err)
			}
			for i := range lanes {
				if i == faulty && (lanes[i].e != nil || lanes[i].mapped != nil) {
					t.Fatalf("%s, lane %d: the faulty file is not closed", k.name, faulty)
				}
				if i != faulty {
					if lanes[i].e == nil {
						t.Fatalf("%s, lane %d: lane %d's file was closed too", k.name, faulty, i)
					}
					unix.Close(lanes[i].fd)
				}
			}
		}
	}
}

// A symlink that leaves the dataset (issue 45, item 9) is left out, with a note, as the
// working directory leaves it out: its target is never read, hashed or uploaded. One to a
// file inside the dataset is still hashed by content.
func TestLinksOutOfTheDatasetLeftOut(t *testing.T) {
	base := t.TempDir()
	secret := filepath.Join(base, "secret.txt")
	os.WriteFile(secret, []byte("do not upload"), 0o600)
	with, without := filepath.Join(base, "with"), filepath.Join(base, "without")
	for _, d := range []string{with, without} {
		buildTree(t, d, map[string]string{"a.txt": "a", "sub/b.txt": "b", "alias": "->sub/b.txt"})
	}
	os.Symlink(secret, filepath.Join(with, "leak"))
	os.Symlink("../../secret.txt", filepath.Join(with, "sub", "leak2"))
	tw, err := hashTree(context.Background(), with)
	if err != nil {
		t.Fatal(err)
	}
	two, err := hashTree(context.Background(), without)
	if err != nil {
		t.Fatal(err)
	}
	if tw.hex() != two.hex() {
		t.Errorf("the links out of the dataset changed its hash: they were read")
	}
	for _, f := range tw.files {
		if f.rel == "leak" || f.rel == "sub/leak2" {
			t.Errorf("%s (a link out of the dataset) is among its files", f.rel)
		}
	}
	if len(tw.skipped) != 2 || !strings.Contains(strings.Join(tw.skipped, "\n"), "leak -> "+secret) {
		t.Errorf("notes: %q", tw.skipped)
	}
}

package store

// A local batch's envelopes in a file store: each group worker appends its inputs'
// envelopes to one log of its own (groups/GID/ends/OWNER-N.open, renamed .ends when the
// worker closes it) instead of a file per input. A new file per input was the largest
// cost left in a local map: a new inode, a page of its own, a link, and for the reader an
// open per input and for the cleanup an unlink (docs/store.md, "A batch's ends").
//
// The layout is the store's own business: every reader of a batch child's envelope asks
// for EnvelopeKey (groups/GID/results/I.json) as before, and Get, Exists, Remove and
// ResultChildren find it in the logs when no file holds it.
//
// A log is a run of lines "I JSON\n", JSON an envelope on one line (job.Envelope.Encode).
// A reader takes complete lines only: one being written (or cut short by a worker that
// died) is not there yet. Removing a logged envelope appends "I\n" to ends/removed; a
// log whose every line was removed and that its worker closed is deleted, by whichever
// of the two comes last.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// GroupEndsPrefix holds the envelope logs of batch gid's group workers.
func GroupEndsPrefix(gid string) string { return "groups/" + gid + "/ends/" }

const (
	endsRemoved = "removed" // the indices whose envelope was removed, a line each
	endsOpen    = ".open"   // a log its worker still writes
	endsSealed  = ".ends"   // a log its worker closed
)

// EndsLog is one group worker's envelope log. It is not safe for concurrent use.
type EndsLog struct {
	dir, stem string
	fd        int
	written   []int // the inputs whose envelope this log holds
	torn      bool  // a write failed part way: the next line starts on a line of its own
}

// PrepareEnds makes batch gid's ends/ directory (with its removed list) in a file store
// before its workers start, so that a reader waiting for one of its inputs watches it
// from the start. Other stores keep each envelope in an object of its own: nothing to do.
func (s *Store) PrepareEnds(gid string) error {
	if s.dir == "" {
		return nil
	}
	dir := s.endsDir(gid)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("make %s: %w", GroupEndsPrefix(gid), err)
	}
	fd, err := syscall.Open(filepath.Join(dir, endsRemoved), syscall.O_WRONLY|syscall.O_CREAT|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("make %s: %w", GroupEndsPrefix(gid)+endsRemoved, err)
	}
	return syscall.Close(fd)
}

// OpenEndsLog opens a new envelope log for a worker of batch gid (owner: its name among
// the batch's workers). It is nil, with no error, where envelopes are objects of their
// own (a store other than file://): the caller Puts them.
func (s *Store) OpenEndsLog(gid, owner string) (*EndsLog, error) {
	if s.dir == "" {
		return nil, nil
	}
	if err := s.PrepareEnds(gid); err != nil {
		return nil, err
	}
	dir := s.endsDir(gid)
	for range 100 {
		stem := owner + "-" + strconv.FormatUint(uint64(rand.Uint32()), 36)
		fd, err := syscall.Open(filepath.Join(dir, stem+endsOpen), syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_APPEND|syscall.O_CLOEXEC, 0o600)
		if err == syscall.EEXIST {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("make an envelope log in %s: %w", GroupEndsPrefix(gid), err)
		}
		return &EndsLog{dir: dir, stem: stem, fd: fd}, nil
	}
	return nil, fmt.Errorf("make an envelope log in %s: every name tried was taken", GroupEndsPrefix(gid))
}

// Append records input i's envelope (one line of JSON, as job.Envelope.Encode writes it).
// An error (a full disk) leaves nothing a reader takes for the envelope.
func (l *EndsLog) Append(i int, env []byte) error {
	env = bytes.TrimSuffix(env, []byte("\n"))
	if bytes.IndexByte(env, '\n') >= 0 {
		// Indented (one kept by a worker of an older version): made one line.
		var b bytes.Buffer
		if err := json.Compact(&b, env); err != nil {
			return fmt.Errorf("input %d: its envelope is not JSON: %w", i, err)
		}
		env = b.Bytes()
	}
	if len(env) == 0 {
		return fmt.Errorf("input %d: an empty envelope", i)
	}
	line := make([]byte, 0, len(env)+24)
	if l.torn {
		line = append(line, '\n') // ends the torn line: a reader skips it
	}
	line = strconv.AppendInt(line, int64(i), 10)
	line = append(line, ' ')
	line = append(append(line, env...), '\n')
	for whole := len(line); len(line) > 0; {
		n, err := syscall.Write(l.fd, line)
		if err == syscall.EINTR {
			continue
		}
		if n > 0 {
			line = line[n:]
		}
		if err != nil {
			// Some of the line may be in the log (a disk that filled in the middle).
			l.torn = l.torn || len(line) < whole
			return &fs.PathError{Op: "write", Path: filepath.Join(l.dir, l.stem+endsOpen), Err: err}
		}
	}
	l.torn = false
	l.written = append(l.written, i)
	return nil
}

// Close closes the log: it is renamed .ends (no line will be added), and deleted when
// every envelope it holds was removed meanwhile (the remover could not: it was open).
func (l *EndsLog) Close() error {
	if l == nil || l.fd < 0 {
		return nil
	}
	syscall.Close(l.fd)
	l.fd = -1
	open, sealed := filepath.Join(l.dir, l.stem+endsOpen), filepath.Join(l.dir, l.stem+endsSealed)
	if err := os.Rename(open, sealed); err != nil {
		return err
	}
	removed, err := removedSet(filepath.Join(l.dir, endsRemoved))
	if err != nil {
		return nil
	}
	for _, i := range l.written {
		if !removed[i] {
			return nil
		}
	}
	os.Remove(sealed)
	return nil
}

func (s *Store) endsDir(gid string) string {
	return filepath.Join(s.dir, "groups", gid, "ends")
}

// envelopeOf returns the batch and input of key when key is a batch child's envelope
// (EnvelopeKey of a child).
func envelopeOf(key string) (gid string, i int, ok bool) {
	rest, ok := strings.CutPrefix(key, "groups/")
	if !ok {
		return "", 0, false
	}
	gid, name, ok := strings.Cut(rest, "/results/")
	if !ok || strings.Contains(gid, "/") {
		return "", 0, false
	}
	n, ok := strings.CutSuffix(name, ".json")
	if !ok {
		return "", 0, false
	}
	i, err := strconv.Atoi(n)
	if err != nil || i < 0 || strconv.Itoa(i) != n {
		return "", 0, false
	}
	return gid, i, true
}

// endsCache holds the logs of the batches this Store read lately, each read as far as
// it was written the last time (a batch's results() reads its thousand envelopes from the
// logs once, not a thousand times).
type endsCache struct {
	mu    sync.Mutex
	by    map[string]*endsIndex
	order []string // least recently used first
}

// maxCachedBatches bounds the batches whose logs a Store keeps open.
const maxCachedBatches = 8

// endsIndex is what a reader knows of one batch's logs. Readers of an envelope already
// indexed share it (RLock) and read it outside the lock: a batch's results are read by
// many goroutines at once.
type endsIndex struct {
	mu      sync.RWMutex
	dir     string
	logs    map[string]*endsFile // by stem
	ends    map[int]endRec
	removed map[int]bool
	rmOff   int64    // how far ends/removed was read
	rmFile  *os.File // ends/removed, open for appending removals (nil until the first)
}

type endsFile struct {
	f               *os.File // closed by reset: a read meanwhile fails, and is tried again
	off             int64    // how far it was read (complete lines)
	sealed          bool
	lines, nRemoved int
	stem            string
}

type endRec struct {
	log      *endsFile
	off, len int64
}

// index returns batch gid's index (made empty the first time).
func (s *Store) index(gid string) *endsIndex {
	c := &s.ends
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.by == nil {
		c.by = map[string]*endsIndex{}
	}
	if x := c.by[gid]; x != nil {
		if c.order[len(c.order)-1] != gid {
			k := slices.Index(c.order, gid)
			c.order = append(append(c.order[:k:k], c.order[k+1:]...), gid)
		}
		return x
	}
	if len(c.order) >= maxCachedBatches {
		old := c.by[c.order[0]]
		delete(c.by, c.order[0])
		c.order = c.order[1:]
		old.mu.Lock()
		old.reset()
		old.mu.Unlock()
	}
	x := &endsIndex{dir: s.endsDir(gid)}
	c.by[gid] = x
	c.order = append(c.order, gid)
	return x
}

// closeEnds closes the logs the cache holds open.
func (s *Store) closeEnds() {
	c := &s.ends
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, x := range c.by {
		x.mu.Lock()
		x.reset()
		x.mu.Unlock()
	}
	c.by, c.order = nil, nil
}

// reset forgets what was read (closing the logs).
func (x *endsIndex) reset() {
	for _, f := range x.logs {
		f.f.Close()
	}
	if x.rmFile != nil {
		x.rmFile.Close()
	}
	x.logs, x.ends, x.removed, x.rmOff, x.rmFile = nil, nil, nil, 0, nil
}

// packed returns input i's logged envelope (ok false: none, or removed).
func (s *Store) packed(gid string, i int) (raw []byte, ok bool, err error) {
	for try := 0; ; try++ {
		x := s.index(gid)
		r, ok, err := x.lookup(i)
		if !ok || err != nil {
			return nil, false, err
		}
		b := make([]byte, r.len)
		if _, err = r.log.f.ReadAt(b, r.off); err == nil {
			return b, true, nil
		}
		if !errors.Is(err, os.ErrClosed) || try > 0 {
			return nil, false, fmt.Errorf("read %s: %w", filepath.Join(x.dir, r.log.stem), err)
		}
		// Closed meanwhile (the batch's index was reset): read afresh.
	}
}

// lookup finds input i in the logs: from what was read, if nothing was removed since
// (one stat, under the shared lock), else after reading what was added.
func (x *endsIndex) lookup(i int) (endRec, bool, error) {
	var st syscall.Stat_t
	size := int64(-1)
	if syscall.Stat(filepath.Join(x.dir, endsRemoved), &st) == nil {
		size = st.Size
	}
	x.mu.RLock()
	r, ok := x.ends[i]
	removed := x.removed[i]
	fresh := x.removed != nil && size == x.rmOff
	x.mu.RUnlock()
	if fresh && (ok || removed) {
		return r, ok && !removed, nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.syncRemoved(); err != nil {
		return endRec{}, false, err
	}
	r, ok = x.ends[i]
	if !ok && !x.removed[i] {
		if err := x.refresh(); err != nil {
			return endRec{}, false, err
		}
		r, ok = x.ends[i]
	}
	return r, ok && !x.removed[i], nil
}

// logged reports, without a system call, whether batch gid had logs when this Store
// last read them.
func (s *Store) logged(gid string) bool {
	c := &s.ends
	c.mu.Lock()
	x := c.by[gid]
	c.mu.Unlock()
	if x == nil {
		return false
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.logs) > 0
}

// syncRemoved reads the removals made since the last look. A batch whose ends/removed is
// gone was removed (or never logged): everything read of it is forgotten.
func (x *endsIndex) syncRemoved() error {
	if x.removed == nil {
		x.removed = map[int]bool{}
	}
	off, err := readRemoved(filepath.Join(x.dir, endsRemoved), x.rmOff, func(i int) {
		if !x.removed[i] {
			x.removed[i] = true
			if r, ok := x.ends[i]; ok {
				r.log.nRemoved++
			}
		}
	})
	if errors.Is(err, fs.ErrNotExist) {
		x.reset()
		x.removed = map[int]bool{}
		return nil
	}
	x.rmOff = off
	return err
}

// readRemoved calls each with every index listed in the removed list at path from
// offset off on, and returns the offset read to (complete lines). Its stat comes first:
// a list that has not grown costs one system call.
func readRemoved(path string, off int64, each func(i int)) (int64, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return off, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Size <= off {
		return off, nil
	}
	b, err := readFrom(path, off)
	if err != nil {
		return off, err
	}
	for {
		k := bytes.IndexByte(b, '\n')
		if k < 0 {
			return off, nil
		}
		if i, err := strconv.Atoi(string(b[:k])); err == nil && i >= 0 {
			each(i)
		}
		b, off = b[k+1:], off+int64(k)+1
	}
}

// removedSet reads the whole removed list at path.
func removedSet(path string) (map[int]bool, error) {
	set := map[int]bool{}
	_, err := readRemoved(path, 0, func(i int) { set[i] = true })
	return set, err
}

// refresh reads what was appended to the logs since the last look, and finds new ones.
func (x *endsIndex) refresh() error {
	ents, err := os.ReadDir(x.dir)
	if errors.Is(err, fs.ErrNotExist) {
		x.reset()
		x.removed = map[int]bool{}
		return nil
	}
	if err != nil {
		return err
	}
	if x.logs == nil {
		x.logs, x.ends = map[string]*endsFile{}, map[int]endRec{}
	}
	for _, e := range ents {
		name := e.Name()
		stem, sealed := strings.CutSuffix(name, endsSealed)
		if !sealed {
			var open bool
			if stem, open = strings.CutSuffix(name, endsOpen); !open {
				continue
			}
		}
		f := x.logs[stem]
		if f == nil {
			fh, err := os.Open(filepath.Join(x.dir, name))
			if err != nil {
				continue // sealed or deleted meanwhile: the next look finds it
			}
			f = &endsFile{f: fh, stem: stem}
			x.logs[stem] = f
		}
		f.sealed = f.sealed || sealed
		if err := x.readLog(f); err != nil {
			return fmt.Errorf("read %s: %w", filepath.Join(x.dir, name), err)
		}
	}
	return nil
}

// readLog indexes the complete lines appended to f since it was last read.
func (x *endsIndex) readLog(f *endsFile) error {
	st, err := f.f.Stat()
	if err != nil {
		return err
	}
	if st.Size() <= f.off {
		return nil
	}
	b := make([]byte, st.Size()-f.off)
	n, err := f.f.ReadAt(b, f.off)
	if n < len(b) {
		return err
	}
	for {
		k := bytes.IndexByte(b, '\n')
		if k < 0 {
			return nil
		}
		line := b[:k]
		// "I JSON"; an empty JSON ("I ") is kept as it is, for readers to call damaged.
		if sp := bytes.IndexByte(line, ' '); sp > 0 {
			if i, err := strconv.Atoi(string(line[:sp])); err == nil && i >= 0 {
				if old, ok := x.ends[i]; !ok || old.log != f {
					f.lines++
					if x.removed[i] {
						f.nRemoved++
					}
				}
				x.ends[i] = endRec{log: f, off: f.off + int64(sp) + 1, len: int64(k - sp - 1)}
			}
		}
		b, f.off = b[k+1:], f.off+int64(k)+1
	}
}

// removePacked removes input i's logged envelope (removed false: there was none, or this
// Store removed it before). The log is deleted when this was the last of its envelopes
// and its worker closed it.
func (s *Store) removePacked(gid string, i int) (removed bool, err error) {
	return s.removeLogged(gid, []int{i})
}

// RemoveLogged removes the logged envelopes of inputs idx of batch gid (those that are
// in its logs) in one append to its removed list: a batch's cleanup after results()
// removes a thousand at once. removed is true if any was removed by this call. Nothing to
// do where envelopes are objects of their own.
func (s *Store) RemoveLogged(gid string, idx []int) (removed bool, err error) {
	if s.dir == "" || len(idx) == 0 {
		return false, nil
	}
	return s.removeLogged(gid, idx)
}

func (s *Store) removeLogged(gid string, idx []int) (bool, error) {
	x := s.index(gid)
	x.mu.Lock()
	defer x.mu.Unlock()
	var todo []int
	for _, i := range idx {
		if x.removed == nil || !x.removed[i] {
			todo = append(todo, i)
		}
	}
	if len(todo) == 0 {
		return false, nil // removed here before
	}
	if err := x.syncRemoved(); err != nil {
		return false, err
	}
	var line []byte
	var recs []endRec
	var took []int
	for _, i := range todo {
		if _, ok := x.ends[i]; !ok && !x.removed[i] {
			if err := x.refresh(); err != nil {
				return false, err
			}
			break
		}
	}
	for _, i := range todo {
		if r, ok := x.ends[i]; ok && !x.removed[i] {
			line = append(strconv.AppendInt(line, int64(i), 10), '\n')
			recs, took = append(recs, r), append(took, i)
			x.removed[i] = true
		}
	}
	if len(recs) == 0 {
		return false, nil
	}
	path := filepath.Join(x.dir, endsRemoved)
	if x.rmFile == nil {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil // the batch's ends are gone meanwhile
		}
		if err != nil {
			return false, err
		}
		x.rmFile = f
	}
	if _, err := x.rmFile.Write(line); err != nil {
		for _, i := range took {
			delete(x.removed, i) // not recorded: not removed
		}
		return false, err
	}
	if st, err := x.rmFile.Stat(); err == nil && st.Size() == x.rmOff+int64(len(line)) {
		x.rmOff = st.Size() // only these lines were added: nothing to read back
	}
	for _, r := range recs {
		r.log.nRemoved++
		if r.log.nRemoved >= r.log.lines {
			x.dropIfDone(r.log)
		}
	}
	return true, nil
}

// dropIfDone deletes log f, all of whose envelopes were removed, if its worker closed it
// (looked at now: the worker deletes it itself otherwise, when it closes it).
func (x *endsIndex) dropIfDone(f *endsFile) {
	sealed := filepath.Join(x.dir, f.stem+endsSealed)
	if !f.sealed {
		var st syscall.Stat_t
		if syscall.Stat(sealed, &st) != nil {
			return
		}
	}
	os.Remove(sealed)
}

// packedChildren lists the inputs of batch gid that have an envelope in its logs (none
// removed), reading them afresh, for listings (ResultChildren).
func (s *Store) packedChildren(gid string) ([]int, error) {
	// An index of its own, read whole and closed: a listing of every batch must not
	// fill the cache of the ones being read.
	x := &endsIndex{dir: s.endsDir(gid)}
	defer x.reset()
	if err := x.syncRemoved(); err != nil {
		return nil, err
	}
	if err := x.refresh(); err != nil {
		return nil, err
	}
	var out []int
	for i := range x.ends {
		if !x.removed[i] {
			out = append(out, i)
		}
	}
	slices.Sort(out)
	return out, nil
}

// readFrom reads the file at path from offset off to its end.
func readFrom(path string, off int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() <= off {
		return nil, nil
	}
	b := make([]byte, st.Size()-off)
	n, err := f.ReadAt(b, off)
	if n == len(b) {
		err = nil
	}
	return b[:n], err
}

// packedKey reports whether Get, Exists and Remove of key look in the logs when no file
// holds it (a batch child's envelope in a file store).
func (s *Store) packedKey(key string) (gid string, i int, ok bool) {
	if s.dir == "" {
		return "", 0, false
	}
	return envelopeOf(key)
}

// EndsDamage describes the damaged envelope logs of batch gid, "" when none is (or the
// store keeps no logs): a log its worker closed that ends in the middle of a line (cut
// short), or any log with a line that is not "I JSON" (garbage written over it). A
// reader that cannot find an ended input's envelope names these logs (the envelope was
// likely in one), not a cleanup; every whole line of a damaged log is still read.
// An open log's last line may be one being written, which is not damage. Input i's
// envelope removed (ends/removed lists it: collected, cleaned up) is not lost: "" then.
func (s *Store) EndsDamage(gid string, i int) (string, error) {
	if s.dir == "" {
		return "", nil
	}
	dir := s.endsDir(gid)
	if removed, err := removedSet(filepath.Join(dir, endsRemoved)); err == nil && removed[i] {
		return "", nil
	}
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var out []string
	for _, e := range ents {
		name := e.Name()
		sealed := strings.HasSuffix(name, endsSealed)
		if !sealed && !strings.HasSuffix(name, endsOpen) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			continue // removed meanwhile
		}
		if what := logDamage(b, sealed); what != "" {
			out = append(out, GroupEndsPrefix(gid)+name+" "+what)
		}
	}
	return strings.Join(out, "; "), nil
}

// logDamage says what is wrong with log b ("" if nothing): its first line that is not an
// input's envelope line ("I JSON", or a line torn by a failed write, which starts the
// same way), or, sealed, an end in the middle of a line.
func logDamage(b []byte, sealed bool) string {
	whole := 0
	for n := 1; len(b) > 0; n++ {
		line, rest, ok := bytes.Cut(b, []byte{'\n'})
		if !ok {
			if sealed {
				return fmt.Sprintf("is cut short: it ends in the middle of its line %d, after %d whole envelope lines", n, whole)
			}
			return ""
		}
		if !envelopeLine(line) {
			return fmt.Sprintf("is damaged: its line %d is not an input's envelope (%d whole envelope lines before it; those after it are still read)", n, whole)
		}
		whole++
		b = rest
	}
	return ""
}

// envelopeLine says whether line starts as an envelope log's lines do: a decimal input
// index, a space, and a JSON object (or nothing, an emptied envelope).
func envelopeLine(line []byte) bool {
	sp := bytes.IndexByte(line, ' ')
	if sp <= 0 {
		return false
	}
	if _, err := strconv.Atoi(string(line[:sp])); err != nil {
		return false
	}
	rest := line[sp+1:]
	return len(rest) == 0 || rest[0] == '{'
}

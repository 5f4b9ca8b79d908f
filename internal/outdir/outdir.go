// Package outdir makes the default output directories of a run of jobs (a local batch's
// inputs: KINETIC_OUTPUT_DIR under a file store's outputs/) from one reused empty
// directory instead of a new one per job.
//
// Why: most inputs write no outputs, yet each needs its directory to exist while it runs.
// Making a directory costs a new inode, and on ext4 a new inode near others deleted in the
// last half minute costs far more (the allocator reads each recently deleted one): a
// directory per input was a third of a local 1,000-input map's CPU (docs/benchmarks.md).
// A Spare instead moves one empty directory from job to job: a job that left it empty
// leaves it where it is, and the next job's Make renames it to that job's name (one
// rename per job); Close removes it after the last. An input that wrote nothing leaves no
// directory once the worker has moved on, as a bucket prefix with no objects does not
// exist; one that wrote something keeps its directory, and the next input gets a new one.
package outdir

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
)

// SparePrefix starts the name of the spare directory builds before 2026-11-27 renamed
// an empty one to between jobs (now it stays at the last job's name): one left by a
// process that died is empty, and `kinetic prune` removes it.
const SparePrefix = ".spare-"

// Spare is one worker's reusable empty directory. It is not safe for concurrent use.
type Spare struct {
	// path is where the spare is now ("": none): the last job's directory, which that
	// job left empty, until the next Make.
	path string
}

// NewSpare returns a worker's Spare, with no directory yet.
func NewSpare() *Spare { return &Spare{} }

// Make makes dir (mode 0700, with its parents): the spare renamed into place if there is
// one, else a new directory. A dir that exists already is kept as it is.
func (s *Spare) Make(dir string) error {
	if s.path == dir {
		s.path = "" // the same name again: it is the job's now, not a spare
		return nil
	}
	if s.path != "" && filepath.Dir(s.path) == filepath.Dir(dir) {
		err := rename(s.path, dir)
		if err == nil {
			s.path = ""
			return nil
		}
		if errors.Is(err, os.ErrNotExist) {
			s.path = "" // the spare is gone (pruned): make a new one below
		}
		// dir exists and holds something (an earlier attempt's outputs): keep both.
	}
	return os.MkdirAll(dir, 0o700)
}

// Reclaim takes dir back as the spare if the job left it empty (unless a spare is kept
// already): it stays where it is until the next Make renames it, or Close removes it. A
// dir that holds something is the job's.
func (s *Spare) Reclaim(dir string) {
	if s.path != "" || !empty(dir) {
		return
	}
	s.path = dir
}

// Close removes the spare.
func (s *Spare) Close() {
	if s.path != "" {
		os.Remove(s.path)
		s.path = ""
	}
}

// empty reports whether dir is an empty directory, in raw system calls: an *os.File
// would register with the poller and set and clear the non-blocking flag, once per input.
func empty(dir string) bool {
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer syscall.Close(fd)
	buf := make([]byte, 4096)
	for {
		n, err := syscall.ReadDirent(fd, buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return false
		}
		if n <= 0 {
			return true
		}
		if _, k, _ := syscall.ParseDirent(buf[:n], 1, nil); k > 0 {
			return false // "." and ".." are not counted
		}
	}
}

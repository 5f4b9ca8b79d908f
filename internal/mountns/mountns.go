// Package mountns shows a job its volumes (volumes={"/data": Data(...)}) at their paths
// on this machine without writing anything outside the job's own directory: the job's
// process runs in a new user and mount namespace (Linux; no privilege needed where
// unprivileged user namespaces are allowed) in which each volume's path is a read-only
// bind mount of the data. When a path does not exist on the machine (/data, usually),
// the namespace gets a private root: a tmpfs holding bind mounts of everything under the
// real root, with the directories the volumes need made on the tmpfs, never on the disk.
//
// Command rewrites an exec.Cmd to start through the kinetic binary itself ("kinetic
// __kinetic-mountns REQUEST -- PROG ARGS..."): the binary's main calls Main first, which
// sets the mounts up in the new namespace and execs the program. Available says whether
// this machine allows it.
package mountns

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/kinetic-run/kinetic/errs"
)

// Arg is the first argument of the helper's command line.
const Arg = "__kinetic-mountns"

// Mount is one volume: the job sees Source (a file or directory) at Target, read-only.
type Mount struct {
	Source string `json:"source"`
	Target string `json:"target"`
}

// request is what the helper is told to do.
type request struct {
	Mounts []Mount `json:"mounts"`
	// Scratch is an empty directory of the job's own, where a private root is built.
	Scratch string `json:"scratch"`
	// Cwd is the directory the program starts in.
	Cwd string `json:"cwd"`
}

// ErrUnavailable means this machine does not let an unprivileged process make a user
// and mount namespace.
var ErrUnavailable = errs.New(errs.FailedPrecondition, "private mount namespaces are not available on this machine")

// Check validates volume paths: absolute, clean, not "/", and not inside dir (the job's
// own directory), so that a mount can neither hide the machine's root nor the job.
func Check(target, dir string) error {
	switch {
	case !filepath.IsAbs(target):
		return fmt.Errorf("volume %q: the path must be absolute, as in \"/data\"", target)
	case filepath.Clean(target) != target:
		return fmt.Errorf("volume %q: write the path as %q", target, filepath.Clean(target))
	case target == "/":
		return fmt.Errorf("volume %q: the root cannot be a volume; choose a path such as \"/data\"", target)
	case dir != "" && (target == dir || strings.HasPrefix(target, dir+"/") || strings.HasPrefix(dir, target+"/")):
		return fmt.Errorf("volume %q overlaps the job's own directory %s; choose another path", target, dir)
	}
	return nil
}

var (
	probeOnce sync.Once
	probeErr  error
)

// Available reports whether this process may run a program in a new user and mount
// namespace (it tries once, with /bin/true, and remembers).
func Available() error {
	probeOnce.Do(func() { probeErr = probe() })
	return probeErr
}

// Command rewrites cmd (its Path, Args, Dir and SysProcAttr already set) to run in a
// new user and mount namespace where mounts are in place. self is the kinetic binary
// (whose main calls Main); scratch is an empty directory of the job's own.
func Command(cmd *exec.Cmd, self string, mounts []Mount, scratch string) error {
	if err := Available(); err != nil {
		return err
	}
	cwd := cmd.Dir
	if cwd == "" {
		var err error
		if cwd, err = os.Getwd(); err != nil {
			return err
		}
	}
	b, err := json.Marshal(request{Mounts: mounts, Scratch: scratch, Cwd: cwd})
	if err != nil {
		return err
	}
	args := append([]string{self, Arg, string(b), "--", cmd.Path}, cmd.Args[1:]...)
	cmd.Path, cmd.Args = self, args
	return namespaced(cmd)
}

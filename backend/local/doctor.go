package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/infra"
	"github.com/kinetic-run/kinetic/pack"
)

// minFree is the free space below which the state directory or a file store is reported
// as full: a job writes its workspace, logs and status there.
const minFree = 64 << 20

// localDoctor checks what a job on the local backend needs: the interpreter, the state
// directory, the store, the slots and, when chosen, the container runtime. A ✗ means a
// job could not run; what only some jobs need is a • note.
func localDoctor(ctx context.Context, res *config.Resolved) *infra.Report {
	r := &infra.Report{OK: true}
	for _, check := range []func(context.Context, *config.Resolved) []infra.Check{
		localBackendCheck, pythonChecks, stateDirCheck, localStoreCheck, slotsCheck, containerChecks,
	} {
		for _, c := range check(ctx, res) {
			r.Checks = append(r.Checks, c)
			if !c.OK && !c.Info {
				r.OK = false
			}
		}
	}
	return r
}

func localBackendCheck(_ context.Context, res *config.Resolved) []infra.Check {
	b := res.Get(config.Backend)
	if b == "" {
		b = Name
	}
	return []infra.Check{{Name: "backend", OK: true, Info: true, Detail: fmt.Sprintf("%s (%s): jobs run on this machine", b, res.Source(config.Backend))}}
}

// pythonChecks check the interpreter (the configured one, else python3 on PATH) and
// whether it has cloudpickle.
func pythonChecks(ctx context.Context, res *config.Resolved) []infra.Check {
	py := res.Get(config.Python)
	if py == "" {
		if p, err := exec.LookPath("python3"); err == nil {
			py = p
		}
	}
	if py == "" {
		return []infra.Check{{Name: "python", Detail: "no python3 on PATH", Fix: "install Python 3 (e.g. apt-get install python3), or set python to an interpreter (kinetic profile set python=/path/to/python3, or KINETIC_PYTHON)"}}
	}
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	out, err := exec.CommandContext(cctx, py, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])\ntry:\n import cloudpickle\n print('cloudpickle', cloudpickle.__version__)\nexcept ImportError:\n print('no cloudpickle')").Output()
	cancel()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err != nil || len(lines) < 2 {
		return []infra.Check{{Name: "python", Detail: fmt.Sprintf("%s does not run (%v)", py, err), Fix: "give a working Python 3 interpreter: kinetic profile set python=/path/to/python3, or KINETIC_PYTHON"}}
	}
	checks := []infra.Check{{Name: "python", OK: true, Detail: fmt.Sprintf("%s (Python %s)", py, lines[0])}}
	if lines[1] == "no cloudpickle" {
		checks = append(checks, infra.Check{Name: "cloudpickle", Info: true, Detail: "not installed for " + py + ": Python SDK calls (pickled functions) need it; kinetic run FILE.py::FUNC and commands do not",
			Fix: "pip install cloudpickle (Debian: apt-get install python3-cloudpickle)"})
	}
	return checks
}

// stateDirCheck checks the state directory: workspaces, logs and local environments.
func stateDirCheck(context.Context, *config.Resolved) []infra.Check {
	return []infra.Check{dirCheck("state directory", config.DataDir(), config.DataDir(), "KINETIC_HOME")}
}

// localStoreCheck: a file:// store is a directory here; others are checked by using them.
func localStoreCheck(_ context.Context, res *config.Resolved) []infra.Check {
	st := res.Get(config.Store)
	if u, err := url.Parse(st); err == nil && u.Scheme == "file" {
		return []infra.Check{dirCheck("store", u.Path, st, "store (--store, KINETIC_STORE or the profile)")}
	}
	return []infra.Check{{Name: "store", OK: true, Info: true, Detail: st + " (" + res.Source(config.Store) + "; reached when a job is submitted)"}}
}

func slotsCheck(_ context.Context, res *config.Resolved) []infra.Check {
	slots := res.Get("local_slots")
	return []infra.Check{{Name: "slots", OK: true, Info: true, Detail: fmt.Sprintf("%s jobs at once (%s; local_slots)", slots, res.Source("local_slots"))}}
}

// containerChecks check the container runtime, when one is chosen.
func containerChecks(_ context.Context, res *config.Resolved) []infra.Check {
	c := res.Get(config.Container)
	if c == "" || c == "none" {
		return nil
	}
	var found string
	for _, name := range []string{"podman", "docker"} {
		if c != "auto" && c != name {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			found = p
			break
		}
	}
	if found == "" {
		return []infra.Check{{Name: "container runtime", Detail: fmt.Sprintf("container=%s (%s), but no %s on PATH", c, res.Source(config.Container), strings.ReplaceAll(c, "auto", "podman or docker")),
			Fix: "install podman (apt-get install podman), or set container=none to run jobs in a local Python environment"}}
	}
	return []infra.Check{{Name: "container runtime", OK: true, Detail: found}}
}

// dirCheck checks that dir (or, before the first job makes it, its nearest existing
// parent) is a writable directory with space left; shown is how the detail names it.
func dirCheck(name, dir, shown, setting string) infra.Check {
	at := dir
	for {
		fi, err := os.Stat(at)
		if err == nil {
			if !fi.IsDir() {
				return infra.Check{Name: name, Detail: fmt.Sprintf("%s is not a directory", at), Fix: "move it aside, or set " + setting + " to a directory"}
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) || filepath.Dir(at) == at {
			return infra.Check{Name: name, Detail: err.Error(), Fix: "set " + setting + " to a directory you can write"}
		}
		at = filepath.Dir(at)
	}
	if err := unix.Access(at, unix.W_OK); err != nil {
		return infra.Check{Name: name, Detail: fmt.Sprintf("%s is not writable", at), Fix: "fix its permissions, or set " + setting + " to a directory you can write"}
	}
	var sfs unix.Statfs_t
	if err := unix.Statfs(at, &sfs); err == nil {
		free := int64(sfs.Bavail) * int64(sfs.Bsize)
		if free < minFree {
			return infra.Check{Name: name, Detail: fmt.Sprintf("%s: no space left (%s free)", at, pack.HumanBytes(free)), Fix: "free some space there, or set " + setting + " to another disk"}
		}
		detail := fmt.Sprintf("%s (%s free)", shown, pack.HumanBytes(free))
		if at != dir {
			detail = fmt.Sprintf("%s (made by the first job; %s free)", shown, pack.HumanBytes(free))
		}
		return infra.Check{Name: name, OK: true, Detail: detail}
	}
	return infra.Check{Name: name, OK: true, Detail: shown}
}

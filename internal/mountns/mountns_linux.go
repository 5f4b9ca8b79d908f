package mountns

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// namespaced adds the new user and mount namespace to cmd: the process keeps its user
// and group (mapped to themselves), so files it makes are its own as before.
func namespaced(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	a := cmd.SysProcAttr
	a.Cloneflags |= syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS
	a.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
	a.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
	a.GidMappingsEnableSetgroups = false
	// A process that is not root in the namespace loses the namespace's capabilities at
	// its exec (of the helper): keep the two the helper mounts and chroots with, as
	// ambient capabilities, which it clears before it execs the program.
	a.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_SYS_CHROOT}
	return nil
}

func probe() error {
	var path string
	for _, p := range []string{"/bin/true", "/usr/bin/true"} {
		if _, err := os.Stat(p); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		return fmt.Errorf("%w (no /bin/true to try it with)", ErrUnavailable)
	}
	cmd := exec.Command(path)
	namespaced(cmd)
	if err := cmd.Run(); err != nil {
		why := err.Error()
		if b, _ := os.ReadFile("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); strings.TrimSpace(string(b)) == "1" {
			why += "; AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=1)"
		}
		if b, _ := os.ReadFile("/proc/sys/user/max_user_namespaces"); strings.TrimSpace(string(b)) == "0" {
			why += "; user.max_user_namespaces=0"
		}
		return fmt.Errorf("%w: %s", ErrUnavailable, why)
	}
	return nil
}

// Main runs the helper when the process was started by Command (os.Args[1] == Arg): it
// never returns then. Otherwise it returns at once. Call it first in main.
func Main() {
	if len(os.Args) < 4 || os.Args[1] != Arg || os.Args[3] != "--" || len(os.Args) < 5 {
		return
	}
	var r request
	if err := json.Unmarshal([]byte(os.Args[2]), &r); err != nil {
		fail(fmt.Errorf("bad request: %w", err))
	}
	if err := setup(r); err != nil {
		fail(err)
	}
	// The program gets no capability of the helper's (a root user keeps its own, as
	// everywhere). Capabilities are a thread's: the clear and the exec run on one OS
	// thread, or the exec may come from another thread that still holds them (seen
	// under load: the program ran with CAP_SYS_ADMIN and CAP_SYS_CHROOT).
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		fail(fmt.Errorf("drop the helper's capabilities: %w", err))
	}
	prog := os.Args[4]
	if err := syscall.Exec(prog, os.Args[4:], os.Environ()); err != nil {
		fail(fmt.Errorf("cannot start %s: %w", prog, err))
	}
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "kinetic: volumes: %v\n", err)
	os.Exit(126)
}

// setup puts every mount in place in this (new) mount namespace and, when a private
// root was needed, enters it.
func setup(r request) error {
	// Nothing done here may reach the machine's mounts.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make the mounts private: %w", err)
	}
	needRoot := false
	for _, m := range r.Mounts {
		if _, err := os.Stat(m.Target); err != nil {
			needRoot = true
		}
	}
	b := &builder{root: "/", owned: map[string]bool{}}
	if needRoot {
		b.root = r.Scratch
		if err := unix.Mount("tmpfs", b.root, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
			return fmt.Errorf("private root on %s: %w", b.root, err)
		}
		b.owned["/"] = true
		if err := b.replicate("/"); err != nil {
			return err
		}
	}
	for _, m := range r.Mounts {
		fi, err := os.Stat(m.Source)
		if err != nil {
			return fmt.Errorf("volume %s: %w", m.Target, err)
		}
		if err := b.makePath(m.Target, fi.IsDir()); err != nil {
			return fmt.Errorf("volume %s: %w", m.Target, err)
		}
		if err := bindReadOnly(m.Source, b.at(m.Target)); err != nil {
			return fmt.Errorf("volume %s: %w", m.Target, err)
		}
	}
	if needRoot {
		if err := unix.Chroot(b.root); err != nil {
			return fmt.Errorf("enter the private root: %w", err)
		}
	}
	if err := os.Chdir(r.Cwd); err != nil {
		return fmt.Errorf("working directory: %w", err)
	}
	return nil
}

// builder makes paths under root (the private root, or "/" when every volume's path
// exists). owned holds the directories (as seen by the job) that are on the tmpfs: only
// there may anything be created.
type builder struct {
	root  string
	owned map[string]bool
}

func (b *builder) at(p string) string { return filepath.Join(b.root, p) }

// replicate fills the owned directory dir (empty, on the tmpfs) with the entries of the
// machine's dir: a bind mount of each directory and file, a copy of each symlink.
func (b *builder) replicate(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("read %s: %w", dir, err)
	}
	for _, e := range ents {
		host := filepath.Join(dir, e.Name())
		p := b.at(host)
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			t, err := os.Readlink(host)
			if err != nil {
				return err
			}
			if err := os.Symlink(t, p); err != nil {
				return err
			}
		case e.IsDir():
			if err := os.Mkdir(p, 0o755); err != nil {
				return err
			}
			if err := unix.Mount(host, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
				return fmt.Errorf("bind %s: %w", host, err)
			}
		default:
			f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			f.Close()
			if err := unix.Mount(host, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
				// A socket or a device that cannot be bound: leave it out.
				os.Remove(p)
			}
		}
	}
	return nil
}

// makePath makes target exist (a directory, or a file when dir is false) as the job will
// see it. A path that exists on the machine needs nothing (the mount goes over it);
// otherwise its missing components are made on the tmpfs, turning each machine
// directory on the way into a tmpfs copy of itself first (shadow), so that nothing is
// ever made on the machine's disks.
func (b *builder) makePath(target string, dir bool) error {
	if _, err := os.Lstat(b.at(target)); err == nil {
		return nil
	}
	parts := strings.Split(strings.TrimPrefix(target, "/"), "/")
	cur := "/"
	for k, c := range parts {
		next := filepath.Join(cur, c)
		last := k == len(parts)-1
		fi, err := os.Lstat(b.at(next))
		if err == nil {
			if last {
				return nil
			}
			if fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir() {
				return errors.New("a component of the path is not a directory on this machine: " + next)
			}
			cur = next
			continue
		}
		if !b.owned[cur] {
			if err := b.shadow(cur); err != nil {
				return err
			}
		}
		if last && !dir {
			f, err := os.OpenFile(b.at(next), os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			f.Close()
			return nil
		}
		if err := os.Mkdir(b.at(next), 0o755); err != nil {
			return err
		}
		b.owned[next] = true
		cur = next
	}
	return nil
}

// shadow covers dir (the machine's directory, seen through a bind) with a tmpfs holding
// binds of that directory's entries, so that something can be made in it. The machine's
// directory is still read at its own path: the private root is entered only at the end.
func (b *builder) shadow(dir string) error {
	p := b.at(dir)
	if err := unix.Mount("tmpfs", p, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
		return fmt.Errorf("shadow %s: %w", dir, err)
	}
	b.owned[dir] = true
	return b.replicate(dir)
}

// bindReadOnly mounts src at dst, read-only. In a user namespace the remount must keep
// the flags the source's mount was locked with (nosuid, nodev, ...), or it is refused.
func bindReadOnly(src, dst string) error {
	if err := unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return err
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dst, &st); err != nil {
		return err
	}
	const kept = unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC | unix.MS_NOATIME | unix.MS_NODIRATIME | unix.MS_RELATIME
	flags := uintptr(unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY) | uintptr(st.Flags)&kept
	return unix.Mount("", dst, "", flags, "")
}

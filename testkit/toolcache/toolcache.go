// Package toolcache is the one place the test tools (fake-gcs-server, the Kubernetes
// binaries, the LeaderWorkerSet controller, the Python base image) are built into: a
// per-user cache outside the repository, one directory per tool and version, each filled
// at most once under a file lock and only ever by a rename, so a killed build leaves
// nothing half-made.
//
// The cache is $KINETIC_TOOLS_CACHE when set, else $XDG_CACHE_HOME/kinetic-tools
// (os.UserCacheDir). Point it at an empty directory to exercise the cold path: every
// builder here works from nothing, from a test, a TestMain or a plain main, and reports
// on stderr (never through package testing, whose flags a TestMain has not parsed yet).
package toolcache

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/kinetic-run/kinetic/internal/filelock"
)

// EnvDir names the cache's root when set.
const EnvDir = "KINETIC_TOOLS_CACHE"

// Root returns the cache's root directory.
func Root() (string, error) {
	if d := os.Getenv(EnvDir); d != "" {
		return filepath.Abs(d)
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for test tools (set %s or XDG_CACHE_HOME): %w", EnvDir, err)
	}
	return filepath.Join(base, "kinetic-tools"), nil
}

// Dir returns the directory of one tool at one version, e.g. Dir("kube-v1.33.13").
func Dir(name string) (string, error) {
	root, err := Root()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, name), nil
}

// Logf reports progress of a build on stderr: builds take minutes cold, and a person
// watching `make test` should know why it is quiet.
func Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
}

// Fill makes dir unless done reports it complete: under a lock on dir+".lock", build
// writes a private temporary directory, which then replaces dir. Parallel callers (test
// packages run as separate processes) wait for the first one and reuse its result.
func Fill(ctx context.Context, dir string, done func() bool, build func(ctx context.Context, tmp string) error) error {
	if done() {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("tools cache: %w", err)
	}
	unlock, err := filelock.Lock(dir + ".lock")
	if err != nil {
		return fmt.Errorf("tools cache: lock %s: %w", dir, err)
	}
	defer unlock()
	if done() { // another process made it while we waited
		return nil
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".build-")
	if err != nil {
		return fmt.Errorf("tools cache: %w", err)
	}
	defer os.RemoveAll(tmp)
	start := time.Now()
	if err := build(ctx, tmp); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	os.RemoveAll(dir) // an incomplete earlier attempt of an older layout
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("tools cache: %w", err)
	}
	Logf("toolcache: made %s in %s", dir, time.Since(start).Round(time.Second))
	return nil
}

// CPU describes the processor time a finished command (with the processes it waited
// for, such as go build's compilers) used: user+system, which, unlike the elapsed time,
// does not depend on what else the machine is doing.
func CPU(ps *os.ProcessState) string {
	if ps == nil {
		return "CPU unknown"
	}
	return fmt.Sprintf("CPU %s (user %s, system %s)", (ps.UserTime() + ps.SystemTime()).Round(time.Second), ps.UserTime().Round(time.Second), ps.SystemTime().Round(time.Second))
}

// Executable reports whether p is a regular file with an execute bit.
func Executable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

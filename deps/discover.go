// Package deps discovers a project's Python dependencies and turns them into the
// environment a job runs in.
//
// Discover finds requirements.txt or pyproject.toml; ParseRequirements implements pip's
// requirements-file grammar (PEP 508 lines, continuation lines, comments, index and
// source directives, -r/-c includes) and refuses what cannot travel to another machine
// (editable installs, local paths) or must not (URLs with credentials).
// Requirements.Filtered drops the accelerator runtime (jax, jaxlib, libtpu) that the
// container already pins, and EnvKey hashes the result, with the base image, the
// accelerator category and the runner version, into the environment key. See
// docs/dependencies.md for the grammar, the filter and the exact key format.
package deps

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Dependency file names, in order of precedence within one directory.
const (
	RequirementsFile = "requirements.txt"
	PyprojectFile    = "pyproject.toml"
)

// Discover finds the project's dependency file, looking in startDir and then in each
// parent directory, and parses it. In each directory requirements.txt wins over
// pyproject.toml; a pyproject.toml without a [project] table (tool configuration only)
// does not count and the search goes on. The search ends after the first directory that
// contains .git, that is $HOME, that is stopDir (if not ""), or that is the filesystem
// root. When no file is found the result is empty (Source == ""): the job gets the base
// environment only.
func Discover(startDir, stopDir string) (*Requirements, error) {
	dir, err := filepath.Abs(startDir)
	if err != nil {
		return nil, fmt.Errorf("discover dependencies: %w", err)
	}
	stop := ""
	if stopDir != "" {
		if stop, err = filepath.Abs(stopDir); err != nil {
			return nil, fmt.Errorf("discover dependencies: %w", err)
		}
	}
	home, _ := os.UserHomeDir()
	if home != "" {
		home = filepath.Clean(home)
	}
	for {
		if r, found, err := discoverIn(dir); found || err != nil {
			return r, err
		}
		parent := filepath.Dir(dir)
		if exists(filepath.Join(dir, ".git")) || dir == home || dir == stop || parent == dir {
			break
		}
		dir = parent
	}
	return &Requirements{}, nil
}

// discoverIn parses the dependency file of dir: requirements.txt, else a pyproject.toml
// with a [project] table; found is false when dir has neither.
func discoverIn(dir string) (r *Requirements, found bool, err error) {
	req := filepath.Join(dir, RequirementsFile)
	if isFile(req) {
		r, err := ParseRequirementsFile(req)
		return r, true, err
	}
	pp := filepath.Join(dir, PyprojectFile)
	if !isFile(pp) {
		return nil, false, nil
	}
	r, err = ParsePyprojectFile(pp)
	switch {
	case err == nil:
		return r, true, nil
	case errors.Is(err, errNoProject):
		return nil, false, nil
	}
	return nil, true, err
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil || !errors.Is(err, fs.ErrNotExist)
}

package plan

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/pack"
)

// tree opens the store and scans the shipped root (pack.Scan): what ships, what is
// left out and why, the entry file inside it. Uploads happen when the job is written.
func tree(ctx context.Context, env Env, req *Request, p *Job) error {
	// The store first: the scan leaves out a file store inside the shipped root.
	st, err := env.Store(ctx, p.Cfg.Get(config.Store))
	if err != nil {
		return err
	}
	p.Store = st
	if req.NoWorkdir {
		if req.Kind == job.KindEntry {
			return errs.New(errs.InvalidArgument, "an entry job needs its working directory")
		}
		return nil
	}
	root, err := ShippedRoot(p.Cfg, req, p.cwd)
	if err != nil {
		return err
	}
	// Kinetic's own state never ships: a KINETIC_HOME or file store inside the root
	// (a project that keeps them there, or a root that is the home directory) changes
	// while it is scanned, and holds every job.
	skip := append(req.dataPaths(), config.DataDir())
	if d := st.LocalDir(); d != "" {
		skip = append(skip, d)
	}
	p.PackOpts = pack.Options{CacheDir: PackCache(), Skip: pack.SkipPaths(root, p.cwd, skip),
		NoDefaultExcludes: p.Cfg.Get(config.NoDefaultExcludes) == "true"}
	m, err := pack.Scan(ctx, root, p.PackOpts)
	if err != nil {
		return withCode(errs.FailedPrecondition, fmt.Errorf("working directory %s: %w", root, err))
	}
	mb, _ := strconv.ParseFloat(p.Cfg.Get(config.ContextSizeWarnMB), 64)
	if msg := pack.SizeWarning(m, int64(mb*(1<<20))); msg != "" {
		env.Warning(msg)
	}
	if msg := pack.SecretWarning(m); msg != "" {
		env.NoticeOnce("kinetic: warning: " + msg + "\n") // once per session, as the reference's
	}
	for i, n := range m.Notes {
		if i == 5 {
			env.Warning(fmt.Sprintf("... and %d more left out of the working directory", len(m.Notes)-i))
			break
		}
		env.Warning(n)
	}
	p.Manifest, p.Root = m, root
	if rel, err := filepath.Rel(root, p.cwd); err == nil && !strings.HasPrefix(rel, "..") {
		p.Spec.Cwd = filepath.ToSlash(rel)
	}
	if req.Kind == job.KindEntry {
		f := req.Entry.File
		if !filepath.IsAbs(f) {
			f = filepath.Join(p.cwd, f)
		}
		if _, err := os.Stat(f); err != nil {
			return errs.Errorf(errs.InvalidArgument, "entry file %s: %w", req.Entry.File, err)
		}
		rel, err := filepath.Rel(root, f)
		if err != nil || strings.HasPrefix(rel, "..") {
			return errs.Errorf(errs.InvalidArgument, "entry file %s is outside the shipped root %s: move it under the root, or run from a directory above it", req.Entry.File, root)
		}
		p.Spec.Entry = &job.Entry{File: filepath.ToSlash(rel), Func: req.Entry.Func, Args: req.Entry.Args, Kwargs: req.Entry.Kwargs}
	}
	return nil
}

// ShippedRoot is the setting package_root (relative to cwd, or under ~), else the root detected from the code's
// directory (pack.FindRoot).
func ShippedRoot(cfg *config.Resolved, req *Request, cwd string) (string, error) {
	home, _ := os.UserHomeDir()
	if r := cfg.Get(config.PackageRoot); r != "" {
		return config.ExpandPath(r, cwd, home), nil
	}
	return pack.FindRoot(codeDir(req, cwd), home), nil
}

// codeDir is the directory of the code being run: the function's file, the entry file,
// or else the working directory. Root detection and dependency discovery start there.
func codeDir(req *Request, cwd string) string {
	if req.Kind == job.KindEntry && req.Entry != nil {
		f := req.Entry.File
		if !filepath.IsAbs(f) {
			f = filepath.Join(cwd, f)
		}
		return filepath.Dir(f)
	}
	if req.SourceFile != "" {
		if fi, err := os.Stat(req.SourceFile); err == nil && !fi.IsDir() {
			return filepath.Dir(req.SourceFile)
		}
	}
	return cwd
}

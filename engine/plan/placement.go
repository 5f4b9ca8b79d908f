package plan

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/kinetic-run/kinetic/accel"
	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/image"
	"github.com/kinetic-run/kinetic/job"
)

// placement decides where the job runs: the configured backend, as its factory settles
// it (Factory.Plan: a backend may send the job to another (a slice over several hosts
// to a multi-host backend), refuse it (the local backend runs one host; a cloud backend
// without its project)), and on this machine whether in a container and with which
// interpreter.
func placement(ctx context.Context, env Env, req *Request, p *Job) error {
	// A malformed container_image is refused here, before the store is opened (and
	// created) by the steps after this one; the image step uses it.
	if req.ContainerImage != "" {
		if _, err := image.ParseChoice(req.ContainerImage); err != nil {
			return err
		}
	}
	if err := unconfiguredAccelerator(p.Cfg, p.acc); err != nil {
		return err
	}
	if err := Preflight(p.Cfg); err != nil {
		return err
	}
	where, err := Backend(p.Cfg, p.acc)
	if err != nil {
		return err
	}
	p.where = where
	p.filesShared = backend.SharesFiles(where.Backend)
	container := p.Cfg.Get(config.Container)
	if req.Python == "" && req.Kind != job.KindCommand && p.filesShared && container == "" && p.Cfg.Get(config.Python) == "" {
		// kinetic run FILE.py::FUNC: the python3 on PATH, resolved through a shim
		// (pyenv's is a shell script, which warm workers cannot be made of).
		req.Python = env.PathPython()
	}
	if req.Python != "" && p.filesShared && container == "" {
		// On this machine the interpreter must be the one asked for: falling back to
		// another Python would run the job with other packages, silently.
		if fi, err := os.Stat(req.Python); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return errs.Errorf(errs.InvalidArgument, "python %q is not an executable file: give the path of a Python 3 interpreter (e.g. $(command -v python3)), or leave it out", Clip(req.Python))
		}
	}
	p.Spec.Python = req.Python
	p.InContainer = !p.filesShared || container != ""
	if p.filesShared && p.acc.Kind != accel.CPU && backend.OnThisMachinesHardware(where.Backend) {
		env.NoticeOnce(fmt.Sprintf("kinetic: the %s backend runs %s jobs on this machine's CPU: no %s is attached here (a cluster backend runs them on one: see kinetic up)\n",
			where.Backend, p.acc.Name, strings.ToUpper(string(p.acc.Kind))))
	}
	return nil
}

// Preflight checks the fundamental thing of the configured backend (a kubeconfig that
// names a cluster, for a Kubernetes backend reached through one) before anything else is
// asked for (an image registry, a store): backend.Preflighter. Planning does it for the
// SDK's calls and the CLI's alike; `kinetic run` also calls it before it looks for FUNC.
func Preflight(cfg *config.Resolved) error {
	name := cfg.Get(config.Backend)
	if name == "" {
		name = config.DefaultBackend()
	}
	f, ok := backend.Lookup(name)
	if !ok {
		return nil // unknown: Backend says so, with the names there are
	}
	if pf, ok := f.(backend.Preflighter); ok {
		if err := pf.Preflight(Settings{C: cfg}); err != nil {
			return errs.Wrap(errs.FailedPrecondition, err)
		}
	}
	return nil
}

// unconfiguredAccelerator refuses a GPU or TPU job when nothing chose where jobs run:
// the default backend runs on this machine, which would run it on its CPU without the
// user having asked for that. A backend chosen on purpose (an argument, KINETIC_BACKEND,
// a profile, a project) is obeyed: an explicit local backend runs GPU and TPU jobs on the
// CPU here, and says so once (placement's notice) — the way to try a TPU script on a
// laptop (docs/configuration.md, "Where a job runs").
func unconfiguredAccelerator(cfg *config.Resolved, acc accel.Spec) error {
	if acc.Kind == accel.CPU || !defaultHere(cfg) {
		return nil
	}
	kind := strings.ToUpper(string(acc.Kind))
	return errs.Errorf(errs.InvalidArgument, "accelerator %s needs a %s, and nothing says where one is: with no backend, project or profile set, jobs run on this machine's CPU. "+
		"Run `kinetic up --accelerator %s` to make a GKE cluster with one, or set KINETIC_PROJECT (or `kinetic profile use NAME`) for a cluster you have; "+
		"to run it here on the CPU anyway, choose the local backend explicitly (kinetic run --backend local, kinetic.run(backend=\"local\") or KINETIC_BACKEND=local)",
		acc.Name, kind, acc.Name)
}

// defaultHere reports whether nothing chose where jobs run (no argument,
// KINETIC_BACKEND, profile or project) and the default backend runs them here.
func defaultHere(cfg *config.Resolved) bool {
	name := cfg.Get(config.Backend)
	if name == "" {
		name = config.DefaultBackend()
	}
	return cfg.Source(config.Backend) == config.SourceDefault && backend.SharesFiles(name)
}

// Backend returns where a job with accelerator acc runs: a handle with the backend's
// name and the cluster fields of cfg, as the factory of the configured backend settles
// them (Factory.Plan).
func Backend(cfg *config.Resolved, acc accel.Spec) (*job.Handle, error) {
	name := cfg.Get(config.Backend)
	if name == "" {
		name = config.DefaultBackend()
	}
	h := &job.Handle{Backend: name, Project: cfg.Get(config.Project), ClusterName: cfg.Get(config.Cluster),
		Zone: cfg.Get(config.Zone), Namespace: cfg.Get(config.Namespace), KubeContext: cfg.Get(config.KubeContext)}
	f, ok := backend.Lookup(name)
	if !ok {
		return nil, errs.Errorf(errs.InvalidArgument, "unknown backend %q: this kinetic runs %s", name, strings.Join(backend.Names(), ", "))
	}
	if err := f.Plan(h, acc, Settings{cfg}); err != nil {
		return nil, err
	}
	return h, nil
}

// Settings are a resolved configuration as the backends read it.
type Settings struct{ C *config.Resolved }

// Get implements backend.Settings.
func (s Settings) Get(key string) string { return s.C.Get(config.Key(key)) }

// Source says where key's value came from (backend.SourceOf).
func (s Settings) Source(key string) string { return s.C.Source(config.Key(key)) }

// Clip shortens a user's input echoed in an error: a 100 KB argument must not fill the
// terminal.
func Clip(s string) string {
	const max = 200
	if len(s) <= max {
		return s
	}
	return s[:max] + fmt.Sprintf("... (%d bytes)", len(s))
}

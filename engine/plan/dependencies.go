package plan

import (
	"context"
	"path/filepath"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/deps"
	"github.com/kinetic-run/kinetic/image"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/version"
)

// dependencies discovers the requirements of a shipped Python job (from the code's
// directory up to the shipped root), drops the accelerator runtimes, says so once, and
// keys the environment (the virtualenv locally, the image tag in a container).
func dependencies(ctx context.Context, env Env, req *Request, p *Job) error {
	if p.Manifest == nil || req.Kind == job.KindCommand {
		return nil
	}
	s := p.Spec
	reqs, err := deps.Discover(codeDir(req, p.cwd), p.Root)
	if err != nil {
		return err
	}
	kept, dropped := reqs.Filtered()
	p.Reqs = kept
	msg := deps.DroppedMessage(dropped, p.InContainer)
	if !p.InContainer && len(kept.Requirements()) > 0 && p.Cfg.Get(config.RuntimeLayer) != "none" {
		// The local virtualenv of a job with requirements gets the CPU runtime too, so
		// that import jax and keras work as in an image (the user's jax line was
		// dropped above); a job without requirements runs in the caller's interpreter.
		if kept, err = withRuntime(p, kept, venvCategory(p)); err != nil {
			return err
		}
		msg = deps.DroppedForRuntime(dropped, "the job's environment")
	}
	env.NoticeOnce(msg)
	s.Requirements, s.Constraints, s.RequirementsSource = kept.Lines(), kept.ConstraintLines(), reqs.Source
	// Locally the "base image" is the interpreter the environment is made from.
	base := "python:" + req.Python
	if req.Python == "" {
		base = "python:python3"
	}
	if py, err := filepath.EvalSymlinks(req.Python); err == nil {
		base = "python:" + py
	}
	s.EnvKey = deps.EnvKey(kept, base, p.acc.Category(), version.Version)
	return nil
}

// venvCategory is the runtime layer a virtualenv gets: the CPU's on a backend that runs
// jobs with this machine's hardware, else the accelerator's the job asks for
// (Traits.ThisMachinesHardware: a GPU job on nodes of their own gets jax for CUDA).
func venvCategory(p *Job) string {
	if p.where != nil && !backend.OnThisMachinesHardware(p.where.Backend) {
		return p.acc.Category()
	}
	return "cpu"
}

// runtimeProjects are the runtime layer's projects for category, none with
// runtime_layer=none.
func runtimeProjects(p *Job, category string) []string {
	if p.Cfg.Get(config.RuntimeLayer) == "none" {
		return nil
	}
	return image.RuntimeProjects(category)
}

// withRuntime is reqs with the runtime layer of category merged in
// (deps.Requirements.WithRuntime), or reqs as they are with runtime_layer=none.
func withRuntime(p *Job, reqs *deps.Requirements, category string) (*deps.Requirements, error) {
	if p.Cfg.Get(config.RuntimeLayer) == "none" {
		return reqs, nil
	}
	return reqs.WithRuntime(image.MustRuntimeRequirements(category))
}

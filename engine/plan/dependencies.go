package plan

import (
	"context"
	"path/filepath"

	"github.com/kinetic-run/kinetic/deps"
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
	env.NoticeOnce(deps.DroppedMessage(dropped, p.InContainer))
	s.Requirements, s.Constraints, s.RequirementsSource = kept.Lines(), kept.ConstraintLines(), reqs.Source
	p.Reqs = kept
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

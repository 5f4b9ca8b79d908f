package plan

import (
	"context"

	"github.com/kinetic-run/kinetic/job"
)

// settings resolves the call's configuration (its explicit arguments over
// KINETIC_* over the profile over the defaults) and gives the job its ID and spec.
func settings(ctx context.Context, env Env, req *Request, p *Job) error {
	cfg, err := env.Resolve(req.Config)
	if err != nil {
		return err
	}
	p.Cfg, p.id = cfg, job.NewID()
	p.Spec = &job.Spec{Version: job.SpecVersion, JobID: p.id, Kind: req.Kind}
	return nil
}

package plan

import (
	"context"

	"github.com/kinetic-run/kinetic/accel"
)

// accelerator parses the accelerator (cpu when none is named; spot when asked): a bad
// name fails here, with the closest valid names.
func accelerator(ctx context.Context, env Env, req *Request, p *Job) error {
	name := req.Accelerator
	if name == "" {
		name = "cpu"
	}
	spec, err := accel.Parse(name)
	if err != nil {
		return err
	}
	if req.Spot && !spec.Spot {
		if spec, err = accel.Parse(spec.Name + ":spot"); err != nil {
			return err
		}
	}
	p.acc = spec
	p.Spec.Accelerator, p.Spec.Spot = spec.Name, spec.Spot
	return nil
}

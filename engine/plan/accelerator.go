package plan

import (
	"context"

	"github.com/kinetic-run/kinetic/accel"
)

// DefaultAccelerator is the accelerator of a call that names none, in the SDK
// (kinetic.run's documented default, seed 003) and in kinetic run.
const DefaultAccelerator = "tpu-v5e-1"

// accelerator parses the accelerator (cpu when none is named; spot when asked): a bad
// name fails here, with the closest valid names. The default accelerator with nothing
// configured is the CPU here (defaultHere).
func accelerator(ctx context.Context, env Env, req *Request, p *Job) error {
	name := req.Accelerator
	if name == "" {
		name = "cpu"
	}
	if req.AcceleratorDefault && defaultHere(p.Cfg) {
		name = "cpu"
		env.NoticeOnce("kinetic: no accelerator named and no cluster configured: the job runs on this machine's CPU; the default accelerator, " +
			DefaultAccelerator + ", applies once a cluster is (kinetic up)\n")
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

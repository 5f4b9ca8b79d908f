package runner

import (
	"fmt"

	"github.com/kinetic-run/kinetic/job"
)

// noCloudpickleType is the exc_type the bootstrap reports when the job's Python has no
// cloudpickle (bootstrap.py NoCloudpickle): nothing of the user's ran.
const noCloudpickleType = "kinetic.NoCloudpickle"

// noCloudpickle is the failure of a pickled call in a Python without cloudpickle, in
// the user's words: the image it ran in (the user's name for a custom one) and the fix.
func noCloudpickle(spec *job.Spec, py string) error {
	img := spec.ContainerImage
	if img == "" {
		img = spec.Image
	}
	switch {
	case img != "" && spec.ImageMode == "custom":
		return fmt.Errorf("the image %s has no cloudpickle, which Kinetic needs to load the pickled function before it runs: add cloudpickle to %s (pip install cloudpickle), or use container_image='bundled' (Kinetic's images have it)", img, img)
	case img != "":
		return fmt.Errorf("the image %s has no cloudpickle, which Kinetic needs to load the pickled function before it runs: its runtime layer was left out (runtime_layer=none, or a requirement replaced it); add cloudpickle to the requirements, or set runtime_layer=jax", img)
	}
	return fmt.Errorf("the job's Python (%s) has no cloudpickle, which Kinetic needs to load the pickled function before it runs: install it there (%s -m pip install cloudpickle), or add cloudpickle to the requirements", py, py)
}

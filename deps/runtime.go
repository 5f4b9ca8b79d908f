package deps

import (
	"fmt"
	"slices"
)

// runtimeGroup is the group a runtime requirement belongs to when the user's list names
// the same package: the jax group (jax, jaxlib, libtpu, libtpu-nightly: replaced as a
// whole, since their versions must line up) or the package's own name.
func runtimeGroup(name string) string {
	if IsAcceleratorRuntime(name) {
		return "jax"
	}
	return NormalizeName(name)
}

// WithRuntime returns a copy of r, a filtered list (Filtered), with the runtime lines
// (image.RuntimeRequirements: jax for the hardware, keras, cloudpickle) added after the
// user's entries, so that one pip resolution installs both and they agree. The user's
// own lines win:
//
//   - a requirement naming jax, jaxlib, libtpu or libtpu-nightly that survived the
//     filter (it carries "# kn:keep") replaces all of the runtime's jax lines;
//   - a requirement naming any other runtime package (keras, cloudpickle) replaces the
//     runtime's line for it;
//   - a constraint naming a runtime package (from a -c file) leaves the runtime's line in
//     without its version, so that the constraint picks the version.
//
// A runtime line that does not parse is an error (the lines are Kinetic's own). r is
// not changed; nil r is an empty list.
func (r *Requirements) WithRuntime(runtime []string) (*Requirements, error) {
	out := &Requirements{}
	if r != nil {
		out.Source, out.Files = r.Source, slices.Clone(r.Files)
		out.Entries, out.Constraints = slices.Clone(r.Entries), slices.Clone(r.Constraints)
	}
	named, constrained := map[string]bool{}, map[string]bool{}
	for _, e := range out.Entries {
		if e.Req != nil {
			named[runtimeGroup(e.Req.Name)] = true
		}
	}
	for _, c := range out.Constraints {
		constrained[runtimeGroup(c.Name)] = true
	}
	for _, line := range runtime {
		req, err := ParseRequirement(line)
		if err != nil {
			return nil, fmt.Errorf("runtime requirement %q: %w", line, err)
		}
		g := runtimeGroup(req.Name)
		if named[g] {
			continue
		}
		if constrained[g] {
			req.Specifier = ""
		}
		req.Text = line
		out.Entries = append(out.Entries, Entry{Req: &req})
	}
	return out, nil
}

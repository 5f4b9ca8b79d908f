package deps

import (
	"fmt"
	"strings"
)

// AcceleratorRuntime lists the normalised project names Filtered drops: the container
// already has them installed, pinned to versions that match its hardware.
var AcceleratorRuntime = []string{"jax", "jaxlib", "libtpu", "libtpu-nightly"}

// IsAcceleratorRuntime reports whether a (normalised) project name is one of
// AcceleratorRuntime.
func IsAcceleratorRuntime(name string) bool {
	name = NormalizeName(name)
	for _, n := range AcceleratorRuntime {
		if n == name {
			return true
		}
	}
	return false
}

// Filtered returns a copy of r without the accelerator runtime requirements and
// constraints (jax, jaxlib, libtpu, libtpu-nightly, with any extras, specifier, URL or
// marker), except those whose line carries "# kn:keep", and the dropped entries in
// order, so the caller can say what was dropped (DroppedMessage). Constraints are
// filtered too: a jax pin in a constraints file would make pip replace the
// container's jax as soon as another package depends on it.
func (r *Requirements) Filtered() (kept *Requirements, dropped []Requirement) {
	if r == nil {
		return &Requirements{}, nil
	}
	kept = &Requirements{Source: r.Source, Files: append([]string(nil), r.Files...)}
	for _, e := range r.Entries {
		if e.Req != nil && !e.Req.Keep && IsAcceleratorRuntime(e.Req.Name) {
			dropped = append(dropped, *e.Req)
			continue
		}
		kept.Entries = append(kept.Entries, e)
	}
	for _, c := range r.Constraints {
		if !c.Keep && IsAcceleratorRuntime(c.Name) {
			dropped = append(dropped, c)
			continue
		}
		kept.Constraints = append(kept.Constraints, c)
	}
	return kept, dropped
}

// DroppedForRuntime is DroppedMessage for a job whose environment (where, e.g. "the
// job's environment") gets the runtime layer's jax in place of the dropped lines.
func DroppedForRuntime(dropped []Requirement, where string) string {
	msg := DroppedMessage(dropped, false)
	if msg == "" {
		return ""
	}
	_, rest, _ := strings.Cut(msg, "\n")
	noun := "requirement"
	if len(dropped) > 1 {
		noun = "requirements"
	}
	head := fmt.Sprintf("kinetic: ignoring %d accelerator runtime %s", len(dropped), noun)
	return fmt.Sprintf("%s; %s gets Kinetic's pinned jax and jaxlib instead (docs/images.md, \"The runtime layer\"):\n%s", head, where, rest)
}

// DroppedMessage formats the notice for stderr about requirements Filtered dropped, one
// line per requirement with its location; "" when nothing was dropped. inContainer says
// whether the job runs in a container (whose jax matches its hardware) or in a Python
// environment on this machine (whose interpreter's own jax it gets, if any).
func DroppedMessage(dropped []Requirement, inContainer bool) string {
	if len(dropped) == 0 {
		return ""
	}
	var b strings.Builder
	noun := "requirement"
	if len(dropped) > 1 {
		noun = "requirements"
	}
	if inContainer {
		fmt.Fprintf(&b, "kinetic: ignoring %d accelerator runtime %s; the container's jax, jaxlib and libtpu match its hardware:\n", len(dropped), noun)
	} else {
		fmt.Fprintf(&b, "kinetic: ignoring %d accelerator runtime %s: jobs use the jax, jaxlib and libtpu already installed where they run (on this machine: its Python's, if any):\n", len(dropped), noun)
	}
	for _, d := range dropped {
		text := d.Text
		if text == "" {
			text = d.String()
		}
		kind := ""
		if d.Constraint {
			kind = " (constraint)"
		}
		if loc := d.location(); loc != "" {
			fmt.Fprintf(&b, "  %s: %s%s\n", loc, text, kind)
		} else {
			fmt.Fprintf(&b, "  %s%s\n", text, kind)
		}
	}
	b.WriteString("kinetic: to install one anyway, end its line with \"# kn:keep\"\n")
	return b.String()
}

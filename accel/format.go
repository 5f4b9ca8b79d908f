package accel

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"text/tabwriter"
)

// WriteTable prints specs as an aligned table, one row per spec.
func WriteTable(w io.Writer, specs []Spec) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tKIND\tCHIPS\tHOSTS\tTOPOLOGY\tMACHINE TYPE\tGKE ACCELERATOR")
	for _, s := range specs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", s.Name, s.Kind, dash(count(s)), s.Hosts,
			dash(s.Topology), dash(s.MachineType), dash(s.acceleratorLabel()))
	}
	return tw.Flush()
}

// WriteSpec prints one spec in full, scheduling facts included, one field a line.
func WriteSpec(w io.Writer, s Spec) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	hosts := strconv.Itoa(s.Hosts)
	if s.MultiHost() {
		hosts += " (multi-host: one pod per host)"
	}
	rows := [][2]string{
		{"name", s.Name}, {"kind", string(s.Kind)}, {"family", s.Family},
		{"chips", count(s)}, {"hosts", hosts}, {"topology", s.Topology},
		{"machine type", s.MachineType}, {"spot", strconv.FormatBool(s.Spot)},
	}
	if s.ResourceName != "" {
		rows = append(rows, [2]string{"resource", fmt.Sprintf("%s: %d per host", s.ResourceName, s.ResourcesPerHost)})
	}
	for _, k := range slices.Sorted(maps.Keys(s.NodeSelector)) {
		rows = append(rows, [2]string{"node selector", k + "=" + s.NodeSelector[k]})
	}
	for _, t := range s.Tolerations {
		op := t.Operator
		if t.Value != "" {
			op += " " + t.Value
		}
		rows = append(rows, [2]string{"toleration", fmt.Sprintf("%s %s %s", t.Key, op, t.Effect)})
	}
	for _, r := range rows {
		fmt.Fprintf(tw, "%s:\t%s\n", r[0], dash(r[1]))
	}
	return tw.Flush()
}

// WriteJSON prints specs as an indented JSON array.
func WriteJSON(w io.Writer, specs []Spec) error {
	if specs == nil {
		specs = []Spec{} // an empty list is [], not null
	}
	return writeJSON(w, specs)
}

// WriteSpecJSON prints one spec as an indented JSON object.
func WriteSpecJSON(w io.Writer, s Spec) error { return writeJSON(w, s) }

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// count is what the CHIPS column shows: GPUs, TPU chips, or requested vCPUs.
func count(s Spec) string {
	switch {
	case s.Kind == CPU && s.CPUs > 0:
		return strconv.Itoa(s.CPUs) + " vCPU"
	case s.Chips > 0:
		return strconv.Itoa(s.Chips)
	}
	return ""
}

func (s Spec) acceleratorLabel() string {
	if v := s.NodeSelector[LabelGPUAccelerator]; v != "" {
		return v
	}
	return s.NodeSelector[LabelTPUAccelerator]
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

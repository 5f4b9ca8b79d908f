package accel

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/internal/textdist"
)

// UnknownError is returned by Parse for any name it cannot resolve.
type UnknownError struct {
	Input       string   // the name as given
	Reason      string   // what is wrong, when more is known than "no such name"
	Suggestions []string // valid names close to Input, best first
}

// Code is errs.InvalidArgument: the name given is wrong.
func (e *UnknownError) Code() errs.Code { return errs.InvalidArgument }

func (e *UnknownError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "unknown accelerator %s", errs.Quote(e.Input))
	if e.Reason != "" {
		b.WriteString(": " + e.Reason)
	}
	switch sep := map[bool]string{true: "; ", false: ": "}[e.Reason != ""]; len(e.Suggestions) {
	case 0:
		if e.Reason == "" {
			b.WriteString(`: run "kinetic accelerators" for the valid names`)
		}
	case 1:
		b.WriteString(sep + "did you mean " + e.Suggestions[0] + "?")
	default:
		b.WriteString(sep + "did you mean: " + strings.Join(e.Suggestions, ", ") + "?")
	}
	return b.String()
}

const maxSuggestions = 3

// candidate is a spelling a user might have meant and the canonical name it resolves to;
// suggestions are deduplicated by target so "l4" and "gpu-l4" are not both offered.
type candidate struct{ spelling, target string }

var candidates = func() []candidate {
	var out []candidate
	add := func(target string, spellings ...string) {
		for _, s := range spellings {
			out = append(out, candidate{s, target})
		}
	}
	add("cpu", "cpu")
	for _, f := range gpuFamilies {
		for _, r := range f.rows {
			name := gpuSpec(f, r).Name
			add(name, name)
			for _, sp := range f.spellings() {
				if r.count == 1 {
					add(name, sp)
				} else {
					add(name, sp+"x"+strconv.Itoa(r.count))
				}
			}
		}
	}
	for _, f := range tpuFamilies {
		for _, r := range f.rows {
			name := tpuSpec(f, r).Name
			add(name, name, "tpu-"+f.name+"-"+r.topology)
			for _, sp := range f.spellings() {
				add(name, sp+"-"+strconv.Itoa(r.chips))
				if r.chips == f.defaultChips {
					add(name, sp, "tpu-"+sp)
				}
			}
		}
	}
	return out
}()

// suggest returns the valid names nearest s by edit distance, if any are close enough
// to be a plausible typo.
func suggest(s string) []string {
	limit := min(3, max(1, len(s)/3))
	type scored struct {
		c candidate
		d int
	}
	var hits []scored
	for _, c := range candidates {
		if abs(len(s)-len(c.spelling)) > limit {
			continue // the length gap alone exceeds the limit; skip the costly distance
		}
		if d := textdist.EditDistance(s, c.spelling); d <= limit {
			hits = append(hits, scored{c, d})
		}
	}
	slices.SortStableFunc(hits, func(a, b scored) int { return a.d - b.d })
	var out []string
	seen := map[string]bool{}
	for _, h := range hits {
		if len(out) == maxSuggestions || (len(out) > 0 && h.d > hits[0].d) {
			break
		}
		if !seen[h.c.target] {
			seen[h.c.target] = true
			out = append(out, h.c.spelling)
		}
	}
	return out
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// nearest returns the values in sorted xs closest to n: one, or two on a tie.
func nearest(xs []int, n int) []int {
	best := -1
	var out []int
	for _, x := range xs {
		d := abs(x - n)
		switch {
		case best < 0 || d < best:
			best, out = d, []int{x}
		case d == best:
			out = append(out, x)
		}
	}
	return out
}

// orList renders "1, 2, 4 or 8".
func orList[T any](xs []T) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	if len(s) <= 1 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

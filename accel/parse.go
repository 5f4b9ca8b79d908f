package accel

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

const (
	// maxNameLen bounds the work done on nonsense input (suggestions are quadratic).
	maxNameLen = 64
	// maxCPUs is above any GCE machine's vCPU count; larger is surely a typo.
	maxCPUs = 1024
)

// Parse resolves an accelerator name, case-insensitively. The grammar:
//
//	cpu | cpu:N                     CPU only; N vCPUs requested
//	gpu | tpu                       1x L4 | tpu-v5litepod-4
//	gpu:N | tpu:N                   the preferred GPU offering N / TPU with N chips
//	[gpu-|gpu:]GPU[xN]              N GPUs (default 1); GPU is a short name (l4, a100-80gb)
//	                                or a GKE label (nvidia-tesla-t4), with or without nvidia-
//	[tpu-|tpu:]TPU[-N|-AxB[xC]]     N chips or that topology; the family alone is its default
//	...:spot                        any of the above on spot capacity
//
// Every error is an *UnknownError naming the input and, where possible, valid names.
func Parse(name string) (Spec, error) {
	s := strings.ToLower(strings.TrimSpace(name))
	if s == "" {
		return Spec{}, &UnknownError{Input: name, Reason: `the name is empty; use cpu, gpu, tpu or a name from "kinetic accelerators"`}
	}
	if len(s) > maxNameLen {
		return Spec{}, &UnknownError{Input: name, Reason: fmt.Sprintf(`names are at most %d characters; see "kinetic accelerators"`, maxNameLen)}
	}
	base, spot := strings.CutSuffix(s, ":spot")
	if strings.HasSuffix(base, ":spot") {
		e := &UnknownError{Input: name, Reason: "write :spot once, at the end"}
		if spec, err := Parse(strings.TrimSuffix(base, ":spot")); err == nil && !spec.Spot {
			e.Suggestions = []string{spec.withSpot().Name}
		}
		return Spec{}, e
	}
	spec, err := parseBase(base)
	if err != nil {
		err.Input = name
		if spot {
			for i := range err.Suggestions {
				err.Suggestions[i] += ":spot"
			}
		}
		return Spec{}, err
	}
	if spot {
		spec = spec.withSpot()
	}
	return spec, nil
}

func parseBase(s string) (Spec, *UnknownError) {
	switch s {
	case "cpu":
		return cpuSpec(0), nil
	case "gpu":
		f := gpuByName("l4")
		return gpuSpec(f, f.rows[0]), nil
	case "tpu":
		f := tpuByName("v5litepod")
		r, _ := f.row(f.defaultChips)
		return tpuSpec(f, r), nil
	}
	if rest, ok := strings.CutPrefix(s, "cpu:"); ok {
		return parseCPU(rest)
	}
	if len(s) > 4 && s[:3] == "cpu" && (s[3] == '-' || s[3] == 'x') && allDigits(s[4:]) {
		spec, err := parseCPU(s[4:])
		if err != nil {
			return Spec{}, err
		}
		return Spec{}, &UnknownError{Reason: "CPU counts are written cpu:N", Suggestions: []string{spec.Name}}
	}

	var kind Kind
	body := s
	for _, p := range []string{"gpu-", "gpu:", "tpu-", "tpu:"} {
		if rest, ok := strings.CutPrefix(s, p); ok {
			kind, body = Kind(p[:3]), rest
			break
		}
	}
	if kind != "" && allDigits(body) {
		return byCount(kind, body)
	}
	if f, count, sep, ok := splitGPU(body); ok {
		return resolveGPU(kind, f, count, sep)
	}
	if f, rest, ok := splitTPU(body); ok {
		return resolveTPU(kind, f, rest)
	}
	return Spec{}, &UnknownError{Suggestions: suggest(s)}
}

func parseCPU(n string) (Spec, *UnknownError) {
	v := atoi(n)
	switch {
	case v < 0:
		return Spec{}, &UnknownError{Reason: "cpu:N takes a whole number of vCPUs, e.g. cpu:4"}
	case v == 0 || v > maxCPUs:
		return Spec{}, &UnknownError{Reason: fmt.Sprintf("cpu:N takes 1 to %d vCPUs", maxCPUs)}
	}
	return cpuSpec(v), nil
}

// byCount serves gpu:N and tpu:N: the first family in preference order offering N.
func byCount(kind Kind, digits string) (Spec, *UnknownError) {
	n := atoi(digits)
	var all []int
	if kind == GPU {
		for _, name := range gpuPreference {
			f := gpuByName(name)
			if r, ok := f.row(n); ok {
				return gpuSpec(f, r), nil
			}
			all = append(all, f.counts()...)
		}
	} else {
		for _, name := range tpuPreference {
			f := tpuByName(name)
			if r, ok := f.row(n); ok {
				return tpuSpec(f, r), nil
			}
			all = append(all, f.counts()...)
		}
	}
	slices.Sort(all)
	all = slices.Compact(all)
	unit := map[Kind]string{GPU: "GPUs per machine", TPU: "chips per slice"}[kind]
	return Spec{}, &UnknownError{
		Reason:      fmt.Sprintf("%s:N takes %s %s", kind, orList(all), unit),
		Suggestions: mapInts(nearest(all, n), func(c int) string { return fmt.Sprintf("%s:%d", kind, c) }),
	}
}

// splitGPU finds the GPU family that body starts with and the count text after it.
// sep is 'x' for the grammar's NAMExN, or '-' / ':' for near misses we explain.
func splitGPU(body string) (f *gpuFamily, count string, sep byte, ok bool) {
	for _, f := range gpuFamilies {
		for _, sp := range f.spellings() {
			if body == sp {
				return f, "", 0, true
			}
			if rest, ok := strings.CutPrefix(body, sp); ok && len(rest) > 1 && allDigits(rest[1:]) &&
				strings.IndexByte("x-:", rest[0]) >= 0 {
				return f, rest[1:], rest[0], true
			}
		}
	}
	return nil, "", 0, false
}

func resolveGPU(kind Kind, f *gpuFamily, count string, sep byte) (Spec, *UnknownError) {
	n := 1
	if count != "" {
		n = atoi(count)
	}
	r, valid := f.row(n)
	switch {
	case kind == TPU:
		e := &UnknownError{Reason: f.name + " is a GPU, not a TPU"}
		if valid {
			e.Suggestions = []string{gpuSpec(f, r).Name}
		}
		return Spec{}, e
	case sep == '-' || sep == ':':
		if valid {
			return Spec{}, &UnknownError{Reason: "GPU counts are written NAMExN", Suggestions: []string{gpuSpec(f, r).Name}}
		}
		// e.g. "a100-80": more likely a misspelt family than a count.
		return Spec{}, &UnknownError{Suggestions: suggest(f.name + "-" + count)}
	case !valid:
		return Spec{}, &UnknownError{
			Reason:      fmt.Sprintf("%s offers %s GPUs per machine", f.name, orList(f.counts())),
			Suggestions: mapInts(nearest(f.counts(), n), func(c int) string { r, _ := f.row(c); return gpuSpec(f, r).Name }),
		}
	}
	return gpuSpec(f, r), nil
}

type tpuSpelling struct {
	s string
	f *tpuFamily
}

// tpuSpellings pairs every TPU family spelling with its family, longest first so that
// "v5-lite-podslice-4" is not read as family "v5..." with a bad suffix.
var tpuSpellings = func() []tpuSpelling {
	var out []tpuSpelling
	for _, f := range tpuFamilies {
		for _, s := range f.spellings() {
			out = append(out, tpuSpelling{s, f})
		}
	}
	slices.SortStableFunc(out, func(a, b tpuSpelling) int { return len(b.s) - len(a.s) })
	return out
}()

// splitTPU finds the TPU family that body starts with; rest is "", a chip count or a
// topology.
func splitTPU(body string) (f *tpuFamily, rest string, ok bool) {
	for _, e := range tpuSpellings {
		if body == e.s {
			return e.f, "", true
		}
		if r, ok := strings.CutPrefix(body, e.s+"-"); ok {
			if _, topo := parseTopology(r); allDigits(r) || topo {
				return e.f, r, true
			}
		}
	}
	return nil, "", false
}

func resolveTPU(kind Kind, f *tpuFamily, rest string) (Spec, *UnknownError) {
	r, err := tpuRowFor(f, rest)
	if kind == GPU {
		e := &UnknownError{Reason: f.name + " is a TPU, not a GPU"}
		if err == nil {
			e.Suggestions = []string{tpuSpec(f, r).Name}
		}
		return Spec{}, e
	}
	if err != nil {
		return Spec{}, err
	}
	return tpuSpec(f, r), nil
}

func tpuRowFor(f *tpuFamily, rest string) (tpuRow, *UnknownError) {
	chipsName := func(c int) string { return fmt.Sprintf("tpu-%s-%d", f.name, c) }
	if rest == "" {
		r, _ := f.row(f.defaultChips)
		return r, nil
	}
	if allDigits(rest) {
		n := atoi(rest)
		if r, ok := f.row(n); ok {
			return r, nil
		}
		if c, ok := f.legacy[n]; ok {
			r, _ := f.row(c)
			return r, nil
		}
		return tpuRow{}, &UnknownError{
			Reason:      fmt.Sprintf("%s offers %s chips", f.name, orList(f.counts())),
			Suggestions: mapInts(nearest(f.counts(), n), chipsName),
		}
	}
	dims, _ := parseTopology(rest)
	topo := formatTopology(dims)
	for _, r := range f.rows {
		if r.topology == topo {
			return r, nil
		}
	}
	topoName := func(c int) string { r, _ := f.row(c); return "tpu-" + f.name + "-" + r.topology }
	chips := topologyChips(topo)
	if r, ok := f.row(chips); ok {
		return tpuRow{}, &UnknownError{
			Reason:      fmt.Sprintf("%s has no %s topology; its %d-chip slice is %s", f.name, topo, chips, r.topology),
			Suggestions: []string{topoName(chips)},
		}
	}
	topos := make([]string, len(f.rows))
	for i, r := range f.rows {
		topos[i] = r.topology
	}
	return tpuRow{}, &UnknownError{
		Reason:      fmt.Sprintf("%s topologies are %s", f.name, orList(topos)),
		Suggestions: mapInts(nearest(f.counts(), chips), topoName),
	}
}

// parseTopology reads "AxB" or "AxBxC" with positive dimensions.
func parseTopology(t string) ([]int, bool) {
	parts := strings.Split(t, "x")
	if len(parts) < 2 || len(parts) > 3 {
		return nil, false
	}
	dims := make([]int, len(parts))
	for i, p := range parts {
		dims[i] = atoi(p)
		if dims[i] <= 0 {
			return nil, false
		}
	}
	return dims, true
}

func formatTopology(dims []int) string {
	return strings.Join(mapInts(dims, strconv.Itoa), "x")
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// atoi reads a short run of digits; -1 for anything else, so huge or signed numbers
// never overflow or sneak through strconv's "+4".
func atoi(s string) int {
	if !allDigits(s) || len(s) > 6 {
		return -1
	}
	n, _ := strconv.Atoi(s)
	return n
}

func mapInts[T any](xs []int, f func(int) T) []T {
	out := make([]T, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

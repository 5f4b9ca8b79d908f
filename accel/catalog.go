package accel

import "fmt"

type gpuRow struct {
	count   int
	machine string
}

type gpuFamily struct {
	name  string // short name and canonical family, e.g. "a100-80gb"
	label string // value of cloud.google.com/gke-accelerator
	rows  []gpuRow
}

type tpuRow struct {
	chips    int
	topology string
	machine  string
	hosts    int
}

type tpuFamily struct {
	name         string   // canonical family, e.g. "v5litepod"
	label        string   // value of cloud.google.com/gke-tpu-accelerator
	aliases      []string // other spellings of the family
	defaultChips int      // what the family name alone means
	rows         []tpuRow
	// legacy maps Cloud TPU TensorCore-count names onto chips: "v3-8" is the classic
	// name of the 4-chip v3 host (and the API reference uses it), but 8 is not a v3 chip count.
	legacy map[int]int
}

// GKE's GPU table; order is the display order of the catalog.
var gpuFamilies = []*gpuFamily{
	{"l4", "nvidia-l4", []gpuRow{{1, "g2-standard-4"}, {2, "g2-standard-24"}, {4, "g2-standard-48"}, {8, "g2-standard-96"}}},
	{"t4", "nvidia-tesla-t4", n1Rows(4, 8, 16)},
	{"p4", "nvidia-tesla-p4", n1Rows(4, 8, 16)},
	{"p100", "nvidia-tesla-p100", n1Rows(4, 8, 16)},
	{"v100", "nvidia-tesla-v100", n1Rows(8, 16, 32, 64)},
	{"a100", "nvidia-tesla-a100", append(numberedRows("a2-highgpu-%dg", 1, 2, 4, 8), gpuRow{16, "a2-megagpu-16g"})},
	{"a100-80gb", "nvidia-a100-80gb", numberedRows("a2-ultragpu-%dg", 1, 2, 4, 8, 16)},
	{"h100", "nvidia-h100-80gb", numberedRows("a3-highgpu-%dg", 1, 2, 4, 8)},
}

// gpuPreference is the order gpu:N searches: the most capable GPU offering N wins.
var gpuPreference = []string{"h100", "a100-80gb", "a100", "l4", "v100", "t4", "p100", "p4"}

// n1Rows gives 1, 2, 4, ... GPUs on n1-standard-<vcpus> machines.
func n1Rows(vcpus ...int) []gpuRow {
	rows := make([]gpuRow, len(vcpus))
	for i, v := range vcpus {
		rows[i] = gpuRow{1 << i, fmt.Sprintf("n1-standard-%d", v)}
	}
	return rows
}

func numberedRows(format string, counts ...int) []gpuRow {
	rows := make([]gpuRow, len(counts))
	for i, n := range counts {
		rows[i] = gpuRow{n, fmt.Sprintf(format, n)}
	}
	return rows
}

// GKE's TPU table; order is the display order of the catalog.
var tpuFamilies = []*tpuFamily{
	{
		name: "v3", label: "tpu-v3-podslice", defaultChips: 4, legacy: map[int]int{8: 4},
		rows: append([]tpuRow{{4, "2x2", "ct3-hightpu-4t", 1}}, podRows("ct3p-hightpu-4t", 4,
			"4x4", "4x8", "8x8", "8x16", "16x16", "16x32", "32x32", "32x64")...),
	},
	{
		name: "v4", label: "tpu-v4-podslice", defaultChips: 4,
		rows: podRows("ct4p-hightpu-4t", 4, "2x2x1", "2x2x2", "2x2x4", "2x4x4", "4x4x4",
			"4x4x8", "4x8x8", "8x8x8", "8x8x16", "8x16x16", "16x16x16"),
	},
	{
		name: "v5litepod", label: "tpu-v5-lite-podslice", aliases: []string{"v5e"}, defaultChips: 4,
		rows: append([]tpuRow{
			{1, "1x1", "ct5lp-hightpu-1t", 1},
			{4, "2x2", "ct5lp-hightpu-4t", 1},
			{8, "2x4", "ct5lp-hightpu-8t", 1},
		}, podRows("ct5lp-hightpu-4t", 4, "4x4", "4x8", "8x8", "8x16", "16x16")...),
	},
	{
		name: "v5p", label: "tpu-v5p-slice", defaultChips: 8,
		rows: podRows("ct5p-hightpu-4t", 4, "2x2x2", "2x2x4", "2x4x4"),
	},
	{
		name: "v6e", label: "tpu-v6e-slice", defaultChips: 8,
		rows: podRows("ct6e-standard-4t", 4, "2x4", "4x4"),
	},
}

// tpuPreference is the order tpu:N searches: the newest generation offering N wins.
var tpuPreference = []string{"v6e", "v5p", "v5litepod", "v4", "v3"}

// podRows builds rows for a machine type holding chipsPerHost chips; chips and hosts
// follow from the topology, so the table cannot disagree with itself.
func podRows(machine string, chipsPerHost int, topologies ...string) []tpuRow {
	rows := make([]tpuRow, len(topologies))
	for i, t := range topologies {
		chips := topologyChips(t)
		rows[i] = tpuRow{chips, t, machine, chips / chipsPerHost}
	}
	return rows
}

// topologyChips multiplies the dimensions of "AxB[xC]"; 0 if it is malformed.
func topologyChips(t string) int {
	dims, ok := parseTopology(t)
	if !ok {
		return 0
	}
	n := 1
	for _, d := range dims {
		n *= d
	}
	return n
}

// Catalog lists every concrete accelerator (on-demand; append ":spot" to any name),
// in a stable order: cpu, then GPUs, then TPUs, each by size.
func Catalog() []Spec {
	specs := []Spec{cpuSpec(0)}
	for _, f := range gpuFamilies {
		for _, r := range f.rows {
			specs = append(specs, gpuSpec(f, r))
		}
	}
	for _, f := range tpuFamilies {
		for _, r := range f.rows {
			specs = append(specs, tpuSpec(f, r))
		}
	}
	return specs
}

func gpuByName(name string) *gpuFamily {
	for _, f := range gpuFamilies {
		if f.name == name {
			return f
		}
	}
	return nil
}

func tpuByName(name string) *tpuFamily {
	for _, f := range tpuFamilies {
		if f.name == name {
			return f
		}
	}
	return nil
}

func (f *gpuFamily) row(count int) (gpuRow, bool) {
	for _, r := range f.rows {
		if r.count == count {
			return r, true
		}
	}
	return gpuRow{}, false
}

func (f *gpuFamily) counts() []int {
	c := make([]int, len(f.rows))
	for i, r := range f.rows {
		c[i] = r.count
	}
	return c
}

// spellings are every accepted way to write the family: short name, GKE label, the
// label without "nvidia-", and "nvidia-" plus the short name.
func (f *gpuFamily) spellings() []string {
	s := []string{f.name, f.label}
	if t := trimPrefix(f.label, "nvidia-"); t != f.name {
		s = append(s, t)
	}
	if n := "nvidia-" + f.name; n != f.label {
		s = append(s, n)
	}
	return s
}

func (f *tpuFamily) row(chips int) (tpuRow, bool) {
	for _, r := range f.rows {
		if r.chips == chips {
			return r, true
		}
	}
	return tpuRow{}, false
}

func (f *tpuFamily) counts() []int {
	c := make([]int, len(f.rows))
	for i, r := range f.rows {
		c[i] = r.chips
	}
	return c
}

// spellings are the family name, its aliases and its GKE label without "tpu-" (the
// prefix is stripped before matching, so the full label works too).
func (f *tpuFamily) spellings() []string {
	s := append([]string{f.name}, f.aliases...)
	return append(s, trimPrefix(f.label, "tpu-"))
}

func trimPrefix(s, p string) string {
	if len(s) >= len(p) && s[:len(p)] == p {
		return s[len(p):]
	}
	return s
}

// OnNode names the catalog accelerators (on-demand) whose node selectors a node with
// these labels satisfies: what a cluster's node can run, by GKE's labels.
func OnNode(labels map[string]string) []string {
	var out []string
	for _, sp := range Catalog() {
		if len(sp.NodeSelector) == 0 || sp.Spot {
			continue
		}
		all := true
		for k, v := range sp.NodeSelector {
			if labels[k] != v {
				all = false
				break
			}
		}
		if all {
			out = append(out, sp.Name)
		}
	}
	return out
}

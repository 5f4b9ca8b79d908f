package accel

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// wantCatalog is the notes' GKE table, transcribed by hand (name, machine type,
// topology, hosts, accelerator label) so the generated rows are checked against it.
const wantCatalog = `
cpu - - 1 -
gpu-l4 g2-standard-4 - 1 nvidia-l4
gpu-l4x2 g2-standard-24 - 1 nvidia-l4
gpu-l4x4 g2-standard-48 - 1 nvidia-l4
gpu-l4x8 g2-standard-96 - 1 nvidia-l4
gpu-t4 n1-standard-4 - 1 nvidia-tesla-t4
gpu-t4x2 n1-standard-8 - 1 nvidia-tesla-t4
gpu-t4x4 n1-standard-16 - 1 nvidia-tesla-t4
gpu-p4 n1-standard-4 - 1 nvidia-tesla-p4
gpu-p4x2 n1-standard-8 - 1 nvidia-tesla-p4
gpu-p4x4 n1-standard-16 - 1 nvidia-tesla-p4
gpu-p100 n1-standard-4 - 1 nvidia-tesla-p100
gpu-p100x2 n1-standard-8 - 1 nvidia-tesla-p100
gpu-p100x4 n1-standard-16 - 1 nvidia-tesla-p100
gpu-v100 n1-standard-8 - 1 nvidia-tesla-v100
gpu-v100x2 n1-standard-16 - 1 nvidia-tesla-v100
gpu-v100x4 n1-standard-32 - 1 nvidia-tesla-v100
gpu-v100x8 n1-standard-64 - 1 nvidia-tesla-v100
gpu-a100 a2-highgpu-1g - 1 nvidia-tesla-a100
gpu-a100x2 a2-highgpu-2g - 1 nvidia-tesla-a100
gpu-a100x4 a2-highgpu-4g - 1 nvidia-tesla-a100
gpu-a100x8 a2-highgpu-8g - 1 nvidia-tesla-a100
gpu-a100x16 a2-megagpu-16g - 1 nvidia-tesla-a100
gpu-a100-80gb a2-ultragpu-1g - 1 nvidia-a100-80gb
gpu-a100-80gbx2 a2-ultragpu-2g - 1 nvidia-a100-80gb
gpu-a100-80gbx4 a2-ultragpu-4g - 1 nvidia-a100-80gb
gpu-a100-80gbx8 a2-ultragpu-8g - 1 nvidia-a100-80gb
gpu-a100-80gbx16 a2-ultragpu-16g - 1 nvidia-a100-80gb
gpu-h100 a3-highgpu-1g - 1 nvidia-h100-80gb
gpu-h100x2 a3-highgpu-2g - 1 nvidia-h100-80gb
gpu-h100x4 a3-highgpu-4g - 1 nvidia-h100-80gb
gpu-h100x8 a3-highgpu-8g - 1 nvidia-h100-80gb
tpu-v3-4 ct3-hightpu-4t 2x2 1 tpu-v3-podslice
tpu-v3-16 ct3p-hightpu-4t 4x4 4 tpu-v3-podslice
tpu-v3-32 ct3p-hightpu-4t 4x8 8 tpu-v3-podslice
tpu-v3-64 ct3p-hightpu-4t 8x8 16 tpu-v3-podslice
tpu-v3-128 ct3p-hightpu-4t 8x16 32 tpu-v3-podslice
tpu-v3-256 ct3p-hightpu-4t 16x16 64 tpu-v3-podslice
tpu-v3-512 ct3p-hightpu-4t 16x32 128 tpu-v3-podslice
tpu-v3-1024 ct3p-hightpu-4t 32x32 256 tpu-v3-podslice
tpu-v3-2048 ct3p-hightpu-4t 32x64 512 tpu-v3-podslice
tpu-v4-4 ct4p-hightpu-4t 2x2x1 1 tpu-v4-podslice
tpu-v4-8 ct4p-hightpu-4t 2x2x2 2 tpu-v4-podslice
tpu-v4-16 ct4p-hightpu-4t 2x2x4 4 tpu-v4-podslice
tpu-v4-32 ct4p-hightpu-4t 2x4x4 8 tpu-v4-podslice
tpu-v4-64 ct4p-hightpu-4t 4x4x4 16 tpu-v4-podslice
tpu-v4-128 ct4p-hightpu-4t 4x4x8 32 tpu-v4-podslice
tpu-v4-256 ct4p-hightpu-4t 4x8x8 64 tpu-v4-podslice
tpu-v4-512 ct4p-hightpu-4t 8x8x8 128 tpu-v4-podslice
tpu-v4-1024 ct4p-hightpu-4t 8x8x16 256 tpu-v4-podslice
tpu-v4-2048 ct4p-hightpu-4t 8x16x16 512 tpu-v4-podslice
tpu-v4-4096 ct4p-hightpu-4t 16x16x16 1024 tpu-v4-podslice
tpu-v5litepod-1 ct5lp-hightpu-1t 1x1 1 tpu-v5-lite-podslice
tpu-v5litepod-4 ct5lp-hightpu-4t 2x2 1 tpu-v5-lite-podslice
tpu-v5litepod-8 ct5lp-hightpu-8t 2x4 1 tpu-v5-lite-podslice
tpu-v5litepod-16 ct5lp-hightpu-4t 4x4 4 tpu-v5-lite-podslice
tpu-v5litepod-32 ct5lp-hightpu-4t 4x8 8 tpu-v5-lite-podslice
tpu-v5litepod-64 ct5lp-hightpu-4t 8x8 16 tpu-v5-lite-podslice
tpu-v5litepod-128 ct5lp-hightpu-4t 8x16 32 tpu-v5-lite-podslice
tpu-v5litepod-256 ct5lp-hightpu-4t 16x16 64 tpu-v5-lite-podslice
tpu-v5p-8 ct5p-hightpu-4t 2x2x2 2 tpu-v5p-slice
tpu-v5p-16 ct5p-hightpu-4t 2x2x4 4 tpu-v5p-slice
tpu-v5p-32 ct5p-hightpu-4t 2x4x4 8 tpu-v5p-slice
tpu-v6e-8 ct6e-standard-4t 2x4 2 tpu-v6e-slice
tpu-v6e-16 ct6e-standard-4t 4x4 4 tpu-v6e-slice
`

func TestCatalogMatchesNotes(t *testing.T) {
	var got strings.Builder
	got.WriteString("\n")
	for _, s := range Catalog() {
		fmt.Fprintf(&got, "%s %s %s %d %s\n", s.Name, dash(s.MachineType), dash(s.Topology), s.Hosts, dash(s.acceleratorLabel()))
	}
	if diff := cmp.Diff(wantCatalog, got.String()); diff != "" {
		t.Errorf("catalog differs from the notes (-want +got):\n%s", diff)
	}
}

// Every row must be self-consistent, because the scheduler trusts these numbers.
func TestCatalogInvariants(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range Catalog() {
		t.Run(s.Name, func(t *testing.T) {
			if seen[s.Name] {
				t.Fatalf("duplicate name")
			}
			seen[s.Name] = true
			if s.Hosts < 1 || s.Spot {
				t.Errorf("hosts %d, spot %v", s.Hosts, s.Spot)
			}
			if s.Category() != string(s.Kind) {
				t.Errorf("Category() = %q, want %q", s.Category(), s.Kind)
			}
			switch s.Kind {
			case CPU:
				if s.ResourceName != "" || s.NodeSelector != nil || s.Tolerations != nil || s.MultiHost() {
					t.Errorf("cpu spec has accelerator facts: %+v", s)
				}
			case GPU:
				if s.ResourcesPerHost != s.Chips || s.ResourceName != ResourceGPU || s.MultiHost() {
					t.Errorf("gpu facts wrong: %+v", s)
				}
			case TPU:
				if s.ResourcesPerHost*s.Hosts != s.Chips || topologyChips(s.Topology) != s.Chips ||
					s.NodeSelector[LabelTPUTopology] != s.Topology || s.ResourceName != ResourceTPU {
					t.Errorf("tpu facts wrong: %+v", s)
				}
				if s.MultiHost() != (s.Hosts > 1) {
					t.Errorf("MultiHost() = %v", s.MultiHost())
				}
			default:
				t.Errorf("kind %q", s.Kind)
			}
		})
	}
}

func TestCatalogReturnsFreshCopies(t *testing.T) {
	a := Catalog()
	a[1].NodeSelector[LabelGPUAccelerator] = "changed"
	a[1].Tolerations[0].Key = "changed"
	if diff := cmp.Diff(Catalog()[1], mustParse(t, "gpu-l4")); diff != "" {
		t.Errorf("mutating a Catalog() result leaked (-catalog +parse):\n%s", diff)
	}
}

func TestDefaultsAndPreferences(t *testing.T) {
	for _, f := range tpuFamilies {
		if _, ok := f.row(f.defaultChips); !ok {
			t.Errorf("%s: default %d chips is not a row", f.name, f.defaultChips)
		}
		for n, c := range f.legacy {
			if _, ok := f.row(n); ok {
				t.Errorf("%s: legacy %d shadows a real chip count", f.name, n)
			}
			if _, ok := f.row(c); !ok {
				t.Errorf("%s: legacy %d maps to missing %d", f.name, n, c)
			}
		}
	}
	if len(gpuPreference) != len(gpuFamilies) || len(tpuPreference) != len(tpuFamilies) {
		t.Errorf("a family is missing from a preference order")
	}
	for _, n := range gpuPreference {
		if gpuByName(n) == nil {
			t.Errorf("gpu preference %q is no family", n)
		}
	}
	for _, n := range tpuPreference {
		if tpuByName(n) == nil {
			t.Errorf("tpu preference %q is no family", n)
		}
	}
}

func mustParse(t *testing.T, name string) Spec {
	t.Helper()
	s, err := Parse(name)
	if err != nil {
		t.Fatalf("Parse(%q): %v", name, err)
	}
	return s
}

func TestOnNode(t *testing.T) {
	sp, err := Parse("gpu-l4")
	if err != nil {
		t.Fatal(err)
	}
	l4 := sp.NodeSelector
	if got := OnNode(l4); !slices.Contains(got, "gpu-l4") || slices.Contains(got, "gpu-t4") {
		t.Errorf("a node labelled %v runs %v", l4, got)
	}
	if got := OnNode(map[string]string{"kubernetes.io/os": "linux"}); len(got) != 0 {
		t.Errorf("a CPU node runs %v", got)
	}
}

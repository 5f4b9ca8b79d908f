package accel

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Every catalog row's canonical name parses back to that row, in any case, and with
// :spot to the spot variant.
func TestParseCanonicalRoundTrip(t *testing.T) {
	for _, want := range Catalog() {
		t.Run(want.Name, func(t *testing.T) {
			for _, in := range []string{want.Name, strings.ToUpper(want.Name), " " + want.Name + "\t"} {
				if diff := cmp.Diff(want, mustParse(t, in)); diff != "" {
					t.Errorf("Parse(%q) (-want +got):\n%s", in, diff)
				}
			}
			spot := mustParse(t, want.Name+":spot")
			if diff := cmp.Diff(want.withSpot(), spot); diff != "" {
				t.Errorf("Parse(%q) (-want +got):\n%s", want.Name+":spot", diff)
			}
			if diff := cmp.Diff(spot, mustParse(t, spot.Name)); diff != "" {
				t.Errorf("spot name does not round-trip (-want +got):\n%s", diff)
			}
		})
	}
}

// Full specs for a few names, so every scheduling field is pinned somewhere.
func TestParseFullSpecs(t *testing.T) {
	gpuTol := Toleration{Key: "nvidia.com/gpu", Operator: "Exists", Effect: "NoSchedule"}
	tpuTol := Toleration{Key: "google.com/tpu", Operator: "Exists", Effect: "NoSchedule"}
	spotTol := Toleration{Key: "cloud.google.com/gke-spot", Operator: "Equal", Value: "true", Effect: "NoSchedule"}
	tests := []struct {
		in   string
		want Spec
	}{
		{"cpu", Spec{Name: "cpu", Kind: CPU, Hosts: 1}},
		{"CPU:8", Spec{Name: "cpu:8", Kind: CPU, CPUs: 8, Hosts: 1}},
		{"cpu:spot", Spec{Name: "cpu:spot", Kind: CPU, Hosts: 1, Spot: true,
			NodeSelector: map[string]string{"cloud.google.com/gke-spot": "true"},
			Tolerations:  []Toleration{spotTol}}},
		{"l4x2", Spec{Name: "gpu-l4x2", Kind: GPU, Family: "l4", Chips: 2, Hosts: 1, MachineType: "g2-standard-24",
			NodeSelector: map[string]string{"cloud.google.com/gke-accelerator": "nvidia-l4"},
			Tolerations:  []Toleration{gpuTol}, ResourceName: "nvidia.com/gpu", ResourcesPerHost: 2}},
		{"nvidia-h100-80gbx8:spot", Spec{Name: "gpu-h100x8:spot", Kind: GPU, Family: "h100", Chips: 8, Hosts: 1,
			MachineType: "a3-highgpu-8g", Spot: true,
			NodeSelector: map[string]string{"cloud.google.com/gke-accelerator": "nvidia-h100-80gb", "cloud.google.com/gke-spot": "true"},
			Tolerations:  []Toleration{gpuTol, spotTol}, ResourceName: "nvidia.com/gpu", ResourcesPerHost: 8}},
		{"tpu-v6e-8", Spec{Name: "tpu-v6e-8", Kind: TPU, Family: "v6e", Chips: 8, Hosts: 2, Topology: "2x4",
			MachineType: "ct6e-standard-4t",
			NodeSelector: map[string]string{"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
				"cloud.google.com/gke-tpu-topology": "2x4"},
			Tolerations: []Toleration{tpuTol}, ResourceName: "google.com/tpu", ResourcesPerHost: 4}},
		{"tpu-v5litepod-2x4:spot", Spec{Name: "tpu-v5litepod-8:spot", Kind: TPU, Family: "v5litepod", Chips: 8, Hosts: 1,
			Topology: "2x4", MachineType: "ct5lp-hightpu-8t", Spot: true,
			NodeSelector: map[string]string{"cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
				"cloud.google.com/gke-tpu-topology": "2x4", "cloud.google.com/gke-spot": "true"},
			Tolerations: []Toleration{tpuTol, spotTol}, ResourceName: "google.com/tpu", ResourcesPerHost: 8}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, mustParse(t, tt.in)); diff != "" {
				t.Errorf("Parse(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

// The alias forms of the grammar, each mapped to its canonical name.
func TestParseAliases(t *testing.T) {
	tests := map[string]string{
		// bare kinds and counts
		"gpu": "gpu-l4", "GPU": "gpu-l4", "tpu": "tpu-v5litepod-4", "gpu:spot": "gpu-l4:spot",
		"gpu:1": "gpu-h100", "gpu:8": "gpu-h100x8", "gpu:16": "gpu-a100-80gbx16", "gpu-2": "gpu-h100x2",
		"tpu:1": "tpu-v5litepod-1", "tpu:4": "tpu-v5litepod-4", "tpu:8": "tpu-v6e-8", "tpu:16": "tpu-v6e-16",
		"tpu:32": "tpu-v5p-32", "tpu:64": "tpu-v5litepod-64", "tpu:512": "tpu-v4-512", "tpu:4096": "tpu-v4-4096",
		"tpu-8": "tpu-v6e-8", "tpu:8:spot": "tpu-v6e-8:spot", "cpu:04": "cpu:4", "cpu:1024": "cpu:1024",
		// GPUs: short names, prefixes, labels, counts
		"l4": "gpu-l4", "gpu-l4": "gpu-l4", "gpu:l4": "gpu-l4", "nvidia-l4": "gpu-l4", "gpu-nvidia-l4": "gpu-l4",
		"gpu-l4x2": "gpu-l4x2", "l4x1": "gpu-l4", "gpu:l4x8": "gpu-l4x8", "L4X4": "gpu-l4x4", "l4x02": "gpu-l4x2",
		"t4": "gpu-t4", "nvidia-tesla-t4": "gpu-t4", "tesla-t4": "gpu-t4", "nvidia-t4": "gpu-t4", "nvidia-tesla-t4x4": "gpu-t4x4",
		"p4": "gpu-p4", "nvidia-tesla-p4x2": "gpu-p4x2", "p100x4": "gpu-p100x4", "nvidia-tesla-p100": "gpu-p100",
		"v100": "gpu-v100", "v100x8": "gpu-v100x8", "nvidia-tesla-v100x2": "gpu-v100x2",
		"a100": "gpu-a100", "gpu-a100": "gpu-a100", "a100x4": "gpu-a100x4", "a100x16": "gpu-a100x16",
		"nvidia-tesla-a100": "gpu-a100", "nvidia-a100": "gpu-a100",
		"a100-80gb": "gpu-a100-80gb", "nvidia-a100-80gb": "gpu-a100-80gb", "a100-80gbx16": "gpu-a100-80gbx16",
		"h100": "gpu-h100", "nvidia-h100-80gb": "gpu-h100", "h100-80gb": "gpu-h100", "nvidia-h100": "gpu-h100",
		"nvidia-h100-80gbx8": "gpu-h100x8", "h100x2:spot": "gpu-h100x2:spot",
		// TPUs: default, chip count, topology, v5e alias, labels, prefixes
		"v3": "tpu-v3-4", "tpu-v3-8": "tpu-v3-4", "tpu-v3-16": "tpu-v3-16", "v3-32x64": "tpu-v3-2048",
		"v4": "tpu-v4-4", "tpu-v4-8": "tpu-v4-8", "v4-2x2x2": "tpu-v4-8", "tpu-v4-16x16x16": "tpu-v4-4096",
		"v5litepod": "tpu-v5litepod-4", "v5e": "tpu-v5litepod-4", "tpu-v5e-1": "tpu-v5litepod-1",
		"v5litepod-4": "tpu-v5litepod-4", "tpu-v5litepod-2x4": "tpu-v5litepod-8", "tpu-v5e-16x16": "tpu-v5litepod-256",
		"tpu-v5-lite-podslice": "tpu-v5litepod-4", "v5-lite-podslice-16": "tpu-v5litepod-16",
		"v5p": "tpu-v5p-8", "tpu:v5p-16": "tpu-v5p-16", "v5p-2x4x4": "tpu-v5p-32", "tpu-v5p-slice": "tpu-v5p-8",
		"v6e": "tpu-v6e-8", "tpu-v6e-8": "tpu-v6e-8", "tpu-v6e-4x4": "tpu-v6e-16", "tpu-v6e-slice-16": "tpu-v6e-16",
		"TPU-V6E-16:SPOT": "tpu-v6e-16:spot", "tpu-v6e-02x04": "tpu-v6e-8", "tpu-v4-podslice-8": "tpu-v4-8",
		// the seeds' examples
		"gpu-a100:spot": "gpu-a100:spot",
	}
	for in, want := range tests {
		t.Run(in, func(t *testing.T) {
			if got := mustParse(t, in).Name; got != want {
				t.Errorf("Parse(%q).Name = %q, want %q", in, got, want)
			}
		})
	}
}

// Every GPU spelling x prefix x count x case, generated so no combination is missed.
func TestParseGPUForms(t *testing.T) {
	for _, f := range gpuFamilies {
		for _, r := range f.rows {
			want := gpuSpec(f, r)
			for _, sp := range f.spellings() {
				for _, prefix := range []string{"", "gpu-", "gpu:", "GPU-"} {
					forms := []string{prefix + sp + "x" + strconv.Itoa(r.count)}
					if r.count == 1 {
						forms = append(forms, prefix+sp)
					}
					for _, in := range forms {
						if diff := cmp.Diff(want, mustParse(t, in)); diff != "" {
							t.Errorf("Parse(%q) (-want +got):\n%s", in, diff)
						}
					}
				}
			}
		}
	}
}

// Every TPU spelling x prefix x (chips | topology | default).
func TestParseTPUForms(t *testing.T) {
	for _, f := range tpuFamilies {
		for _, r := range f.rows {
			want := tpuSpec(f, r)
			for _, sp := range f.spellings() {
				// the empty prefix also covers the full GKE label, a spelling minus "tpu-"
				for _, prefix := range []string{"", "tpu-", "tpu:", "TPU:"} {
					forms := []string{prefix + sp + "-" + strconv.Itoa(r.chips), prefix + sp + "-" + r.topology}
					if r.chips == f.defaultChips {
						forms = append(forms, prefix+sp)
					}
					for _, in := range forms {
						if diff := cmp.Diff(want, mustParse(t, in)); diff != "" {
							t.Errorf("Parse(%q) (-want +got):\n%s", in, diff)
						}
					}
				}
			}
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"bad chip count", "tpu-v6e-7", `unknown accelerator "tpu-v6e-7": v6e offers 8 or 16 chips; did you mean tpu-v6e-8?`},
		{"chip count tie", "v5p-12", `unknown accelerator "v5p-12": v5p offers 8, 16 or 32 chips; did you mean: tpu-v5p-8, tpu-v5p-16?`},
		{"typo many", "f4", `unknown accelerator "f4": did you mean: l4, t4, p4?`},
		{"typo one", "h200", `unknown accelerator "h200": did you mean h100?`},
		{"typo family", "tpu-v7-8", `unknown accelerator "tpu-v7-8": did you mean tpu-v4-8?`},
		{"typo separator", "tpu-v6e:8", `unknown accelerator "tpu-v6e:8": did you mean tpu-v6e-8?`},
		{"typo keeps spot", "h200:spot", `unknown accelerator "h200:spot": did you mean h100:spot?`},
		{"bad gpu count", "l4x3", `unknown accelerator "l4x3": l4 offers 1, 2, 4 or 8 GPUs per machine; did you mean: gpu-l4x2, gpu-l4x4?`},
		{"gpu count with colon", "l4:2", `unknown accelerator "l4:2": GPU counts are written NAMExN; did you mean gpu-l4x2?`},
		{"gpu count with dash", "gpu-a100-8", `unknown accelerator "gpu-a100-8": GPU counts are written NAMExN; did you mean gpu-a100x8?`},
		{"gpu:N none", "gpu:3", `unknown accelerator "gpu:3": gpu:N takes 1, 2, 4, 8 or 16 GPUs per machine; did you mean: gpu:2, gpu:4?`},
		{"gpu:0", "gpu:0", `unknown accelerator "gpu:0": gpu:N takes 1, 2, 4, 8 or 16 GPUs per machine; did you mean gpu:1?`},
		{"tpu:N none", "tpu:3", `unknown accelerator "tpu:3": tpu:N takes 1, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048 or 4096 chips per slice; did you mean tpu:4?`},
		{"gpu as tpu", "tpu-l4x2", `unknown accelerator "tpu-l4x2": l4 is a GPU, not a TPU; did you mean gpu-l4x2?`},
		{"tpu as gpu", "gpu-v6e-8", `unknown accelerator "gpu-v6e-8": v6e is a TPU, not a GPU; did you mean tpu-v6e-8?`},
		{"transposed topology", "v5litepod-4x2", `unknown accelerator "v5litepod-4x2": v5litepod has no 4x2 topology; its 8-chip slice is 2x4; did you mean tpu-v5litepod-2x4?`},
		{"unknown topology", "v6e-3x3", `unknown accelerator "v6e-3x3": v6e topologies are 2x4 or 4x4; did you mean tpu-v6e-2x4?`},
		{"cpu zero", "cpu:0", `unknown accelerator "cpu:0": cpu:N takes 1 to 1024 vCPUs`},
		{"cpu too many", "cpu:5000", `unknown accelerator "cpu:5000": cpu:N takes 1 to 1024 vCPUs`},
		{"cpu signed", "cpu:+4", `unknown accelerator "cpu:+4": cpu:N takes a whole number of vCPUs, e.g. cpu:4`},
		{"cpu dash", "cpu-4", `unknown accelerator "cpu-4": CPU counts are written cpu:N; did you mean cpu:4?`},
		{"nothing close", "zzz", `unknown accelerator "zzz": run "kinetic accelerators" for the valid names`},
		{"empty", " ", `unknown accelerator " ": the name is empty; use cpu, gpu, tpu or a name from "kinetic accelerators"`},
		{"spot twice", "l4:spot:spot", `unknown accelerator "l4:spot:spot": write :spot once, at the end; did you mean gpu-l4:spot?`},
		{"too long", strings.Repeat("a", 65), `unknown accelerator "` + strings.Repeat("a", 65) + `": names are at most 64 characters; see "kinetic accelerators"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.in)
			var ue *UnknownError
			if !errors.As(err, &ue) {
				t.Fatalf("Parse(%q) error = %v, want *UnknownError", tt.in, err)
			}
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
				t.Errorf("message (-want +got):\n%s", diff)
			}
			if ue.Input != tt.in {
				t.Errorf("Input = %q, want %q", ue.Input, tt.in)
			}
			for _, s := range ue.Suggestions {
				if _, err := Parse(s); err != nil {
					t.Errorf("suggestion %q does not parse: %v", s, err)
				}
			}
		})
	}
}

func ExampleParse() {
	s, _ := Parse("tpu-v5e-2x4:spot")
	fmt.Println(s.Name, s.Chips, s.Hosts, s.MachineType, s.MultiHost())
	_, err := Parse("tpu-v6e-7")
	fmt.Println(err)
	// Output:
	// tpu-v5litepod-8:spot 8 1 ct5lp-hightpu-8t false
	// unknown accelerator "tpu-v6e-7": v6e offers 8 or 16 chips; did you mean tpu-v6e-8?
}

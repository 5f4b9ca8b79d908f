package accel

import "strconv"

// Kind is the broad class of hardware a job runs on.
type Kind string

const (
	CPU Kind = "cpu"
	GPU Kind = "gpu"
	TPU Kind = "tpu"
)

// GKE label and resource names; exported so the scheduler side does not retype them.
const (
	LabelGPUAccelerator = "cloud.google.com/gke-accelerator"
	LabelTPUAccelerator = "cloud.google.com/gke-tpu-accelerator"
	LabelTPUTopology    = "cloud.google.com/gke-tpu-topology"
	LabelSpot           = "cloud.google.com/gke-spot"
	ResourceGPU         = "nvidia.com/gpu"
	ResourceTPU         = "google.com/tpu"
)

// Toleration mirrors the Kubernetes toleration fields we need, without client-go.
type Toleration struct {
	Key      string `json:"key"`
	Operator string `json:"operator"`
	Value    string `json:"value,omitempty"`
	Effect   string `json:"effect"`
}

// Spec is one resolved accelerator: what the job gets and how to schedule it.
type Spec struct {
	Name        string `json:"name"`   // canonical name; Parse(Name) gives this Spec back
	Kind        Kind   `json:"kind"`   // cpu, gpu or tpu
	Family      string `json:"family"` // "l4", "v6e"; "" for cpu
	Chips       int    `json:"chips"`  // GPUs, or TPU chips in the whole slice
	CPUs        int    `json:"cpus,omitempty"`
	Hosts       int    `json:"hosts"`              // VMs in the slice; 1 unless a multi-host TPU
	Topology    string `json:"topology,omitempty"` // TPU only, e.g. "2x4"
	MachineType string `json:"machine_type,omitempty"`
	Spot        bool   `json:"spot"`

	NodeSelector     map[string]string `json:"node_selector,omitempty"`
	Tolerations      []Toleration      `json:"tolerations,omitempty"`
	ResourceName     string            `json:"resource_name,omitempty"`      // nvidia.com/gpu or google.com/tpu
	ResourcesPerHost int               `json:"resources_per_host,omitempty"` // each pod requests this many of ResourceName
}

// Category is the key used to pick a base image and runtime environment.
func (s Spec) Category() string { return string(s.Kind) }

// MultiHost reports whether the slice spans several VMs, which needs one pod per host
// (the Pathways / LeaderWorkerSet backend) rather than a single Job pod.
func (s Spec) MultiHost() bool { return s.Hosts > 1 }

// String is the canonical name, so a Spec prints the way a user would type it.
func (s Spec) String() string { return s.Name }

func cpuSpec(n int) Spec {
	name := "cpu"
	if n > 0 {
		name += ":" + strconv.Itoa(n)
	}
	return Spec{Name: name, Kind: CPU, CPUs: n, Hosts: 1}
}

func gpuSpec(f *gpuFamily, r gpuRow) Spec {
	name := "gpu-" + f.name
	if r.count > 1 {
		name += "x" + strconv.Itoa(r.count)
	}
	return Spec{
		Name: name, Kind: GPU, Family: f.name, Chips: r.count, Hosts: 1,
		MachineType:      r.machine,
		NodeSelector:     map[string]string{LabelGPUAccelerator: f.label},
		Tolerations:      []Toleration{resourceToleration(ResourceGPU)},
		ResourceName:     ResourceGPU,
		ResourcesPerHost: r.count,
	}
}

func tpuSpec(f *tpuFamily, r tpuRow) Spec {
	return Spec{
		Name: "tpu-" + f.name + "-" + strconv.Itoa(r.chips), Kind: TPU, Family: f.name,
		Chips: r.chips, Hosts: r.hosts, Topology: r.topology, MachineType: r.machine,
		NodeSelector: map[string]string{
			LabelTPUAccelerator: f.label,
			LabelTPUTopology:    r.topology,
		},
		Tolerations:      []Toleration{resourceToleration(ResourceTPU)},
		ResourceName:     ResourceTPU,
		ResourcesPerHost: r.chips / r.hosts,
	}
}

// GKE taints accelerator nodes with their resource name, so every accelerator pod
// needs this toleration or it is never scheduled.
func resourceToleration(resource string) Toleration {
	return Toleration{Key: resource, Operator: "Exists", Effect: "NoSchedule"}
}

// withSpot moves the spec onto spot capacity: GKE labels and taints spot nodes.
func (s Spec) withSpot() Spec {
	s.Spot = true
	s.Name += ":spot"
	sel := make(map[string]string, len(s.NodeSelector)+1)
	for k, v := range s.NodeSelector {
		sel[k] = v
	}
	sel[LabelSpot] = "true"
	s.NodeSelector = sel
	s.Tolerations = append(append([]Toleration(nil), s.Tolerations...),
		Toleration{Key: LabelSpot, Operator: "Equal", Value: "true", Effect: "NoSchedule"})
	return s
}

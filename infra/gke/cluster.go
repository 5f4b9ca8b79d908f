package gke

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"cloud.google.com/go/container/apiv1/containerpb"
	compute "google.golang.org/api/compute/v1"
)

// SystemMachineTypes are the system pool's machine types in order of preference: small
// general-purpose types; the first the zone offers wins.
var SystemMachineTypes = []string{"e2-standard-4", "n2-standard-4", "n2d-standard-4", "n4-standard-4", "t2d-standard-4", "c3-standard-4", "n1-standard-4", "e2-standard-2", "n2-standard-2"}

// acceleratorPrefixes are machine families that carry GPUs or TPUs: never a system pool.
var acceleratorPrefixes = []string{"ct", "tpu", "a2-", "a3-", "a4-", "g2-", "g4-"}

func isAcceleratorType(mt *compute.MachineType) bool {
	if len(mt.Accelerators) > 0 {
		return true
	}
	for _, p := range acceleratorPrefixes {
		if strings.HasPrefix(mt.Name, p) {
			return true
		}
	}
	return false
}

// zoneMachineTypes lists the machine types the zone offers.
func (c *Clients) zoneMachineTypes(ctx context.Context, cfg *Config) (map[string]*compute.MachineType, error) {
	out := map[string]*compute.MachineType{}
	err := c.Compute.MachineTypes.List(cfg.Project, cfg.Zone).Context(ctx).Pages(ctx, func(l *compute.MachineTypeList) error {
		for _, mt := range l.Items {
			out[mt.Name] = mt
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list the machine types of zone %s: %w", cfg.Zone, err)
	}
	return out, nil
}

// pickSystemMachineType chooses the system pool's machine type from what the zone
// offers: the first of SystemMachineTypes, else the smallest general-purpose type with
// at least 2 vCPUs and 4 GiB (TPU zones often offer few), and says why.
func pickSystemMachineType(zone string, offered map[string]*compute.MachineType) (string, string, error) {
	for _, n := range SystemMachineTypes {
		if _, ok := offered[n]; ok {
			return n, "", nil
		}
	}
	var cands []*compute.MachineType
	for _, mt := range offered {
		if !isAcceleratorType(mt) && mt.GuestCpus >= 2 && mt.MemoryMb >= 4096 && !mt.IsSharedCpu {
			cands = append(cands, mt)
		}
	}
	if len(cands) == 0 {
		names := sortedKeys(offered)
		if len(names) > 8 {
			names = append(names[:8], "…")
		}
		return "", "", fmt.Errorf("zone %s offers no general-purpose machine type for the system pool (it offers %s): choose another zone in the same region with --zone", zone, strings.Join(names, ", "))
	}
	sort.Slice(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if a.GuestCpus != b.GuestCpus {
			return a.GuestCpus < b.GuestCpus
		}
		if a.MemoryMb != b.MemoryMb {
			return a.MemoryMb < b.MemoryMb
		}
		return a.Name < b.Name
	})
	mt := cands[0]
	return mt.Name, fmt.Sprintf("system pool machine type %s: zone %s offers none of %s, so the smallest general-purpose type it offers (%d vCPUs, %d MiB)",
		mt.Name, zone, strings.Join(SystemMachineTypes[:3], ", "), mt.GuestCpus, mt.MemoryMb), nil
}

// systemPool is the node pool of system pods and CPU jobs: one node, autoscaled to 3.
func systemPool(machineType string) *containerpb.NodePool {
	return &containerpb.NodePool{
		Name:             SystemPool,
		InitialNodeCount: 1,
		Config: &containerpb.NodeConfig{
			MachineType:            machineType,
			DiskSizeGb:             100,
			OauthScopes:            []string{"https://www.googleapis.com/auth/cloud-platform"},
			Labels:                 map[string]string{"kinetic.dev/pool": SystemPool},
			WorkloadMetadataConfig: &containerpb.WorkloadMetadataConfig{Mode: containerpb.WorkloadMetadataConfig_GKE_METADATA},
		},
		Autoscaling: &containerpb.NodePoolAutoscaling{Enabled: true, MinNodeCount: 1, MaxNodeCount: 3},
		Management:  &containerpb.NodeManagement{AutoRepair: true, AutoUpgrade: true},
	}
}

// clusterSpec is the cluster up creates.
func clusterSpec(cfg *Config, machineType string) *containerpb.Cluster {
	return &containerpb.Cluster{
		Name:                   cfg.Cluster,
		Description:            "Kinetic jobs (kinetic up)",
		ResourceLabels:         managedLabels(),
		WorkloadIdentityConfig: &containerpb.WorkloadIdentityConfig{WorkloadPool: cfg.WorkloadPool()},
		AddonsConfig:           &containerpb.AddonsConfig{GcsFuseCsiDriverConfig: &containerpb.GcsFuseCsiDriverConfig{Enabled: true}},
		ReleaseChannel:         &containerpb.ReleaseChannel{Channel: containerpb.ReleaseChannel_REGULAR},
		NodePools:              []*containerpb.NodePool{systemPool(machineType)},
	}
}

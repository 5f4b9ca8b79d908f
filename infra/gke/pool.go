package gke

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"cloud.google.com/go/container/apiv1/containerpb"
	"google.golang.org/protobuf/proto"

	"github.com/kinetic-run/kinetic/accel"
)

// GPUScaleUp is how many nodes a GPU pool may grow over its minimum when --max-nodes
// is not given: the reference's GPU_NODE_POOL_MAX_SCALE_UP (kinetic/cli/constants.py).
const GPUScaleUp = 10

// LabelAccelerator is the node label of a pool made by `pool add`: the catalog name.
const LabelAccelerator = "kinetic.dev/accelerator"

// PoolOptions describe an accelerator node pool.
type PoolOptions struct {
	Accelerator string // a catalog name (accel.Parse), e.g. gpu-l4x2, tpu-v5p-16
	Name        string // "" = from the accelerator: gpu-l4x2, tpu-v5p-16-spot
	// MinNodes and MaxNodes bound the autoscaler. Defaults: 0 and MinNodes+GPUScaleUp
	// (a GPU: the reference's GPU_NODE_POOL_MAX_SCALE_UP), 0 and 1 (a single-host TPU),
	// or 0 and the slice's hosts (a multi-host TPU slice, all or nothing).
	MinNodes, MaxNodes int
	MaxSet             bool // MaxNodes was given
	Spot               bool
	Reservation        string // a specific Compute Engine reservation to consume
}

// NodePoolFor maps the accelerator catalog onto a GKE node pool: machine type, GPU
// count and driver installation, TPU topology with COMPACT placement for a multi-host
// slice, spot, reservation affinity, and the taints the catalog's tolerations match.
// GKE itself labels the nodes with what the pod specs select (cloud.google.com/gke-
// accelerator, gke-tpu-accelerator, gke-tpu-topology, gke-spot).
func NodePoolFor(o PoolOptions) (*containerpb.NodePool, accel.Spec, error) {
	sp, err := poolAccelerator(&o)
	if err != nil {
		return nil, sp, err
	}
	name, err := poolName(o, sp)
	if err != nil {
		return nil, sp, err
	}
	minN, maxN, err := poolBounds(o, sp)
	if err != nil {
		return nil, sp, err
	}
	np := &containerpb.NodePool{
		Name: name, Config: poolNodeConfig(o, sp, name), InitialNodeCount: int32(minN),
		Autoscaling: &containerpb.NodePoolAutoscaling{Enabled: true, MinNodeCount: int32(minN), MaxNodeCount: int32(maxN)},
		Management:  &containerpb.NodeManagement{AutoRepair: true, AutoUpgrade: true},
	}
	if sp.MultiHost() {
		np.PlacementPolicy = &containerpb.NodePool_PlacementPolicy{Type: containerpb.NodePool_PlacementPolicy_COMPACT, TpuTopology: sp.Topology}
	}
	return np, sp, nil
}

// poolAccelerator is the catalog entry of o.Accelerator (a ":spot" suffix sets o.Spot),
// which must be a GPU or TPU.
func poolAccelerator(o *PoolOptions) (accel.Spec, error) {
	sp, err := accel.Parse(o.Accelerator)
	if err != nil {
		return sp, fmt.Errorf("--accelerator: %w", err)
	}
	if sp.Spot {
		o.Spot = true
		base, _ := strings.CutSuffix(sp.Name, ":spot")
		if sp, err = accel.Parse(base); err != nil {
			return sp, err
		}
	}
	if sp.Kind == accel.CPU || sp.MachineType == "" {
		return sp, fmt.Errorf("--accelerator %s: pool add makes GPU and TPU pools; CPU jobs run on the system pool (see `kinetic accelerators`)", o.Accelerator)
	}
	if o.Spot && o.Reservation != "" {
		return sp, errors.New("--spot and --reservation exclude each other: a reservation is on-demand capacity you hold; spot is capacity you may lose")
	}
	return sp, nil
}

// poolName is o.Name, or the accelerator's name (with -spot).
func poolName(o PoolOptions, sp accel.Spec) (string, error) {
	name := o.Name
	if name == "" {
		name = sp.Name
		if o.Spot {
			name += "-spot"
		}
	}
	if !validPoolName(name) {
		return "", fmt.Errorf("pool name %q: use lowercase letters, digits and dashes, at most 40, starting with a letter", name)
	}
	return name, nil
}

// poolBounds are the autoscaler's minimum and maximum nodes.
func poolBounds(o PoolOptions, sp accel.Spec) (minN, maxN int, err error) {
	minN, maxN = o.MinNodes, o.MaxNodes
	if !o.MaxSet {
		maxN = defaultMaxNodes(minN, sp)
	}
	if minN < 0 || maxN < 1 || minN > maxN {
		return 0, 0, fmt.Errorf("--min-nodes %d --max-nodes %d: want 0 ≤ min ≤ max and max ≥ 1", minN, maxN)
	}
	// A multi-host slice is scheduled whole: its pool has 0 or Hosts nodes.
	if sp.MultiHost() && ((minN != 0 && minN != sp.Hosts) || maxN != sp.Hosts) {
		return 0, 0, fmt.Errorf("%s is one slice of %d hosts: its pool scales between 0 and %d nodes together (use --min-nodes 0 or %d and --max-nodes %d; add another pool for another slice)", sp.Name, sp.Hosts, sp.Hosts, sp.Hosts, sp.Hosts)
	}
	return minN, maxN, nil
}

// defaultMaxNodes is the slice's hosts; a GPU pool grows by up to GPUScaleUp nodes over
// its minimum, as the reference's GPU pools do: several GPU jobs at once each get a node.
func defaultMaxNodes(minN int, sp accel.Spec) int {
	maxN := sp.Hosts
	if sp.Kind == accel.GPU {
		maxN = minN + GPUScaleUp
	}
	return max(maxN, minN)
}

// poolNodeConfig is the nodes' machine, labels, taints, GPUs and reservation.
func poolNodeConfig(o PoolOptions, sp accel.Spec, name string) *containerpb.NodeConfig {
	nc := &containerpb.NodeConfig{
		MachineType:            sp.MachineType,
		OauthScopes:            []string{"https://www.googleapis.com/auth/cloud-platform"},
		Spot:                   o.Spot,
		Labels:                 map[string]string{LabelAccelerator: sp.Name, "kinetic.dev/pool": name},
		WorkloadMetadataConfig: &containerpb.WorkloadMetadataConfig{Mode: containerpb.WorkloadMetadataConfig_GKE_METADATA},
		Taints:                 poolTaints(o, sp),
	}
	if sp.Kind == accel.GPU {
		nc.Accelerators = []*containerpb.AcceleratorConfig{{
			AcceleratorCount: int64(sp.Chips), AcceleratorType: sp.NodeSelector[accel.LabelGPUAccelerator],
			GpuDriverInstallationConfig: &containerpb.GPUDriverInstallationConfig{GpuDriverVersion: containerpb.GPUDriverInstallationConfig_LATEST.Enum()},
		}}
	}
	if o.Reservation != "" {
		nc.ReservationAffinity = &containerpb.ReservationAffinity{ConsumeReservationType: containerpb.ReservationAffinity_SPECIFIC_RESERVATION,
			Key: "compute.googleapis.com/reservation-name", Values: []string{o.Reservation}}
	}
	return nc
}

// poolTaints are the taints the catalog's tolerations (and spot's) match.
func poolTaints(o PoolOptions, sp accel.Spec) []*containerpb.NodeTaint {
	tol := sp.Tolerations
	if o.Spot {
		tol = append(tol, accel.Toleration{Key: accel.LabelSpot, Operator: "Equal", Value: "true", Effect: "NoSchedule"})
	}
	var taints []*containerpb.NodeTaint
	for _, t := range tol {
		v := t.Value
		if v == "" {
			v = "present"
		}
		taints = append(taints, &containerpb.NodeTaint{Key: t.Key, Value: v, Effect: containerpb.NodeTaint_NO_SCHEDULE})
	}
	return taints
}

func validPoolName(n string) bool {
	if n == "" || len(n) > 40 || n[0] < 'a' || n[0] > 'z' || n[len(n)-1] == '-' {
		return false
	}
	for _, r := range n {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

// PlanPoolAdd plans one accelerator pool: create it, nothing when the same pool is
// there, an error when a pool of that name differs.
func PlanPoolAdd(ctx context.Context, c *Clients, cfg Config, o PoolOptions) (*Plan, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	np, sp, err := NodePoolFor(o)
	if err != nil {
		return nil, err
	}
	p := &Plan{Title: fmt.Sprintf("GKE: project %s, zone %s, cluster %s", cfg.Project, cfg.Zone, cfg.Cluster), poll: cfg.Poll}
	cl, err := c.Cluster.GetCluster(ctx, &containerpb.GetClusterRequest{Name: cfg.clusterName()})
	if notFound(err) {
		return nil, fmt.Errorf("cluster %s does not exist in %s/%s: run `kinetic up` first", cfg.Cluster, cfg.Project, cfg.Zone)
	} else if err != nil {
		return nil, apiErr("read the cluster "+cfg.clusterName(), err)
	}
	st, err := c.poolStep(&cfg, np, sp, cl.GetNodePools())
	if err != nil {
		return nil, err
	}
	p.Steps = append(p.Steps, st)
	return p, nil
}

// poolStep plans the pool np among the cluster's pools have (none when the cluster is
// not made yet): ok when the same pool is there, create when none of its name, an error
// when one of its name differs.
func (c *Clients) poolStep(cfg *Config, np *containerpb.NodePool, sp accel.Spec, have []*containerpb.NodePool) (Step, error) {
	what := fmt.Sprintf("node pool %s", np.Name)
	detail := poolDetail(np, sp)
	for _, h := range have {
		if h.GetName() != np.Name {
			continue
		}
		if h.GetStatus() == containerpb.NodePool_ERROR {
			// An operation failed at Google (quota, stockout): never "ok".
			return Step{What: what, Action: ActRecreate, Detail: detail + "; it is in ERROR at Google (" + firstLine(h.GetStatusMessage()) + "): deleted and created again",
				apply: func(ctx context.Context, pr *progress) error {
					op, err := c.whenIdle(ctx, cfg, pr, func() (*containerpb.Operation, error) {
						return c.Cluster.DeleteNodePool(ctx, &containerpb.DeleteNodePoolRequest{Name: cfg.poolName(np.Name)})
					})
					if err != nil && !notFound(err) {
						return err
					}
					if err == nil {
						if err := c.waitOp(ctx, cfg, op, pr); err != nil {
							return err
						}
					}
					return c.createPool(ctx, cfg, np, pr)
				}}, nil
		}
		if same(h, np) {
			return Step{What: what, Action: ActOK, Detail: detail}, nil
		}
		return Step{}, fmt.Errorf("node pool %s exists with other settings (%s): `kinetic pool remove %s` first, or give --name", np.Name, poolDetail(h, sp), np.Name)
	}
	return Step{What: what, Action: ActCreate, Detail: detail, apply: func(ctx context.Context, pr *progress) error {
		return c.createPool(ctx, cfg, np, pr)
	}}, nil
}

// createPool creates np and waits for it, after any other operation on the cluster.
func (c *Clients) createPool(ctx context.Context, cfg *Config, np *containerpb.NodePool, pr *progress) error {
	op, err := c.whenIdle(ctx, cfg, pr, func() (*containerpb.Operation, error) {
		return c.Cluster.CreateNodePool(ctx, &containerpb.CreateNodePoolRequest{Parent: cfg.clusterName(), NodePool: np})
	})
	if exists(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return c.waitOp(ctx, cfg, op, pr)
}

// same compares what pool add sets.
func same(have, want *containerpb.NodePool) bool {
	h, w := have.GetConfig(), want.GetConfig()
	return h.GetMachineType() == w.GetMachineType() && h.GetSpot() == w.GetSpot() &&
		proto.Equal(h.GetReservationAffinity(), w.GetReservationAffinity()) &&
		have.GetAutoscaling().GetMinNodeCount() == want.GetAutoscaling().GetMinNodeCount() &&
		have.GetAutoscaling().GetMaxNodeCount() == want.GetAutoscaling().GetMaxNodeCount() &&
		have.GetPlacementPolicy().GetTpuTopology() == want.GetPlacementPolicy().GetTpuTopology() &&
		len(h.GetAccelerators()) == len(w.GetAccelerators())
}

func poolDetail(np *containerpb.NodePool, sp accel.Spec) string {
	c := np.GetConfig()
	s := fmt.Sprintf("%s, %d–%d nodes", c.GetMachineType(), np.GetAutoscaling().GetMinNodeCount(), np.GetAutoscaling().GetMaxNodeCount())
	if t := np.GetPlacementPolicy().GetTpuTopology(); t != "" {
		s += fmt.Sprintf(", TPU topology %s (%d hosts, compact placement)", t, sp.Hosts)
	}
	for _, a := range c.GetAccelerators() {
		s += fmt.Sprintf(", %d× %s", a.GetAcceleratorCount(), a.GetAcceleratorType())
		if v := a.GetGpuDriverInstallationConfig().GetGpuDriverVersion(); v != 0 {
			s += " driver " + v.String()
		}
	}
	if c.GetSpot() {
		s += ", spot"
	}
	if r := c.GetReservationAffinity(); len(r.GetValues()) > 0 {
		s += ", reservation " + strings.Join(r.GetValues(), ",")
	}
	return s
}

// PoolInfo is one node pool, as pool list shows it.
type PoolInfo struct {
	Name        string `json:"name"`
	Accelerator string `json:"accelerator,omitempty"`
	MachineType string `json:"machine_type"`
	MinNodes    int32  `json:"min_nodes"`
	MaxNodes    int32  `json:"max_nodes"`
	Spot        bool   `json:"spot"`
	Reservation string `json:"reservation,omitempty"`
	Topology    string `json:"tpu_topology,omitempty"`
	Status      string `json:"status"`
}

// ListPools lists the cluster's node pools.
func ListPools(ctx context.Context, c *Clients, cfg Config) ([]PoolInfo, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	r, err := c.Cluster.ListNodePools(ctx, &containerpb.ListNodePoolsRequest{Parent: cfg.clusterName()})
	if notFound(err) {
		return nil, fmt.Errorf("cluster %s does not exist in %s/%s: run `kinetic up` first", cfg.Cluster, cfg.Project, cfg.Zone)
	} else if err != nil {
		return nil, apiErr("list the node pools of "+cfg.clusterName(), err)
	}
	var out []PoolInfo
	for _, np := range r.GetNodePools() {
		out = append(out, poolInfo(np))
	}
	return out, nil
}

func poolInfo(np *containerpb.NodePool) PoolInfo {
	c := np.GetConfig()
	pi := PoolInfo{Name: np.GetName(), Accelerator: c.GetLabels()[LabelAccelerator], MachineType: c.GetMachineType(),
		MinNodes: np.GetAutoscaling().GetMinNodeCount(), MaxNodes: np.GetAutoscaling().GetMaxNodeCount(),
		Spot: c.GetSpot(), Topology: np.GetPlacementPolicy().GetTpuTopology(), Status: np.GetStatus().String()}
	if v := c.GetReservationAffinity().GetValues(); len(v) > 0 {
		pi.Reservation = strings.Join(v, ",")
	}
	if !np.GetAutoscaling().GetEnabled() {
		pi.MinNodes, pi.MaxNodes = np.GetInitialNodeCount(), np.GetInitialNodeCount()
	}
	return pi
}

// PlanPoolRemove plans the deletion of one node pool (never the system pool).
func PlanPoolRemove(ctx context.Context, c *Clients, cfg Config, name string) (*Plan, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	if name == SystemPool {
		return nil, fmt.Errorf("pool %s holds the cluster's own pods and CPU jobs: it goes with `kinetic down`", SystemPool)
	}
	p := &Plan{Title: fmt.Sprintf("GKE: project %s, zone %s, cluster %s", cfg.Project, cfg.Zone, cfg.Cluster), poll: cfg.Poll}
	_, err := c.Cluster.GetNodePool(ctx, &containerpb.GetNodePoolRequest{Name: cfg.poolName(name)})
	if notFound(err) {
		pools, lerr := ListPools(ctx, c, cfg)
		if lerr != nil {
			return nil, lerr
		}
		var names []string
		for _, pi := range pools {
			names = append(names, pi.Name)
		}
		return nil, fmt.Errorf("no node pool %q in cluster %s (pools: %s)", name, cfg.Cluster, strings.Join(names, ", "))
	} else if err != nil {
		return nil, apiErr("read the node pool "+name, err)
	}
	p.Steps = append(p.Steps, Step{What: "node pool " + name, Action: ActDelete, apply: func(ctx context.Context, pr *progress) error {
		op, err := c.whenIdle(ctx, &cfg, pr, func() (*containerpb.Operation, error) {
			return c.Cluster.DeleteNodePool(ctx, &containerpb.DeleteNodePoolRequest{Name: cfg.poolName(name)})
		})
		if notFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return c.waitOp(ctx, &cfg, op, pr)
	}})
	return p, nil
}

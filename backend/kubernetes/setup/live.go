package setup

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/kinetic-run/kinetic/accel"
	"github.com/kinetic-run/kinetic/backend/provision"
	"github.com/kinetic-run/kinetic/infra"
	"github.com/kinetic-run/kinetic/infra/gke"
)

// liveRow is one catalog accelerator the cluster's nodes offer.
type liveRow struct {
	Name  string `json:"name"`
	Nodes int    `json:"nodes"`
	Ready int    `json:"ready"`
	// Free devices on those nodes (allocatable minus what running pods request); -1
	// when pods could not be listed.
	Free int64 `json:"free"`
}

// liveAccelerators lists, for the configured Kubernetes cluster, the catalog
// accelerators its nodes carry the labels of (infra.Nodes, as the dashboard does).
func liveAccelerators(ctx context.Context, c *provision.Call) error {
	t, _, kerr, err := k8sTarget(c.Profile, provision.KeyArgs(c, gkeKeys...))
	if err != nil {
		return err
	}
	if kerr != nil {
		return fmt.Errorf("--live reads the cluster of the current kubeconfig context: %w", kerr)
	}
	nodes, err := infra.Nodes(ctx, t)
	if err != nil {
		return err
	}
	var rows []liveRow
	at := map[string]int{}
	for _, n := range nodes {
		for _, a := range n.Accelerators {
			// A node offers an accelerator when it carries its labels and holds as many
			// devices as one host of it needs (a 4-GPU node offers l4x4, not l4x8).
			if spec, err := accel.Parse(a); err == nil && spec.ResourcesPerHost > 0 && int64(spec.ResourcesPerHost) > n.Allocatable {
				continue
			}
			i, ok := at[a]
			if !ok {
				i = len(rows)
				at[a] = i
				rows = append(rows, liveRow{Name: a})
			}
			r := &rows[i]
			r.Nodes++
			if n.Ready {
				r.Ready++
			}
			switch {
			case r.Free < 0:
			case n.Used < 0:
				r.Free = -1
			default:
				r.Free += n.Allocatable - n.Used
			}
		}
	}
	if c.Bool("json") {
		if rows == nil {
			rows = []liveRow{}
		}
		return provision.WriteJSON(c.Out, rows)
	}
	if len(rows) == 0 {
		fmt.Fprintf(c.Out, "the cluster (%d nodes) has no nodes with GPU or TPU labels of the catalog: CPU jobs only (`kinetic pool add` adds a pool on GKE)\n", len(nodes))
		return nil
	}
	tw := tabwriter.NewWriter(c.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tNODES\tREADY\tFREE DEVICES")
	for _, r := range rows {
		free := fmt.Sprint(r.Free)
		if r.Free < 0 {
			free = "?"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", r.Name, r.Nodes, r.Ready, free)
	}
	return tw.Flush()
}

// livePool is one accelerator node pool of a GKE cluster, as --live shows it.
type livePool struct {
	Name     string `json:"name"`
	Pool     string `json:"pool"`
	MinNodes int32  `json:"min_nodes"`
	MaxNodes int32  `json:"max_nodes"`
	Spot     bool   `json:"spot"`
	Status   string `json:"status"`
}

// livePools is --live on GKE, as the reference's: the accelerators of the cluster's node
// pools read from the GKE API (the cluster of --project/--zone/--cluster or the
// profile; no kubeconfig), a pool scaled to zero included, since a job's pod makes it
// grow.
func livePools(ctx context.Context, c *provision.Call) error {
	cl, cfg, _, err := gkeSetup(ctx, c, nil)
	if err != nil {
		return err
	}
	defer cl.Close()
	pools, err := gke.ListPools(ctx, cl, cfg)
	if err != nil {
		return err
	}
	rows := []livePool{}
	for _, p := range pools {
		if p.Accelerator == "" {
			continue // the system pool: CPU jobs
		}
		rows = append(rows, livePool{Name: p.Accelerator, Pool: p.Name, MinNodes: p.MinNodes, MaxNodes: p.MaxNodes, Spot: p.Spot, Status: p.Status})
	}
	if c.Bool("json") {
		return provision.WriteJSON(c.Out, rows)
	}
	if len(rows) == 0 {
		fmt.Fprintf(c.Out, "cluster %s has no accelerator pools: CPU jobs only (`kinetic pool add --accelerator A` adds one)\n", cfg.Cluster)
		return nil
	}
	tw := tabwriter.NewWriter(c.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tPOOL\tNODES\tSPOT\tSTATUS")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%d-%d\t%v\t%s\n", r.Name, r.Pool, r.MinNodes, r.MaxNodes, r.Spot, r.Status)
	}
	return tw.Flush()
}

package cli

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kinetic-run/kinetic/accel"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/infra"
	"github.com/kinetic-run/kinetic/infra/gke"
)

func newAcceleratorsCmd(g *Globals) *cobra.Command {
	var asJSON, live bool
	var where *gkeFlags
	cmd := &cobra.Command{
		Use:   "accelerators [NAME]",
		Short: "List the accelerators a job can ask for, or resolve one name",
		Long: `List every accelerator in the catalog, or, given NAME, show what it resolves to:
machine type, hosts, topology and the GKE scheduling facts.

Names are case-insensitive: cpu, cpu:N, gpu, gpu:N, tpu, tpu:N, GPU names with an
optional count (l4, a100x4, nvidia-tesla-t4x2), TPU names by chips or topology
(tpu-v6e-8, tpu-v5litepod-2x4, v5e); append :spot for spot capacity.`,
		Example: "  kinetic accelerators\n  kinetic accelerators tpu-v5e-2x4:spot\n  kinetic accelerators --json\n  kinetic accelerators --live",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			if live {
				if len(args) > 0 {
					return fmt.Errorf("--live lists what the cluster offers; give no NAME with it")
				}
				args := keyFlagArgs(where.vals)
				if res, err := config.Resolve(config.Options{Args: args, Profile: g.Profile}); err == nil && res.Get(config.Backend) == "gke" {
					return livePools(cmd, g, where, asJSON)
				}
				return liveAccelerators(cmd, g, args, asJSON)
			}
			if len(args) == 0 {
				if asJSON {
					return accel.WriteJSON(out, accel.Catalog())
				}
				return accel.WriteTable(out, accel.Catalog())
			}
			spec, err := accel.Parse(args[0])
			switch {
			case err != nil:
				return err
			case asJSON:
				return accel.WriteSpecJSON(out, spec)
			}
			return accel.WriteSpec(out, spec)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (an array, or one object with NAME)")
	cmd.Flags().BoolVar(&live, "live", false, "only the accelerators the cluster offers: on GKE its node pools (those scaled to zero too), elsewhere the nodes the kubeconfig's cluster has, with free devices")
	// As the reference's: which cluster --live reads (the catalog itself is the same
	// everywhere).
	where = addGKEFlags(cmd)
	return cmd
}

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
func liveAccelerators(cmd *cobra.Command, g *Globals, args map[config.Key]string, asJSON bool) error {
	t, _, kerr, err := k8sTarget(g, args)
	if err != nil {
		return err
	}
	if kerr != nil {
		return fmt.Errorf("--live reads the cluster of the current kubeconfig context: %w", kerr)
	}
	nodes, err := infra.Nodes(cmd.Context(), t)
	if err != nil {
		return err
	}
	rows := liveRows(nodes)
	if asJSON {
		if rows == nil {
			rows = []liveRow{}
		}
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	if len(rows) == 0 {
		fmt.Fprintf(cmd.OutOrStdout(), "the cluster (%d nodes) has no nodes with GPU or TPU labels of the catalog: CPU jobs only (`kinetic pool add` adds a pool on GKE)\n", len(nodes))
		return nil
	}
	tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
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

// liveRows sums the nodes by the accelerators they offer, in the order first seen.
func liveRows(nodes []infra.Node) []liveRow {
	var rows []liveRow
	at := map[string]int{}
	for _, n := range nodes {
		for _, a := range n.Accelerators {
			if !offers(n, a) {
				continue
			}
			i, ok := at[a]
			if !ok {
				i = len(rows)
				at[a] = i
				rows = append(rows, liveRow{Name: a})
			}
			rows[i].add(n)
		}
	}
	return rows
}

// offers says node n offers accelerator a: it carries its labels and holds as many
// devices as one host of it needs (a 4-GPU node offers l4x4, not l4x8).
func offers(n infra.Node, a string) bool {
	spec, err := accel.Parse(a)
	return err != nil || spec.ResourcesPerHost <= 0 || int64(spec.ResourcesPerHost) <= n.Allocatable
}

// add counts node n in r.
func (r *liveRow) add(n infra.Node) {
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
func livePools(cmd *cobra.Command, g *Globals, where *gkeFlags, asJSON bool) error {
	c, cfg, _, err := gkeSetup(cmd.Context(), g, where, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	pools, err := gke.ListPools(cmd.Context(), c, cfg)
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
	if asJSON {
		return writeJSON(cmd.OutOrStdout(), rows)
	}
	if len(rows) == 0 {
		fmt.Fprintf(cmd.OutOrStdout(), "cluster %s has no accelerator pools: CPU jobs only (`kinetic pool add --accelerator A` adds one)\n", cfg.Cluster)
		return nil
	}
	tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tPOOL\tNODES\tSPOT\tSTATUS")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%d-%d\t%v\t%s\n", r.Name, r.Pool, r.MinNodes, r.MaxNodes, r.Spot, r.Status)
	}
	return tw.Flush()
}

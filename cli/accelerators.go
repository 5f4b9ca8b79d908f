package cli

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kinetic-run/kinetic/accel"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/infra"
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
				return liveAccelerators(cmd, g, keyFlagArgs(where.vals), asJSON)
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
	cmd.Flags().BoolVar(&live, "live", false, "only the accelerators the current cluster has nodes for, with how many nodes and free devices")
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

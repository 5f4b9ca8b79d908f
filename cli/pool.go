package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/infra/gke"
)

func newPoolCmd(g *Globals) *cobra.Command {
	cmd := &cobra.Command{Use: "pool", Short: "Add, list and remove GPU/TPU node pools of the GKE cluster"}
	cmd.AddCommand(newPoolAddCmd(g), newPoolListCmd(g), newPoolRemoveCmd(g))
	return cmd
}

func newPoolAddCmd(g *Globals) *cobra.Command {
	var o gke.PoolOptions
	var yes, preview bool
	cmd := &cobra.Command{
		Use:   "add --accelerator A [--min-nodes N] [--max-nodes M] [--spot] [--reservation R]",
		Short: "Add a node pool for an accelerator of the catalog (`kinetic accelerators`)",
		Long: "Maps the accelerator onto GKE: machine type; GPU count with the driver installed by\n" +
			"GKE (LATEST); for a multi-host TPU slice its topology with COMPACT placement, scaled\n" +
			"0 or all hosts together; spot capacity; a specific reservation. The nodes get the\n" +
			"labels and taints job pods select and tolerate.",
		Example: "  kinetic pool add --accelerator gpu-l4x2 --max-nodes 4 --spot\n  kinetic pool add --accelerator tpu-v5p-16 --reservation my-reservation",
		Args:    cobra.NoArgs,
	}
	f := addGKEFlags(cmd)
	cmd.Flags().StringVar(&o.Accelerator, "accelerator", "", "accelerator, e.g. gpu-l4, gpu-a100x8, tpu-v6e-16 (see: kinetic accelerators)")
	cmd.Flags().StringVar(&o.Name, "name", "", "pool name (default: the accelerator's, -spot for spot)")
	cmd.Flags().IntVar(&o.MinNodes, "min-nodes", 0, "fewest nodes the autoscaler keeps")
	cmd.Flags().IntVar(&o.MaxNodes, "max-nodes", 0, "most nodes (default: 1, or a multi-host slice's hosts)")
	cmd.Flags().BoolVar(&o.Spot, "spot", false, "spot VMs (cheaper, may be preempted)")
	cmd.Flags().StringVar(&o.Reservation, "reservation", "", "consume this Compute Engine reservation (env KINETIC_RESERVATION)")
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "apply without asking")
	cmd.Flags().BoolVar(&preview, "preview", false, "print the plan and stop")
	cmd.MarkFlagRequired("accelerator")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		start := time.Now()
		o.MaxSet = cmd.Flags().Changed("max-nodes")
		// The pool's own flags first: a bad accelerator or node count is refused before
		// any credential or API is needed.
		if _, _, err := gke.NodePoolFor(o); err != nil {
			return usageError(err)
		}
		c, cfg, res, err := gkeSetup(cmd.Context(), g, f, nil)
		if err != nil {
			return err
		}
		defer c.Close()
		if !cmd.Flags().Changed("reservation") {
			o.Reservation = res.Get(config.Reservation) // KINETIC_RESERVATION, a profile
		}
		p, err := gke.PlanPoolAdd(cmd.Context(), c, cfg, o)
		if err != nil {
			return planErr(cmd.Context(), err)
		}
		p.Print(cmd.ErrOrStderr())
		_, err = applyPlan(cmd, p, 0, preview, yes, start, "the pool is there")
		return err
	}
	return cmd
}

func newPoolListCmd(g *Globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{Use: "list [--json]", Short: "List the cluster's node pools", Args: cobra.NoArgs}
	f := addGKEFlags(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		c, cfg, _, err := gkeSetup(cmd.Context(), g, f, nil)
		if err != nil {
			return err
		}
		defer c.Close()
		pools, err := gke.ListPools(cmd.Context(), c, cfg)
		if err != nil {
			return err
		}
		if asJSON {
			if pools == nil {
				pools = []gke.PoolInfo{}
			}
			return writeJSON(cmd.OutOrStdout(), pools)
		}
		gke.PrintPools(cmd.OutOrStdout(), pools)
		return nil
	}
	return cmd
}

func newPoolRemoveCmd(g *Globals) *cobra.Command {
	var yes, preview bool
	cmd := &cobra.Command{Use: "remove NAME [-y]", Short: "Delete a node pool (its running jobs' pods go with it)", Args: cobra.ExactArgs(1)}
	f := addGKEFlags(cmd)
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "apply without asking")
	cmd.Flags().BoolVar(&preview, "preview", false, "print the plan and stop")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		start := time.Now()
		c, cfg, _, err := gkeSetup(cmd.Context(), g, f, nil)
		if err != nil {
			return err
		}
		defer c.Close()
		p, err := gke.PlanPoolRemove(cmd.Context(), c, cfg, args[0])
		if err != nil {
			return planErr(cmd.Context(), err)
		}
		p.Print(cmd.ErrOrStderr())
		_, err = applyPlan(cmd, p, 0, preview, yes, start, fmt.Sprintf("pool %s is gone", args[0]))
		return err
	}
	return cmd
}

package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kinetic-run/kinetic/accel"
	"github.com/kinetic-run/kinetic/backend/provision"
)

func newAcceleratorsCmd(g *Globals) *cobra.Command {
	var asJSON, live bool
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
				return runProvision(cmd, g, provision.CmdAccelerators, nil, func(ctx context.Context, p provision.Provisioner, c *provision.Call) error {
					return p.Accelerators(ctx, c)
				})
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
	// everywhere): the provisioners' flags.
	provision.DefineFlags(provision.CmdAccelerators, cmd.Flags())
	return cmd
}

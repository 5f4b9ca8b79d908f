package cli

import (
	"github.com/spf13/cobra"

	"github.com/kinetic-run/kinetic/accel"
)

func init() { register(newAcceleratorsCmd) }

func newAcceleratorsCmd(*Globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "accelerators [NAME]",
		Short: "List the accelerators a job can ask for, or resolve one name",
		Long: `List every accelerator in the catalog, or, given NAME, show what it resolves to:
machine type, hosts, topology and the GKE scheduling facts.

Names are case-insensitive: cpu, cpu:N, gpu, gpu:N, tpu, tpu:N, GPU names with an
optional count (l4, a100x4, nvidia-tesla-t4x2), TPU names by chips or topology
(tpu-v6e-8, tpu-v5litepod-2x4, v5e); append :spot for spot capacity.`,
		Example: "  kinetic accelerators\n  kinetic accelerators tpu-v5e-2x4:spot\n  kinetic accelerators --json",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
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
	return cmd
}

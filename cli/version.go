package cli

import (
	"encoding/json"
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/kinetic-run/kinetic/protocol"
	"github.com/kinetic-run/kinetic/version"
)

// versionInfo is what `kinetic version --json` prints.
type versionInfo struct {
	Kinetic  string `json:"kinetic"`
	Protocol int    `json:"protocol"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

func newVersionCmd(*Globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the kinetic version (the SDK's kinetic.__version__ is the same)",
		Example: `  kinetic version
  kinetic version --json
  kinetic --version`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := versionInfo{Kinetic: version.Version, Protocol: protocol.Version, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(v)
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "kinetic %s (engine protocol %d, %s, %s)\n", v.Kinetic, v.Protocol, v.Go, v.Platform)
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the version as JSON")
	return cmd
}

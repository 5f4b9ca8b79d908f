package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/store"
	"github.com/kinetic-run/kinetic/store/gcs"
)

func newStoreCmd(g *Globals) *cobra.Command {
	cmd := &cobra.Command{Use: "store", Short: "Manage the store that holds jobs: create a gs:// bucket with retention"}
	cmd.AddCommand(newStoreCreateCmd(g))
	return cmd
}

func newStoreCreateCmd(g *Globals) *cobra.Command {
	var (
		location string
		asJSON   bool
	)
	cmd := &cobra.Command{
		Use:   "create [gs://BUCKET[/PREFIX]]",
		Short: "Create a gs:// store's bucket with a 30-day lifecycle rule for jobs/, groups/ and blobs/ (never outputs/)",
		Long: `Create the bucket of a gs:// store (default: the configured store) in --project, with a
lifecycle rule that deletes the store's job records (jobs/), batch manifests (groups/) and
shipped code (blobs/) 30 days after they were written. Outputs (outputs/, the default
KINETIC_OUTPUT_DIR) are never expired. An existing bucket is left as it is.`,
		Example: `  kinetic store create gs://my-kinetic-bucket --project my-project
  kinetic store create --profile prod`,
		Args: cobra.MaximumNArgs(1),
	}
	vals := map[config.Key]*string{
		config.Project: cmd.Flags().String("project", "", "project that owns the bucket (env KINETIC_PROJECT)"),
		config.Zone:    cmd.Flags().String("zone", "", "zone whose region is the bucket's default location (env KINETIC_ZONE)"),
	}
	cmd.Flags().StringVar(&location, "location", "", "bucket location, e.g. us-central1 or EU (default: the region of the zone)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		flags := keyFlagArgs(vals)
		if len(args) == 1 {
			flags[config.Store] = args[0]
		}
		e, err := newEngine(cmd, g, flags)
		if err != nil {
			return err
		}
		defer e.Close()
		cfg := e.Config()
		url := cfg.Get(config.Store)
		if location == "" {
			location = region(cfg.Get(config.Zone))
		}
		err = gcs.CreateBucket(cmd.Context(), url, gcs.BucketOptions{Project: cfg.Get(config.Project), Location: location})
		existed := errors.Is(err, gcs.ErrBucketExists)
		if err != nil && !existed {
			return err
		}
		if asJSON {
			return writeJSON(cmd.OutOrStdout(), map[string]any{"store": url, "created": !existed, "location": location,
				"retention_days": store.RetentionDays, "expiring": store.ExpiringAreas})
		}
		if existed {
			fmt.Fprintf(cmd.ErrOrStderr(), "kinetic: %v\n", err)
			return nil
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "kinetic: created %s in %s: %s expire after %d days; outputs/ is kept\n",
			url, location, strings.Join(store.ExpiringAreas, ", "), store.RetentionDays)
		return nil
	}
	return cmd
}

// region is the region of a GCP zone ("us-central1-a" → "us-central1"), or "" if zone
// does not look like one.
func region(zone string) string {
	i := strings.LastIndexByte(zone, '-')
	if i <= 0 || strings.Count(zone, "-") < 2 {
		return ""
	}
	return zone[:i]
}

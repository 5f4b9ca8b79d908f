package cli

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/kinetic-run/kinetic/backend/kubernetes"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/infra/gke"
	"github.com/kinetic-run/kinetic/infra/gke/gkeconn"
)

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func newDownCmd(g *Globals) *cobra.Command {
	var yes, preview, force bool
	var st string
	cmd := &cobra.Command{
		Use:   "down [-y] [--preview] [--force-destroy]",
		Short: "Delete what `kinetic up` made on GKE: cluster, repository, service account (the bucket only with --force-destroy)",
		Long: "Plans, prints, asks (unless -y) and deletes the GKE cluster with its node pools, the\n" +
			"Artifact Registry repository with its images, and the jobs' Google service account\n" +
			"(its role on the bucket is removed first). The store bucket, with every job record\n" +
			"and output, is kept unless --force-destroy. Safe to run again: what is gone is skipped.",
		Args: cobra.NoArgs,
	}
	f := addGKEFlags(cmd)
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "apply without asking")
	cmd.Flags().BoolVar(&preview, "preview", false, "print the plan and stop")
	cmd.Flags().BoolVar(&force, "force-destroy", false, "also delete the store bucket and everything in it (env KINETIC_FORCE_DESTROY)")
	cmd.Flags().StringVar(&st, "store", "", "the store's gs:// URL (default: the profile's, else gs://PROJECT-kinetic)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		start := time.Now()
		extra := map[config.Key]string{config.Store: st}
		if cmd.Flags().Changed("force-destroy") {
			extra[config.ForceDestroy] = strconv.FormatBool(force)
		}
		c, cfg, res, err := gkeSetup(cmd.Context(), g, f, extra)
		if err != nil {
			return err
		}
		defer c.Close()
		force = res.Get(config.ForceDestroy) == "true" // the flag, KINETIC_FORCE_DESTROY, a profile
		p, err := gke.PlanDown(cmd.Context(), c, cfg, gke.DownOptions{ForceDestroy: force})
		if err != nil {
			return planErr(cmd.Context(), err)
		}
		p.Print(cmd.ErrOrStderr())
		// The kubeconfig context `up --write-kubeconfig` wrote goes too (not one gcloud
		// or you wrote).
		id := gkeconn.Cluster{Project: cfg.Project, Zone: cfg.Zone, Name: cfg.Cluster}
		if id.Name == "" {
			id.Name = gke.DefaultCluster
		}
		kc := res.Get(kubernetes.KeyKubeconfig)
		ours := gkeconn.Written(kc, id.Context())
		if ours {
			fmt.Fprintf(cmd.ErrOrStderr(), "  - delete   kubeconfig context %s in %s (written by up --write-kubeconfig)\n", id.Context(), gkeconn.KubeconfigAccess(kc).GetDefaultFilename())
		}
		done := "nothing to remove"
		if p.Kept() {
			done += " (the store bucket is kept: --force-destroy or KINETIC_FORCE_DESTROY=true deletes it)"
		}
		applied, err := applyPlan(cmd, p, btoi(ours), preview, yes, start, done)
		if err != nil || !applied {
			return err
		}
		kubernetes.GKEConnector(resolvedSettings{res}).Forget(id) // its endpoint and CA
		if ours {
			if _, err := gkeconn.RemoveKubeconfig(gkeconn.KubeconfigAccess(kc), id); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "  ✓ delete kubeconfig context %s\n", id.Context())
		}
		return nil
	}
	return cmd
}

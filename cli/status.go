package cli

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/kinetic-run/kinetic/backend/kubernetes"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/infra"
	"github.com/kinetic-run/kinetic/infra/gke"
	"github.com/kinetic-run/kinetic/infra/gke/gkeconn"
)

func newStatusCmd(g *Globals) *cobra.Command {
	var asJSON, noDoctor bool
	cmd := &cobra.Command{
		Use:   "status [--json]",
		Short: "Show the GKE cluster, its node pools, the repository, bucket and service account, and doctor's checks",
		Args:  cobra.NoArgs,
	}
	f := addGKEFlags(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&noDoctor, "no-doctor", false, "skip doctor's checks (cluster access, store from a pod)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx := cmd.Context()
		c, cfg, res, err := gkeSetup(ctx, g, f, nil)
		if err != nil {
			return err
		}
		defer c.Close()
		s, err := gke.GetStatus(ctx, c, cfg)
		if err != nil {
			return err
		}
		var rep *infra.Report
		if !noDoctor && s.ClusterStatus == "RUNNING" {
			// doctor's checks: through kube_context when set, else the kubeconfig context
			// gcloud makes for the cluster when it is there, else directly (GKE API + ADC).
			args := map[config.Key]string{}
			gctx := kubernetes.GKEContext(s.Project, s.Zone, s.Cluster)
			direct := res.Get(config.KubeContext) == "" && !kubernetes.HasGcloudContext(res.Get(kubernetes.KeyKubeconfig), gctx)
			if res.Get(config.KubeContext) == "" && !direct {
				args[config.KubeContext] = gctx
			}
			t, _, kerr, err := k8sTarget(g, args)
			if err != nil {
				return err
			}
			if direct {
				t.Context = "(none: direct to GKE)"
				t.Config, kerr = kubernetes.GKEConnector(resolvedSettings{res}).RESTConfig(ctx, gkeconn.Cluster{Project: s.Project, Zone: s.Zone, Name: s.Cluster})
			}
			rep = infra.Doctor(ctx, t, kerr)
		}
		ok := s.Ready() && (rep == nil || rep.OK)
		if asJSON {
			if err := writeJSON(cmd.OutOrStdout(), map[string]any{"gke": s, "doctor": rep, "ok": ok}); err != nil {
				return err
			}
		} else {
			s.Print(cmd.OutOrStdout())
			if rep != nil {
				rep.Print(cmd.OutOrStdout())
			}
		}
		if !ok {
			return &ExitError{Code: 1, Err: errors.New("not ready (see the ✗ lines)")}
		}
		return nil
	}
	return cmd
}

// resolvedSettings is a resolved configuration as backend.Settings.
type resolvedSettings struct{ r *config.Resolved }

func (s resolvedSettings) Get(k string) string { return s.r.Get(config.Key(k)) }

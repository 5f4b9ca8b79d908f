package cli

import (
	"context"
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
			t, kerr, err := gkeTarget(ctx, g, res, s.Project, s.Zone, s.Cluster)
			if err != nil {
				return err
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

// gkeTarget is the GKE cluster as a Kubernetes target: through kube_context when set,
// else the kubeconfig context gcloud makes for the cluster when it is there, else
// directly (GKE API + ADC). kerr says why it cannot be reached.
func gkeTarget(ctx context.Context, g *Globals, res *config.Resolved, project, zone, cluster string) (t *infra.Target, kerr, err error) {
	args := map[config.Key]string{}
	gctx := kubernetes.GKEContext(project, zone, cluster)
	direct := res.Get(config.KubeContext) == "" && !kubernetes.HasGcloudContext(res.Get(kubernetes.KeyKubeconfig), gctx)
	if res.Get(config.KubeContext) == "" && !direct {
		args[config.KubeContext] = gctx
	}
	t, _, kerr, err = k8sTarget(g, args)
	if err != nil {
		return nil, nil, err
	}
	if direct {
		t.Context = "(none: direct to GKE)"
		t.Config, kerr = kubernetes.GKEConnector(resolvedSettings{res}).RESTConfig(ctx, gkeconn.Cluster{Project: project, Zone: zone, Name: cluster})
	}
	return t, kerr, nil
}

// resolvedSettings is a resolved configuration as backend.Settings.
type resolvedSettings struct{ r *config.Resolved }

func (s resolvedSettings) Get(k string) string { return s.r.Get(config.Key(k)) }

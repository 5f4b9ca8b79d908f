package cli

import (
	"context"
	"errors"
	"fmt"

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
		Short: "Show where jobs run: this machine (interpreter, store, slots) or the GKE cluster, its node pools, repository, bucket and service account; with doctor's checks",
		Args:  cobra.NoArgs,
	}
	f := addGKEFlags(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&noDoctor, "no-doctor", false, "skip doctor's checks (cluster access, store from a pod)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx := cmd.Context()
		if res, err := config.Resolve(config.Options{Args: keyFlagArgs(f.vals), Profile: g.Profile}); err == nil && onThisMachine(res) && !cmd.Flags().Changed("project") {
			return localStatus(cmd, res, asJSON, noDoctor)
		}
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

// localStatus is `kinetic status` on the local backend: where jobs run and doctor's
// checks of this machine; never "not ready" when a job can run.
func localStatus(cmd *cobra.Command, res *config.Resolved, asJSON, noDoctor bool) error {
	rep := localDoctor(cmd.Context(), res)
	if noDoctor {
		rep = &infra.Report{OK: true, Checks: rep.Checks[:1]}
	}
	if asJSON {
		if err := writeJSON(cmd.OutOrStdout(), map[string]any{"backend": res.Get(config.Backend), "backend_source": res.Source(config.Backend), "store": res.Get(config.Store), "local": rep, "ok": rep.OK}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(cmd.OutOrStdout(), "Jobs run on this machine (the local backend); `kinetic up` sets up a cluster for GPUs and TPUs.\n")
		rep.Print(cmd.OutOrStdout())
	}
	if !rep.OK {
		return &ExitError{Code: 1, Err: errors.New("a job could not run here (see the ✗ lines)")}
	}
	return nil
}

package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kinetic-run/kinetic/backend/kubernetes"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/infra"
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
	var st, be string
	cmd := &cobra.Command{
		Use:   "down [-y] [--preview] [--force-destroy] [--backend gke|k8s]",
		Short: "Delete what `kinetic up` made on GKE: cluster, repository, service account (the bucket only with --force-destroy); on any cluster, the warm pods",
		Long: "Plans, prints, asks (unless -y) and deletes the GKE cluster with its node pools, the\n" +
			"Artifact Registry repository with its images, and the jobs' Google service account\n" +
			"(its role on the bucket is removed first). The store bucket, with every job record\n" +
			"and output, is kept unless --force-destroy. Warm pods (pods kept for the next job,\n" +
			"holding their accelerators) are deleted first. With --backend k8s (any cluster from\n" +
			"your kubeconfig) down deletes only the warm pods in the namespace: what `up --backend\n" +
			"k8s` made stays. Safe to run again: what is gone is skipped.",
		Args: cobra.NoArgs,
	}
	f := addGKEFlags(cmd)
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "apply without asking")
	cmd.Flags().BoolVar(&preview, "preview", false, "print the plan and stop")
	cmd.Flags().BoolVar(&force, "force-destroy", false, "also delete the store bucket and everything in it (env KINETIC_FORCE_DESTROY)")
	cmd.Flags().StringVar(&st, "store", "", "the store's gs:// URL (default: the profile's, else gs://PROJECT-kn-CLUSTER-jobs)")
	cmd.Flags().StringVar(&be, "backend", "", "gke: the GKE cluster and what up made (the default when a project is set); k8s: the warm pods of an existing cluster (the kubeconfig's current context)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		start := time.Now()
		if be == "" {
			var err error
			if be, err = upBackend(g, f); err != nil {
				return errors.New(strings.Replace(err.Error(), "kinetic up: no project to create a GKE cluster in", "kinetic down: no project of a GKE cluster to delete", 1))
			}
		}
		switch be {
		case "gke":
		case "k8s":
			if cmd.Flags().Changed("force-destroy") || cmd.Flags().Changed("store") {
				return errors.New("--force-destroy and --store are for GKE: with --backend k8s, down deletes only the warm pods (the store and what up made stay)")
			}
			return downK8s(cmd, g, preview, yes, start)
		default:
			return fmt.Errorf("--backend %q: use gke (the GKE cluster up made) or k8s (the warm pods of a cluster from your kubeconfig)", be)
		}
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
		cluster := cfg.Cluster
		if cluster == "" {
			cluster = gke.DefaultCluster
		}
		if p.Deletes("cluster " + cluster) {
			// Warm pods first: they hold accelerators, and a busy one runs a job.
			warmFirst(cmd, g, res, p, cfg.Project, cfg.Zone, cluster)
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

// warmStep is down's step for the warm pods in t's namespace: delete them, or nothing
// to do when there are none.
func warmStep(ctx context.Context, t *infra.Target) (gke.Step, error) {
	lctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	pods, err := infra.ListWarmPods(lctx, t)
	if err != nil {
		return gke.Step{}, err
	}
	what, detail := infra.WarmDownStep(pods)
	if what == "" {
		return gke.NewStep("warm pods in namespace "+t.Namespace, gke.ActOK, "none", nil), nil
	}
	return gke.NewStep(what, gke.ActDelete, detail, func(ctx context.Context) error { return infra.DeleteWarmPods(ctx, t, pods) }), nil
}

// warmFirst puts the deletion of the GKE cluster's warm pods before the rest of p (the
// cluster's deletion would take them too, later); a cluster it cannot reach gets a note.
func warmFirst(cmd *cobra.Command, g *Globals, res *config.Resolved, p *gke.Plan, project, zone, cluster string) {
	ctx := cmd.Context()
	t, kerr, err := gkeTarget(ctx, g, res, project, zone, cluster)
	if err == nil {
		err = kerr
	}
	var s gke.Step
	if err == nil {
		s, err = warmStep(ctx, t)
	}
	switch {
	case err != nil:
		p.Notes = append(p.Notes, "warm pods not listed ("+err.Error()+"): they go with the cluster")
	case s.Action != gke.ActOK:
		p.Steps = append([]gke.Step{s}, p.Steps...)
	}
}

// downK8s is `kinetic down --backend k8s`: the warm pods in the namespace.
func downK8s(cmd *cobra.Command, g *Globals, preview, yes bool, start time.Time) error {
	t, _, kerr, err := k8sTarget(g, nil)
	if err != nil {
		return err
	}
	if kerr != nil {
		return kerr
	}
	s, err := warmStep(cmd.Context(), t)
	if err != nil {
		return err
	}
	p := &gke.Plan{Title: fmt.Sprintf("cluster %s (context %s), namespace %s", t.Config.Host, t.Context, t.Namespace), Steps: []gke.Step{s},
		Notes: []string{"the namespace, service account, Role and RoleBinding `up --backend k8s` made stay, and so does the store"}}
	p.Print(cmd.ErrOrStderr())
	_, err = applyPlan(cmd, p, 0, preview, yes, start, "nothing to remove")
	return err
}

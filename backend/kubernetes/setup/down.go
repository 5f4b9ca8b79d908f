package setup

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/kinetic-run/kinetic/backend/kubernetes"
	"github.com/kinetic-run/kinetic/backend/provision"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/infra"
	"github.com/kinetic-run/kinetic/infra/gke"
	"github.com/kinetic-run/kinetic/infra/gke/gkeconn"
)

// downGKE is `kinetic down` on GKE: the cluster and what up made (the bucket only with
// --force-destroy), the warm pods first, and the kubeconfig context up wrote.
func downGKE(ctx context.Context, c *provision.Call) error {
	start := time.Now()
	extra := map[config.Key]string{config.Store: c.String("store")}
	if c.Changed("force-destroy") {
		extra[config.ForceDestroy] = strconv.FormatBool(c.Bool("force-destroy"))
	}
	cl, cfg, res, err := gkeSetup(ctx, c, extra)
	if err != nil {
		return err
	}
	defer cl.Close()
	force := res.Get(config.ForceDestroy) == "true" // the flag, KINETIC_FORCE_DESTROY, a profile
	p, err := gke.PlanDown(ctx, cl, cfg, gke.DownOptions{ForceDestroy: force})
	if err != nil {
		return planErr(ctx, err)
	}
	id := gkeconn.Cluster{Project: cfg.Project, Zone: cfg.Zone, Name: cfg.Cluster}
	if id.Name == "" {
		id.Name = gke.DefaultCluster
	}
	if p.Deletes("cluster " + id.Name) {
		// Warm pods first: they hold accelerators, and a busy one runs a job.
		warmFirst(ctx, c, res, p, id)
	}
	p.Print(c.Err)
	// The kubeconfig context `up --write-kubeconfig` wrote goes too (not one gcloud
	// or you wrote).
	kc := res.Get(kubernetes.KeyKubeconfig)
	ours := gkeconn.Written(kc, id.Context())
	if ours {
		fmt.Fprintf(c.Err, "  - delete   kubeconfig context %s in %s (written by up --write-kubeconfig)\n", id.Context(), gkeconn.KubeconfigAccess(kc).GetDefaultFilename())
	}
	done := "nothing to remove"
	if p.Kept() {
		done += " (the store bucket is kept: --force-destroy or KINETIC_FORCE_DESTROY=true deletes it)"
	}
	applied, err := applyPlan(ctx, c, p, btoi(ours), c.Bool("preview"), start, done)
	if err != nil || !applied {
		return err
	}
	kubernetes.GKEConnector(resolvedSettings{res}).Forget(id) // its endpoint and CA
	if ours {
		if _, err := gkeconn.RemoveKubeconfig(gkeconn.KubeconfigAccess(kc), id); err != nil {
			return err
		}
		fmt.Fprintf(c.Err, "  ✓ delete kubeconfig context %s\n", id.Context())
	}
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
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
func warmFirst(ctx context.Context, c *provision.Call, res *config.Resolved, p *gke.Plan, id gkeconn.Cluster) {
	t, kerr, err := gkeTarget(ctx, c.Profile, res, id.Project, id.Zone, id.Name)
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
func downK8s(ctx context.Context, c *provision.Call) error {
	start := time.Now()
	if c.Changed("force-destroy") || c.Changed("store") {
		return errors.New("--force-destroy and --store are for GKE: with --backend k8s, down deletes only the warm pods (the store and what up made stay)")
	}
	t, _, kerr, err := k8sTarget(c.Profile, nil)
	if err != nil {
		return err
	}
	if kerr != nil {
		return kerr
	}
	s, err := warmStep(ctx, t)
	if err != nil {
		return err
	}
	p := &gke.Plan{Title: fmt.Sprintf("cluster %s (context %s), namespace %s", t.Config.Host, t.Context, t.Namespace), Steps: []gke.Step{s},
		Notes: []string{"the namespace, service account, Role and RoleBinding `up --backend k8s` made stay, and so does the store"}}
	p.Print(c.Err)
	_, err = applyPlan(ctx, c, p, 0, c.Bool("preview"), start, "nothing to remove")
	return err
}

package setup

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kinetic-run/kinetic/backend/kubernetes"
	"github.com/kinetic-run/kinetic/backend/provision"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/infra"
	"github.com/kinetic-run/kinetic/infra/gke"
	"github.com/kinetic-run/kinetic/infra/gke/gkeconn"
)

// status is `kinetic status` on a cluster backend: the GKE cluster, its node pools,
// repository, bucket and service account, with doctor's checks once it runs.
func status(ctx context.Context, c *provision.Call) error {
	cl, cfg, res, err := gkeSetup(ctx, c, nil)
	if err != nil {
		return err
	}
	defer cl.Close()
	s, err := gke.GetStatus(ctx, cl, cfg)
	if err != nil {
		return planErr(ctx, err) // after Ctrl-C, no Go words
	}
	var rep *infra.Report
	if !c.Bool("no-doctor") && s.ClusterStatus == "RUNNING" {
		t, kerr, err := gkeTarget(ctx, c.Profile, res, s.Project, s.Zone, s.Cluster)
		if err != nil {
			return err
		}
		rep = infra.Doctor(ctx, t, kerr)
	}
	ok := s.Ready() && (rep == nil || rep.OK)
	if c.Bool("json") {
		if err := provision.WriteJSON(c.Out, map[string]any{"gke": s, "doctor": rep, "ok": ok}); err != nil {
			return err
		}
	} else {
		s.Print(c.Out)
		if rep != nil {
			rep.Print(c.Out)
		}
	}
	if !ok {
		return provision.NotReady("not ready (see the ✗ lines)")
	}
	return nil
}

// doctor checks the cluster backend in use: GKE's project and Google credentials first,
// then the cluster; any other cluster through its kubeconfig.
func doctor(ctx context.Context, c *provision.Call) (provision.Report, error) {
	res, err := provision.Resolve(c, nil)
	if err != nil {
		return nil, err
	}
	if b := res.Get(config.Backend); kubernetes.IsGKE(b) && res.Get(config.KubeContext) == "" {
		return doctorGKE(ctx, c, res, "backend "+b+" ("+res.Source(config.Backend)+")")
	}
	t, _, kerr, err := k8sTarget(c.Profile, nil)
	if err != nil {
		return nil, err
	}
	return infra.Doctor(ctx, t, kerr), nil
}

// doctorGKE checks a GKE cluster reached through the GKE API; why names the backend and
// where it was set.
func doctorGKE(ctx context.Context, c *provision.Call, res *config.Resolved, why string) (provision.Report, error) {
	if res.Get(config.Project) == "" {
		return &infra.Report{Checks: []infra.Check{{Name: "project", Detail: why + " needs a Google Cloud project", Fix: "pass --project P or set KINETIC_PROJECT (or a profile's project); `kinetic up --project P` creates the cluster"}}}, nil
	}
	t, kerr, err := gkeTarget(ctx, c.Profile, res, res.Get(config.Project), res.Get(config.Zone), res.Get(config.Cluster))
	if err != nil {
		return nil, err
	}
	if errors.Is(kerr, gkeconn.ErrNoCredentials) {
		// The message says which credentials and how to mend them.
		return &infra.Report{Checks: []infra.Check{{Name: "Google credentials", Detail: why + ": " + kerr.Error()}}}, nil
	}
	if kerr != nil {
		return &infra.Report{Checks: []infra.Check{{Name: "GKE cluster " + res.Get(config.Cluster), Detail: why + ": " + kerr.Error(),
			Fix: "`gcloud auth application-default login` for credentials; `kinetic up` creates the cluster; `kinetic status` shows what exists"}}}, nil
	}
	return infra.Doctor(ctx, t, nil), nil
}

// poolOptions are pool add's flags.
func poolOptions(c *provision.Call) gke.PoolOptions {
	return gke.PoolOptions{Accelerator: c.String("accelerator"), Name: c.String("name"), MinNodes: c.Int("min-nodes"),
		MaxNodes: c.Int("max-nodes"), Spot: c.Bool("spot"), Reservation: c.String("reservation"), MaxSet: c.Changed("max-nodes")}
}

// CheckFlags checks pool add's own flags first: a bad accelerator or node count is
// refused before any credential or API is needed, whatever the backend.
func (prov) CheckFlags(command string, c *provision.Call) error {
	if command != provision.CmdPoolAdd {
		return nil
	}
	if _, _, err := gke.NodePoolFor(poolOptions(c)); err != nil {
		return provision.UsageError(err)
	}
	return nil
}

// poolAdd is `kinetic pool add`.
func poolAdd(ctx context.Context, c *provision.Call) error {
	start := time.Now()
	o := poolOptions(c)
	cl, cfg, res, err := gkeSetup(ctx, c, nil)
	if err != nil {
		return err
	}
	defer cl.Close()
	if !c.Changed("reservation") {
		o.Reservation = res.Get(config.Reservation) // KINETIC_RESERVATION, a profile
	}
	p, err := gke.PlanPoolAdd(ctx, cl, cfg, o)
	if err != nil {
		return planErr(ctx, err)
	}
	p.Print(c.Err)
	_, err = applyPlan(ctx, c, p, 0, c.Bool("preview"), start, "the pool is there")
	return err
}

// poolList is `kinetic pool list`.
func poolList(ctx context.Context, c *provision.Call) error {
	cl, cfg, _, err := gkeSetup(ctx, c, nil)
	if err != nil {
		return err
	}
	defer cl.Close()
	pools, err := gke.ListPools(ctx, cl, cfg)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		if pools == nil {
			pools = []gke.PoolInfo{}
		}
		return provision.WriteJSON(c.Out, pools)
	}
	gke.PrintPools(c.Out, pools)
	return nil
}

// poolRemove is `kinetic pool remove NAME`.
func poolRemove(ctx context.Context, c *provision.Call) error {
	start := time.Now()
	if len(c.Args) != 1 {
		return provision.UsageError(fmt.Errorf("pool remove takes the pool's NAME (kinetic pool list shows them)"))
	}
	cl, cfg, _, err := gkeSetup(ctx, c, nil)
	if err != nil {
		return err
	}
	defer cl.Close()
	p, err := gke.PlanPoolRemove(ctx, cl, cfg, c.Args[0])
	if err != nil {
		return planErr(ctx, err)
	}
	p.Print(c.Err)
	_, err = applyPlan(ctx, c, p, 0, c.Bool("preview"), start, fmt.Sprintf("pool %s is gone", c.Args[0]))
	return err
}

package setup

import (
	"context"

	"github.com/kinetic-run/kinetic/backend/kubernetes"
	"github.com/kinetic-run/kinetic/backend/provision"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/infra/gke"
)

// DashboardCluster is what the dashboard's cluster page reads for backend be of
// profile: the cluster from the kubeconfig (nil, and Err says why, when it cannot be
// reached) and, on GKE, a reader of what `kinetic status` shows (the cluster and its node
// pools, from Google; store is the dashboard's --store).
func (prov) DashboardCluster(profile, be, store string) (provision.DashboardCluster, error) {
	t, _, kerr, err := k8sTarget(profile, nil)
	if err != nil {
		return provision.DashboardCluster{}, err
	}
	dc := provision.DashboardCluster{Target: t, Err: kerr}
	if kerr != nil {
		dc.Target = nil
	}
	if be == kubernetes.GKEName {
		dc.Cloud = func(ctx context.Context) (any, error) {
			c := &provision.Call{Profile: profile, Flags: provision.NoFlags()}
			cl, cfg, _, err := gkeSetup(ctx, c, map[config.Key]string{config.Store: store})
			if err != nil {
				return nil, err
			}
			defer cl.Close()
			return gke.GetStatus(ctx, cl, cfg)
		}
	}
	return dc, nil
}

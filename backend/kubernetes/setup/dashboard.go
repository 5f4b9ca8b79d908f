package setup

import (
	"context"

	"github.com/kinetic-run/kinetic/backend/kubernetes"
	"github.com/kinetic-run/kinetic/backend/provision"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/infra"
	"github.com/kinetic-run/kinetic/infra/gke"
)

// Dashboard is what the dashboard's cluster page reads for backend be of profile: the
// cluster from the kubeconfig (nil, and kerr says why, when it cannot be reached) and,
// on GKE, a reader of what `kinetic status` shows (the cluster and its node pools, from
// Google; store is the dashboard's --store).
func Dashboard(profile, be, store string) (t *infra.Target, kerr error, gkeStatus func(context.Context) (*gke.Status, error), err error) {
	t, _, kerr, err = k8sTarget(profile, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	if kerr != nil {
		t = nil
	}
	if be != kubernetes.GKEName {
		return t, kerr, nil, nil
	}
	return t, kerr, func(ctx context.Context) (*gke.Status, error) {
		c := &provision.Call{Profile: profile, Flags: provision.NoFlags()}
		cl, cfg, _, err := gkeSetup(ctx, c, map[config.Key]string{config.Store: store})
		if err != nil {
			return nil, err
		}
		defer cl.Close()
		return gke.GetStatus(ctx, cl, cfg)
	}, nil
}

// Package setup is the Kubernetes and GKE provisioner: `kinetic up`, `down`, `status`,
// `pool`, `init`, `doctor` and `accelerators --live` for the backends gke, pathways
// (a GKE cluster made and read through Google's APIs, infra/gke) and k8s (any cluster
// from a kubeconfig, infra). It registers itself with backend/provision under those
// names; a program links it with a blank import (cmd/kinetic does). It is apart from
// backend/kubernetes so that what runs jobs links no provisioning API.
package setup

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/kinetic-run/kinetic/backend/kubernetes"
	"github.com/kinetic-run/kinetic/backend/provision"
	"github.com/kinetic-run/kinetic/config"
)

func init() {
	for _, n := range []string{kubernetes.K8sName, kubernetes.GKEName, kubernetes.PathwaysName} {
		provision.Register(n, prov{}, provision.Info{Rank: 10, InitUsage: initUsage[n]})
	}
}

// initUsage is how init is given each name without a terminal.
var initUsage = map[string]string{
	kubernetes.K8sName: "kinetic init -y --backend k8s --context C --registry HOST/PATH --store gs://BUCKET",
	kubernetes.GKEName: "kinetic init -y --backend gke --project P --zone Z",
}

// prov is the provisioner of the Kubernetes backends.
type prov struct{}

// gkeOnlyUp are up's flags a generic cluster (k8s) refuses.
var gkeOnlyUp = []string{"accelerator", "min-nodes", "profile-name", "write-kubeconfig", "force-destroy", "no-force-destroy"}

func (prov) Up(ctx context.Context, c *provision.Call) error {
	if !kubernetes.IsGKE(c.Backend) {
		for _, fl := range gkeOnlyUp {
			if c.Changed(fl) {
				return fmt.Errorf("--%s is for GKE (`kinetic up --project P`); with --backend k8s, add node pools with your cluster's tools", fl)
			}
		}
		o := upK8sOptions{Namespace: c.String("namespace"), Registry: c.String("registry"), Store: c.String("store"), Context: c.String("context"),
			Yes: c.Bool("yes"), Preview: c.Bool("preview")}
		if o.Yes && o.Preview {
			return fmt.Errorf("--preview and -y: --preview only prints the plan; give one of them")
		}
		return upK8s(ctx, c, o)
	}
	o, err := gkeUpOptions(c)
	if err != nil {
		return err
	}
	return upGKE(ctx, c, map[config.Key]string{config.Namespace: c.String("namespace"), config.ImageRegistry: c.String("registry"), config.Store: c.String("store")}, o)
}

func (prov) Down(ctx context.Context, c *provision.Call) error {
	if kubernetes.IsGKE(c.Backend) {
		return downGKE(ctx, c)
	}
	return downK8s(ctx, c)
}

func (prov) Status(ctx context.Context, c *provision.Call) error { return status(ctx, c) }

func (prov) Doctor(ctx context.Context, c *provision.Call) (provision.Report, error) {
	return doctor(ctx, c)
}

func (prov) Pool(ctx context.Context, op provision.PoolOp, c *provision.Call) error {
	switch op {
	case provision.PoolAdd:
		return poolAdd(ctx, c)
	case provision.PoolList:
		return poolList(ctx, c)
	case provision.PoolRemove:
		return poolRemove(ctx, c)
	}
	return fmt.Errorf("pool %s: add, list or remove", op)
}

func (prov) Accelerators(ctx context.Context, c *provision.Call) error {
	if c.Backend == kubernetes.GKEName {
		return livePools(ctx, c)
	}
	return liveAccelerators(ctx, c)
}

func (prov) Survey(_ context.Context, _ *provision.Call) ([]string, []provision.Choice) {
	return survey(detect())
}

func (prov) Init(ctx context.Context, c *provision.Call) error {
	switch c.Backend {
	case kubernetes.K8sName:
		return initK8s(ctx, c)
	case kubernetes.GKEName:
		return initGKE(ctx, c)
	}
	return fmt.Errorf("--backend %s: init joins a cluster with --backend k8s, or creates or joins one on GKE with --backend gke", c.Backend)
}

// Flags defines the flags of command (skipping those defined already).
func (prov) Flags(command string, fs *pflag.FlagSet) {
	for _, f := range flagTable[command] {
		if fs.Lookup(f.name) != nil {
			continue
		}
		f.define(fs)
	}
}

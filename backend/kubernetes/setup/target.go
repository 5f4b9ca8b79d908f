package setup

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/kinetic-run/kinetic/backend/kubernetes"
	"github.com/kinetic-run/kinetic/backend/provision"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/image"
	"github.com/kinetic-run/kinetic/infra"
	"github.com/kinetic-run/kinetic/infra/gke"
	"github.com/kinetic-run/kinetic/infra/gke/gkeconn"
)

// k8sTarget resolves the configuration of profile (with args on top) into an
// infra.Target; kerr says why the cluster cannot be reached.
func k8sTarget(profile string, args map[config.Key]string) (*infra.Target, *config.Resolved, error, error) {
	cfg, err := config.Resolve(config.Options{Args: args, Profile: profile})
	if err != nil {
		return nil, nil, nil, err
	}
	t := &infra.Target{
		Kubeconfig: cfg.Get(kubernetes.KeyKubeconfig), Context: cfg.Get(config.KubeContext),
		Namespace: cfg.Get(config.Namespace), Store: cfg.Get(config.Store),
		Registry: cfg.Get(config.ImageRegistry), RunnerImage: cfg.Get(kubernetes.KeyRunnerImage),
		StoreSecret: cfg.Get(kubernetes.KeyStoreSecret),
		Source:      image.RunnerSource{CacheDir: filepath.Join(config.DataDir(), "cache", "runner")},
		Images:      &image.Client{},
	}
	if t.Context == "" {
		t.Context = kubernetes.CurrentContext(t.Kubeconfig)
	}
	rc, kerr := kubernetes.RESTConfig(t.Kubeconfig, t.Context)
	t.Config = rc
	return t, cfg, kerr, nil
}

// gkeTarget is the GKE cluster as a Kubernetes target: through kube_context when set,
// else the kubeconfig context gcloud makes for the cluster when it is there, else
// directly (GKE API + ADC). kerr says why it cannot be reached.
func gkeTarget(ctx context.Context, profile string, res *config.Resolved, project, zone, cluster string) (t *infra.Target, kerr, err error) {
	args := map[config.Key]string{}
	gctx := kubernetes.GKEContext(project, zone, cluster)
	direct := res.Get(config.KubeContext) == "" && !kubernetes.HasGcloudContext(res.Get(kubernetes.KeyKubeconfig), gctx)
	if res.Get(config.KubeContext) == "" && !direct {
		args[config.KubeContext] = gctx
	}
	t, _, kerr, err = k8sTarget(profile, args)
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

// gkeKeys are the settings flags of the GKE commands (up, down, status, pool, init,
// accelerators --live).
var gkeKeys = []config.Key{config.Project, config.Zone, config.Cluster}

// gkeSetup resolves the configuration (flags in extra win) into a gke.Config and dials
// the Google APIs.
func gkeSetup(ctx context.Context, c *provision.Call, extra map[config.Key]string) (*gke.Clients, gke.Config, *config.Resolved, error) {
	args := provision.KeyArgs(c, gkeKeys...)
	for k, v := range extra {
		if v != "" {
			args[k] = v
		}
	}
	res, err := provision.Resolve(c, args)
	if err != nil {
		return nil, gke.Config{}, nil, err
	}
	ep, err := gke.ParseEndpoints(res.Get(kubernetes.KeyGCPEndpoints))
	if err != nil {
		return nil, gke.Config{}, nil, err
	}
	cfg := gke.Config{
		Project: res.Get(config.Project), Zone: res.Get(config.Zone), Cluster: res.Get(config.Cluster),
		Namespace: res.Get(config.Namespace), Registry: res.Get(config.ImageRegistry),
	}
	// The default store (a local directory) is no store for GKE pods: then the bucket
	// up makes, gs://PROJECT-kn-CLUSTER-jobs (config's default on GKE is the same name).
	if !strings.HasPrefix(res.Source(config.Store), config.SourceDefault) {
		cfg.Store = res.Get(config.Store)
	}
	cl, err := gke.DialFor(ctx, ep, cfg.Project) // user ADC: the project is the quota project
	if err != nil {
		return nil, cfg, nil, err
	}
	return cl, cfg, res, nil
}

// planErr words an error of the planning reads: after Ctrl-C, nothing was changed.
func planErr(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return errors.New("interrupted while reading what exists: nothing was changed")
	}
	return err
}

// confirm asks on a terminal; without one it refuses, naming -y.
func confirm(c *provision.Call, question string) error {
	if !c.Terminal {
		return errors.New("nothing applied: standard input is not a terminal to ask on; run again with -y to apply the plan above (or --preview to only see it)")
	}
	fmt.Fprintf(c.Err, "%s [y/N] ", question)
	line, _ := bufio.NewReader(c.In).ReadString('\n')
	if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
		return errors.New("nothing applied")
	}
	return nil
}

// applyPlan stops on preview or when there is nothing to do, asks unless -y, and
// applies p (printed by the caller) with progress on stderr. extra counts changes
// outside p (the profile). It returns whether it applied.
func applyPlan(ctx context.Context, c *provision.Call, p *gke.Plan, extra int, preview bool, start time.Time, done string) (bool, error) {
	n := p.Changes() + extra
	if n == 0 {
		fmt.Fprintf(c.Err, "no change: %s (%.1fs)\n", done, time.Since(start).Seconds())
		return false, nil
	}
	if preview {
		fmt.Fprintf(c.Err, "%d change(s) planned; --preview: nothing applied\n", n)
		return false, nil
	}
	if !c.Bool("yes") {
		if err := confirm(c, fmt.Sprintf("apply %d change(s)?", n)); err != nil {
			return false, err
		}
	}
	if err := p.Apply(ctx, c.Err); err != nil {
		return false, err
	}
	return true, nil
}

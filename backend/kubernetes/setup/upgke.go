package setup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"time"

	"github.com/kinetic-run/kinetic/backend/kubernetes"
	"github.com/kinetic-run/kinetic/backend/provision"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/image"
	"github.com/kinetic-run/kinetic/infra/gke"
	"github.com/kinetic-run/kinetic/infra/gke/gkeconn"
)

// upGKEOptions are the flags of `kinetic up` for GKE besides the settings.
type upGKEOptions struct {
	Preview, Yes bool
	// ProfileName is the profile up writes and makes current ("" = --profile, else the
	// cluster's name).
	ProfileName string
	// Pool is the first accelerator pool (--accelerator, --min-nodes); nil for none.
	Pool *gke.PoolOptions
	// WriteKubeconfig adds the cluster's context for kubectl to the kubeconfig.
	WriteKubeconfig bool
	// ForceDestroy is written into the profile as force_destroy ("true"/"false"; "" keeps
	// the profile's): what a later `kinetic down` does with the store bucket.
	ForceDestroy string
}

// gkeUpOptions reads up's GKE flags.
func gkeUpOptions(c *provision.Call) (upGKEOptions, error) {
	o := upGKEOptions{Preview: c.Bool("preview"), Yes: c.Bool("yes"), ProfileName: c.String("profile-name"), WriteKubeconfig: c.Bool("write-kubeconfig")}
	if c.Changed("min-nodes") && c.String("accelerator") == "" {
		return o, errors.New("--min-nodes sizes the first accelerator pool: give --accelerator too")
	}
	if a := c.String("accelerator"); a != "" {
		o.Pool = &gke.PoolOptions{Accelerator: a, MinNodes: c.Int("min-nodes")}
	}
	fd, err := forceDestroyFlags(c)
	o.ForceDestroy = fd
	return o, err
}

// forceDestroyFlags reads up's --force-destroy / --no-force-destroy: "true", "false", or ""
// when neither is given (the profile keeps what it had).
func forceDestroyFlags(c *provision.Call) (string, error) {
	yes, no := c.Changed("force-destroy"), c.Changed("no-force-destroy")
	switch {
	case yes && no:
		return "", errors.New("--force-destroy and --no-force-destroy: give one of them")
	case yes:
		return strconv.FormatBool(c.Bool("force-destroy")), nil
	case no:
		return strconv.FormatBool(!c.Bool("no-force-destroy")), nil
	}
	return "", nil
}

// upGKE is `kinetic up` for GKE (`--backend gke`, or no backend with a project).
func upGKE(ctx context.Context, c *provision.Call, extra map[config.Key]string, o upGKEOptions) error {
	out := c.Err
	start := time.Now()
	cl, cfg, res, err := gkeSetup(ctx, c, extra)
	if err != nil {
		return err
	}
	defer cl.Close()
	conn := gkeUpConfig(&cfg, res, o, out)
	p, err := gke.PlanUp(ctx, cl, cfg)
	if err != nil {
		return planErr(ctx, err)
	}
	cluster := cfg.Cluster
	if cluster == "" {
		cluster = gke.DefaultCluster
	}
	prof, err := provision.PlanProfile(gkeProfileName(c, o, cluster), gkeProfileWant(cfg, res, o, cluster))
	if err != nil {
		return err
	}
	// A project with APIs off plans only their enabling first (Replan); then the rest.
	for p.Replan {
		p.Print(out)
		if o.Preview {
			fmt.Fprintln(out, "--preview: nothing applied (the rest is planned once the APIs are enabled)")
			return nil
		}
		if _, err := applyPlan(ctx, c, p, 0, false, start, ""); err != nil {
			return err
		}
		if p, err = gke.PlanUp(ctx, cl, cfg); err != nil {
			return planErr(ctx, err)
		}
	}
	p.Print(out)
	prof.Print(out)
	if o.WriteKubeconfig && o.Preview {
		fmt.Fprintf(out, "  then the kubeconfig context %s for kubectl (--write-kubeconfig)\n", kubernetes.GKEContext(cfg.Project, cfg.Zone, cluster))
	}
	applied, err := applyPlan(ctx, c, p, prof.Changes(), o.Preview, start, "everything up makes is there")
	if err != nil || o.Preview {
		return err
	}
	return gkeUpFinish(ctx, c, conn, res, prof, applied, o, gkeconn.Cluster{Project: cfg.Project, Zone: cfg.Zone, Name: cluster}, start)
}

// gkeUpConfig completes cfg for up: the runner image to publish, the connection to the
// cluster, the LeaderWorkerSet image, the first pool.
func gkeUpConfig(cfg *gke.Config, res *config.Resolved, o upGKEOptions, out io.Writer) *gkeconn.Connector {
	if res.Get(kubernetes.KeyRunnerImage) == "" {
		cfg.Runner = gke.ImageRunner{Images: &image.Client{}, Source: image.RunnerSource{CacheDir: filepath.Join(config.DataDir(), "cache", "runner"), Progress: out}}
	}
	conn := kubernetes.GKEConnector(resolvedSettings{res})
	cfg.Kube = gke.KubeVia(conn) // refreshes the connection cache jobs use
	cfg.LWSImage = res.Get(config.LWSImage)
	cfg.Pool = o.Pool
	if cfg.Pool != nil && cfg.Pool.Reservation == "" {
		cfg.Pool.Reservation = res.Get(config.Reservation) // KINETIC_RESERVATION, a profile
	}
	return conn
}

// gkeProfileName is the profile up writes: --profile-name, --profile, else the cluster's.
func gkeProfileName(c *provision.Call, o upGKEOptions, cluster string) string {
	for _, n := range []string{o.ProfileName, c.Profile} {
		if n != "" {
			return n
		}
	}
	return cluster
}

// gkeProfileWant is what the profile of a GKE cluster holds.
func gkeProfileWant(cfg gke.Config, res *config.Resolved, o upGKEOptions, cluster string) config.Profile {
	bucket, _ := (&cfg).Bucket()
	store := cfg.Store
	if store == "" {
		store = "gs://" + bucket
	}
	registry := cfg.Registry
	if registry == "" {
		registry = (&gke.Config{Project: cfg.Project, Zone: cfg.Zone, Cluster: cfg.Cluster}).RepoHost()
	}
	want := config.Profile{
		string(config.Backend): kubernetes.GKEName, string(kubernetes.KeyClusterType): "gke",
		string(config.Project): cfg.Project, string(config.Zone): cfg.Zone, string(config.Cluster): cluster,
		string(config.Namespace): res.Get(config.Namespace), string(config.Store): store,
		string(config.ImageRegistry): registry, string(kubernetes.KeyServiceAccount): gke.KubeServiceAccount,
	}
	if o.ForceDestroy != "" {
		want[string(config.ForceDestroy)] = o.ForceDestroy
	}
	return want
}

// gkeUpFinish writes the profile and the kubeconfig context after up applied its plan.
func gkeUpFinish(ctx context.Context, c *provision.Call, conn *gkeconn.Connector, res *config.Resolved, prof *provision.ProfilePlan, applied bool, o upGKEOptions, id gkeconn.Cluster, start time.Time) error {
	out := c.Err
	if applied {
		if err := prof.Write(out); err != nil {
			return err
		}
	}
	if o.WriteKubeconfig {
		if err := writeKubeconfig(ctx, out, conn, res.Get(kubernetes.KeyKubeconfig), id); err != nil {
			return err
		}
	}
	if applied {
		fmt.Fprintf(out, "ready in %.1fs: `kinetic run` submits to cluster %s; `kinetic pool add --accelerator A` adds GPUs or TPUs\n", time.Since(start).Seconds(), id.Name)
	}
	return nil
}

// writeKubeconfig adds the cluster's context for kubectl (up --write-kubeconfig) and
// says what kubectl still needs.
func writeKubeconfig(ctx context.Context, out io.Writer, conn *gkeconn.Connector, kubeconfig string, id gkeconn.Cluster) error {
	in, err := conn.Info(ctx, id)
	if err != nil {
		return fmt.Errorf("--write-kubeconfig: %w", err)
	}
	r, err := gkeconn.WriteKubeconfig(gkeconn.KubeconfigAccess(kubeconfig), id, in)
	if err != nil {
		return fmt.Errorf("--write-kubeconfig: %w", err)
	}
	if r.Changed {
		fmt.Fprintf(out, "  ✓ kubeconfig context %s in %s (now kubectl's current context)\n", r.Context, r.Path)
	} else {
		fmt.Fprintf(out, "  = ok       kubeconfig context %s in %s\n", r.Context, r.Path)
	}
	if r.Plugin == "" {
		fmt.Fprintf(out, "    kubectl needs %s on PATH to use this context (kinetic does not): `gcloud components install %s`, or the package google-cloud-cli-gke-gcloud-auth-plugin (apt, dnf)\n", gkeconn.AuthPlugin, gkeconn.AuthPlugin)
	}
	return nil
}

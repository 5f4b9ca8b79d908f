package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/kinetic-run/kinetic/backend/kubernetes"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/image"
	"github.com/kinetic-run/kinetic/infra/gke"
	"github.com/kinetic-run/kinetic/infra/gke/gkeconn"
)

// gkeFlags are the settings flags of the GKE commands (up --backend gke, down, status, pool).
type gkeFlags struct {
	vals map[config.Key]*string
}

func addGKEFlags(cmd *cobra.Command) *gkeFlags {
	f := &gkeFlags{vals: map[config.Key]*string{}}
	for _, k := range []config.Key{config.Project, config.Zone, config.Cluster} {
		if cmd.Flags().Lookup(string(k)) == nil {
			f.vals[k] = cmd.Flags().String(string(k), "", k.Help()+" (env "+k.EnvVar()+")")
		}
	}
	return f
}

// gkeSetup resolves the configuration (flags in extra win) into a gke.Config and dials
// the Google APIs.
func gkeSetup(ctx context.Context, g *Globals, f *gkeFlags, extra map[config.Key]string) (*gke.Clients, gke.Config, *config.Resolved, error) {
	args := keyFlagArgs(f.vals)
	for k, v := range extra {
		if v != "" {
			args[k] = v
		}
	}
	res, err := config.Resolve(config.Options{Args: args, Profile: g.Profile})
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
	c, err := gke.DialFor(ctx, ep, cfg.Project) // user ADC: the project is the quota project
	if err != nil {
		return nil, cfg, nil, err
	}
	return c, cfg, res, nil
}

// planErr words an error of the planning reads: after Ctrl-C, nothing was changed.
func planErr(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return errors.New("interrupted while reading what exists: nothing was changed")
	}
	return err
}

// addPreviewFlag defines --preview unless the command has it already.
func addPreviewFlag(cmd *cobra.Command) {
	if cmd.Flags().Lookup("preview") == nil {
		cmd.Flags().Bool("preview", false, "print the plan and stop")
	}
}

// confirm asks on a terminal; without one it refuses, naming -y.
func confirm(cmd *cobra.Command, question string) error {
	in := cmd.InOrStdin()
	if f, ok := in.(*os.File); !ok || !term.IsTerminal(int(f.Fd())) {
		return errors.New("nothing applied: standard input is not a terminal to ask on; run again with -y to apply the plan above (or --preview to only see it)")
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "%s [y/N] ", question)
	line, _ := bufio.NewReader(in).ReadString('\n')
	if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
		return errors.New("nothing applied")
	}
	return nil
}

// applyPlan prints p, stops on --preview or when there is nothing to do, asks unless
// yes, and applies it with progress on stderr. extra counts changes outside p (the
// profile). It returns whether it applied.
func applyPlan(cmd *cobra.Command, p *gke.Plan, extra int, preview, yes bool, start time.Time, done string) (bool, error) {
	out := cmd.ErrOrStderr()
	n := p.Changes() + extra
	if n == 0 {
		fmt.Fprintf(out, "no change: %s (%.1fs)\n", done, time.Since(start).Seconds())
		return false, nil
	}
	if preview {
		fmt.Fprintf(out, "%d change(s) planned; --preview: nothing applied\n", n)
		return false, nil
	}
	if !yes {
		if err := confirm(cmd, fmt.Sprintf("apply %d change(s)?", n)); err != nil {
			return false, err
		}
	}
	if err := p.Apply(cmd.Context(), out); err != nil {
		return false, err
	}
	return true, nil
}

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

// upGKE is `kinetic up` for GKE (`--backend gke`, or no backend with a project).
func upGKE(cmd *cobra.Command, g *Globals, f *gkeFlags, extra map[config.Key]string, o upGKEOptions) error {
	preview, yes := o.Preview, o.Yes
	ctx := cmd.Context()
	out := cmd.ErrOrStderr()
	start := time.Now()
	c, cfg, res, err := gkeSetup(ctx, g, f, extra)
	if err != nil {
		return err
	}
	defer c.Close()
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
	p, err := gke.PlanUp(ctx, c, cfg)
	if err != nil {
		return planErr(ctx, err)
	}
	bucket, _ := (&cfg).Bucket()
	store := cfg.Store
	if store == "" {
		store = "gs://" + bucket
	}
	registry := cfg.Registry
	if registry == "" {
		registry = (&gke.Config{Project: cfg.Project, Zone: cfg.Zone, Cluster: cfg.Cluster}).RepoHost()
	}
	cluster := cfg.Cluster
	if cluster == "" {
		cluster = gke.DefaultCluster
	}
	want := config.Profile{
		string(config.Backend): "gke", string(kubernetes.KeyClusterType): "gke",
		string(config.Project): cfg.Project, string(config.Zone): cfg.Zone, string(config.Cluster): cluster,
		string(config.Namespace): res.Get(config.Namespace), string(config.Store): store,
		string(config.ImageRegistry): registry, string(kubernetes.KeyServiceAccount): gke.KubeServiceAccount,
	}
	if o.ForceDestroy != "" {
		want[string(config.ForceDestroy)] = o.ForceDestroy
	}
	name := o.ProfileName
	if name == "" {
		name = g.Profile
	}
	if name == "" {
		name = cluster
	}
	prof, err := planProfile(g, name, want)
	if err != nil {
		return err
	}
	// A project with APIs off plans only their enabling first (Replan); then the rest.
	for p.Replan {
		p.Print(out)
		if preview {
			fmt.Fprintln(out, "--preview: nothing applied (the rest is planned once the APIs are enabled)")
			return nil
		}
		if _, err := applyPlan(cmd, p, 0, false, yes, start, ""); err != nil {
			return err
		}
		if p, err = gke.PlanUp(ctx, c, cfg); err != nil {
			return planErr(ctx, err)
		}
	}
	p.Print(out)
	prof.print(out)
	if o.WriteKubeconfig && preview {
		fmt.Fprintf(out, "  then the kubeconfig context %s for kubectl (--write-kubeconfig)\n", kubernetes.GKEContext(cfg.Project, cfg.Zone, cluster))
	}
	applied, err := applyPlan(cmd, p, prof.changes(), preview, yes, start, "everything up makes is there")
	if err != nil || preview {
		return err
	}
	if applied {
		if err := prof.write(out); err != nil {
			return err
		}
	}
	if o.WriteKubeconfig {
		id := gkeconn.Cluster{Project: cfg.Project, Zone: cfg.Zone, Name: cluster}
		if err := writeKubeconfig(ctx, out, conn, res.Get(kubernetes.KeyKubeconfig), id); err != nil {
			return err
		}
	}
	if applied {
		fmt.Fprintf(out, "ready in %.1fs: `kinetic run` submits to cluster %s; `kinetic pool add --accelerator A` adds GPUs or TPUs\n", time.Since(start).Seconds(), cluster)
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

// profilePlan is the profile change up makes.
type profilePlan struct {
	name, path string
	exists     bool
	current    bool // it is the file's current profile already
	changed    []string
	merged     config.Profile
}

// planProfile plans the profile name (made current) holding want.
func planProfile(g *Globals, name string, want config.Profile) (*profilePlan, error) {
	path := config.ProfilesPath(nil)
	f, err := config.LoadProfiles(path)
	if err != nil {
		return nil, err
	}
	old, exists := f.Profiles[name]
	pp := &profilePlan{name: name, path: path, exists: exists, current: f.Current == name, merged: config.Profile{}}
	for k, v := range old {
		pp.merged[k] = v
	}
	for k, v := range want {
		if v == "" {
			continue
		}
		if old[k] != v {
			pp.changed = append(pp.changed, k+"="+v)
		}
		pp.merged[k] = v
	}
	sortStrings(pp.changed)
	return pp, nil
}

func (pp *profilePlan) changes() int {
	if !pp.exists || len(pp.changed) > 0 || !pp.current {
		return 1
	}
	return 0
}

func (pp *profilePlan) print(w io.Writer) {
	switch {
	case !pp.exists:
		fmt.Fprintf(w, "  + create   profile %s in %s (%s)\n", pp.name, pp.path, strings.Join(pp.changed, ", "))
	case len(pp.changed) > 0:
		fmt.Fprintf(w, "  ~ update   profile %s in %s (%s)\n", pp.name, pp.path, strings.Join(pp.changed, ", "))
	case !pp.current:
		fmt.Fprintf(w, "  ~ use      profile %s (make it the current one)\n", pp.name)
	default:
		fmt.Fprintf(w, "  = ok       profile %s\n", pp.name)
	}
}

func (pp *profilePlan) write(w io.Writer) error {
	if pp.changes() == 0 {
		return nil
	}
	err := config.Update(pp.path, func(f *config.File) error {
		if err := f.Put(pp.name, pp.merged); err != nil {
			return err
		}
		f.Current = pp.name
		return nil
	})
	if err == nil {
		fmt.Fprintf(w, "  ✓ profile %s\n", pp.name)
	}
	return err
}

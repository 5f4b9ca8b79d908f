package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kinetic-run/kinetic/backend/kubernetes"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/image"
	"github.com/kinetic-run/kinetic/infra"
	"github.com/kinetic-run/kinetic/infra/gke"
)

// k8sTarget resolves the configuration (with args on top) into an infra.Target.
func k8sTarget(g *Globals, args map[config.Key]string) (*infra.Target, *config.Resolved, error, error) {
	cfg, err := config.Resolve(config.Options{Args: args, Profile: g.Profile})
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

// upK8sOptions are the flags of `kinetic up --backend k8s` (and what `kinetic init`
// passes when joining a cluster).
type upK8sOptions struct {
	Namespace, Registry, Store, Context string
	// Profile is the profile to write ("" = --profile, the active one, else default).
	Profile      string
	Yes, Preview bool
}

func newUpCmd(g *Globals) *cobra.Command {
	var be string
	var o upK8sOptions
	var gf *gkeFlags
	var gko upGKEOptions
	var pool gke.PoolOptions
	cmd := &cobra.Command{
		Use:   "up [--project P] [--zone Z] [--cluster C] [--accelerator A [--min-nodes N]] [--backend gke|k8s] [-y | --preview]",
		Short: "Create a GKE cluster (gke) or prepare an existing cluster (k8s) for jobs, and write the profile",
		Long: "With a project (--project, KINETIC_PROJECT or a profile's) and no --backend, up\n" +
			"creates a GKE cluster and what jobs need (docs/infrastructure.md), with a first\n" +
			"accelerator pool when --accelerator is given, and writes the profile named after the\n" +
			"cluster (--profile-name), made current; --write-kubeconfig also adds the cluster's\n" +
			"context for kubectl (kinetic itself needs no kubeconfig). --backend k8s prepares an existing cluster\n" +
			"from your kubeconfig: the namespace, the service account of job pods, the Role the\n" +
			"engine needs bound to it, the runner image, the profile; then it checks the store\n" +
			"from here and from a pod. A second `up` changes nothing. --preview prints the plan\n" +
			"and changes nothing. Without -y it asks on a terminal, and refuses when there is no\n" +
			"terminal to ask on.",
		Example: "  kinetic up --project my-project --accelerator tpu-v6e-8 -y\n  kinetic up --project my-project --preview\n  kinetic up --backend k8s --registry HOST/PATH --store gs://BUCKET",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if be == "" {
				var err error
				if be, err = upBackend(g, gf); err != nil {
					return err
				}
			}
			gkeOnly := []string{"accelerator", "min-nodes", "profile-name", "write-kubeconfig", "force-destroy", "no-force-destroy"}
			switch be {
			case "k8s":
				for _, fl := range gkeOnly {
					if cmd.Flags().Changed(fl) {
						return fmt.Errorf("--%s is for GKE (`kinetic up --project P`); with --backend k8s, add node pools with your cluster's tools", fl)
					}
				}
			case "gke":
				if cmd.Flags().Changed("min-nodes") && pool.Accelerator == "" {
					return errors.New("--min-nodes sizes the first accelerator pool: give --accelerator too")
				}
				if pool.Accelerator != "" {
					gko.Pool = &pool
				}
				gko.Preview, gko.Yes = o.Preview, o.Yes
				fd, err := forceDestroyFlags(cmd)
				if err != nil {
					return err
				}
				gko.ForceDestroy = fd
				return upGKE(cmd, g, gf, map[config.Key]string{config.Namespace: o.Namespace, config.ImageRegistry: o.Registry, config.Store: o.Store}, gko)
			default:
				return fmt.Errorf("--backend %q: use gke (create a GKE cluster and what jobs need) or k8s (an existing cluster from your kubeconfig)", be)
			}
			if o.Yes && o.Preview {
				return errors.New("--preview and -y: --preview only prints the plan; give one of them")
			}
			return upK8s(cmd, g, o)
		},
	}
	cmd.Flags().StringVar(&be, "backend", "", "gke: create a GKE cluster and what jobs need (docs/infrastructure.md; the default when a project is set); k8s: an existing cluster (the kubeconfig's current context, or --context)")
	cmd.Flags().StringVar(&pool.Accelerator, "accelerator", "", "GKE: also make a node pool for this accelerator, as pool add does (e.g. gpu-l4, tpu-v6e-8)")
	cmd.Flags().IntVar(&pool.MinNodes, "min-nodes", 0, "GKE: fewest nodes the autoscaler keeps in the --accelerator pool")
	cmd.Flags().BoolVar(&gko.WriteKubeconfig, "write-kubeconfig", false, "GKE: also add the cluster's context (gke_PROJECT_ZONE_CLUSTER) to the kubeconfig for kubectl, made current (kinetic itself needs none)")
	cmd.Flags().Bool("force-destroy", false, "GKE: let a later kinetic down delete the store bucket with every job record and output (kept in the profile as force_destroy)")
	cmd.Flags().Bool("no-force-destroy", false, "GKE: keep the store bucket at kinetic down (force_destroy=false in the profile; the default)")
	cmd.Flags().StringVar(&gko.ProfileName, "profile-name", "", "GKE: the profile to write and make current (default: the cluster's name)")
	cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, "apply without asking")
	cmd.Flags().BoolVar(&o.Preview, "preview", false, "print the plan and change nothing")
	cmd.Flags().StringVar(&o.Namespace, "namespace", "", "namespace for jobs (default: the profile's, else default)")
	cmd.Flags().StringVar(&o.Registry, "registry", "", "registry for the runner image and bundled images, HOST/PATH, pullable by the nodes (image_registry)")
	cmd.Flags().StringVar(&o.Store, "store", "", "store URL reachable from the pods: gs://BUCKET or s3://BUCKET")
	cmd.Flags().StringVar(&o.Context, "context", "", "kubeconfig context (default: the current one)")
	gf = addGKEFlags(cmd) // --project, --zone, --cluster (GKE)
	addPreviewFlag(cmd)
	return cmd
}

// upBackend is up's target when --backend is not given: the configured backend (gke
// when a project is set by --project, KINETIC_PROJECT, a profile or GOOGLE_CLOUD_PROJECT),
// else an error naming --project and --backend k8s.
func upBackend(g *Globals, gf *gkeFlags) (string, error) {
	res, err := config.Resolve(config.Options{Args: keyFlagArgs(gf.vals), Profile: g.Profile})
	if err != nil {
		return "", err
	}
	switch res.Get(config.Backend) {
	case kubernetes.GKEName, kubernetes.PathwaysName:
		return "gke", nil
	case kubernetes.K8sName:
		return "k8s", nil
	}
	msg := "kinetic up: no project to create a GKE cluster in: pass --project P (or set KINETIC_PROJECT or GOOGLE_CLOUD_PROJECT, or a profile's project); for another cluster from your kubeconfig, pass --backend k8s"
	if src := res.Source(config.Backend); src != config.SourceDefault {
		msg += fmt.Sprintf(" (backend %s from %s)", res.Get(config.Backend), src)
	}
	return "", errors.New(msg)
}

// upK8s is `kinetic up --backend k8s`: plan, print, ask, apply, write the profile, check.
func upK8s(cmd *cobra.Command, g *Globals, o upK8sOptions) error {
	args := map[config.Key]string{config.Namespace: o.Namespace, config.ImageRegistry: o.Registry, config.Store: o.Store, config.KubeContext: o.Context}
	for k, v := range args {
		if v == "" {
			delete(args, k)
		}
	}
	profile := g.Profile
	if o.Profile != "" {
		profile = o.Profile
	}
	t, cfg, kerr, err := k8sTarget(&Globals{Profile: existingProfile(profile)}, args)
	if err != nil {
		return err
	}
	if kerr != nil {
		return kerr
	}
	ctx := cmd.Context()
	out := cmd.ErrOrStderr()
	start := time.Now()
	plan, err := infra.PlanUp(ctx, t)
	if err != nil {
		return err
	}
	// The profile.
	path := config.ProfilesPath(nil)
	f, err := config.LoadProfiles(path)
	if err != nil {
		return err
	}
	name, _ := config.ActiveName(f, profile, nil, path)
	if name == "" {
		name = "default"
	}
	want := config.Profile{
		string(config.Backend): "k8s", string(kubernetes.KeyClusterType): "generic",
		string(config.Namespace): t.Namespace, string(config.Store): t.Store,
		string(config.ImageRegistry): t.Registry, string(config.KubeContext): t.Context,
	}
	// A kubeconfig that came from $KUBECONFIG stays there: written into the
	// profile it would shadow the variable (the profile wins over it).
	if t.Kubeconfig != "" && cfg.Source(kubernetes.KeyKubeconfig) != "env KUBECONFIG" {
		if abs, err := filepath.Abs(t.Kubeconfig); err == nil {
			want[string(kubernetes.KeyKubeconfig)] = abs
		}
	}
	for k, v := range want {
		if v == "" {
			delete(want, k)
		}
	}
	old, exists := f.Profiles[name]
	merged := config.Profile{}
	for k, v := range old {
		merged[k] = v
	}
	changed := []string{}
	for k, v := range want {
		if old[k] != v {
			changed = append(changed, k+"="+v)
		}
		merged[k] = v
	}
	profileAction := "ok"
	if !exists {
		profileAction = "create"
	} else if len(changed) > 0 {
		profileAction = "update"
	}
	plan.Print(out)
	mark := map[string]string{"ok": "=", "create": "+", "update": "~"}[profileAction]
	detail := ""
	if len(changed) > 0 {
		detail = " (" + strings.Join(sortStrings(changed), ", ") + ")"
	}
	fmt.Fprintf(out, "  %s %-8s profile %s in %s%s\n", mark, profileAction, name, path, detail)
	changes := plan.Changes()
	if profileAction != "ok" {
		changes++
	}
	if changes == 0 {
		fmt.Fprintf(out, "nothing to change: the cluster is ready (%.1fs; `kinetic doctor` checks the store from a pod)\n", time.Since(start).Seconds())
		return nil
	}
	if o.Preview {
		fmt.Fprintf(out, "preview: %d change(s) planned, nothing applied (run again with -y to apply)\n", changes)
		return nil
	}
	if !o.Yes {
		if !isTerminal(cmd.InOrStdin()) {
			return fmt.Errorf("%d change(s) planned and no terminal to ask on: nothing applied; run again with -y to apply (or --preview to only print the plan)", changes)
		}
		ok, err := newPrompter(cmd.InOrStdin(), out).confirm(fmt.Sprintf("apply %d change(s)?", changes))
		if err != nil {
			return err
		}
		if !ok {
			return errors.New("nothing applied")
		}
	}
	if err := plan.Apply(ctx, out); err != nil {
		return err
	}
	if profileAction != "ok" {
		err := config.Update(path, func(f *config.File) error {
			if err := f.Put(name, merged); err != nil {
				return err
			}
			if f.Current == "" || o.Profile != "" {
				f.Current = name
			}
			return nil
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "  %s profile %s\n", profileAction, name)
	}
	return upChecks(ctx, cmd, t, plan.RunnerImage, start)
}

// existingProfile is name if it names a profile that exists, else "" (the one up is
// about to create cannot be resolved yet).
func existingProfile(name string) string {
	if name == "" {
		return ""
	}
	f, err := config.LoadProfiles(config.ProfilesPath(nil))
	if err != nil || f.Profiles[name] == nil {
		return ""
	}
	return name
}

// upChecks checks the store from here and from a pod after a change.
func upChecks(ctx context.Context, cmd *cobra.Command, t *infra.Target, runnerImage string, start time.Time) error {
	out := cmd.ErrOrStderr()
	if err := infra.CheckStoreHere(ctx, t.Store); err != nil {
		return fmt.Errorf("store %s from here: %w", t.Store, err)
	}
	fmt.Fprintf(out, "✓ store %s: read and write from here\n", t.Store)
	if err := infra.CheckStoreFromPod(ctx, t, runnerImage); err != nil {
		return fmt.Errorf("store %s from a pod: %w (see `kinetic doctor`)", t.Store, err)
	}
	fmt.Fprintf(out, "✓ store %s: read and write from a pod in %s\n", t.Store, t.Namespace)
	fmt.Fprintf(out, "ready in %.1fs: `kinetic run` submits to namespace %s\n", time.Since(start).Seconds(), t.Namespace)
	return nil
}

func sortStrings(s []string) []string {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s
}

func newDoctorCmd(g *Globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor [--json]",
		Short: "Check that a job can run where jobs go: this machine (python, store, slots) or the cluster (credentials, permissions, store, registry, runner image)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := doctorReport(cmd.Context(), g)
			if err != nil {
				return err
			}
			if asJSON {
				if err := writeJSON(cmd.OutOrStdout(), r); err != nil {
					return err
				}
			} else {
				r.Print(cmd.OutOrStdout())
			}
			if !r.OK {
				return &ExitError{Code: 1, Err: errors.New("a job could not run here (see the ✗ lines)")}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// doctorReport checks the backend in use: the local one on this machine (localDoctor);
// GKE's project and Google credentials first, then the cluster; any other cluster through
// its kubeconfig.
func doctorReport(ctx context.Context, g *Globals) (*infra.Report, error) {
	res, err := config.Resolve(config.Options{Profile: g.Profile})
	if err != nil {
		return nil, err
	}
	if onThisMachine(res) {
		return localDoctor(ctx, res), nil
	}
	if b := res.Get(config.Backend); (b == kubernetes.GKEName || b == kubernetes.PathwaysName) && res.Get(config.KubeContext) == "" {
		why := "backend " + b + " (" + res.Source(config.Backend) + ")"
		if res.Get(config.Project) == "" {
			return &infra.Report{Checks: []infra.Check{{Name: "project", Detail: why + " needs a Google Cloud project", Fix: "pass --project P or set KINETIC_PROJECT (or a profile's project); `kinetic up --project P` creates the cluster"}}}, nil
		}
		t, kerr, err := gkeTarget(ctx, g, res, res.Get(config.Project), res.Get(config.Zone), res.Get(config.Cluster))
		if err != nil {
			return nil, err
		}
		if kerr != nil {
			return &infra.Report{Checks: []infra.Check{{Name: "GKE cluster " + res.Get(config.Cluster), Detail: why + ": " + kerr.Error(),
				Fix: "`gcloud auth application-default login` for credentials; `kinetic up` creates the cluster; `kinetic status` shows what exists"}}}, nil
		}
		return infra.Doctor(ctx, t, nil), nil
	}
	t, _, kerr, err := k8sTarget(g, nil)
	if err != nil {
		return nil, err
	}
	return infra.Doctor(ctx, t, kerr), nil
}

// forceDestroyFlags reads up's --force-destroy / --no-force-destroy: "true", "false", or ""
// when neither is given (the profile keeps what it had).
func forceDestroyFlags(cmd *cobra.Command) (string, error) {
	yes, no := cmd.Flags().Changed("force-destroy"), cmd.Flags().Changed("no-force-destroy")
	switch {
	case yes && no:
		return "", errors.New("--force-destroy and --no-force-destroy: give one of them")
	case yes:
		v, _ := cmd.Flags().GetBool("force-destroy")
		return strconv.FormatBool(v), nil
	case no:
		v, _ := cmd.Flags().GetBool("no-force-destroy")
		return strconv.FormatBool(!v), nil
	}
	return "", nil
}

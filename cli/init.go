package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/infra"
	"github.com/kinetic-run/kinetic/store"
)

// initOptions are kinetic init's flags.
type initOptions struct {
	Backend                    string // k8s, gke, local ("" = ask)
	Context, Namespace         string
	Registry, Store            string
	Project, Zone, ClusterName string
	// ProfileName is the profile written (--profile-name; the global --profile too):
	// default the cluster's name on GKE, as the reference names it, else "default".
	ProfileName string
	// Join (GKE) writes the profile of an existing cluster without creating anything.
	Join bool
	Yes  bool
}

const initUsageFix = "run it on a terminal, or give -y and flags: `kinetic init -y --backend k8s --context C --registry HOST/PATH --store gs://BUCKET`, `kinetic init -y --backend gke --project P --zone Z`, or `kinetic init -y --backend local`"

func newInitCmd(g *Globals) *cobra.Command {
	var o initOptions
	cmd := &cobra.Command{
		Use:   "init [-y --backend k8s|gke|local ...]",
		Short: "Set kinetic up on this machine: join a Kubernetes cluster, create one on GKE, or stay local",
		Long: "On a terminal, init shows what is already here (kubeconfig contexts, the Google\n" +
			"Cloud project and credentials, existing profiles) and asks where jobs should run:\n" +
			"join a Kubernetes context (it runs `kinetic up --backend k8s`), create a GKE\n" +
			"cluster (it runs `kinetic up --backend gke`), or stay local. It writes a profile\n" +
			"(--profile NAME, default `default`) and makes it active. Without a terminal, give\n" +
			"-y and the flags of the choice.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runInit(cmd, g, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Backend, "backend", "", "k8s (join a context), gke (create a GKE cluster) or local")
	f.StringVar(&o.Context, "context", "", "k8s: the kubeconfig context to join (default: the current one)")
	f.StringVar(&o.Namespace, "namespace", "", "k8s: namespace for jobs (default: default)")
	f.StringVar(&o.Registry, "registry", "", "k8s: registry the nodes pull from, HOST/PATH (image_registry)")
	f.StringVar(&o.Store, "store", "", "k8s: store reachable from pods, gs://BUCKET or s3://BUCKET")
	f.StringVar(&o.Project, "project", "", "gke: Google Cloud project (default: the one gcloud uses)")
	f.StringVar(&o.Zone, "zone", "", "gke: zone of the cluster")
	f.StringVar(&o.ClusterName, "cluster", "", "gke: cluster name (default: kinetic-cluster)")
	f.BoolVar(&o.Join, "join", false, "gke: join the existing cluster --project/--zone/--cluster (write its profile; create nothing, no kubeconfig needed)")
	f.StringVar(&o.ProfileName, "profile-name", "", "the profile to write and make active (default: the cluster's name on GKE, else default)")
	f.BoolVarP(&o.Yes, "yes", "y", false, "do not ask: take the flags (and defaults) as the answers")
	return cmd
}

func runInit(cmd *cobra.Command, g *Globals, o initOptions) error {
	out := cmd.ErrOrStderr()
	tty := isTerminal(cmd.InOrStdin())
	if !tty && !o.Yes {
		return errors.New("kinetic init asks questions and there is no terminal to ask on: " + initUsageFix)
	}
	home, _ := os.UserHomeDir()
	found := infra.Detect(os.Getenv, home)
	path := config.ProfilesPath(nil)
	profiles, err := config.LoadProfiles(path)
	if err != nil {
		return err
	}
	cfg, _ := config.Resolve(config.Options{Profile: existingProfile(g.Profile)})
	setting := func(k config.Key) string {
		if cfg == nil {
			return ""
		}
		return cfg.Get(k)
	}

	var p *prompter
	if !o.Yes {
		p = newPrompter(cmd.InOrStdin(), out)
		printFound(out, found, profiles, path)
	}

	// Where jobs run.
	if o.Backend == "" {
		if o.Yes {
			return errors.New("kinetic init -y needs --backend k8s, gke or local: " + initUsageFix)
		}
		type choice struct{ label, backend, context string }
		var cs []choice
		for _, c := range found.Contexts {
			cs = append(cs, choice{fmt.Sprintf("join Kubernetes context %s (%s)", c.Name, c.Server), "k8s", c.Name})
		}
		gkeLabel := "create a GKE cluster"
		if found.Project != "" {
			gkeLabel += " in project " + found.Project
		}
		joinLabel := "join an existing GKE cluster"
		if found.Project != "" {
			joinLabel += " in project " + found.Project
		}
		cs = append(cs, choice{gkeLabel, "gke", ""}, choice{joinLabel, "gke-join", ""}, choice{"stay local: run jobs on this machine", "local", ""})
		labels := make([]string, len(cs))
		for i, c := range cs {
			labels[i] = c.label
		}
		i, err := p.choose("Where should jobs run?", labels, 0)
		if err != nil {
			return err
		}
		o.Backend = cs[i].backend
		if o.Backend == "gke-join" {
			o.Backend, o.Join = "gke", true
		}
		if o.Context == "" {
			o.Context = cs[i].context
		}
	}

	if o.Join && o.Backend != "gke" {
		return errors.New("--join is for GKE: kinetic init --backend gke --join --project P --zone Z --cluster C")
	}
	name := o.ProfileName
	if name == "" {
		name = g.Profile
	}
	if name == "" && o.Backend == "gke" {
		// As the reference names it: after the cluster (asked for below, on a terminal).
		name = o.ClusterName
		if name == "" {
			name = "kinetic-cluster"
		}
	}
	if name == "" {
		name = "default"
		if p != nil {
			if name, err = p.ask("Profile to write", name); err != nil {
				return err
			}
		}
	}
	if err := config.ValidateProfileName(name); err != nil {
		return err
	}

	switch o.Backend {
	case "k8s":
		if o.Context == "" {
			for _, c := range found.Contexts {
				if c.Current {
					o.Context = c.Name
				}
			}
		}
		if o.Context == "" {
			return fmt.Errorf("no Kubernetes context to join in %s: give --context, or point KUBECONFIG at the cluster's kubeconfig", found.Kubeconfig)
		}
		def := func(v string, k config.Key, fallback string) string {
			if v != "" {
				return v
			}
			if s := setting(k); s != "" && (k != config.Store || store.FromPods(s)) {
				return s
			}
			return fallback
		}
		o.Namespace = def(o.Namespace, config.Namespace, "default")
		o.Registry = def(o.Registry, config.ImageRegistry, "")
		o.Store = def(o.Store, config.Store, "")
		if p != nil {
			if o.Namespace, err = p.ask("Namespace for jobs", o.Namespace); err != nil {
				return err
			}
			if o.Registry, err = p.ask("Registry the nodes pull from (HOST/PATH)", o.Registry); err != nil {
				return err
			}
			if o.Store, err = p.ask("Store the pods reach (gs://BUCKET or s3://BUCKET)", o.Store); err != nil {
				return err
			}
		}
		if o.Registry == "" || o.Store == "" {
			return errors.New("joining a cluster needs --registry HOST/PATH (where the runner image goes, pullable by the nodes) and --store gs://BUCKET or s3://BUCKET (reachable from the pods)")
		}
		fmt.Fprintf(out, "running: kinetic up --backend k8s --context %s --namespace %s --registry %s --store %s --profile %s\n", o.Context, o.Namespace, o.Registry, shellQuote(o.Store), name)
		return upK8s(cmd, g, upK8sOptions{Context: o.Context, Namespace: o.Namespace, Registry: o.Registry, Store: o.Store, Profile: name, Yes: o.Yes})

	case "gke":
		if o.Project == "" {
			o.Project = found.Project
		}
		if o.Zone == "" {
			o.Zone = found.Zone
		}
		if o.Zone == "" {
			o.Zone = setting(config.Zone)
		}
		if o.ClusterName == "" {
			o.ClusterName = "kinetic-cluster"
		}
		if p != nil {
			if o.Project, err = p.ask("Google Cloud project", o.Project); err != nil {
				return err
			}
			if o.Zone, err = p.ask("Zone", o.Zone); err != nil {
				return err
			}
			if o.ClusterName, err = p.ask("Cluster name", o.ClusterName); err != nil {
				return err
			}
		}
		if o.Project == "" {
			return errors.New("a GKE cluster needs a project: give --project P (or set CLOUDSDK_CORE_PROJECT / `gcloud config set project P`)")
		}
		if o.ProfileName == "" && g.Profile == "" {
			name = o.ClusterName // the answer given on a terminal
		}
		if o.Join {
			return joinGKE(cmd, name, o, p)
		}
		if found.Credentials == "" {
			fmt.Fprintln(out, "note: no Google credentials found; `gcloud auth application-default login` makes them")
		}
		args := []string{"--profile", name, "up", "--backend", "gke", "--project", o.Project, "--zone", o.Zone, "--cluster", o.ClusterName}
		if o.Yes {
			args = append(args, "-y")
		}
		fmt.Fprintf(out, "running: kinetic %s\n", strings.Join(args, " "))
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("creating the cluster is `kinetic %s`: %w", strings.Join(args, " "), err)
		}
		c := exec.CommandContext(cmd.Context(), exe, args...)
		c.Stdin, c.Stdout, c.Stderr = cmd.InOrStdin(), cmd.OutOrStdout(), out
		if err := c.Run(); err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				return &ExitError{Code: ee.ExitCode(), Err: fmt.Errorf("`kinetic %s` failed (see above); the profile is written by it once it succeeds", strings.Join(args, " "))}
			}
			return err
		}
		return nil

	case "local":
		want := config.Profile{string(config.Backend): "local"}
		old := profiles.Profiles[name]
		if old[string(config.Backend)] == "local" && profiles.Current == name {
			fmt.Fprintf(out, "profile %s already runs jobs locally: nothing to change\n", name)
			return nil
		}
		fmt.Fprintf(out, "  + profile %s in %s: backend=local (made active)\n", name, path)
		if p != nil {
			ok, err := p.confirm("write it?")
			if err != nil {
				return err
			}
			if !ok {
				return errors.New("nothing written")
			}
		}
		merged := config.Profile{}
		for k, v := range old {
			merged[k] = v
		}
		for k, v := range want {
			merged[k] = v
		}
		err := config.Update(path, func(f *config.File) error {
			if err := f.Put(name, merged); err != nil {
				return err
			}
			f.Current = name
			return nil
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "wrote profile %s: jobs run on this machine (`kinetic run` uses it)\n", name)
		return nil
	default:
		return fmt.Errorf("--backend %q: give k8s (join a cluster), gke (create one) or local", o.Backend)
	}
}

func printFound(w io.Writer, f infra.Found, profiles *config.File, path string) {
	fmt.Fprintln(w, "Found on this machine:")
	if len(f.Contexts) == 0 {
		fmt.Fprintf(w, "  Kubernetes: no contexts in %s\n", f.Kubeconfig)
	} else {
		fmt.Fprintf(w, "  Kubernetes: %d context(s) in %s\n", len(f.Contexts), f.Kubeconfig)
		width := 0
		for _, c := range f.Contexts {
			width = max(width, len(c.Name))
		}
		for _, c := range f.Contexts {
			mark := " "
			if c.Current {
				mark = "*"
			}
			fmt.Fprintf(w, "    %s %-*s  %s\n", mark, width, c.Name, c.Server)
		}
	}
	if f.Project != "" {
		fmt.Fprintf(w, "  Google Cloud: project %s (from %s)\n", f.Project, f.ProjectFrom)
	} else {
		fmt.Fprintln(w, "  Google Cloud: no project (CLOUDSDK_CORE_PROJECT, GOOGLE_CLOUD_PROJECT or `gcloud config set project`)")
	}
	if f.Credentials != "" {
		fmt.Fprintf(w, "  Google credentials: %s\n", f.Credentials)
	} else {
		fmt.Fprintln(w, "  Google credentials: none (`gcloud auth application-default login`)")
	}
	if names := profiles.Names(); len(names) > 0 {
		var ls []string
		for _, n := range names {
			if n == profiles.Current {
				n += " (active)"
			}
			ls = append(ls, n)
		}
		fmt.Fprintf(w, "  Profiles: %s in %s\n", strings.Join(ls, ", "), path)
	} else {
		fmt.Fprintf(w, "  Profiles: none yet (%s)\n", path)
	}
}

func shellQuote(s string) string {
	if strings.ContainsAny(s, "?&*; $'\"") {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	return s
}

// joinGKE is `kinetic init --backend gke --join`: the reference's "join" path. It writes the
// profile of an existing cluster (backend gke, project, zone, cluster, namespace; the store
// and registry then default to what `kinetic up` made for that cluster) and makes it
// active. Nothing is created and no kubeconfig is needed: the engine reaches the cluster
// through the GKE API. `kinetic status` then checks it.
func joinGKE(cmd *cobra.Command, name string, o initOptions, p *prompter) error {
	out := cmd.ErrOrStderr()
	if err := config.ValidateProfileName(name); err != nil {
		return err
	}
	if o.Zone == "" {
		return errors.New("joining a GKE cluster needs its zone: give --zone Z")
	}
	ns := o.Namespace
	if ns == "" {
		ns = "default"
	}
	want := config.Profile{string(config.Backend): "gke", string(config.Project): o.Project, string(config.Zone): o.Zone,
		string(config.Cluster): o.ClusterName, string(config.Namespace): ns}
	path := config.ProfilesPath(nil)
	fmt.Fprintf(out, "  + profile %s in %s: join GKE cluster %s (project %s, zone %s), made active\n", name, path, o.ClusterName, o.Project, o.Zone)
	if p != nil {
		ok, err := p.confirm("write it?")
		if err != nil {
			return err
		}
		if !ok {
			return errors.New("nothing written")
		}
	}
	err := config.Update(path, func(f *config.File) error {
		merged := config.Profile{}
		for k, v := range f.Profiles[name] {
			merged[k] = v
		}
		for k, v := range want {
			merged[k] = v
		}
		if err := f.Put(name, merged); err != nil {
			return err
		}
		f.Current = name
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "wrote profile %s: jobs run on GKE cluster %s; `kinetic status` checks it (credentials: gcloud auth application-default login)\n", name, o.ClusterName)
	return nil
}

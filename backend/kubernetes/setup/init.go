package setup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/kinetic-run/kinetic/backend/kubernetes"
	"github.com/kinetic-run/kinetic/backend/provision"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/infra"
	"github.com/kinetic-run/kinetic/store"
)

// detect is what init finds on this machine: kubeconfig contexts, the Google Cloud
// project and credentials.
func detect() infra.Found {
	home, _ := os.UserHomeDir()
	return infra.Detect(os.Getenv, home)
}

// survey is init's "Found on this machine" lines and answers for Kubernetes and GKE.
func survey(f infra.Found) ([]string, []provision.Choice) {
	var lines []string
	var cs []provision.Choice
	if len(f.Contexts) == 0 {
		lines = append(lines, fmt.Sprintf("  Kubernetes: no contexts in %s", f.Kubeconfig))
	} else {
		lines = append(lines, fmt.Sprintf("  Kubernetes: %d context(s) in %s", len(f.Contexts), f.Kubeconfig))
		width := 0
		for _, c := range f.Contexts {
			width = max(width, len(c.Name))
		}
		for _, c := range f.Contexts {
			mark := " "
			if c.Current {
				mark = "*"
			}
			lines = append(lines, fmt.Sprintf("    %s %-*s  %s", mark, width, c.Name, c.Server))
			cs = append(cs, provision.Choice{Label: fmt.Sprintf("join Kubernetes context %s (%s)", c.Name, c.Server), Backend: kubernetes.K8sName, Set: map[string]string{"context": c.Name}})
		}
	}
	in := ""
	if f.Project != "" {
		lines = append(lines, fmt.Sprintf("  Google Cloud: project %s (from %s)", f.Project, f.ProjectFrom))
		in = " in project " + f.Project
	} else {
		lines = append(lines, "  Google Cloud: no project (CLOUDSDK_CORE_PROJECT, GOOGLE_CLOUD_PROJECT or `gcloud config set project`)")
	}
	if f.Credentials != "" {
		lines = append(lines, "  Google credentials: "+f.Credentials)
	} else {
		lines = append(lines, "  Google credentials: none (`gcloud auth application-default login`)")
	}
	cs = append(cs, provision.Choice{Label: "create a GKE cluster" + in, Backend: kubernetes.GKEName},
		provision.Choice{Label: "join an existing GKE cluster" + in, Backend: kubernetes.GKEName, Set: map[string]string{"join": "true"}})
	return lines, cs
}

// initK8s is `kinetic init --backend k8s`: join a kubeconfig context by running up.
func initK8s(ctx context.Context, c *provision.Call) error {
	name, err := provision.ProfileName(c, "")
	if err != nil {
		return err
	}
	o := upK8sOptions{Context: c.String("context"), Namespace: c.String("namespace"), Registry: c.String("registry"), Store: c.String("store"), Profile: name, Yes: c.Bool("yes")}
	f := detect()
	if o.Context == "" {
		for _, k := range f.Contexts {
			if k.Current {
				o.Context = k.Name
			}
		}
	}
	if o.Context == "" {
		return fmt.Errorf("no Kubernetes context to join in %s: give --context, or point KUBECONFIG at the cluster's kubeconfig", f.Kubeconfig)
	}
	if err := askK8s(c, &o); err != nil {
		return err
	}
	if o.Registry == "" || o.Store == "" {
		return errors.New("joining a cluster needs --registry HOST/PATH (where the runner image goes, pullable by the nodes) and --store gs://BUCKET or s3://BUCKET (reachable from the pods)")
	}
	fmt.Fprintf(c.Err, "running: kinetic up --backend k8s --context %s --namespace %s --registry %s --store %s --profile %s\n", o.Context, o.Namespace, o.Registry, shellQuote(o.Store), name)
	return upK8s(ctx, c, o)
}

// askK8s fills o's namespace, registry and store from the configuration, then asks.
func askK8s(c *provision.Call, o *upK8sOptions) error {
	cfg, _ := provision.Resolve(&provision.Call{Profile: provision.ExistingProfile(c.Profile), Flags: provision.NoFlags()}, nil)
	def := func(v string, k config.Key, fallback string) string {
		if v != "" {
			return v
		}
		if cfg == nil {
			return fallback
		}
		if s := cfg.Get(k); s != "" && (k != config.Store || store.FromPods(s)) {
			return s
		}
		return fallback
	}
	o.Namespace = def(o.Namespace, config.Namespace, "default")
	o.Registry = def(o.Registry, config.ImageRegistry, "")
	o.Store = def(o.Store, config.Store, "")
	p := c.Prompter
	if p == nil {
		return nil
	}
	var err error
	if o.Namespace, err = p.Ask("Namespace for jobs", o.Namespace); err != nil {
		return err
	}
	if o.Registry, err = p.Ask("Registry the nodes pull from (HOST/PATH)", o.Registry); err != nil {
		return err
	}
	o.Store, err = p.Ask("Store the pods reach (gs://BUCKET or s3://BUCKET)", o.Store)
	return err
}

// initGKE is `kinetic init --backend gke`: create a cluster by running `kinetic up`, or
// with --join write the profile of an existing one.
func initGKE(ctx context.Context, c *provision.Call) error {
	o := gkeInit{Project: c.String("project"), Zone: c.String("zone"), Cluster: c.String("cluster"), Namespace: c.String("namespace")}
	f := detect()
	if o.Project == "" {
		o.Project = f.Project
	}
	if o.Zone == "" {
		o.Zone = f.Zone
	}
	if o.Zone == "" {
		if cfg, err := provision.Resolve(&provision.Call{Profile: provision.ExistingProfile(c.Profile), Flags: provision.NoFlags()}, nil); err == nil {
			o.Zone = cfg.Get(config.Zone)
		}
	}
	if o.Cluster == "" {
		o.Cluster = "kinetic-cluster"
	}
	if err := askGKE(c, &o); err != nil {
		return err
	}
	if o.Project == "" {
		return errors.New("a GKE cluster needs a project: give --project P (or set CLOUDSDK_CORE_PROJECT / `gcloud config set project P`)")
	}
	name, err := provision.ProfileName(c, o.Cluster) // as the reference names it: after the cluster
	if err != nil {
		return err
	}
	if c.Bool("join") {
		return joinGKE(c, name, o)
	}
	if f.Credentials == "" {
		fmt.Fprintln(c.Err, "note: no Google credentials found; `gcloud auth application-default login` makes them")
	}
	return runUp(ctx, c, name, o)
}

// gkeInit are init's answers for GKE.
type gkeInit struct{ Project, Zone, Cluster, Namespace string }

func askGKE(c *provision.Call, o *gkeInit) error {
	p := c.Prompter
	if p == nil {
		return nil
	}
	var err error
	if o.Project, err = p.Ask("Google Cloud project", o.Project); err != nil {
		return err
	}
	if o.Zone, err = p.Ask("Zone", o.Zone); err != nil {
		return err
	}
	o.Cluster, err = p.Ask("Cluster name", o.Cluster)
	return err
}

// runUp runs `kinetic up` for the GKE cluster o in this terminal.
func runUp(ctx context.Context, c *provision.Call, name string, o gkeInit) error {
	args := []string{"--profile", name, "up", "--backend", kubernetes.GKEName, "--project", o.Project, "--zone", o.Zone, "--cluster", o.Cluster}
	if c.Bool("yes") {
		args = append(args, "-y")
	}
	fmt.Fprintf(c.Err, "running: kinetic %s\n", strings.Join(args, " "))
	exe := c.Exe
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return fmt.Errorf("creating the cluster is `kinetic %s`: %w", strings.Join(args, " "), err)
		}
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = c.In, c.Out, c.Err
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return &provision.ExitError{Code: ee.ExitCode(), Err: fmt.Errorf("`kinetic %s` failed (see above); the profile is written by it once it succeeds", strings.Join(args, " "))}
		}
		return err
	}
	return nil
}

// joinGKE is `kinetic init --backend gke --join`: the reference's "join" path. It writes the
// profile of an existing cluster (backend gke, project, zone, cluster, namespace; the store
// and registry then default to what `kinetic up` made for that cluster) and makes it
// active. Nothing is created and no kubeconfig is needed: the engine reaches the cluster
// through the GKE API. `kinetic status` then checks it.
func joinGKE(c *provision.Call, name string, o gkeInit) error {
	if o.Zone == "" {
		return errors.New("joining a GKE cluster needs its zone: give --zone Z")
	}
	ns := o.Namespace
	if ns == "" {
		ns = "default"
	}
	want := config.Profile{string(config.Backend): kubernetes.GKEName, string(config.Project): o.Project, string(config.Zone): o.Zone,
		string(config.Cluster): o.Cluster, string(config.Namespace): ns}
	path := config.ProfilesPath(nil)
	fmt.Fprintf(c.Err, "  + profile %s in %s: join GKE cluster %s (project %s, zone %s), made active\n", name, path, o.Cluster, o.Project, o.Zone)
	if c.Prompter != nil {
		ok, err := c.Prompter.Confirm("write it?")
		if err != nil {
			return err
		}
		if !ok {
			return errors.New("nothing written")
		}
	}
	err := config.Update(path, func(f *config.File) error {
		if err := f.Put(name, provision.MergeProfile(f.Profiles[name], want)); err != nil {
			return err
		}
		f.Current = name
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(c.Err, "wrote profile %s: jobs run on GKE cluster %s; `kinetic status` checks it (credentials: gcloud auth application-default login)\n", name, o.Cluster)
	return nil
}

func shellQuote(s string) string {
	if strings.ContainsAny(s, "?&*; $'\"") {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	return s
}

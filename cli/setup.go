package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kinetic-run/kinetic/backend/provision"
	"github.com/kinetic-run/kinetic/config"
)

// The setup commands (up, down, status, pool, init, doctor, accelerators --live) look
// the backend's provisioner up (backend/provision) and hand it the command: the flags
// each provisioner reads are its own (provision.DefineFlags); the CLI's are -y,
// --preview, --json, --backend and --profile-name.

// gkeFlags are the flags named after the configuration keys that say which cluster
// (--project, --zone, --cluster), for the commands besides setup that take them.
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

// setupCmd makes a setup command whose flags the provisioners define.
func setupCmd(g *Globals, cmd *cobra.Command, name string, run func(ctx context.Context, p provision.Provisioner, c *provision.Call) error) *cobra.Command {
	provision.DefineFlags(name, cmd.Flags())
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return runProvision(cmd, g, name, args, run)
	}
	return cmd
}

// runProvision runs a setup command on the provisioner of the backend --backend names,
// else of the configured one (with the command's flags named after configuration keys
// on top).
func runProvision(cmd *cobra.Command, g *Globals, name string, args []string, run func(ctx context.Context, p provision.Provisioner, c *provision.Call) error) error {
	if err := provision.CheckFlags(name, newCall(cmd, g, "", args)); err != nil {
		return err
	}
	be, _ := cmd.Flags().GetString("backend")
	if be == "" {
		res, err := config.Resolve(config.Options{Args: flagKeyArgs(cmd.Flags()), Profile: g.Profile})
		if err != nil {
			return err
		}
		be = res.Get(config.Backend)
	}
	p, err := lookupProvisioner(be)
	if err != nil {
		return err
	}
	c := newCall(cmd, g, be, args)
	if err := provision.NotFor(cmd.Flags(), be); err != nil {
		return err
	}
	return run(cmd.Context(), p, c)
}

// lookupProvisioner is the provisioner of backend be, or an error naming those linked.
func lookupProvisioner(be string) (provision.Provisioner, error) {
	if p, ok := provision.Lookup(be); ok {
		return p, nil
	}
	return nil, fmt.Errorf("backend %q has no setup commands (up, down, status, pool, init, doctor) in this kinetic: --backend takes %s", be, strings.Join(provision.Names(), ", "))
}

func newCall(cmd *cobra.Command, g *Globals, be string, args []string) *provision.Call {
	return &provision.Call{Backend: be, In: cmd.InOrStdin(), Out: cmd.OutOrStdout(), Err: cmd.ErrOrStderr(),
		Terminal: isTerminal(cmd.InOrStdin()), Profile: g.Profile, Flags: cmd.Flags(), Args: args}
}

// flagKeyArgs are the given flags named after configuration keys, as arguments.
func flagKeyArgs(fs *pflag.FlagSet) map[config.Key]string {
	args := map[config.Key]string{}
	fs.Visit(func(f *pflag.Flag) {
		if k := config.Key(f.Name); config.Known(k) && f.Value.Type() == "string" && f.Value.String() != "" {
			args[k] = f.Value.String()
		}
	})
	return args
}

func newUpCmd(g *Globals) *cobra.Command {
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
	}
	cmd.Flags().String("backend", "", "gke: create a GKE cluster and what jobs need (docs/infrastructure.md; the default when a project is set); k8s: an existing cluster (the kubeconfig's current context, or --context)")
	cmd.Flags().BoolP("yes", "y", false, "apply without asking")
	cmd.Flags().Bool("preview", false, "print the plan and change nothing")
	return setupCmd(g, cmd, provision.CmdUp, func(ctx context.Context, p provision.Provisioner, c *provision.Call) error {
		return p.Up(ctx, c)
	})
}

func newDownCmd(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "down [-y] [--preview] [--force-destroy] [--backend gke|k8s]",
		Short: "Delete what `kinetic up` made on GKE: cluster, repository, service account (the bucket only with --force-destroy); on any cluster, the warm pods",
		Long: "Plans, prints, asks (unless -y) and deletes the GKE cluster with its node pools, the\n" +
			"Artifact Registry repository with its images, and the jobs' Google service account\n" +
			"(its role on the bucket is removed first). The store bucket, with every job record\n" +
			"and output, is kept unless --force-destroy. Warm pods (pods kept for the next job,\n" +
			"holding their accelerators) are deleted first. With --backend k8s (any cluster from\n" +
			"your kubeconfig) down deletes only the warm pods in the namespace: what `up --backend\n" +
			"k8s` made stays. Safe to run again: what is gone is skipped.",
		Args: cobra.NoArgs,
	}
	cmd.Flags().BoolP("yes", "y", false, "apply without asking")
	cmd.Flags().Bool("preview", false, "print the plan and stop")
	cmd.Flags().String("backend", "", "gke: the GKE cluster and what up made (the default when a project is set); k8s: the warm pods of an existing cluster (the kubeconfig's current context)")
	return setupCmd(g, cmd, provision.CmdDown, func(ctx context.Context, p provision.Provisioner, c *provision.Call) error {
		return p.Down(ctx, c)
	})
}

func newStatusCmd(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status [--json]",
		Short: "Show where jobs run: this machine (interpreter, store, slots) or the GKE cluster, its node pools, repository, bucket and service account; with doctor's checks",
		Args:  cobra.NoArgs,
	}
	cmd.Flags().Bool("json", false, "print JSON")
	cmd.Flags().Bool("no-doctor", false, "skip doctor's checks (cluster access, store from a pod)")
	return setupCmd(g, cmd, provision.CmdStatus, func(ctx context.Context, p provision.Provisioner, c *provision.Call) error {
		return p.Status(ctx, c)
	})
}

func newPoolCmd(g *Globals) *cobra.Command {
	cmd := &cobra.Command{Use: "pool", Short: "Add, list and remove GPU/TPU node pools of the GKE cluster"}
	add := &cobra.Command{
		Use:   "add --accelerator A [--min-nodes N] [--max-nodes M] [--spot] [--reservation R]",
		Short: "Add a node pool for an accelerator of the catalog (`kinetic accelerators`)",
		Long: "Maps the accelerator onto GKE: machine type; GPU count with the driver installed by\n" +
			"GKE (LATEST); for a multi-host TPU slice its topology with COMPACT placement, scaled\n" +
			"0 or all hosts together; spot capacity; a specific reservation. The nodes get the\n" +
			"labels and taints job pods select and tolerate.",
		Example: "  kinetic pool add --accelerator gpu-l4x2 --max-nodes 4 --spot\n  kinetic pool add --accelerator tpu-v5p-16 --reservation my-reservation",
		Args:    cobra.NoArgs,
	}
	list := &cobra.Command{Use: "list [--json]", Short: "List the cluster's node pools", Args: cobra.NoArgs}
	list.Flags().Bool("json", false, "print JSON")
	remove := &cobra.Command{Use: "remove NAME [-y]", Short: "Delete a node pool (its running jobs' pods go with it)", Args: cobra.ExactArgs(1)}
	for _, c := range []*cobra.Command{add, remove} {
		c.Flags().BoolP("yes", "y", false, "apply without asking")
		c.Flags().Bool("preview", false, "print the plan and stop")
	}
	for _, s := range []struct {
		cmd  *cobra.Command
		name string
		op   provision.PoolOp
	}{{add, provision.CmdPoolAdd, provision.PoolAdd}, {list, provision.CmdPoolList, provision.PoolList}, {remove, provision.CmdPoolRemove, provision.PoolRemove}} {
		cmd.AddCommand(setupCmd(g, s.cmd, s.name, func(ctx context.Context, p provision.Provisioner, c *provision.Call) error {
			return p.Pool(ctx, s.op, c)
		}))
	}
	return cmd
}

func newDoctorCmd(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "doctor [--json]",
		Short: "Check that a job can run where jobs go: this machine (python, store, slots) or the cluster (credentials, permissions, store, registry, runner image)",
		Args:  cobra.NoArgs,
	}
	cmd.Flags().Bool("json", false, "print JSON")
	return setupCmd(g, cmd, provision.CmdDoctor, func(ctx context.Context, p provision.Provisioner, c *provision.Call) error {
		r, err := p.Doctor(ctx, c)
		if err != nil {
			return err
		}
		if c.Bool("json") {
			if err := writeJSON(c.Out, r); err != nil {
				return err
			}
		} else {
			r.Print(c.Out)
		}
		if !r.Passed() {
			return &ExitError{Code: 1, Err: errors.New("a job could not run here (see the ✗ lines)")}
		}
		return nil
	})
}

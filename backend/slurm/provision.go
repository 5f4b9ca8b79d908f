package slurm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kinetic-run/kinetic/backend/provision"
	"github.com/kinetic-run/kinetic/config"
)

// The Slurm backend's provisioner: Kinetic does not make Slurm clusters, so up, down and
// pool say what to do instead; doctor checks what a job needs of this machine and the
// cluster (doctor.go), status lists the partitions and Kinetic's jobs (sinfo, squeue),
// init writes a profile with backend slurm (docs/slurm.md, "Setting up").
func init() {
	provision.Register(Name, provisioner{}, provision.Info{Rank: 90,
		InitUsage: "kinetic init -y --backend slurm --store file:///SHARED/PATH [--partition P]"})
}

type provisioner struct{}

// initFlags are the flags init reads for backend slurm (a flag another provisioner has
// defined already is shared).
var initFlags = []struct{ name, usage string }{
	{"store", "store URL: for Slurm one the nodes reach too, file:///SHARED/PATH, gs://BUCKET or s3://BUCKET"},
	{"partition", "Slurm: the partition jobs go to (slurm_partition; default: the cluster's default)"},
}

func (provisioner) Flags(command string, fs *pflag.FlagSet) {
	if command != provision.CmdInit {
		return
	}
	for _, f := range initFlags {
		if fs.Lookup(f.name) == nil {
			fs.String(f.name, "", f.usage)
		}
	}
	if f := fs.Lookup("partition"); f != nil && f.Usage == initFlags[1].usage {
		_ = fs.SetAnnotation("partition", provision.ForAnnotation, []string{"Slurm", Name})
	}
}

// notMade is the error of up, down and pool: Kinetic uses a Slurm cluster, it does
// not make one.
func notMade(what string) error {
	return fmt.Errorf("%s: Kinetic does not create, change or delete Slurm clusters: they are their administrators' (slurm.conf). "+
		"On a machine that reaches one (a login node with sbatch, squeue, sacct and scancel), run `kinetic init --backend slurm --store URL` and `kinetic doctor`; "+
		"for a cluster Kinetic makes, use --backend gke", what)
}

func (provisioner) Up(context.Context, *provision.Call) error   { return notMade("kinetic up") }
func (provisioner) Down(context.Context, *provision.Call) error { return notMade("kinetic down") }

func (provisioner) Pool(_ context.Context, op provision.PoolOp, _ *provision.Call) error {
	return fmt.Errorf("pool %s: a Slurm cluster's nodes and partitions are set by its administrators, not by Kinetic; `kinetic status` lists them (sinfo), and the settings slurm_partition and slurm_gpu_partition choose where jobs go", op)
}

func (provisioner) Accelerators(context.Context, *provision.Call) error {
	return errors.New("--live lists what a Kubernetes cluster's nodes offer; on Slurm, `kinetic status` lists the partitions and their generic resources (sinfo), and `kinetic accelerators` the catalog (gpu and cpu map to --gres and partitions)")
}

// Survey offers Slurm when this machine has sbatch and a Slurm configuration to find a
// cluster by (SLURM_CONF, else /etc/slurm/slurm.conf): sbatch alone reaches nothing.
func (provisioner) Survey(context.Context, *provision.Call) ([]string, []provision.Choice) {
	p, err := exec.LookPath("sbatch")
	if err != nil {
		return nil, nil
	}
	conf := os.Getenv("SLURM_CONF")
	if conf == "" {
		conf = "/etc/slurm/slurm.conf"
	}
	if _, err := os.Stat(conf); err != nil {
		return nil, nil
	}
	return []string{"  Slurm: " + p + ", configuration " + conf},
		[]provision.Choice{{Label: "Slurm: submit jobs with sbatch to the cluster of " + conf, Backend: Name}}
}

// Init writes the profile (backend slurm, the store, the partition if given) and makes it
// active; on a terminal it asks for the store and partition not given.
func (provisioner) Init(_ context.Context, c *provision.Call) error {
	name, err := provision.ProfileName(c, "")
	if err != nil {
		return err
	}
	want, err := initProfile(c)
	if err != nil {
		return err
	}
	pp, err := provision.PlanProfile(name, want)
	if err != nil {
		return err
	}
	if pp.Changes() == 0 {
		fmt.Fprintf(c.Err, "profile %s already submits jobs to Slurm: nothing to change\n", name)
		return nil
	}
	pp.Print(c.Err)
	if err := confirm(c); err != nil {
		return err
	}
	if err := pp.Write(c.Err); err != nil {
		return err
	}
	fmt.Fprintf(c.Err, "wrote profile %s: jobs go to Slurm with sbatch (`kinetic doctor` checks the cluster, `kinetic run` uses it)\n", name)
	return nil
}

// initProfile is the profile init writes: --store and --partition, asked for on a
// terminal when not given; the store checked as the nodes must reach it.
func initProfile(c *provision.Call) (config.Profile, error) {
	st, part := c.String("store"), c.String("partition")
	if c.Prompter != nil {
		var err error
		if st == "" {
			if st, err = c.Prompter.AskOptional("Store the nodes reach too (file:///SHARED/PATH, gs://BUCKET, s3://BUCKET; empty: the configured one)", ""); err != nil {
				return nil, err
			}
		}
		if part == "" {
			if part, err = c.Prompter.AskOptional("Slurm partition (empty: the cluster's default)", ""); err != nil {
				return nil, err
			}
		}
	}
	if st != "" {
		if _, ok := storeFromNodes(st); !ok {
			return nil, provision.UsageError(fmt.Errorf("--store %q: the Slurm nodes cannot reach it: give file:///SHARED/PATH (a directory the nodes share), gs://BUCKET or s3://BUCKET", st))
		}
	}
	return config.Profile{string(config.Backend): Name, string(config.Store): st, string(KeyPartition): strings.TrimSpace(part)}, nil
}

func confirm(c *provision.Call) error {
	if c.Prompter == nil {
		return nil
	}
	ok, err := c.Prompter.Confirm("write it?")
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("nothing written")
	}
	return nil
}

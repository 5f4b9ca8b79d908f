package local

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/kinetic-run/kinetic/backend/provision"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/infra"
)

// The local backend's provisioner: nothing to make, so up, down and pool say so;
// status and doctor check this machine; init writes a profile with backend local.
func init() {
	provision.Register(Name, provisioner{}, provision.Info{Rank: 100, InitUsage: "kinetic init -y --backend local"})
}

type provisioner struct{}

func (provisioner) Flags(string, *pflag.FlagSet) {}

// nothingToMake is up's and down's error: where the user probably meant to go instead.
func nothingToMake(c *provision.Call, what string) error {
	res, err := provision.Resolve(c, nil)
	if err != nil {
		return err
	}
	msg := "kinetic " + what + ": pass --project P (or set KINETIC_PROJECT or GOOGLE_CLOUD_PROJECT, or a profile's project); for another cluster from your kubeconfig, pass --backend k8s"
	if src := res.Source(config.Backend); src != config.SourceDefault {
		msg += fmt.Sprintf(" (backend %s from %s)", res.Get(config.Backend), src)
	}
	return errors.New(msg)
}

func (provisioner) Up(_ context.Context, c *provision.Call) error {
	return nothingToMake(c, "up: no project to create a GKE cluster in")
}

func (provisioner) Down(_ context.Context, c *provision.Call) error {
	return nothingToMake(c, "down: no project of a GKE cluster to delete")
}

func (provisioner) Pool(_ context.Context, op provision.PoolOp, _ *provision.Call) error {
	return fmt.Errorf("pool %s: the local backend runs jobs on this machine and has no node pools; `kinetic up --project P` makes a GKE cluster that has", op)
}

func (provisioner) Accelerators(context.Context, *provision.Call) error {
	return errors.New("--live lists what a cluster offers, and jobs run on this machine (backend local); `kinetic accelerators` lists the catalog")
}

func (provisioner) Doctor(ctx context.Context, c *provision.Call) (provision.Report, error) {
	res, err := provision.Resolve(c, nil)
	if err != nil {
		return nil, err
	}
	return localDoctor(ctx, res), nil
}

// Status is `kinetic status` on the local backend: where jobs run and doctor's checks
// of this machine; never "not ready" when a job can run.
func (provisioner) Status(ctx context.Context, c *provision.Call) error {
	res, err := provision.Resolve(c, nil)
	if err != nil {
		return err
	}
	rep := localDoctor(ctx, res)
	if c.Bool("no-doctor") {
		rep = &infra.Report{OK: true, Checks: rep.Checks[:1]}
	}
	if c.Bool("json") {
		if err := provision.WriteJSON(c.Out, map[string]any{"backend": res.Get(config.Backend), "backend_source": res.Source(config.Backend), "store": res.Get(config.Store), "local": rep, "ok": rep.OK}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(c.Out, "Jobs run on this machine (the local backend); `kinetic up` sets up a cluster for GPUs and TPUs.\n")
		rep.Print(c.Out)
	}
	if !rep.OK {
		return provision.NotReady("a job could not run here (see the ✗ lines)")
	}
	return nil
}

func (provisioner) Survey(context.Context, *provision.Call) ([]string, []provision.Choice) {
	return nil, []provision.Choice{{Label: "stay local: run jobs on this machine", Backend: Name}}
}

// Init writes the profile (backend local) and makes it active.
func (provisioner) Init(_ context.Context, c *provision.Call) error {
	name, err := provision.ProfileName(c, "")
	if err != nil {
		return err
	}
	path := config.ProfilesPath(nil)
	profiles, err := config.LoadProfiles(path)
	if err != nil {
		return err
	}
	old := profiles.Profiles[name]
	if old[string(config.Backend)] == Name && profiles.Current == name {
		fmt.Fprintf(c.Err, "profile %s already runs jobs locally: nothing to change\n", name)
		return nil
	}
	fmt.Fprintf(c.Err, "  + profile %s in %s: backend=local (made active)\n", name, path)
	if c.Prompter != nil {
		ok, err := c.Prompter.Confirm("write it?")
		if err != nil {
			return err
		}
		if !ok {
			return errors.New("nothing written")
		}
	}
	if err := provision.PutProfile(path, name, provision.MergeProfile(old, config.Profile{string(config.Backend): Name}), true); err != nil {
		return err
	}
	fmt.Fprintf(c.Err, "wrote profile %s: jobs run on this machine (`kinetic run` uses it)\n", name)
	return nil
}

package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/kinetic-run/kinetic/backend/provision"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/infra"
)

// commands are the Slurm commands a job needs on this machine.
var commands = []string{"sbatch", "squeue", "sacct", "scancel", "scontrol", "sinfo"}

// Doctor checks that a Slurm job can run: a step of slurmChecks each.
func (provisioner) Doctor(ctx context.Context, c *provision.Call) (provision.Report, error) {
	res, err := provision.Resolve(c, nil)
	if err != nil {
		return nil, err
	}
	return doctor(ctx, res), nil
}

// doctorRun is what the checks share.
type doctorRun struct {
	res *config.Resolved
	r   *infra.Report
	// conf is `scontrol show config` ("" when the controller did not answer).
	conf string
}

func (d *doctorRun) add(c infra.Check) {
	d.r.Checks = append(d.r.Checks, c)
	if !c.OK {
		d.r.OK = false
	}
}

// slurmChecks are doctor's checks, in order.
var slurmChecks = []func(d *doctorRun, ctx context.Context){
	(*doctorRun).commands,
	(*doctorRun).controller,
	(*doctorRun).munge,
	(*doctorRun).dirs,
	(*doctorRun).store,
}

func doctor(ctx context.Context, res *config.Resolved) *infra.Report {
	d := &doctorRun{res: res, r: &infra.Report{OK: true}}
	for _, check := range slurmChecks {
		check(d, ctx)
	}
	return d.r
}

func (d *doctorRun) commands(context.Context) {
	var missing []string
	for _, name := range commands {
		if _, err := exec.LookPath(name); err != nil {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		d.add(infra.Check{Name: "Slurm commands", Detail: strings.Join(missing, ", ") + " not on PATH",
			Fix: "run kinetic on a machine of the cluster (a login node), or install Slurm's client commands (Debian: apt-get install slurm-client) and add them to PATH"})
		return
	}
	d.add(infra.Check{Name: "Slurm commands", OK: true, Detail: strings.Join(commands, ", ") + " on PATH"})
}

// controller asks slurmctld (scontrol ping, else sinfo) and reads its configuration.
func (d *doctorRun) controller(ctx context.Context) {
	b := &Backend{}
	out, err := b.command(ctx, "", "scontrol", "ping")
	if err != nil || !strings.Contains(out, "UP") {
		if _, serr := b.command(ctx, "", "sinfo", "-h", "-o", "%P"); serr != nil {
			d.add(infra.Check{Name: "Slurm controller", Detail: personal(ctx, firstErr(err, serr)) + strings.TrimSpace(" "+out),
				Fix: "check that slurmctld runs and that this machine's Slurm configuration names it (SLURM_CONF or /etc/slurm/slurm.conf), and that munged runs with the cluster's key"})
			return
		}
	}
	d.conf, _ = b.command(ctx, "", "scontrol", "show", "config")
	d.add(infra.Check{Name: "Slurm controller", OK: true, Detail: "cluster " + orUnknown(parseClusterName(d.conf)) + " answers"})
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return fmt.Errorf("no answer")
}

func orUnknown(s string) string {
	if s == "" {
		return "(name unknown)"
	}
	return s
}

// munge checks, when the cluster authenticates with munge, that this machine makes a
// credential munged decodes (through the cluster's socket, AuthInfo socket=).
func (d *doctorRun) munge(ctx context.Context) {
	auth := configValue(d.conf, "AuthType")
	if d.conf == "" || !strings.Contains(auth, "munge") {
		return
	}
	args := []string{"-n"}
	if s := authSocket(configValue(d.conf, "AuthInfo")); s != "" {
		args = append(args, "--socket="+s)
	}
	if _, err := exec.CommandContext(ctx, "munge", args...).Output(); err != nil {
		d.add(infra.Check{Name: "munge", Detail: "munge " + strings.Join(args, " ") + ": " + commandError(ctx, err),
			Fix: "start munged (systemctl start munge) with the cluster's key (/etc/munge/munge.key, the same on every node)"})
		return
	}
	d.add(infra.Check{Name: "munge", OK: true, Detail: "credentials made (" + auth + ")"})
}

// commandError is what a command that failed said on stderr, else err in words.
func commandError(ctx context.Context, err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(bytes.TrimSpace(ee.Stderr)) > 0 {
		return strings.TrimSpace(string(ee.Stderr))
	}
	if errors.Is(err, exec.ErrNotFound) {
		return "not installed (Debian: apt-get install munge)"
	}
	return personal(ctx, err)
}

// configValue is key's value in `scontrol show config` ("Key = value" lines), or "".
func configValue(conf, key string) string {
	for _, line := range strings.Split(conf, "\n") {
		k, v, ok := strings.Cut(line, "=")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// authSocket is the socket= of an AuthInfo ("socket=/run/munge.sock,ttl=60"), or "".
func authSocket(info string) string {
	for _, f := range strings.Split(info, ",") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(f), "socket="); ok {
			return v
		}
	}
	return ""
}

// dirs checks that the directories shared with the nodes can be written here.
func (d *doctorRun) dirs(context.Context) {
	for _, dir := range []struct {
		key config.Key
		def string
	}{{KeyEnvDir, DefaultEnvDir()}, {KeyOutputDir, DefaultOutputDir()}} {
		path := d.res.Get(dir.key)
		if path == "" {
			path = dir.def
		}
		d.add(writableCheck(string(dir.key), path))
	}
}

func writableCheck(key, dir string) infra.Check {
	err := os.MkdirAll(dir, 0o700)
	if err == nil {
		var f *os.File
		if f, err = os.CreateTemp(dir, ".doctor-*"); err == nil {
			f.Close()
			err = os.Remove(f.Name())
		}
	}
	if err != nil {
		return infra.Check{Name: key, Detail: err.Error(), Fix: fmt.Sprintf("set %s to a directory you may write that the nodes share (`kinetic config set %s /shared/PATH`)", key, key)}
	}
	return infra.Check{Name: key, OK: true, Detail: dir + " writable (the nodes must share it)"}
}

// store checks that the store is one the nodes reach, and reads and writes it from here.
func (d *doctorRun) store(ctx context.Context) {
	st := d.res.Get(config.Store)
	detail, ok := storeFromNodes(st)
	if !ok {
		d.add(infra.Check{Name: "store", Detail: detail, Fix: "use a store the nodes reach: `kinetic init --backend slurm --store file:///SHARED/PATH` (a directory the nodes share), or gs://BUCKET / s3://BUCKET"})
		return
	}
	if err := infra.CheckStoreHere(ctx, st); err != nil {
		d.add(infra.Check{Name: "store", Detail: err.Error(), Fix: "check that the store exists and that you may write to it"})
		return
	}
	d.add(infra.Check{Name: "store", OK: true, Detail: "read and wrote " + st + "; " + detail})
}

// storeFromNodes says whether the nodes reach the store at raw: a file:// directory on a
// shared file system (which this machine cannot tell: the detail says so), gs or s3.
func storeFromNodes(raw string) (detail string, ok bool) {
	u, err := url.Parse(raw)
	if err != nil || raw == "" {
		return fmt.Sprintf("%q is not a store URL", raw), false
	}
	switch u.Scheme {
	case "gs", "s3":
		return "the nodes reach it with their own credentials", true
	case "file":
		if (u.Host != "" && u.Host != "localhost") || !filepath.IsAbs(u.Path) {
			return fmt.Sprintf("%q: a file:// store needs an absolute path (file:///SHARED/PATH)", raw), false
		}
		return "the nodes must see " + u.Path + " (a shared file system)", true
	}
	return fmt.Sprintf("%q: the nodes cannot reach a %s:// store", raw, u.Scheme), false
}

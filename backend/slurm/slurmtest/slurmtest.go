// Package slurmtest starts a real Slurm cluster of one node on this machine, from
// Debian's packages (slurmctld, slurmd, slurm-client, munge), for the Slurm backend's
// tests: a munge daemon with a key and a socket of its own, slurmctld and slurmd in the
// foreground as children of the test, a slurm.conf of its own in a temporary directory
// (ports on 127.0.0.1 that were free, state and spool directories in it), and no
// accounting daemon: slurmctld remembers ended jobs for MinJobAge, and the completion of
// each job is also logged to a file (jobcomp/filetxt) for a person looking at a failure.
//
// Each cluster is its own (directory, ports, munge socket), so test processes that
// start one each do not collide. The daemons need root (slurmd launches jobs as their
// users).
package slurmtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Packages are the Debian packages the harness needs.
const Packages = "slurmctld slurmd slurm-client munge"

// Cluster is a running one-node Slurm cluster.
type Cluster struct {
	// Dir holds its configuration, state, spool directories and logs.
	Dir string
	// Conf is its slurm.conf: SLURM_CONF=Conf points Slurm's commands at it.
	Conf string
	// Name is its ClusterName; Node its first node's name; Partition its partition.
	Name, Node, Partition string
	// Nodes are its nodes' names (kn1, kn2, ...).
	Nodes []string
	// GPUs is how many GPUs the node says it has (a generic resource, gres.conf: a
	// count without devices, so jobs can ask for them and nothing else happens).
	GPUs int
	// JobComp is the file where slurmctld logs each job's completion.
	JobComp string
	procs   []*exec.Cmd
}

// Env is the environment that points Slurm's commands at c.
func (c *Cluster) Env() []string { return []string{"SLURM_CONF=" + c.Conf} }

// Available says why a cluster cannot be started here (nil if it can).
func Available() error {
	for _, p := range []string{"slurmctld", "slurmd", "munged", "sbatch", "squeue", "scontrol", "scancel", "sinfo"} {
		if _, err := exec.LookPath(p); err != nil {
			if _, err2 := os.Stat(filepath.Join("/usr/sbin", p)); err2 != nil {
				return fmt.Errorf("%s is not installed: the Slurm tests need Debian's packages %s (apt-get install -y %s)", p, Packages, Packages)
			}
		}
	}
	if os.Geteuid() != 0 {
		return errors.New("the Slurm tests start slurmd, which must run as root to launch jobs: run them as root")
	}
	return nil
}

// Options change the cluster a test starts.
type Options struct {
	// Name is the ClusterName (default "kntest").
	Name string
	// CPUs is the node's CPU count as Slurm sees it (default 8; more than the machine
	// has is fine: slurmd is told to take the configuration's word for it).
	CPUs int
	// MinJobAge is how long slurmctld remembers a job that ended (default 300 s).
	MinJobAge int
	// Nodes is the number of nodes (default 1): each a slurmd of its own on this
	// machine, at 127.0.0.1 on a port of its own (Debian's Slurm is built with
	// --enable-multiple-slurmd), sharing its file systems as a cluster's nodes do.
	Nodes int
}

// Start starts a cluster in dir (which must exist and be empty) and returns once its
// node is idle. Stop stops it.
func Start(ctx context.Context, dir string, o Options) (*Cluster, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	c := &Cluster{Dir: dir, Conf: filepath.Join(dir, "slurm.conf"), Name: o.Name, Node: "kn1", Partition: "debug", GPUs: 2, JobComp: filepath.Join(dir, "jobcomp.txt")}
	for i := 1; i <= o.Nodes; i++ {
		c.Nodes = append(c.Nodes, fmt.Sprintf("kn%d", i))
	}
	for _, step := range []func() error{c.makeDirs, c.writeKey, func() error { return c.writeConf(o) }, c.writeGPUs} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	if err := c.run(ctx); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

func (o Options) withDefaults() Options {
	if o.Name == "" {
		o.Name = "kntest"
	}
	if o.CPUs == 0 {
		o.CPUs = 8
	}
	if o.MinJobAge == 0 {
		o.MinJobAge = 300
	}
	if o.Nodes == 0 {
		o.Nodes = 1
	}
	return o
}

func (c *Cluster) path(name string) string { return filepath.Join(c.Dir, name) }

// makeDirs makes the state, spool and log directories.
func (c *Cluster) makeDirs() error {
	for _, d := range []string{"state", "spool", "log"} {
		if err := os.MkdirAll(c.path(d), 0o755); err != nil {
			return err
		}
	}
	// munged checks that its socket's directory can be searched by all.
	return os.Chmod(c.Dir, 0o755)
}

// writeKey writes the cluster's munge key.
func (c *Cluster) writeKey() error {
	key := make([]byte, 1024)
	rand.Read(key)
	return os.WriteFile(c.path("munge.key"), key, 0o400)
}

// writeConf writes slurm.conf: the node is this machine, at 127.0.0.1, on ports that
// are free now.
func (c *Cluster) writeConf(o Options) error {
	host, err := os.Hostname()
	if err != nil {
		return err
	}
	host, _, _ = strings.Cut(host, ".")
	ports, err := freePorts(1 + len(c.Nodes))
	if err != nil {
		return err
	}
	conf := fmt.Sprintf(`# A Slurm cluster on this machine for Kinetic's tests (backend/slurm/slurmtest).
ClusterName=%[1]s
SlurmctldHost=%[2]s(127.0.0.1)
SlurmctldPort=%[3]d
SlurmdPort=%[4]d
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=%[5]s
CredType=cred/munge
StateSaveLocation=%[6]s/state
SlurmdSpoolDir=%[6]s/spool/%%n
SlurmctldPidFile=%[6]s/slurmctld.pid
SlurmdPidFile=%[6]s/slurmd-%%n.pid
SlurmctldLogFile=%[6]s/log/slurmctld.log
SlurmdLogFile=%[6]s/log/slurmd-%%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=%[7]s
SlurmdParameters=config_overrides
ReturnToService=2
MinJobAge=%[8]d
KillWait=5
MpiDefault=none
SwitchType=switch/none
MaxArraySize=10001
MaxJobCount=100000
GresTypes=gpu
`, c.Name, host, ports[0], ports[1], c.path("munge.sock"), c.Dir, c.JobComp, o.MinJobAge)
	for i, n := range c.Nodes {
		conf += fmt.Sprintf("NodeName=%s NodeAddr=127.0.0.1 NodeHostname=%s Port=%d CPUs=%d RealMemory=2000 Gres=gpu:%d State=UNKNOWN\n", n, host, ports[1+i], o.CPUs, c.GPUs)
	}
	conf += fmt.Sprintf("PartitionName=%s Nodes=%s Default=YES MaxTime=INFINITE State=UP\n", c.Partition, strings.Join(c.Nodes, ","))
	return os.WriteFile(c.Conf, []byte(conf), 0o644)
}

// writeGPUs gives the node its GPUs: device files of NVIDIA's numbers made in the
// cluster's directory, with no driver behind them (gres.conf). Slurm allocates them
// (--gres) and says which in the job's environment; nothing of them exists.
func (c *Cluster) writeGPUs() error {
	devs := c.path("dev")
	if err := os.MkdirAll(devs, 0o755); err != nil {
		return err
	}
	for i := 0; i < c.GPUs; i++ {
		if err := syscall.Mknod(filepath.Join(devs, fmt.Sprintf("nvidia%d", i)), syscall.S_IFCHR|0o600, 195<<8|i); err != nil {
			return fmt.Errorf("make the test node's GPU device files: %w", err)
		}
	}
	gres := fmt.Sprintf("AutoDetect=off\nNodeName=%s Name=gpu File=%s/nvidia[0-%d]\n", strings.Join(c.Nodes, ","), devs, c.GPUs-1)
	return os.WriteFile(c.path("gres.conf"), []byte(gres), 0o644)
}

// run starts munged, slurmctld and slurmd, and waits until the node is idle.
func (c *Cluster) run(ctx context.Context) error {
	sock := c.path("munge.sock")
	if err := c.start("munged", "-F", "-f", "--socket="+sock, "--key-file="+c.path("munge.key"), "--log-file="+c.path("log/munged.log"),
		"--pid-file="+c.path("munged.pid"), "--seed-file="+c.path("munged.seed")); err != nil {
		return err
	}
	if err := waitFor(ctx, 10*time.Second, func() bool { _, err := os.Stat(sock); return err == nil }); err != nil {
		return fmt.Errorf("munged did not make its socket %s: %w; the last lines of its logs:\n%s", sock, err, c.logTails(8))
	}
	if err := c.start("slurmctld", "-D", "-i"); err != nil {
		return err
	}
	for _, n := range c.Nodes {
		if err := c.startLog("slurmd-"+n, "slurmd", "-D", "-N", n); err != nil {
			return err
		}
	}
	err := waitFor(ctx, 60*time.Second, func() bool {
		out, err := c.Command("sinfo", "-h", "-N", "-o", "%T").Output()
		return err == nil && strings.Count(string(out), "idle\n") == len(c.Nodes)
	})
	if err != nil {
		return fmt.Errorf("the Slurm nodes %s did not become idle: %w; the last lines of its logs:\n%s", strings.Join(c.Nodes, ", "), err, c.logTails(8))
	}
	return nil
}

// logTails are the last n lines of each of c's logs.
func (c *Cluster) logTails(n int) string {
	files, _ := filepath.Glob(filepath.Join(c.Dir, "log", "*"))
	var b strings.Builder
	for _, f := range files {
		raw, _ := os.ReadFile(f)
		lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
		if len(lines) > n {
			lines = lines[len(lines)-n:]
		}
		fmt.Fprintf(&b, "%s:\n  %s\n", filepath.Base(f), strings.Join(lines, "\n  "))
	}
	return b.String()
}

// start starts one daemon in the foreground, its output in the log directory.
func (c *Cluster) start(name string, args ...string) error { return c.startLog(name, name, args...) }

// startLog is start with the output in log/LOG.out.
func (c *Cluster) startLog(log, name string, args ...string) error {
	out, err := os.Create(filepath.Join(c.Dir, "log", log+".out"))
	if err != nil {
		return err
	}
	defer out.Close()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), c.Env()...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	c.procs = append(c.procs, cmd)
	return nil
}

// Command is a Slurm command pointed at c.
func (c *Cluster) Command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), c.Env()...)
	return cmd
}

// Run runs a Slurm command pointed at c and returns its output, or an error with it.
func (c *Cluster) Run(name string, args ...string) (string, error) {
	var out bytes.Buffer
	cmd := c.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, out.String())
	}
	return out.String(), nil
}

// Stop cancels every job of c, then stops its daemons (slurmd, slurmctld, munged) and
// what they started.
func (c *Cluster) Stop() {
	if len(c.procs) >= 3 {
		c.Command("scancel", "--full", "--signal=KILL", "--user=root").Run()
		c.Command("scancel", "--user=root").Run()
	}
	for i := len(c.procs) - 1; i >= 0; i-- {
		p := c.procs[i]
		syscall.Kill(-p.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			syscall.Kill(-p.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
	c.procs = nil
	// slurmstepd, which runs a job's steps, is slurmd's child in a session of its own:
	// stop those left of this cluster's node.
	killStepds(c.Conf)
}

// killStepds kills the slurmstepd processes of the cluster whose slurm.conf is conf.
func killStepds(conf string) {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if !bytes.Contains(cmdline, []byte("slurmstepd")) {
			continue
		}
		if env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ")); err == nil && bytes.Contains(env, []byte("SLURM_CONF="+conf+"\x00")) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// freePorts returns n TCP ports of 127.0.0.1 that were free a moment ago.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// waitFor polls cond until it holds or within passes.
func waitFor(ctx context.Context, within time.Duration, cond func() bool) error {
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %s", within)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

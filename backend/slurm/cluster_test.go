package slurm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/accel"
	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/backend/backendtest"
	"github.com/kinetic-run/kinetic/backend/slurm"
	"github.com/kinetic-run/kinetic/backend/slurm/slurmtest"
	"github.com/kinetic-run/kinetic/batch/driver"
	"github.com/kinetic-run/kinetic/batch/layout"
	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
	"github.com/kinetic-run/kinetic/testkit/testbin"
	"github.com/kinetic-run/kinetic/testkit/testproc"
)

// One Slurm cluster for the test process, started by the first test that needs it and
// stopped when the tests end.
var (
	clusterOnce sync.Once
	cluster     *slurmtest.Cluster
	clusterErr  error
	clusterDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if cluster != nil {
		cluster.Stop()
	}
	if clusterDir != "" {
		os.RemoveAll(clusterDir)
	}
	os.Exit(code)
}

// needSlurm returns the test process's Slurm cluster, skipping the test where Slurm's
// packages are not installed. Slurm's commands run by this process (and the jobs they
// submit) find it through SLURM_CONF.
func needSlurm(t *testing.T) *slurmtest.Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a Slurm cluster")
	}
	if err := slurmtest.Available(); err != nil {
		t.Skip(err)
	}
	clusterOnce.Do(func() {
		start := time.Now()
		clusterDir, clusterErr = os.MkdirTemp("", "slurmtest-")
		if clusterErr != nil {
			return
		}
		cluster, clusterErr = slurmtest.Start(context.Background(), clusterDir, slurmtest.Options{Nodes: 2})
		if clusterErr == nil {
			os.Setenv("SLURM_CONF", cluster.Conf)
			t.Logf("Slurm cluster %s started in %s (%s)", cluster.Name, time.Since(start).Round(time.Millisecond), clusterDir)
		}
	})
	if clusterErr != nil {
		t.Fatal(clusterErr)
	}
	return cluster
}

func newStore(t *testing.T) *store.Store {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(context.Background(), "file://"+dir+"/store")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	// A runner still at work when the test ends (its command line names the store).
	testproc.StopUnderAtCleanup(t, dir)
	return st
}

func newBackend(t *testing.T, mutate func(*slurm.Options)) (*slurm.Backend, *store.Store) {
	t.Helper()
	c := needSlurm(t)
	st := newStore(t)
	o := slurm.Options{Kinetic: testbin.Path(t), OutputDir: t.TempDir(), Env: c.Env(), Grace: 5 * time.Second}
	if mutate != nil {
		mutate(&o)
	}
	b, err := slurm.New(st, o)
	if err != nil {
		t.Fatal(err)
	}
	return b, st
}

func observe(h *job.Handle, st *store.Store, b backend.Backend) backendtest.Job {
	return &engine.Job{Handle: h, Store: st, Backend: b}
}

// submitHandle is backendtest.Submit with the handle Plan makes (the Slurm cluster's
// name recorded in it).
func submit(t *testing.T, b backend.Backend, st *store.Store, argv ...string) *engine.Job {
	t.Helper()
	return &engine.Job{Handle: backendtest.Submit(t, b, st, argv...), Store: st, Backend: b}
}

// runnerPIDs are the processes of `kinetic runner` that run job id.
func runnerPIDs(id string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		raw, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		args := strings.Split(string(raw), "\x00")
		if len(args) > 2 && args[1] == "runner" && bytes.Contains(raw, []byte("\x00"+id+"\x00")) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func TestConformance(t *testing.T) {
	needSlurm(t)
	start := time.Now()
	backendtest.Run(t, backendtest.Harness{
		New: func(t *testing.T) (backend.Backend, *store.Store) {
			return newBackend(t, nil)
		},
		Observe: observe,
		// The runner is killed on the node, without a word: its batch script ends
		// with the signal, and Slurm says FAILED.
		KillWorker: func(t *testing.T, b backend.Backend, st *store.Store, h *job.Handle) {
			deadline := time.Now().Add(30 * time.Second)
			for time.Now().Before(deadline) {
				if pids := runnerPIDs(h.JobID); len(pids) > 0 {
					for _, p := range pids {
						syscall.Kill(p, syscall.SIGKILL)
					}
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
			t.Fatalf("no runner process for %s", h.JobID)
		},
		Deadline: 90 * time.Second,
	})
	t.Logf("the conformance suite took %s", time.Since(start).Round(time.Millisecond))
}

// wait waits for j to end.
func wait(t *testing.T, j *engine.Job) (job.State, string) {
	t.Helper()
	return waitWithin(t, j, 90*time.Second)
}

func waitWithin(t *testing.T, j *engine.Job, d time.Duration) (job.State, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	state, reason, err := j.Wait(ctx, nil)
	if err != nil {
		t.Fatalf("Wait %s: %v (last state %s)", j.Handle.JobID, err, state)
	}
	return state, reason
}

func waitRunning(t *testing.T, j *engine.Job) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		state, reason, err := j.Status(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if state == job.Running {
			return
		}
		if state.Terminal() {
			t.Fatalf("the job ended (%s: %s) before it ran", state, reason)
		}
	}
	t.Fatal("the job did not start within 60s")
}

// TestKilledInSlurm: a job whose batch step Slurm kills (scancel --signal=KILL, what an
// administrator or a node's OOM killer does) is FAILED with Slurm's word for it, within
// seconds, and the verdict is kept in the store once Slurm has forgotten the job.
func TestKilledInSlurm(t *testing.T) {
	c := needSlurm(t)
	b, st := newBackend(t, nil)
	j := submit(t, b, st, "sh", "-c", "echo started; sleep 300")
	waitRunning(t, j)
	if out, err := c.Run("scancel", "--full", "--signal=KILL", "--name="+j.Handle.JobID); err != nil {
		t.Fatal(err, out)
	}
	start := time.Now()
	state, reason := wait(t, j)
	if state != job.Failed || !strings.Contains(reason, "Slurm job") || !strings.Contains(reason, "cluster "+c.Name) {
		t.Fatalf("after scancel --signal=KILL: %s (%q); want FAILED naming the Slurm job", state, reason)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("FAILED after %s", d)
	}
	t.Logf("reason: %s", reason)
	s, err := st.Get(context.Background(), store.StatusKey(j.Handle.JobID))
	if err != nil || !bytes.Contains(s, []byte("Slurm job")) {
		t.Fatalf("the verdict is not in the store: %s, %v", s, err)
	}
}

// TestPendingSaysWhy: a job Slurm holds (here: it may not begin for an hour) is PENDING
// with Slurm's reason, and cancelling it never runs it.
func TestPendingSaysWhy(t *testing.T) {
	b, st := newBackend(t, func(o *slurm.Options) { o.SbatchArgs = []string{"--begin=now+1hour"} })
	j := submit(t, b, st, "sh", "-c", "echo should not run")
	ctx := context.Background()
	var state job.State
	var reason string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		var err error
		if state, reason, err = j.Status(ctx); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(reason, "BeginTime") {
			break
		}
	}
	if state != job.Pending || !strings.Contains(reason, "BeginTime") || !strings.Contains(reason, "squeue") {
		t.Fatalf("a held job: %s (%q); want PENDING with Slurm's reason BeginTime", state, reason)
	}
	start := time.Now()
	if err := j.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("cancelling a pending job took %s", d)
	}
	if state, reason, _ := j.Status(ctx); state != job.Failed || reason != "cancelled" {
		t.Fatalf("after Cancel: %s (%q)", state, reason)
	}
	if ok, _ := st.Exists(ctx, store.EnvelopeKey(j.Handle.JobID)); ok {
		t.Fatal("the cancelled pending job ran")
	}
}

// TestNeverSubmitted: a job written to the store that Slurm never got is PENDING for a
// grace period after it was made, then FAILED saying so.
func TestNeverSubmitted(t *testing.T) {
	b, st := newBackend(t, nil)
	ctx := context.Background()
	for _, c := range []struct {
		age  time.Duration
		want job.State
	}{{0, job.Pending}, {2 * slurm.NotSubmittedGrace, job.Failed}} {
		id := job.NewID()
		h := &job.Handle{JobID: id, Backend: slurm.Name, Accelerator: "cpu", Store: st.URL(), CreatedAt: time.Now().Add(-c.age).UTC().Format(time.RFC3339Nano)}
		if err := st.Put(ctx, store.HandleKey(id), h.Encode()); err != nil {
			t.Fatal(err)
		}
		state, reason, err := b.Status(ctx, h)
		if err != nil || state != c.want {
			t.Fatalf("a job %s old that Slurm never got: %s (%q), %v; want %s", c.age, state, reason, err, c.want)
		}
		if c.want == job.Failed && !strings.Contains(reason, "no record") {
			t.Fatalf("reason %q", reason)
		}
	}
}

// TestOtherCluster: a job submitted to another Slurm cluster is NOT_FOUND here, saying
// which cluster has it; Cancel and Cleanup of it do nothing.
func TestOtherCluster(t *testing.T) {
	b, st := newBackend(t, nil)
	ctx := context.Background()
	id := job.NewID()
	h := &job.Handle{JobID: id, Backend: slurm.Name, ClusterName: "elsewhere", Accelerator: "cpu", Store: st.URL(), CreatedAt: time.Now().UTC().Format(time.RFC3339Nano)}
	if err := st.Put(ctx, store.HandleKey(id), h.Encode()); err != nil {
		t.Fatal(err)
	}
	state, reason, err := b.Status(ctx, h)
	if err != nil || state != job.NotFound || !strings.Contains(reason, "elsewhere") || !strings.Contains(reason, cluster.Name) {
		t.Fatalf("a job of another cluster: %s (%q), %v; want NOT_FOUND naming both clusters", state, reason, err)
	}
	if err := b.Cancel(ctx, h); err != nil {
		t.Fatal(err)
	}
	if err := b.Cleanup(ctx, h); err != nil {
		t.Fatal(err)
	}
}

// TestPlanRecordsCluster: planning a job for the Slurm backend records the Slurm
// cluster's name, whatever Kubernetes cluster the configuration names.
func TestPlanRecordsCluster(t *testing.T) {
	c := needSlurm(t)
	f, ok := backend.Lookup(slurm.Name)
	if !ok {
		t.Fatal("the slurm backend is not registered")
	}
	h := &job.Handle{Backend: slurm.Name, ClusterName: "kinetic-cluster", Namespace: "default"}
	if err := f.Plan(h, mustAccel(t, "cpu"), nil); err != nil || h.ClusterName != c.Name || h.Namespace != "" {
		t.Fatalf("Plan: %v; cluster %q, namespace %q; want %q and none", err, h.ClusterName, h.Namespace, c.Name)
	}
}

// writeBatch writes a batch of n inputs whose children are derived from a command job
// (batch/layout), as package batch does before StartGroup, and returns its group,
// first handle and template.
func writeBatch(t *testing.T, st *store.Store, n, parallelism int, argv ...string) (driver.Group, *job.Handle, *layout.Template) {
	t.Helper()
	ctx := context.Background()
	gid := job.NewGroupID()
	spec := &job.Spec{Version: job.SpecVersion, Kind: job.KindCommand, Command: argv}
	h := &job.Handle{JobID: job.ChildID(gid, 0), Backend: slurm.Name, K8sName: gid, GroupID: gid, GroupKind: "map", GroupIndex: "0",
		Accelerator: "cpu", FuncName: argv[0], Store: st.URL(), CreatedAt: time.Now().UTC().Format(time.RFC3339Nano)}
	tmpl := &layout.Template{Handle: h, Spec: spec}
	inputs := make([][]byte, n)
	for i := range inputs {
		inputs[i] = []byte{byte(i)}
	}
	if err := layout.WriteDerived(ctx, st, gid, tmpl, nil, inputs); err != nil {
		t.Fatal(err)
	}
	m := layout.Manifest{GroupID: gid, Backend: slurm.Name, Store: st.URL(), CreatedAt: h.CreatedAt, TotalExpected: n, Derived: true, SubmissionComplete: true}
	raw, _ := json.Marshal(m)
	if err := st.Put(ctx, layout.ManifestKey(gid), raw); err != nil {
		t.Fatal(err)
	}
	return driver.Group{ID: gid, Size: n, Parallelism: parallelism}, h, tmpl
}

// TestArray: a batch is one job array, max_concurrent its throttle: every task runs its
// input's job (written by the task, from the batch's template), GroupDone sees them end
// in one look, a failed task's job says its exit code, and StartGroup, WithdrawGroup and
// CleanupGroup keep their contracts.
func TestArray(t *testing.T) {
	c := needSlurm(t)
	b, st := newBackend(t, nil)
	ctx := context.Background()
	const n = 5
	// Odd inputs fail with exit code 3.
	g, h, tmpl := writeBatch(t, st, n, 2, "sh", "-c", `echo task $SLURM_ARRAY_TASK_ID; sleep 1; exit $(( SLURM_ARRAY_TASK_ID % 2 * 3 ))`)
	gid := g.ID
	if started, err := b.WithdrawGroup(ctx, gid); err != nil || started {
		t.Fatalf("WithdrawGroup before StartGroup = %v, %v; want false", started, err)
	}
	for i := 0; i < 2; i++ {
		if err := b.StartGroup(ctx, g, h); err != nil {
			t.Fatalf("StartGroup #%d: %v", i+1, err)
		}
	}
	out, err := c.Run("squeue", "-h", "--name="+gid, "-o", "%F")
	if err != nil {
		t.Fatal(err)
	}
	if ids := strings.Fields(out); len(ids) == 0 || strings.Count(out, ids[0]) != len(ids) {
		t.Fatalf("StartGroup twice made more than one array: %q", out)
	}
	if out, err := c.Run("squeue", "-h", "-r", "--name="+gid, "--states=RUNNING", "-o", "%K"); err != nil || len(strings.Fields(out)) > 2 {
		t.Fatalf("more tasks run than max_concurrent (2): %q, %v", out, err)
	}
	if started, err := b.WithdrawGroup(ctx, gid); err != nil || !started {
		t.Fatalf("WithdrawGroup after StartGroup = %v, %v; want true", started, err)
	}
	var done map[int]bool
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if done, err = b.GroupDone(ctx, gid); err != nil {
			t.Fatal(err)
		}
		if len(done) == n {
			break
		}
	}
	if len(done) != n {
		out, _ := c.Run("squeue", "-h", "-r", "--states=all", "--name="+gid)
		files, _ := filepath.Glob(filepath.Join(b.OutputDir(), "*"))
		var logs string
		for _, f := range files {
			raw, _ := os.ReadFile(f)
			logs += f + ":\n" + string(raw)
		}
		t.Fatalf("GroupDone = %v; want all %d tasks\nsqueue:\n%s\n%s", done, n, out, logs)
	}
	for i := 0; i < n; i++ {
		ch := tmpl.ChildHandle(gid, i)
		state, reason, err := b.Status(ctx, ch)
		want := job.Succeeded
		if i%2 == 1 {
			want = job.Failed
		}
		if err != nil || state != want || (want == job.Failed && !strings.Contains(reason, "exit code 3")) {
			t.Errorf("input %d: %s (%q), %v; want %s", i, state, reason, err, want)
		}
		var logs bytes.Buffer
		(&engine.Job{Handle: ch, Store: st, Backend: b}).Logs(ctx, &logs, false)
		if !strings.Contains(logs.String(), fmt.Sprintf("task %d\n", i)) {
			t.Errorf("input %d's logs: %q", i, logs.String())
		}
	}
	for i := 0; i < 2; i++ {
		if err := b.CleanupGroup(ctx, gid); err != nil {
			t.Fatalf("CleanupGroup #%d: %v", i+1, err)
		}
	}
	if files, _ := filepath.Glob(filepath.Join(b.OutputDir(), gid+"_*")); len(files) > 0 {
		t.Fatalf("CleanupGroup left %v", files)
	}
}

// TestArrayMemberCancel: cancelling one task of a batch's array stops it alone; a task
// whose runner is killed is FAILED with Slurm's reason, naming the task.
func TestArrayMemberCancel(t *testing.T) {
	needSlurm(t)
	b, st := newBackend(t, nil)
	ctx := context.Background()
	g, h, tmpl := writeBatch(t, st, 2, 2, "sh", "-c", "echo started; sleep 300")
	gid := g.ID
	if err := b.StartGroup(ctx, g, h); err != nil {
		t.Fatal(err)
	}
	defer b.CleanupGroup(ctx, gid)
	j0 := &engine.Job{Handle: tmpl.ChildHandle(gid, 0), Store: st, Backend: b}
	j1 := &engine.Job{Handle: tmpl.ChildHandle(gid, 1), Store: st, Backend: b}
	waitRunning(t, j0)
	waitRunning(t, j1)
	if err := j0.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	if state, reason, _ := j0.Status(ctx); state != job.Failed || reason != "cancelled" {
		t.Fatalf("cancelled task: %s (%q)", state, reason)
	}
	if state, reason, _ := j1.Status(ctx); state != job.Running {
		t.Fatalf("the other task after one was cancelled: %s (%q); want RUNNING", state, reason)
	}
	for _, p := range runnerPIDs(gid) {
		syscall.Kill(p, syscall.SIGKILL)
	}
	state, reason := wait(t, j1)
	if state != job.Failed || !strings.Contains(reason, "Slurm job") || !strings.Contains(reason, "_1") {
		t.Fatalf("a killed task: %s (%q); want FAILED naming the task", state, reason)
	}
}

func mustAccel(t *testing.T, name string) accel.Spec {
	t.Helper()
	s, err := accel.Parse(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestArrayTooLarge: a batch larger than the cluster's MaxArraySize is refused before
// anything is submitted, saying what to do.
func TestArrayTooLarge(t *testing.T) {
	c := needSlurm(t)
	b, st := newBackend(t, nil)
	g, h, _ := writeBatch(t, st, 10002, 4, "true") // the harness's MaxArraySize is 10001
	err := b.StartGroup(context.Background(), g, h)
	if err == nil || !strings.Contains(err.Error(), "MaxArraySize") || !strings.Contains(err.Error(), "10001") {
		t.Fatalf("StartGroup of 10002 inputs: %v; want a refusal naming MaxArraySize", err)
	}
	if out, _ := c.Run("squeue", "-h", "--name="+g.ID); strings.TrimSpace(out) != "" {
		t.Fatalf("something was submitted: %q", out)
	}
}

// TestGPUs: accelerator gpu-…xN asks Slurm for N GPUs (--gres=gpu:N), and the job gets
// them (the test node has two, counted, without devices); more GPUs than any node has is
// refused at submission, with sbatch's reason.
func TestGPUs(t *testing.T) {
	c := needSlurm(t)
	b, st := newBackend(t, nil)
	ctx := context.Background()
	submitAcc := func(acc string, argv ...string) (*engine.Job, error) {
		id := job.NewID()
		spec := &job.Spec{Version: job.SpecVersion, JobID: id, Kind: job.KindCommand, Command: argv}
		h := &job.Handle{JobID: id, Backend: slurm.Name, Accelerator: acc, FuncName: argv[0], Store: st.URL(), CreatedAt: time.Now().UTC().Format(time.RFC3339Nano)}
		if err := st.Put(ctx, store.SpecKey(id), spec.Encode()); err != nil {
			t.Fatal(err)
		}
		if err := st.Put(ctx, store.HandleKey(id), h.Encode()); err != nil {
			t.Fatal(err)
		}
		return &engine.Job{Handle: h, Store: st, Backend: b}, b.Submit(ctx, h)
	}
	j, err := submitAcc("gpu-l4x2", "sh", "-c", `echo "gpus=$SLURM_JOB_GPUS"; scontrol -o show job $SLURM_JOB_ID`)
	if err != nil {
		t.Fatal(err)
	}
	if state, reason := wait(t, j); state != job.Succeeded {
		t.Fatalf("a GPU job: %s (%s)", state, reason)
	}
	var logs bytes.Buffer
	if err := j.Logs(ctx, &logs, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "gres/gpu=2") && !strings.Contains(logs.String(), "gres:gpu:2") {
		t.Fatalf("the job did not get 2 GPUs from Slurm:\n%s", logs.String())
	}
	t.Logf("%s", strings.SplitN(logs.String(), "\n", 2)[0])
	_, err = submitAcc(fmt.Sprintf("gpu-l4x%d", 4*c.GPUs), "true")
	if err == nil || !strings.Contains(err.Error(), "sbatch") {
		t.Fatalf("a job asking for more GPUs than the cluster has: %v; want sbatch's refusal", err)
	}
	t.Logf("refused: %v", err)
}

// TestSlurmStops: a job Slurm stops at its time limit, with a SIGTERM to every process
// of the job, is FAILED naming TIMEOUT, not only with the runner's report of a call
// killed by a signal (which it writes first: the runner, signalled with the rest, writes
// how the call ended before Slurm has ended the job).
func TestSlurmStops(t *testing.T) {
	b, st := newBackend(t, func(o *slurm.Options) { o.SbatchArgs = []string{"--time=0:01"} })
	timed := submit(t, b, st, "sh", "-c", "echo started; sleep 300")
	// slurmctld looks at time limits every half minute or so.
	state, reason := waitWithin(t, timed, 150*time.Second)
	t.Logf("reason: %s", reason)
	if state != job.Failed || !strings.Contains(reason, "TIMEOUT") {
		t.Errorf("%s (%q); want FAILED naming TIMEOUT", state, reason)
	}
}

// TestScancelledByOthers: a job someone cancels in Slurm (scancel) is FAILED naming
// CANCELLED, with the runner's own report after it; the verdict, recorded, is what
// later looks say, unchanged.
func TestScancelledByOthers(t *testing.T) {
	c := needSlurm(t)
	b, st := newBackend(t, nil)
	ctx := context.Background()
	j := submit(t, b, st, "sh", "-c", "echo started; sleep 300")
	waitRunning(t, j)
	time.Sleep(time.Second) // the runner's signal handling is set up
	if out, err := c.Run("scancel", "--name="+j.Handle.JobID); err != nil {
		t.Fatal(err, out)
	}
	state, reason := wait(t, j)
	t.Logf("reason: %s", reason)
	if state != job.Failed || !strings.Contains(reason, "CANCELLED") || !strings.Contains(reason, "own report") {
		t.Fatalf("%s (%q); want FAILED naming CANCELLED, then the runner's report", state, reason)
	}
	for i := 0; i < 2; i++ {
		if s, r, err := b.Status(ctx, j.Handle); err != nil || s != job.Failed || r != reason {
			t.Fatalf("Status again: %s (%q), %v; want the same verdict", s, r, err)
		}
	}
}

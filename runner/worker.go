package runner

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/kinetic-run/kinetic/batch/layout"
	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/jobview"
	"github.com/kinetic-run/kinetic/store"
)

// Worker is one `kinetic runner` invocation, in a pod, a container or under a local
// supervisor: one job, or the index of a batch whose child it finds in the store.
type Worker struct {
	Options
	// Group, if set, is the batch whose child this worker runs: the one at the index in
	// the environment variable IndexEnv.
	Group    string
	IndexEnv string
	// MemberWait bounds the wait for a batch member's child to be written.
	MemberWait time.Duration
	// Hold keeps the worker alive once the job has ended, until ctx ends (the pods of a
	// LeaderWorkerSet, whose restartPolicy is Always: multi-host jobs).
	Hold bool
	// WarmPodIdle, when positive, keeps the pod after the job for another job of its
	// kind, this long after each job (a Kubernetes warm pod: warmpod.go); WarmPodPort is
	// where the runner then listens (DefaultWarmPodPort if 0).
	WarmPodIdle time.Duration
	WarmPodPort int
	WarmPodKey  string // the pod's warm key, said back in its WarmRecord
	// WarmMemoryGrowth is how much more memory (bytes) the pod may hold after a job than
	// before its first one and still take another (DefaultWarmMemoryGrowth if 0; a
	// quarter of the container's memory limit when that is less: warmmem.go).
	WarmMemoryGrowth int64
}

// ErrJobFailed means the job ran and failed (its envelope says so).
var ErrJobFailed = errs.New(errs.Internal, "the job failed")

// Flags returns the flags of `kinetic runner`, bound to w and set to their defaults;
// the CLI and cmd/kinetic-runner both parse them, so a pod's argv suits either binary.
// --store is required (Check).
func (w *Worker) Flags() *flag.FlagSet {
	fs := flag.NewFlagSet("runner", flag.ContinueOnError)
	fs.BoolVar(&w.Hold, "hold", false, "after the job ends, stay alive until stopped (pods whose restartPolicy is Always: multi-host jobs)")
	fs.StringVar(&w.StoreURL, "store", "", "store URL")
	fs.DurationVar(&w.WarmPodIdle, "warm-idle", 0, "after the job ends, keep the pod this long for another job handed over by the engine (a warm pod); 0 exits")
	fs.StringVar(&w.WarmPodKey, "warm-key", "", "with --warm-idle, the pod's warm key (set by the Kubernetes backend)")
	fs.Int64Var(&w.WarmMemoryGrowth, "warm-max-growth", 0, "with --warm-idle, how many bytes more memory than before its first job the pod may hold after a job and still take another (0: 256 MiB, or a quarter of the memory limit when less)")
	fs.IntVar(&w.WarmPodPort, "warm-port", DefaultWarmPodPort, "with --warm-idle, the port the runner listens on for the next job")
	fs.StringVar(&w.JobID, "job", "", "job ID")
	fs.StringVar(&w.Group, "group", "", "batch whose child this worker runs (with --index-env)")
	fs.StringVar(&w.IndexEnv, "index-env", "JOB_COMPLETION_INDEX", "environment variable holding the batch index")
	fs.DurationVar(&w.MemberWait, "member-wait", 15*time.Minute, "how long a batch member waits for its child to be written")
	fs.StringVar(&w.Workspace, "workspace", "", "private working directory")
	fs.StringVar(&w.EnvDir, "env-dir", "", "build the environments of jobs with requirements here, once per environment key (on a file system every machine that runs jobs shares); unset: the requirements are in the image")
	fs.StringVar(&w.Host, "host", os.Getenv("KINETIC_HOST_INDEX"), "host index in a multi-host job")
	hosts, _ := strconv.Atoi(os.Getenv("KINETIC_NUM_HOSTS"))
	fs.IntVar(&w.Hosts, "hosts", hosts, "number of hosts of a multi-host job: the leader (host 0) ends the job once every host has ended")
	fs.IntVar(&w.DebugPort, "debug-port", DefaultDebugPort, "port debugpy listens on (127.0.0.1) in a debug job; 0 for any free port")
	fs.Func("fuse-paths", "JSON object: the index of each Data mounted with GCS FUSE in this pod -> where it is (set by the Kubernetes backend)", func(v string) error {
		return json.Unmarshal([]byte(v), &w.FusePaths)
	})
	return fs
}

// RunWorker runs w: it opens the store once for the whole run, finds a batch member's
// job, leaves alone a job that is already final (with Hold: a host that has nothing to
// run, HostAlreadyRan), runs the job with its output on stdout, and with Hold then waits
// for ctx to end. It returns ErrJobFailed when the job ran and failed.
func RunWorker(ctx context.Context, w Worker) error {
	if w.StoreURL == "" {
		return errors.New("runner: --store is required")
	}
	st, err := store.Open(ctx, w.StoreURL)
	if err != nil {
		return err
	}
	defer st.Close()
	o := w.Options
	o.Store = st // one store for the whole run
	if w.Group != "" {
		id, ok, err := w.member(ctx, st)
		if !ok || err != nil {
			return err
		}
		o.JobID = id
	}
	if o.JobID == "" {
		return errors.New("runner: --job or --group is required")
	}
	if skip, err := w.skip(ctx, st, o); skip || err != nil {
		return err
	}
	if o.Workspace == "" {
		o.Workspace = "/tmp/kinetic/" + o.JobID
	}
	o.Stdout = os.Stdout
	if w.WarmPodIdle > 0 && !w.Hold && w.Group == "" {
		return runWarmPod(ctx, st, w, o)
	}
	return w.runJob(ctx, o)
}

// member finds the child a member of a batch's Indexed Job runs; ok is false when
// there is nothing to run (not a failure of this index).
func (w Worker) member(ctx context.Context, st *store.Store) (id string, ok bool, err error) {
	i, err := strconv.Atoi(os.Getenv(w.IndexEnv))
	if err != nil {
		return "", false, fmt.Errorf("runner: $%s = %q is not a batch index", w.IndexEnv, os.Getenv(w.IndexEnv))
	}
	id, err = layout.ResolveMember(ctx, st, w.Group, i, w.MemberWait)
	if errors.Is(err, layout.ErrNotSubmitted) {
		fmt.Fprintln(os.Stderr, "kinetic:", err)
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	fmt.Fprintf(os.Stderr, "kinetic: batch %s input %d is job %s\n", w.Group, i, id)
	return id, true, nil
}

// skip says whether there is nothing to run: the job is already final, or (with Hold)
// this host already ran it, and then holds. With Hold, a pod of a LeaderWorkerSet
// (restartPolicy Always): once the job has ended, the container must not, or the
// kubelet starts it again and the group restarts. An error (the store unreachable) does
// end it: the restart is then what reports the host.
func (w Worker) skip(ctx context.Context, st *store.Store, o Options) (bool, error) {
	if !w.Hold {
		return AlreadyFinal(ctx, st, o.JobID), nil
	}
	done, err := HostAlreadyRan(ctx, o)
	if err != nil {
		return true, err
	}
	if done {
		Hold(ctx)
	}
	return done, nil
}

// runJob runs the job, then holds (with Hold); ErrJobFailed when it failed.
func (w Worker) runJob(ctx context.Context, o Options) error {
	env, err := Run(ctx, o)
	if err != nil {
		return err
	}
	if w.Hold {
		Hold(ctx)
		return nil
	}
	if !env.Success {
		return ErrJobFailed
	}
	return nil
}

// AlreadyFinal reports (and says on stderr) a job that was given a final status before
// it started (cancelled while its pod waited): there is nothing to run.
func AlreadyFinal(ctx context.Context, st *store.Store, id string) bool {
	s := jobview.FinalStatus(ctx, st, id)
	if s != nil {
		fmt.Fprintf(os.Stderr, "kinetic: job %s is already %s (%s); not running it\n", id, s.State, s.Reason)
	}
	return s != nil
}

// Hold blocks until the process is told to stop (ctx ends: SIGTERM when the pod is
// deleted).
func Hold(ctx context.Context) {
	fmt.Fprintln(os.Stderr, "kinetic: this host is done; holding until the pod is deleted")
	<-ctx.Done()
}

// HostAlreadyRan reports whether this host of a multi-host job has nothing to run: the
// job is final, this host already failed, or this host is starting again. A restart
// means the previous run ended without a result (killed, OOM-killed, node lost, or the
// LeaderWorkerSet recreated the group after another host restarted): the host records
// that as its failure rather than running the job a second time.
func HostAlreadyRan(ctx context.Context, o Options) (bool, error) {
	st := o.Store
	if st == nil {
		var err error
		if st, err = store.Open(ctx, o.StoreURL); err != nil {
			return false, err
		}
		defer st.Close()
	}
	if AlreadyFinal(ctx, st, o.JobID) {
		return true, nil
	}
	host := o.Host
	if host == "" {
		host = "0"
	}
	envKey := store.EnvelopeKey(o.JobID)
	if host != "0" {
		envKey = store.HostEnvelopeKey(o.JobID, host)
	}
	for _, k := range []string{store.EnvelopeKey(o.JobID), envKey} {
		if ok, err := st.Exists(ctx, k); err != nil {
			return false, err
		} else if ok {
			fmt.Fprintf(os.Stderr, "kinetic: job %s already has a result (%s); not running it again\n", o.JobID, k)
			return true, nil
		}
	}
	started := store.HostStartedKey(o.JobID, host)
	if ok, err := st.Exists(ctx, started); err != nil {
		return false, err
	} else if ok {
		env := &job.Envelope{Success: false, Phase: job.PhaseSystem, Host: host, ExcType: "kinetic.HostRestarted",
			ExcMessage: fmt.Sprintf("host %s of the multi-host job started again before the job finished: a host was killed, OOM-killed or lost its node, and the LeaderWorkerSet restarted the group (see the pods' events)", host)}
		fmt.Fprintln(os.Stderr, "kinetic:", env.ExcMessage)
		return true, st.Put(ctx, envKey, env.Encode())
	}
	b, _ := json.Marshal(map[string]string{"host": host, "pod": os.Getenv("HOSTNAME"), "at": time.Now().UTC().Format(time.RFC3339Nano)})
	return false, st.Put(ctx, started, b)
}

// InstallSelf copies the running binary to dest (atomically, executable): the init
// container of job pods (`install-runner DEST`), so any image with python3 can run jobs.
func InstallSelf(dest string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	src, err := os.Open(self)
	if err != nil {
		return err
	}
	defer src.Close()
	tmp := dest + ".tmp"
	dst, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
	if err != nil {
		return fmt.Errorf("install-runner: %w", err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return fmt.Errorf("install-runner: %w", err)
	}
	if err := dst.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, dest)
}

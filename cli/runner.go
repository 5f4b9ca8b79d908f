package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/kinetic-run/kinetic/backend/local"
	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/runner"
	"github.com/kinetic-run/kinetic/store"
)

func init() { register(newRunnerCmd); register(newSuperviseCmd); register(newInstallRunnerCmd) }

// newRunnerCmd is what runs on the worker: in a pod, or under a local supervisor.
func newRunnerCmd(g *Globals) *cobra.Command {
	var o runner.Options
	var group, indexEnv string
	var memberWait time.Duration
	var hold bool
	cmd := &cobra.Command{
		Use:    "runner --store URL (--job ID | --group GID --index-env VAR)",
		Short:  "Run one job on this worker (used inside pods and by the local backend)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			st, err := store.Open(ctx, o.StoreURL)
			if err != nil {
				return err
			}
			defer st.Close()
			o.Store = st // one store for the whole run
			if group != "" {
				// A member of a batch's Indexed Job: find the child this index runs.
				i, err := strconv.Atoi(os.Getenv(indexEnv))
				if err != nil {
					return fmt.Errorf("runner: $%s = %q is not a batch index", indexEnv, os.Getenv(indexEnv))
				}
				o.JobID, err = engine.ResolveMember(ctx, o.Store, group, i, memberWait)
				if errors.Is(err, engine.ErrNotSubmitted) {
					fmt.Fprintln(os.Stderr, "kinetic:", err)
					return nil // nothing to run: not a failure of this index
				}
				if err != nil {
					return err
				}
				fmt.Fprintf(os.Stderr, "kinetic: batch %s input %d is job %s\n", group, i, o.JobID)
			}
			if o.JobID == "" {
				return errors.New("runner: --job or --group is required")
			}
			if hold {
				// A pod of a LeaderWorkerSet (restartPolicy Always): once the job has
				// ended, the container must not, or the kubelet starts it again and
				// the group restarts. An error (the store unreachable) does end it:
				// the restart is then what reports the host.
				if done, err := hostAlreadyRan(ctx, o); err != nil {
					return err
				} else if done {
					holdUntilStopped(ctx)
					return nil
				}
			} else if alreadyFinal(ctx, o) {
				return nil
			}
			if o.Workspace == "" {
				o.Workspace = "/tmp/kinetic/" + o.JobID
			}
			o.Stdout = os.Stdout
			env, err := runner.Run(ctx, o)
			if err != nil {
				return err
			}
			if hold {
				holdUntilStopped(ctx)
				return nil
			}
			if !env.Success {
				return &ExitError{Code: 1, Err: errJobFailed}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&hold, "hold", false, "after the job ends, stay alive until stopped (pods whose restartPolicy is Always: multi-host jobs)")
	cmd.Flags().StringVar(&o.StoreURL, "store", "", "store URL")
	cmd.Flags().StringVar(&o.JobID, "job", "", "job ID")
	cmd.Flags().StringVar(&group, "group", "", "batch whose child this worker runs (with --index-env)")
	cmd.Flags().StringVar(&indexEnv, "index-env", "JOB_COMPLETION_INDEX", "environment variable holding the batch index")
	cmd.Flags().DurationVar(&memberWait, "member-wait", 15*time.Minute, "how long a batch member waits for its child to be written")
	cmd.Flags().StringVar(&o.Workspace, "workspace", "", "private working directory")
	cmd.Flags().StringVar(&o.Host, "host", os.Getenv("KINETIC_HOST_INDEX"), "host index in a multi-host job")
	cmd.Flags().IntVar(&o.DebugPort, "debug-port", runner.DefaultDebugPort, "port debugpy listens on (127.0.0.1) in a debug job; 0 for any free port")
	cmd.MarkFlagRequired("store")
	return cmd
}

// alreadyFinal reports a job that was given a final status before it started (cancelled
// while its pod waited): there is nothing to run.
func alreadyFinal(ctx context.Context, o runner.Options) bool {
	s := runner.FinalStatus(ctx, o.Store, o.JobID)
	if s != nil {
		fmt.Fprintf(os.Stderr, "kinetic: job %s is already %s (%s); not running it\n", o.JobID, s.State, s.Reason)
	}
	return s != nil
}

// holdUntilStopped blocks until the process is told to stop (SIGTERM when the pod is
// deleted).
func holdUntilStopped(ctx context.Context) {
	fmt.Fprintln(os.Stderr, "kinetic: this host is done; holding until the pod is deleted")
	<-ctx.Done()
}

// hostAlreadyRan reports whether this host of a multi-host job has nothing to run: the
// job is final, this host already failed, or this host is starting again. A restart
// means the previous run ended without a result (killed, OOM-killed, node lost, or the
// LeaderWorkerSet recreated the group after another host restarted): the host records
// that as its failure rather than running the job a second time.
func hostAlreadyRan(ctx context.Context, o runner.Options) (bool, error) {
	st := o.Store
	if st == nil {
		var err error
		if st, err = store.Open(ctx, o.StoreURL); err != nil {
			return false, err
		}
		defer st.Close()
		o.Store = st
	}
	if alreadyFinal(ctx, o) {
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

// newInstallRunnerCmd is the runner image's init container: it copies this binary into
// the pod's shared volume, so any image with python3 can run jobs.
func newInstallRunnerCmd(g *Globals) *cobra.Command {
	return &cobra.Command{
		Use:    "install-runner DEST",
		Short:  "Copy this kinetic binary to DEST (the init container of job pods)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			self, err := os.Executable()
			if err != nil {
				return err
			}
			src, err := os.Open(self)
			if err != nil {
				return err
			}
			defer src.Close()
			tmp := args[0] + ".tmp"
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
			return os.Rename(tmp, args[0])
		},
	}
}

func newSuperviseCmd(g *Globals) *cobra.Command {
	var o local.SuperviseOptions
	var queue string
	var worker int
	cmd := &cobra.Command{
		Use:    "supervise --store URL --job ID --state-dir DIR",
		Short:  "Supervise one local job (started by the local backend)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Ready = os.NewFile(3, "ready")
			defer profile("supervise")()
			if queue != "" {
				return local.Work(cmd.Context(), local.WorkOptions{SuperviseOptions: o, Queue: queue, Worker: worker})
			}
			return local.Supervise(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.StoreURL, "store", "", "store URL")
	cmd.Flags().StringVar(&o.JobID, "job", "", "job ID")
	cmd.Flags().StringVar(&o.StateDir, "state-dir", "", "local backend state directory")
	cmd.Flags().StringVar(&queue, "queue", "", "serve this batch queue instead of one job")
	cmd.Flags().IntVar(&worker, "worker", 0, "worker number within the queue's pool")
	cmd.Flags().IntVar(&o.Slots, "slots", 2, "concurrent jobs on this machine")
	cmd.Flags().DurationVar(&o.Grace, "grace", runner.DefaultGrace, "time between SIGTERM and SIGKILL on cancel")
	return cmd
}

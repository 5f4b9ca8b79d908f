// Command kinetic is the CLI, the engine and the in-container runner in one static binary.
package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/kinetic-run/kinetic/internal/mountns"
	"os"
	"os/signal"
	"strings"
	"syscall"

	// The backends this binary runs jobs on: each registers its names in an init
	// (backend.Register), and engine and config know only the registered ones.
	_ "github.com/kinetic-run/kinetic/backend/kubernetes"       // gke, k8s, pathways
	_ "github.com/kinetic-run/kinetic/backend/kubernetes/setup" // their up, down, status, pool, init, doctor
	_ "github.com/kinetic-run/kinetic/backend/local"            // local
	_ "github.com/kinetic-run/kinetic/backend/slurm"            // slurm
	"github.com/kinetic-run/kinetic/cli"
	"github.com/kinetic-run/kinetic/errs"
	// The store drivers beyond file:// and mem://, which store itself links.
	_ "github.com/kinetic-run/kinetic/store/gcs" // gs://
	_ "github.com/kinetic-run/kinetic/store/s3"  // s3://
)

func main() {
	// A job's process started through this binary to get its volumes mounted
	// (internal/mountns): set them up and exec the job; never returns then.
	mountns.Main()
	// One logger, log/slog's, its level set by KINETIC_LOG_LEVEL as for the SDK.
	setupLogging(os.Getenv(logLevelEnv), os.Stderr)
	cli.SetupLogging = func(level string) { setupLogging(level, os.Stderr) } // -v
	// The signal is the context's cause: a runner in a pod tells a SIGTERM from the
	// kubelet (pod deleted, evicted, preempted) in the job's failure.
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sigs
		cancel(fmt.Errorf("received %v: %w", s, cli.ErrInterrupted))
		<-sigs // a second one leaves at once, saying what is left running
		cli.Leave(os.Stderr)
	}()
	root := cli.NewRoot()
	err := root.ExecuteContext(ctx)
	if err != nil && cli.Interrupted(ctx, err) {
		// Whatever the command was doing stopped because of Ctrl-C: one line, no
		// "context canceled" (a command that had more to say, like run, said it).
		var ee *cli.ExitError
		switch msg := err.Error(); {
		case errors.As(err, &ee): // said already
		case strings.Contains(msg, "context canceled") || strings.Contains(msg, "deadline exceeded") || errors.Is(err, cli.ErrInterrupted):
			fmt.Fprintln(os.Stderr, "kinetic: interrupted")
		default: // the command said what the interruption left (up: what still runs)
			fmt.Fprintln(os.Stderr, "kinetic:", msg)
		}
		os.Exit(cli.ExitInterrupted)
	}
	cancel(nil)
	if err != nil {
		cli.WriteError(root, os.Stderr, errs.Message(err))
		os.Exit(cli.ExitCode(err))
	}
}

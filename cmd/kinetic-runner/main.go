// Command kinetic-runner is the worker side of kinetic alone: what runs in a job's pod or
// container (`runner`, `install-runner`), with the store drivers and nothing of the CLI,
// the engine, the Kubernetes client or the image builders. It takes the same argv as
// the kinetic binary (`kinetic runner --store URL --job ID ...`, `kinetic install-runner
// DEST`), so a pod spec runs either one.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/kinetic-run/kinetic/internal/mountns"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/kinetic-run/kinetic/runner"
	"github.com/kinetic-run/kinetic/store"
	_ "github.com/kinetic-run/kinetic/store/gcs" // gs://
	_ "github.com/kinetic-run/kinetic/store/s3"  // s3://
	"github.com/kinetic-run/kinetic/version"
)

func main() {
	// A job's process started through this binary to get its volumes mounted
	// (internal/mountns): set them up and exec the job; never returns then.
	mountns.Main()
	// The signal is the context's cause: a runner in a pod tells a SIGTERM from the
	// kubelet (pod deleted, evicted, preempted) in the job's failure.
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sigs
		cancel(fmt.Errorf("received %v", s))
		signal.Stop(sigs) // a second signal gets the default action
	}()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	cancel(nil)
	switch {
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case errors.Is(err, errUsage):
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "kinetic:", err)
		os.Exit(1)
	}
}

// errUsage is a command line that was wrong (already reported).
var errUsage = errors.New("usage")

const usage = `kinetic-runner: the kinetic worker alone (in pods and containers)

usage:
  kinetic-runner runner --store URL (--job ID | --group GID --index-env VAR) [flags]
  kinetic-runner install-runner DEST
  kinetic-runner check-store --store URL --read KEY --write KEY
  kinetic-runner version
`

// run runs one command line (without the program name).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errUsage
	}
	switch args[0] {
	case "runner":
		var w runner.Worker
		fs := w.Flags()
		fs.SetOutput(stderr)
		fs.String("profile", "", "ignored (the kinetic CLI's global flag)")
		if err := fs.Parse(args[1:]); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return err
			}
			return errUsage
		}
		if fs.NArg() > 0 {
			fmt.Fprintf(stderr, "runner: unexpected arguments %q\n", fs.Args())
			return errUsage
		}
		if w.StoreURL == "" {
			fmt.Fprintln(stderr, `runner: required flag "store" not set`)
			return errUsage
		}
		return runner.RunWorker(ctx, w)
	case "install-runner":
		if len(args) != 2 {
			fmt.Fprintln(stderr, "usage: kinetic-runner install-runner DEST")
			return errUsage
		}
		return runner.InstallSelf(args[1])
	case "check-store":
		// `kinetic up` and `kinetic doctor` run this in a pod: read what the CLI wrote,
		// write it back under another key.
		fs := flag.NewFlagSet("check-store", flag.ContinueOnError)
		fs.SetOutput(stderr)
		url := fs.String("store", "", "store URL")
		read := fs.String("read", "", "key the CLI wrote")
		write := fs.String("write", "", "key to write what was read to")
		if err := fs.Parse(args[1:]); err != nil || *url == "" || *read == "" || *write == "" {
			fmt.Fprintln(stderr, "usage: kinetic-runner check-store --store URL --read KEY --write KEY")
			return errUsage
		}
		return checkStore(ctx, *url, *read, *write, stdout)
	case "version", "--version":
		fmt.Fprintln(stdout, "kinetic-runner", version.Version)
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprintf(stderr, "kinetic-runner: unknown command %q (this binary only runs jobs: runner, install-runner)\n%s", args[0], usage)
		return errUsage
	}
}

// checkStoreTimeout bounds the pod's store check: a store the pod cannot reach would
// otherwise be retried until the Job's deadline.
const checkStoreTimeout = 30 * time.Second

// checkStore reads key read from the store and writes it to key write.
func checkStore(ctx context.Context, url, read, write string, stdout io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, checkStoreTimeout)
	defer cancel()
	err := checkStoreOnce(ctx, url, read, write, stdout)
	if err != nil && ctx.Err() != nil {
		msg := err.Error()
		if _, last, ok := strings.Cut(msg, "last error: "); ok {
			msg = last
		}
		return fmt.Errorf("the store did not answer the pod within %s (%s)", checkStoreTimeout, msg)
	}
	return err
}

func checkStoreOnce(ctx context.Context, url, read, write string, stdout io.Writer) error {
	st, err := store.Open(ctx, url)
	if err != nil {
		return fmt.Errorf("open the store from the pod: %w", err)
	}
	defer st.Close()
	b, err := st.Get(ctx, read)
	if err != nil {
		return fmt.Errorf("read %s from the pod: %w", read, err)
	}
	if err := st.Put(ctx, write, b); err != nil {
		return fmt.Errorf("write %s from the pod: %w", write, err)
	}
	fmt.Fprintln(stdout, "store read and write from the pod: ok")
	return nil
}

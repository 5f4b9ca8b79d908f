// Command kubecluster starts the test cluster of testkit/kubetest for a person (`make
// cluster`): the same real single-node cluster the tests use, with the GCS emulator and
// the registry, until interrupted. -build-only builds the cached tools and exits; with
// -test-bin DIR it also builds the kinetic binary and the runner binaries the tests use
// into DIR (`make test-tools`, before `go test` starts).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/kinetic-run/kinetic/testkit/kubetest"
	"github.com/kinetic-run/kinetic/testkit/srcroot"
	"github.com/kinetic-run/kinetic/testkit/testbin"
)

func main() {
	buildOnly := flag.Bool("build-only", false, "build the test tools into the tools cache and exit")
	testBin := flag.String("test-bin", "", "with -build-only: also build kinetic and the runner binaries for linux/amd64 and linux/arm64 into this new directory (it must not exist or be empty)")
	dir := flag.String("dir", "", "directory for the cluster's files (default: a temporary one)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logf := func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }
	if *buildOnly {
		if err := buildOnlyMain(ctx, *testBin, logf); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	c, err := kubetest.Start(ctx, kubetest.Options{Dir: *dir, Log: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer c.Stop()
	if err := c.PushPythonImage(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bucket := "kinetic"
	if err := c.GCS.MakeBucket(bucket); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Print(UserSetup(c.Kubeconfig, bucket, c.GCS.URL(), c.Bins))
	<-ctx.Done()
}

// buildOnlyMain builds the tools and, into testBin when set, the test binaries, side by
// side, and reports the time of each.
func buildOnlyMain(ctx context.Context, testBin string, logf func(string, ...any)) error {
	start := time.Now()
	var wg sync.WaitGroup
	var binErr error
	if testBin != "" {
		wg.Add(1)
		go func() {
			defer wg.Done()
			binErr = buildTestBin(ctx, testBin, logf)
		}()
	}
	err := kubetest.BuildTools(ctx, logf)
	wg.Wait()
	logf("kubecluster: -build-only done in %s", time.Since(start).Round(time.Second))
	return errors.Join(err, binErr)
}

// buildTestBin builds DIR/kinetic and DIR/kinetic-runner-linux-{amd64,arm64}.
func buildTestBin(ctx context.Context, dir string, logf func(string, ...any)) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("-test-bin %s: not empty (the test binaries go into a fresh directory: remove it first)", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	repo, err := srcroot.Dir()
	if err != nil {
		return err
	}
	start := time.Now()
	if err := testbin.BuildKinetic(ctx, repo, filepath.Join(dir, "kinetic")); err != nil {
		return err
	}
	if err := testbin.BuildRunners(ctx, repo, dir, os.Stderr); err != nil {
		return err
	}
	logf("kubecluster: test binaries in %s (%s)", dir, time.Since(start).Round(time.Second))
	return nil
}

// UserSetup is what a person runs to use the cluster, from the repository root: settings
// that kinetic really reads (KUBECONFIG; base_image_cpu because the node cannot reach
// Docker Hub; pod_cpu because the node is small), then `kinetic up`, which publishes
// the runner image to the harness registry and writes the profile, then a job.
func UserSetup(kubeconfig, bucket, gcsURL, bins string) string {
	return fmt.Sprintf(`# From the repository root, in another shell (make build makes bin/kinetic):
export KUBECONFIG=%s
export KINETIC_BASE_IMAGE_CPU=%s
export KINETIC_POD_CPU=100m
bin/kinetic up --backend k8s -y --registry %s/kinetic --store 'gs://%s?endpoint=%s'
bin/kinetic run examples/hello.py::main
# registry: %s (the node pulls from it; up pushes the runner image there)
# the cluster's binaries: %s (any kubectl works with the KUBECONFIG above; none is built)
# Ctrl-C here stops the cluster.
`, kubeconfig, kubetest.PythonImage, kubetest.RegistryURL, bucket, gcsURL, kubetest.RegistryURL, bins)
}

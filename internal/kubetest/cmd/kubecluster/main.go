// Command kubecluster starts the test cluster of internal/kubetest for a person (`make
// cluster`): the same real single-node cluster the tests use, with the GCS emulator and
// the registry, until interrupted. -build-only builds the cached binaries and exits.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/kinetic-run/kinetic/internal/kubetest"
)

func main() {
	buildOnly := flag.Bool("build-only", false, "build the cluster binaries into the tools cache and exit")
	dir := flag.String("dir", "", "directory for the cluster's files (default: a temporary one)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logf := func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }
	if *buildOnly {
		if _, err := kubetest.Binaries(ctx, logf); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if _, err := kubetest.PythonRootfs(); err != nil {
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
# kubectl: %s/kubectl
# Ctrl-C here stops the cluster.
`, kubeconfig, kubetest.PythonImage, kubetest.RegistryURL, bucket, gcsURL, kubetest.RegistryURL, bins)
}

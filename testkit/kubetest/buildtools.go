package kubetest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/kinetic-run/kinetic/testkit/gcstest"
)

// BuildTools fills the tools cache with everything the tests take from it, so that no
// test builds anything inside its own timeout: the GCS emulator, Kubernetes with etcd,
// kwok and the LeaderWorkerSet controller, the pause binary, and the Python base
// layer of the test images (debootstrap, shared with testkit/imagetest). Each is made
// at most once per version (warm: about a second for all). The Go builds run one after
// another (each already uses every core); debootstrap, mostly network and dpkg, runs
// beside them. Every step reports its time through log.
func BuildTools(ctx context.Context, log func(string, ...any)) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	step := func(name string, fn func() error) {
		start := time.Now()
		err := fn()
		log("kubetest: tools: %s %s (%s)", name, map[bool]string{true: "ready", false: "failed"}[err == nil], time.Since(start).Round(100*time.Millisecond))
		if err != nil {
			mu.Lock()
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			mu.Unlock()
		}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		step("Python base layer", func() error { _, err := PythonRootfs(); return err })
	}()
	step("fake-gcs-server", func() error { _, err := gcstest.BuildBinary(ctx); return err })
	var bins string
	step("Kubernetes "+Version+", etcd, kwok, LeaderWorkerSet "+LWSVersion, func() (err error) {
		if bins, err = Binaries(ctx, log); err != nil {
			bins = ""
		}
		return err
	})
	if bins != "" {
		step("pause", func() error { _, err := PauseBinary(ctx, bins); return err })
	}
	wg.Wait()
	if len(errs) > 0 {
		return fmt.Errorf("kubetest: tools: %v", errs)
	}
	return nil
}

package kubetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/kinetic-run/kinetic/testkit/gcstest"
	"github.com/kinetic-run/kinetic/testkit/imagetest"
	"github.com/kinetic-run/kinetic/testkit/pywheels"
)

// BuildTools fills the tools cache with everything the tests take from it, so that no
// test builds anything inside its own timeout: the GCS emulator, Kubernetes with etcd,
// kwok and the LeaderWorkerSet controller, the pause binary, the Python base
// layer of the test images (debootstrap, shared with testkit/imagetest), and for the
// tests with real frameworks the bare Python base, the Python 3.12 layer, the wheels of
// jax, keras and cloudpickle (testkit/pywheels) and a Python 3.12 client. Each is made
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
	wg.Add(2)
	go func() {
		defer wg.Done()
		step("Python base layer", func() error { _, err := PythonRootfs(); return err })
		// The bases of the tests with real frameworks (testkit/imagetest, framework.go).
		step("bare Python base layer", func() error { _, err := imagetest.MakeBareBaseLayer(); return err })
		step("Python 3.12 layer", func() error {
			return skipNo312(log, func() error { _, err := imagetest.MakePython312Layer(ctx); return err })
		})
	}()
	go func() {
		defer wg.Done()
		// The wheels of jax, keras and cloudpickle from PyPI (the only step that asks it),
		// and the Python 3.12 client made from them (testkit/pywheels).
		step("framework wheels", func() error { _, err := pywheels.Ensure(ctx, log); return err })
		step("Python 3.12 client", func() error {
			return skipNo312(log, func() error { _, err := pywheels.EnsureClient312(ctx, log); return err })
		})
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

// skipNo312 runs fn; a machine without CPython 3.12 is not an error here (the tests that
// need it say so and skip), only reported.
func skipNo312(log func(string, ...any), fn func() error) error {
	err := fn()
	if errors.Is(err, pywheels.ErrNoPython312) {
		log("kubetest: tools: skipped, %v", err)
		return nil
	}
	return err
}

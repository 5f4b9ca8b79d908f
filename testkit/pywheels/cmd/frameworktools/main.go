// Command frameworktools makes only what the tests with real frameworks add to the tools
// cache (the framework wheels from PyPI, the Python 3.12 client, the bare Python base
// and the Python 3.12 layer; `make test-tools` makes them with the rest) and reports the
// time of each: with KINETIC_TOOLS_CACHE pointing at an empty directory it measures
// their cold path alone.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"time"

	"github.com/kinetic-run/kinetic/testkit/imagetest"
	"github.com/kinetic-run/kinetic/testkit/pywheels"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	logf := func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }
	start := time.Now()
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	step := func(name string, fn func() (string, error)) {
		t := time.Now()
		p, err := fn()
		logf("frameworktools: %s: %s %v (%s)", name, p, err, time.Since(t).Round(100*time.Millisecond))
		if err != nil && !errors.Is(err, pywheels.ErrNoPython312) {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
	}
	wg.Add(2)
	go func() {
		defer wg.Done()
		step("bare Python base layer", imagetest.MakeBareBaseLayer)
		step("Python 3.12 layer", func() (string, error) { return imagetest.MakePython312Layer(ctx) })
	}()
	go func() {
		defer wg.Done()
		step("framework wheels", func() (string, error) { return pywheels.Ensure(ctx, logf) })
		step("Python 3.12 client", func() (string, error) { return pywheels.EnsureClient312(ctx, logf) })
	}()
	wg.Wait()
	logf("frameworktools: done in %s", time.Since(start).Round(time.Second))
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

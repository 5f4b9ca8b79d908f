// Package testbin gives tests the kinetic binary, for tests that need real supervisor
// and runner processes, and the runner binaries beside it, for tests whose `kinetic up`
// or `kinetic init` publishes the runner image.
//
// `make test` builds both once before `go test` starts (`make test-tools`, the
// Makefile's TEST_BIN) and hands the binary over in $KINETIC_TEST_BIN, with
// kinetic-runner-linux-amd64 and kinetic-runner-linux-arm64 next to it: every test
// package and every CLI a test runs (whatever its HOME) then finds the runners prebuilt
// (image.RunnerSource) and compiles nothing. Under a plain `go test`, the binary is built
// once per test process on first use, and the runners by WithRunners, which a TestMain
// calls before any test's timer starts.
package testbin

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/image"
	"github.com/kinetic-run/kinetic/testkit/srcroot"
	"github.com/kinetic-run/kinetic/testkit/tier"
	"github.com/kinetic-run/kinetic/testkit/toolcache"
)

// EnvBin names a prebuilt kinetic binary (`make test` sets it).
const EnvBin = "KINETIC_TEST_BIN"

var (
	once sync.Once
	path string
	err  error

	runnersOnce sync.Once
	runnersErr  error
)

// Path returns the path of a freshly built kinetic binary ($KINETIC_TEST_BIN if set).
func Path(t testing.TB) string {
	t.Helper()
	tier.Heavy(t, "runs the kinetic binary")
	p, err := Build()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Build is Path outside a test (TestMain).
func Build() (string, error) {
	if p := os.Getenv(EnvBin); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s: %w", EnvBin, err)
		}
		return p, nil
	}
	once.Do(func() {
		dir, e := os.MkdirTemp("", "kinetic-testbin-")
		if e != nil {
			err = e
			return
		}
		path = filepath.Join(dir, "kinetic")
		err = BuildKinetic(context.Background(), repoDir(), path)
	})
	return path, err
}

// WithRunners is Build, with the runner binaries for image.RunnerPlatforms next to the
// binary it returns, so that a CLI run from it publishes the runner image without
// compiling anything. Under `make test` they are there already ($KINETIC_TEST_BIN);
// otherwise they are cross-compiled once per process (minutes with a cold Go build
// cache): call it from TestMain, before any test's timer starts.
func WithRunners() (string, error) {
	bin, err := Build()
	if err != nil {
		return "", err
	}
	if os.Getenv(EnvBin) != "" {
		if missing := missingRunners(filepath.Dir(bin)); len(missing) > 0 {
			return "", fmt.Errorf("%s=%s has no %s beside it (make test-tools builds them)", EnvBin, bin, strings.Join(missing, ", "))
		}
		return bin, nil
	}
	runnersOnce.Do(func() {
		runnersErr = BuildRunners(context.Background(), repoDir(), filepath.Dir(bin), os.Stderr)
	})
	return bin, runnersErr
}

// BuildKinetic builds cmd/kinetic of the module at repo into out as `make build` does
// (static: the tests also run it in pods; -trimpath: the same compiled packages as `make
// build` and, but for one build tag, as the linux/amd64 runner, so a cold Go build cache
// compiles them once for all three).
func BuildKinetic(ctx context.Context, repo, out string) error {
	start := time.Now()
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", out, "./cmd/kinetic")
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build kinetic: %v\n%s", err, b)
	}
	fmt.Fprintf(os.Stderr, "testbin: built %s in %s (%s)\n", out, time.Since(start).Round(time.Second), toolcache.CPU(cmd.ProcessState))
	return nil
}

// BuildRunners cross-compiles the runner for every image.RunnerPlatforms into dir, with
// image.RunnerBuildFlags, under the names image.RunnerSource looks for beside the CLI.
func BuildRunners(ctx context.Context, repo, dir string, progress io.Writer) error {
	start := time.Now()
	if _, err := image.BuildRunners(ctx, repo, dir, image.RunnerPlatforms, progress); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "testbin: built the runners for %s in %s in %s\n", strings.Join(image.RunnerPlatforms, ", "), dir, time.Since(start).Round(time.Second))
	return nil
}

func missingRunners(dir string) []string {
	var missing []string
	for _, p := range image.RunnerPlatforms {
		name := "kinetic-runner-" + strings.ReplaceAll(p, "/", "-")
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || !fi.Mode().IsRegular() {
			missing = append(missing, name)
		}
	}
	return missing
}

// repoDir is the root of this module's source.
func repoDir() string {
	return srcroot.MustDir()
}

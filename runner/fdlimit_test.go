package runner

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/kinetic-run/kinetic/job"
)

// An error that ran out of file descriptors, or a Python that exited early under a low
// open-files limit, names the limit and how to raise it.
func TestFDLimitSaid(t *testing.T) {
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Skip(err)
	}
	low := old
	low.Cur = 100
	if low.Cur > old.Max {
		t.Skip("hard limit below 100")
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Skip(err)
	}
	defer syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old)
	err := inPhase(job.PhaseExtract, fmt.Errorf("materialise f.py: %w", syscall.EMFILE))
	if !strings.Contains(err.Error(), "open-files limit is 100 (ulimit -n)") || !errors.Is(err, syscall.EMFILE) {
		t.Errorf("EMFILE: %v", err)
	}
	if h := fdLimitHint(); !strings.Contains(h, "open-files limit is 100") || !strings.Contains(h, "ulimit -n 4096") {
		t.Errorf("fdLimitHint under ulimit -n 100: %q", h)
	}
	syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old)
	if old.Cur >= lowFDLimit && fdLimitHint() != "" {
		t.Errorf("fdLimitHint under a limit of %d: %q", old.Cur, fdLimitHint())
	}
}

//go:build !linux

package mountns

import (
	"fmt"
	"os/exec"
	"runtime"
)

func namespaced(*exec.Cmd) error { return probe() }

func probe() error {
	return fmt.Errorf("%w (%s has no mount namespaces)", ErrUnavailable, runtime.GOOS)
}

// Main returns at once: there is no helper on this system.
func Main() {}

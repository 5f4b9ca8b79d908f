package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
)

// profile writes a CPU profile of this process to $KINETIC_CPUPROFILE/NAME-PID.pprof when
// that variable is set (for finding where a batch's time goes); call the result to stop.
func profile(name string) func() {
	dir := os.Getenv("KINETIC_CPUPROFILE")
	if dir == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-%d.pprof", name, os.Getpid())))
	if err != nil || pprof.StartCPUProfile(f) != nil {
		return func() {}
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}

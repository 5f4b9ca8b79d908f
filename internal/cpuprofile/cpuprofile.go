// Package cpuprofile writes a CPU profile of the process when KINETIC_CPUPROFILE names a
// directory (the engine's serve, the local backend's supervisor).
package cpuprofile

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
)

// Start writes a CPU profile of this process to $KINETIC_CPUPROFILE/NAME-PID.pprof when
// that variable is set (for finding where a batch's time goes); call the result to stop.
func Start(name string) func() {
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

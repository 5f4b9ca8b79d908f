package local

import (
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/kinetic-run/kinetic/accel"
	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/job"
)

func init() { backend.Register(Name, factory{}) }

// DefaultStateDir is where the local backend keeps workspaces, locks and slot files:
// local under Kinetic's data directory.
func DefaultStateDir() string { return filepath.Join(config.DataDir(), Name) }

// factory makes the local backend of a store.
type factory struct{}

// Key implements backend.Factory: one local backend per store.
func (factory) Key(backend.Env) string { return "" }

// New implements backend.Factory.
func (factory) New(env backend.Env) (backend.Backend, error) {
	o := Options{StateDir: DefaultStateDir(), Exe: env.Exe}
	if env.Settings != nil {
		o.Slots, _ = strconv.Atoi(env.Settings.Get(string(KeySlots)))
		o.Python.Cold = env.Settings.Get(string(KeyWarm)) == "false"
		o.Python.WarmIdle, _ = time.ParseDuration(env.Settings.Get(string(KeyWarmIdle)))
		o.Python.Interpreter = env.Settings.Get(string(config.Python))
		o.Isolation = env.Settings.Get(string(KeyBatchIsolation))
	}
	return New(env.Store, o)
}

// Traits implements backend.Factory: jobs run on this machine.
func (factory) Traits() backend.Traits {
	return backend.Traits{SharesFiles: true, ThisMachinesHardware: true}
}

// Plan implements backend.Factory: the local backend runs one process on this machine,
// so it refuses a slice over several hosts rather than pretend to be several hosts.
func (factory) Plan(_ *job.Handle, acc accel.Spec, _ backend.Settings) error {
	if acc.MultiHost() {
		return fmt.Errorf("accelerator %s spans %d hosts: the local backend runs one host; use --backend gke (multi-host slices run on Pathways, one LeaderWorkerSet)", acc.Name, acc.Hosts)
	}
	return nil
}

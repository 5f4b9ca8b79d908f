package local

import (
	"runtime"
	"strconv"
	"strings"

	"github.com/kinetic-run/kinetic/config"
)

// The settings the local backend owns: declared here, resolved and shown by config
// (argument > KINETIC_<KEY> > profile > default) like its own keys, read from
// backend.Env.Settings.
const owner = "backend local"

// Isolations are the accepted values of batch_isolation (docs/local-backend.md).
var Isolations = []string{"worker", "process", "job"}

var (
	KeySlots = config.Declare(config.Setting{Key: "local_slots", Owner: owner,
		Default: strconv.Itoa(runtime.NumCPU()), DefaultWhy: "CPUs", Check: config.CheckPositiveInt,
		Doc: "local backend: how many jobs run at once on this machine"})
	KeyWarm = config.Declare(config.Setting{Key: "warm", Owner: owner, Default: "true", Check: config.CheckBool,
		Doc: "local backend: run Python calls in warm forked workers (docs/warm-workers.md)"})
	KeyBatchIsolation = config.Declare(config.Setting{Key: "batch_isolation", Owner: owner, Default: "worker", Check: config.OneOf(Isolations...),
		Doc: "local backend: how the inputs of a batch run: " + strings.Join([]string{
			"worker (one after another in a long-lived Python per worker; module state carries)",
			"process (each in a child forked from it)",
			"job (each a job of its own, docs/warm-workers.md)"}, ", ")})
	KeyWarmIdle = config.Declare(config.Setting{Key: "warm_idle", Owner: owner, Default: "10m", Check: config.CheckDuration,
		Doc: "how long a warm worker server waits without work before it exits"})
)

// The local backend is the backend when nothing else is said (config.DefaultBackend).
func init() {
	config.DeclareDefault(config.KeyDefault{Key: config.Backend, Owner: owner, Value: Name})
}

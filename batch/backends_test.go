package batch

// The tests run jobs on the local backend and fake the "k8s" one (engine.RegisterBackend
// over the registered name): link both, as cmd/kinetic does.
import (
	_ "github.com/kinetic-run/kinetic/backend/kubernetes"
	_ "github.com/kinetic-run/kinetic/backend/local"
)

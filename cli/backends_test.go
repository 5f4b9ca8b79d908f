package cli

// The cluster backends, as cmd/kinetic links them: the tests set backend gke, k8s and
// pathways, which config accepts only once registered (cli itself links only local).
import (
	_ "github.com/kinetic-run/kinetic/backend/kubernetes"
	_ "github.com/kinetic-run/kinetic/backend/kubernetes/setup"
	_ "github.com/kinetic-run/kinetic/backend/local"
)

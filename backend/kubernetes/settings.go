package kubernetes

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/job"
)

// The settings the Kubernetes backends own: declared here, resolved and shown by config
// (argument > KINETIC_<KEY> > profile > default) like its own keys, read from
// backend.Env.Settings. Nothing else in the engine reads them.
const owner = "backend kubernetes (gke, k8s, pathways)"

// ClusterTypes are the accepted values of cluster_type.
var ClusterTypes = []string{"gke", "generic"}

var (
	KeyServiceAccount = config.Declare(config.Setting{Key: "service_account", Owner: owner,
		Doc: "Kubernetes service account of job pods"})
	KeyKubeconfig = config.Declare(config.Setting{Key: "kubeconfig", Owner: owner, Env: "KUBECONFIG",
		Doc: "kubeconfig file for the Kubernetes backends"})
	KeyClusterType = config.Declare(config.Setting{Key: "cluster_type", Owner: owner, Check: config.OneOf(ClusterTypes...),
		Doc: "kind of cluster: " + strings.Join(ClusterTypes, ", ")})
	KeyRunnerImage = config.Declare(config.Setting{Key: "runner_image", Owner: owner,
		Doc: "image holding the kinetic runner at " + job.RunnerPath + ", copied into job pods (default: the one this CLI publishes to image_registry)"})
	KeyStoreSecret = config.Declare(config.Setting{Key: "store_secret", Owner: owner,
		Doc: "Kubernetes Secret with store credentials (key.json or credentials) mounted into job pods"})
	KeyPodCPU = config.Declare(config.Setting{Key: "pod_cpu", Owner: owner, Default: "250m", Check: config.CheckQuantity,
		Doc: "CPU request of job pods without a CPU count (Kubernetes quantity)"})
	KeyPodMemory = config.Declare(config.Setting{Key: "pod_memory", Owner: owner, Check: config.CheckQuantity,
		Doc: "memory request and limit of job pods (Kubernetes quantity, e.g. 4Gi)"})
	KeyUnschedulableGrace = config.Declare(config.Setting{Key: "unschedulable_grace", Owner: owner, Default: "10m", Check: config.CheckDuration,
		Doc: "how long a job's pod may stay unschedulable before the job is FAILED"})
	KeyPullGrace = config.Declare(config.Setting{Key: "image_pull_grace", Owner: owner, Default: "2m", Check: config.CheckDuration,
		Doc: "how long a job's image pulls may fail before the job is FAILED"})
	KeyNodeLostGrace = config.Declare(config.Setting{Key: "node_lost_grace", Owner: owner, Default: "5m", Check: config.CheckDuration,
		Doc: "how long a running job's node may be NotReady before the job is FAILED"})
	KeyAccelResources = config.Declare(config.Setting{Key: "accelerator_resources", Owner: owner, Default: "true", Check: config.CheckBool,
		Doc: "whether job pods request their GPUs/TPUs; false runs them as CPU pods (tests, dry runs on clusters without the devices)"})
	KeyWarmPods = config.Declare(config.Setting{Key: "warm_pods", Owner: owner, Default: "2", Check: checkCount,
		Doc: "Kubernetes backend: how many idle pods of one kind may wait for the next job (warm pods, docs/kubernetes.md), a whole number, default 2; 0 turns them off and gives every job a pod of its own"})
	KeyWarmPodIdle = config.Declare(config.Setting{Key: "warm_pod_idle", Owner: owner, Default: "60s", Check: config.CheckDuration,
		Doc: "Kubernetes backend: how long a warm pod waits for the next job of its kind before it exits, a duration (90s, 5m), default 60s"})
	KeyGCPEndpoints = config.Declare(config.Setting{Key: "gcp_endpoints", Owner: owner,
		Doc: "Google API endpoints for tests and emulators only: container=URL,artifactregistry=URL,iam=URL,compute=URL (plain, unauthenticated; used by up/down/status/pool for GKE)"})
)

// checkCount accepts a whole number, 0 or more.
func checkCount(v string) (string, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return "", fmt.Errorf("%q is not a whole number of 0 or more", v)
	}
	return strconv.Itoa(n), nil
}

package slurm

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/kinetic-run/kinetic/config"
)

// The settings the Slurm backend owns: declared here, resolved and shown by config
// (argument > KINETIC_<KEY> > profile > default) like config's own keys, and read from
// backend.Env.Settings. Slurm's own configuration (which cluster, where slurmctld is) is
// Slurm's: the commands read SLURM_CONF or /etc/slurm/slurm.conf as they always do.
const owner = "backend slurm"

var (
	KeyPartition = config.Declare(config.Setting{Key: "slurm_partition", Owner: owner,
		Doc: "Slurm backend: the partition jobs go to (sbatch --partition; default: the cluster's default partition)"})
	KeyGPUPartition = config.Declare(config.Setting{Key: "slurm_gpu_partition", Owner: owner,
		Doc: "Slurm backend: the partition of jobs whose accelerator is a GPU (default: slurm_partition)"})
	KeyAccount = config.Declare(config.Setting{Key: "slurm_account", Owner: owner,
		Doc: "Slurm backend: the account jobs are charged to (sbatch --account)"})
	KeySbatchArgs = config.Declare(config.Setting{Key: "slurm_sbatch_args", Owner: owner,
		Doc: "Slurm backend: more sbatch arguments, separated by spaces (e.g. \"--qos=high --mem=16G\")"})
	KeyKinetic = config.Declare(config.Setting{Key: "slurm_kinetic", Owner: owner, Check: checkAbs,
		Doc: "Slurm backend: the path of the kinetic binary on the nodes (default: this kinetic's own path, on a file system the nodes share)"})
	KeyEnvDir = config.Declare(config.Setting{Key: "slurm_env_dir", Owner: owner, Check: checkAbs,
		Doc: "Slurm backend: the directory, shared with the nodes, where the Python environments of jobs with requirements are built, once per environment key (default: slurm/envs under Kinetic's data directory)"})
	KeyOutputDir = config.Declare(config.Setting{Key: "slurm_output_dir", Owner: owner, Check: checkAbs,
		Doc: "Slurm backend: the directory, shared with the nodes, where Slurm writes each job's output file (default: slurm under Kinetic's data directory)"})
)

// checkAbs accepts an absolute path (a node resolves a relative one from its own working
// directory) and cleans it.
func checkAbs(v string) (string, error) {
	v = strings.TrimSpace(v)
	if !filepath.IsAbs(v) {
		return "", fmt.Errorf("%q is not an absolute path: the nodes must find it from anywhere (e.g. /shared/bin/kinetic)", v)
	}
	return filepath.Clean(v), nil
}

package slurm

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/kinetic-run/kinetic/accel"
	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/job"
)

func init() { backend.Register(Name, factory{}) }

// DefaultOutputDir is where Slurm writes jobs' output files unless slurm_output_dir says
// otherwise: slurm under Kinetic's data directory (in the home directory, which a Slurm
// cluster's nodes share).
func DefaultOutputDir() string { return filepath.Join(config.DataDir(), Name) }

// DefaultEnvDir is where the environments of jobs with requirements are built unless
// slurm_env_dir says otherwise: slurm/envs under Kinetic's data directory.
func DefaultEnvDir() string { return filepath.Join(config.DataDir(), Name, "envs") }

// factory makes the Slurm backend of a store.
type factory struct{}

// Key implements backend.Factory: one Slurm backend per store (the cluster is the one
// this machine's Slurm commands reach).
func (factory) Key(backend.Env) string { return "" }

// New implements backend.Factory.
func (factory) New(env backend.Env) (backend.Backend, error) {
	o := Options{Kinetic: env.Exe, OutputDir: DefaultOutputDir(), EnvDir: DefaultEnvDir()}
	if s := env.Settings; s != nil {
		if v := s.Get(string(KeyKinetic)); v != "" {
			o.Kinetic = v
		}
		if v := s.Get(string(KeyOutputDir)); v != "" {
			o.OutputDir = v
		}
		if v := s.Get(string(KeyEnvDir)); v != "" {
			o.EnvDir = v
		}
		o.Partition = s.Get(string(KeyPartition))
		o.GPUPartition = s.Get(string(KeyGPUPartition))
		o.Account = s.Get(string(KeyAccount))
		o.SbatchArgs = strings.Fields(s.Get(string(KeySbatchArgs)))
	}
	if err := os.MkdirAll(o.OutputDir, 0o700); err != nil {
		return nil, fmt.Errorf("slurm backend: the output directory (slurm_output_dir): %w", err)
	}
	return New(env.Store, o)
}

// Traits implements backend.Factory. A Slurm cluster's nodes share the submitting
// machine's file systems (home directories, a virtualenv, the kinetic binary), so its
// jobs are planned as the local backend's are: in the submitter's Python environment,
// no image built unless the job asks for a container, Data(fuse=True) used where it
// lies (docs/slurm.md, "Shared file systems"); but they run on the nodes' hardware, not
// this machine's. The Slurm jobs are named after the jobs.
func (factory) Traits() backend.Traits {
	return backend.Traits{SharesFiles: true, ObjectsNamedAfterJob: true}
}

// Plan implements backend.Factory: it refuses what one Slurm batch job cannot be (a TPU,
// a slice over several hosts), and records in the handle the Slurm cluster the job goes
// to (its ClusterName, in place of the Kubernetes cluster fields of the configuration),
// so that the job is not looked for in another cluster.
func (factory) Plan(h *job.Handle, acc accel.Spec, _ backend.Settings) error {
	if err := supported(acc); err != nil {
		return err
	}
	out, err := exec.Command("scontrol", "show", "config").Output()
	if err != nil {
		msg := err.Error()
		var ee *exec.ExitError
		switch {
		case errors.Is(err, exec.ErrNotFound):
			msg = "scontrol is not installed here"
		case errors.As(err, &ee) && len(ee.Stderr) > 0:
			msg = clip(string(ee.Stderr))
		}
		return fmt.Errorf("backend slurm: cannot reach Slurm from this machine (scontrol show config: %s): install the Slurm client (Debian: slurm-client), point SLURM_CONF at the cluster's slurm.conf, or choose another backend", msg)
	}
	// The setting cluster names a Kubernetes cluster (default kinetic-cluster): a Slurm
	// job's cluster is the one SLURM_CONF names.
	h.ClusterName = parseClusterName(string(out))
	h.Project, h.Zone, h.Namespace, h.KubeContext = "", "", "", ""
	return nil
}

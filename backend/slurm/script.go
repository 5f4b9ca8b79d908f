package slurm

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kinetic-run/kinetic/accel"
	"github.com/kinetic-run/kinetic/image"
	"github.com/kinetic-run/kinetic/job"
)

// resources are the sbatch arguments that ask for what the job's accelerator needs: a
// GPU job asks for its GPUs as a generic resource (--gres=gpu:N) in the GPU partition,
// a cpu:N job for N CPUs. TPUs and slices over several hosts are refused (Factory.Plan
// says so before anything is written).
func (b *Backend) resources(h *job.Handle) ([]string, error) {
	acc, err := accel.Parse(h.Accelerator)
	if err != nil {
		return nil, fmt.Errorf("job %s: %w", h.JobID, err)
	}
	if err := supported(acc); err != nil {
		return nil, err
	}
	var a []string
	part := b.o.Partition
	switch acc.Kind {
	case accel.GPU:
		a = append(a, "--gres=gpu:"+strconv.Itoa(max(1, acc.Chips)))
		part = b.o.GPUPartition
	case accel.CPU:
		if acc.CPUs > 0 {
			a = append(a, "--cpus-per-task="+strconv.Itoa(acc.CPUs))
		}
	}
	if part != "" {
		a = append(a, "--partition="+part)
	}
	return a, nil
}

// supported refuses what one Slurm batch job cannot be: a TPU, or a slice over several
// hosts.
func supported(acc accel.Spec) error {
	switch {
	case acc.Kind == accel.TPU:
		return fmt.Errorf("accelerator %s is a TPU: the Slurm backend runs CPU and GPU jobs (accelerator=\"cpu\" or \"gpu-…\"); TPUs run on --backend gke", acc.Name)
	case acc.MultiHost():
		return fmt.Errorf("accelerator %s spans %d hosts: the Slurm backend runs one host per job; use --backend gke (multi-host slices run on Pathways)", acc.Name, acc.Hosts)
	}
	return nil
}

// sbatchArgs are the arguments of the sbatch that submits the job (or, with array, the
// job array) named name, whose output goes to output.
func (b *Backend) sbatchArgs(h *job.Handle, name, array, output string) ([]string, error) {
	res, err := b.resources(h)
	if err != nil {
		return nil, err
	}
	a := []string{"--parsable", "--job-name=" + name, "--output=" + output, "--chdir=" + b.o.OutputDir}
	if array != "" {
		a = append(a, "--array="+array)
	}
	a = append(a, res...)
	if b.o.Account != "" {
		a = append(a, "--account="+b.o.Account)
	}
	if s, err := strconv.Atoi(h.TimeoutSeconds); err == nil && s > 0 {
		// The runner ends a call at its timeout and says so; Slurm's limit, a minute
		// later, is for a runner that cannot (TIMEOUT).
		a = append(a, "--time="+strconv.Itoa((s+59)/60+1))
	}
	return append(a, b.o.SbatchArgs...), nil
}

// script is the batch script: the runner with runnerArgs (after --store), on the node in
// a workspace of its own on its local disk, removed when it ends, or in spec's container
// image when it names one (container.go). Slurm signals every process of the job
// (Cancel's scancel --full --signal=TERM, a time limit, a preemption): the runner gets
// the SIGTERM itself (in a container, through podman's proxy of signals), stops the call
// gracefully and writes how it ended, while the script outlasts the signal to wait for
// it. (A second SIGTERM passed on by the script would make the runner leave at once,
// writing nothing.)
func (b *Backend) script(h *job.Handle, spec *job.Spec, runnerArgs ...string) (string, error) {
	cmd, after := b.runnerCommand(h, runnerArgs), ""
	if inContainer(spec) {
		var err error
		if cmd, err = b.containerCommand(h, spec, runnerArgs); err != nil {
			return "", err
		}
		// A container its client left behind (the client killed by Slurm).
		after = spec.Container + " rm -f " + containerName + " >/dev/null 2>&1\n"
	}
	return fmt.Sprintf(`#!/bin/sh
# A Kinetic job (backend slurm): the runner fetches the job from the store, runs it, and
# writes its logs and result there.
ws="${TMPDIR:-/tmp}/kinetic-slurm-${SLURM_JOB_ID}"
%s%s &
pid=$!
trap : TERM INT
wait $pid
rc=$?
while kill -0 $pid 2>/dev/null; do wait $pid; rc=$?; done
%srm -rf "$ws"
exit $rc
`, jaxPlatforms(h), cmd, after), nil
}

// runnerCommand is the script's command line that runs the runner on the node.
func (b *Backend) runnerCommand(h *job.Handle, runnerArgs []string) string {
	argv := append([]string{b.o.Kinetic, "runner", "--store", h.Store}, runnerArgs...)
	// A node runs many jobs side by side (unlike a pod): debugpy takes any free port,
	// which the job's debug marker records for DebugEndpoint's relay.
	argv = append(argv, "--debug-port", "0")
	if b.o.EnvDir != "" {
		argv = append(argv, "--env-dir", b.o.EnvDir)
	}
	for i, a := range argv {
		argv[i] = shellQuote(a)
	}
	return strings.Join(argv, " ") + ` --workspace "$ws"`
}

// jaxPlatforms is the script's line that sets JAX_PLATFORMS for the job's hardware, as
// a pod's environment does (image.JAXPlatforms: a GPU jax cannot use is an error, not a
// silent fall back to the CPU); the runner applies the job's captured variables over it.
func jaxPlatforms(h *job.Handle) string {
	acc, err := accel.Parse(h.Accelerator)
	if err != nil || h.Accelerator == "" {
		return ""
	}
	return "export JAX_PLATFORMS=" + shellQuote(image.JAXPlatforms(acc.Category())) + "\n"
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

package infra

import (
	"strings"
	"testing"
	"time"
)

// TestWarmDownStepAndDescribe: down's step names every pod (a busy one with the job it
// stops) and says nothing when there are none; doctor's line says how long a pod has
// been idle and when it exits.
func TestWarmDownStepAndDescribe(t *testing.T) {
	now := time.Date(2026, 11, 26, 13, 0, 0, 0, time.UTC)
	idle := WarmPod{Pod: "job-a-x1", Namespace: "ml", State: "idle", Job: "job-a", Image: "python:3.12", Accelerator: "gpu-l4", Holds: "nvidia.com/gpu 1",
		Started: now.Add(-3 * time.Minute), IdleSince: now.Add(-20 * time.Second), Until: now.Add(40 * time.Second)}
	busy := WarmPod{Pod: "job-b-x2", Namespace: "ml", State: "busy", Job: "job-c", Image: "python:3.12", Holds: "cpu 250m", Started: now.Add(-time.Minute)}
	if what, detail := WarmDownStep(nil); what != "" || detail != "" {
		t.Errorf("no pods: %q %q", what, detail)
	}
	what, detail := WarmDownStep([]WarmPod{idle, busy})
	if what != "2 warm pod(s) in namespace ml" || detail != "idle: job-a-x1 gpu-l4; busy, their jobs are stopped: job-b-x2 running job job-c" {
		t.Errorf("step %q (%q)", what, detail)
	}
	if d := idle.Describe(now); d != "job-a-x1 (gpu-l4, python:3.12, holds nvidia.com/gpu 1, up 3m0s, job job-a, idle for 20s, exits in 40s)" {
		t.Errorf("idle: %s", d)
	}
	if d := busy.Describe(now); !strings.HasPrefix(d, "job-b-x2 (cpu, python:3.12, holds cpu 250m") || !strings.HasSuffix(d, ", busy)") {
		t.Errorf("busy: %s", d)
	}
}

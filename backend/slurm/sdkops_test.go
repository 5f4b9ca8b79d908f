package slurm_test

import (
	"strings"
	"testing"
	"time"
)

// opsScript exercises a job's handle from the Python SDK on Slurm: run_async, result
// from another handle (attach), logs and tail while it runs and after, status,
// list_jobs, a failing call's remote exception, cancel of a running call, and a map's
// failures.
const opsScript = `
import json, time
import kinetic

@kinetic.run(accelerator="cpu")
def talk(n):
    import os, time
    for i in range(n):
        print("step", i, flush=True)
        time.sleep(0.3)
    return {"value": n * 10, "job": os.environ.get("SLURM_JOB_ID")}

@kinetic.run(accelerator="cpu")
def forever():
    import time
    print("started", flush=True)
    time.sleep(600)

@kinetic.run(accelerator="cpu")
def odd(x):
    if x % 2:
        raise ValueError("odd input %d" % x)
    return x

out = {}
h = talk.run_async(4)
deadline = time.time() + 90
while "step 1" not in (h.logs() or "") and time.time() < deadline:
    time.sleep(0.2)
out["running_status"] = h.status().value
out["running_tail"] = h.tail(1)
out["result"] = kinetic.attach(h.job_id).result(timeout=120, cleanup=False)
out["status"] = h.status().value
out["logs"] = h.logs()
out["listed"] = h.job_id in [j.job_id for j in kinetic.list_jobs()]
try:
    odd(3)
    out["raised"] = None
except ValueError as e:
    out["raised"] = str(e)
c = forever.run_async()
deadline = time.time() + 90
while "started" not in (c.logs() or "") and time.time() < deadline:
    time.sleep(0.2)
t0 = time.time()
c.cancel()
out["cancel_s"] = time.time() - t0
out["cancelled"] = [c.status().value, c.status_reason()]
b = odd.run_async_map([1, 2, 3, 4])
b.wait(timeout=120)
out["map_results"] = sorted(r for r in b.results(timeout=120, return_exceptions=True) if isinstance(r, int))
out["map_failures"] = len(b.failures())
print(json.dumps(out))
`

// TestSDKOperations: the SDK's handle operations on Slurm (the seeds' JobHandle and
// BatchHandle), with backend=slurm from a profile: status while running and after, logs
// and tail from the job, result through attach, list_jobs, a remote exception re-raised,
// cancel of a running call (FAILED "cancelled"), and a map's failures told apart from
// its results.
func TestSDKOperations(t *testing.T) {
	c := needSlurm(t)
	needPythonSDK(t)
	_, env := slurmHome(t, c)
	var got struct {
		RunningStatus string `json:"running_status"`
		RunningTail   string `json:"running_tail"`
		Result        struct {
			Value int     `json:"value"`
			Job   *string `json:"job"`
		}
		Status      string
		Logs        string
		Listed      bool
		Raised      *string
		CancelS     float64 `json:"cancel_s"`
		Cancelled   []string
		MapResults  []int `json:"map_results"`
		MapFailures int   `json:"map_failures"`
	}
	start := time.Now()
	runScript(t, t.TempDir(), opsScript, &got, env...)
	t.Logf("the operations took %s (cancel %.1fs)", time.Since(start).Round(time.Millisecond), got.CancelS)
	if got.RunningStatus != "RUNNING" || !strings.HasPrefix(got.RunningTail, "step ") {
		t.Errorf("while running: status %q, tail %q", got.RunningStatus, got.RunningTail)
	}
	if got.Result.Value != 40 || got.Result.Job == nil || got.Status != "SUCCEEDED" {
		t.Errorf("result %+v, status %q; want 40 from a Slurm job, SUCCEEDED", got.Result, got.Status)
	}
	if !strings.Contains(got.Logs, "step 0\nstep 1\nstep 2\nstep 3\n") || !got.Listed {
		t.Errorf("logs %q, listed %v", got.Logs, got.Listed)
	}
	if got.Raised == nil || *got.Raised != "odd input 3" {
		t.Errorf("a failing call raised %v; want ValueError('odd input 3')", got.Raised)
	}
	if len(got.Cancelled) != 2 || got.Cancelled[0] != "FAILED" || got.Cancelled[1] != "cancelled" {
		t.Errorf("after cancel: %q; want FAILED, cancelled", got.Cancelled)
	}
	if len(got.MapResults) != 2 || got.MapResults[0] != 2 || got.MapResults[1] != 4 || got.MapFailures != 2 {
		t.Errorf("map: results %v, %d failures; want [2 4] and 2", got.MapResults, got.MapFailures)
	}
}

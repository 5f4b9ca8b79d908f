package slurm_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/backend/slurm"
	"github.com/kinetic-run/kinetic/backend/slurm/slurmtest"
	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/testkit/testbin"
)

// TestTwoNodes: on a cluster of two nodes (two slurmds on this machine, each on a port
// of its own), two jobs that each take a whole node (--exclusive) run at once, one on
// each node, and both end SUCCEEDED with their output in the store: nothing of the
// backend assumes the node is the machine that submitted.
func TestTwoNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Slurm cluster")
	}
	if err := slurmtest.Available(); err != nil {
		t.Skip(err)
	}
	dir, err := os.MkdirTemp("", "slurmtest2-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	start := time.Now()
	c, err := slurmtest.Start(context.Background(), dir, slurmtest.Options{Name: "kntwo", Nodes: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	conf, _ := c.Run("scontrol", "show", "config")
	multi := "MULTIPLE_SLURMD not said"
	for _, l := range strings.Split(conf, "\n") {
		if strings.HasPrefix(l, "MULTIPLE_SLURMD") {
			multi = strings.Join(strings.Fields(l), " ")
		}
	}
	t.Logf("a Slurm cluster of nodes %v started in %s (%s)", c.Nodes, time.Since(start).Round(time.Millisecond), multi)
	st := newStore(t)
	b, err := slurm.New(st, slurm.Options{Kinetic: testbin.Path(t), OutputDir: t.TempDir(), Env: c.Env(), Grace: 5 * time.Second, SbatchArgs: []string{"--exclusive"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var jobs []*job.Handle
	for i := 0; i < 2; i++ {
		jobs = append(jobs, submit(t, b, st, "sh", "-c", "echo node=$SLURMD_NODENAME; sleep 4").Handle)
	}
	// Both run at once: each has a node of its own.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		out, _ := c.Run("squeue", "-h", "-t", "RUNNING", "-o", "%N")
		if nodes := strings.Fields(out); len(nodes) == 2 && nodes[0] != nodes[1] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the two exclusive jobs never ran at once on two nodes: %q", out)
		}
	}
	seen := map[string]bool{}
	for _, h := range jobs {
		j := &engine.Job{Handle: h, Store: st, Backend: b}
		if s, reason := waitWithin(t, j, 60*time.Second); s != job.Succeeded {
			t.Fatalf("job %s: %s %q", h.JobID, s, reason)
		}
		var logs bytes.Buffer
		j.Logs(ctx, &logs, false)
		seen[strings.TrimSpace(logs.String())] = true
	}
	if !seen["node=kn1"] || !seen["node=kn2"] {
		t.Errorf("the jobs' output %v; want one from each of kn1 and kn2", seen)
	}
}

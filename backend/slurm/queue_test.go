package slurm

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kinetic-run/kinetic/job"
)

// TestParseSqueue: squeue -r lines as Slurm 22.05 prints them (a job, running and
// pending array tasks), and lines of other shapes, skipped.
func TestParseSqueue(t *testing.T) {
	// The format has five fields; a sixth belongs to the reason.
	got := parseSqueue("3|3|N/A|COMPLETED|None\n9|7|2|RUNNING|None\n7|7|5|PENDING|JobArrayTaskLimit\ngarbage\nx|7|5|PENDING|None\n8|8|N/A|lower|None\n")
	want := []entry{
		{ID: "3", Task: -1, State: "COMPLETED", Reason: "None"},
		{ID: "9", ArrayID: "7", Task: 2, State: "RUNNING", Reason: "None"},
		{ID: "7", ArrayID: "7", Task: 5, State: "PENDING", Reason: "JobArrayTaskLimit"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("parseSqueue (-want +got):\n%s", d)
	}
	if e := pick(got, 5); e == nil || e.slurmID() != "7_5" {
		t.Fatalf("pick(5) = %+v; want task 7_5", e)
	}
	if e := pick(got, -1); e == nil || e.slurmID() != "3" {
		t.Fatalf("pick(-1) = %+v; want job 3", e)
	}
}

func TestParseSacct(t *testing.T) {
	out := "12|12|CANCELLED by 0|0:15|None\n" +
		"13_2|15|OUT_OF_MEMORY|0:125|OutOfMemory\n" +
		"13_[3-9]|13|PENDING|0:0|JobArrayTaskLimit\n" +
		"14|14|TIMEOUT+|0:0|TimeLimit\n"
	want := []entry{
		{ID: "12", Task: -1, State: "CANCELLED", ExitCode: "0:15", Reason: "None"},
		{ID: "15", ArrayID: "13", Task: 2, State: "OUT_OF_MEMORY", ExitCode: "0:125", Reason: "OutOfMemory"},
		{ID: "14", Task: -1, State: "TIMEOUT", ExitCode: "0:0", Reason: "TimeLimit"},
	}
	if d := cmp.Diff(want, parseSacct(out)); d != "" {
		t.Fatalf("parseSacct (-want +got):\n%s", d)
	}
}

func TestParseScontrolJob(t *testing.T) {
	out := "JobId=2 JobName=job-a b UserId=root(0) JobState=FAILED Reason=NonZeroExitCode Dependency=(null) ExitCode=3:0 RunTime=00:00:02 WorkDir=/a b/c\n"
	e, ok := parseScontrolJob(out)
	if want := (entry{ID: "2", Task: -1, State: "FAILED", Reason: "NonZeroExitCode", ExitCode: "3:0"}); !ok || e != want {
		t.Fatalf("parseScontrolJob = %+v, %v; want %+v", e, ok, want)
	}
	if _, ok := parseScontrolJob("slurm_load_jobs error: Invalid job id specified\n"); ok {
		t.Fatal("an error message parsed as a job")
	}
}

func TestParseClusterNameAndSbatch(t *testing.T) {
	conf := "AuthType                = auth/munge\nClusterName             = kntest\nCompleteWait = 0 sec\nMaxArraySize            = 1001\n"
	if got := parseClusterName(conf); got != "kntest" {
		t.Fatalf("parseClusterName = %q", got)
	}
	if got := parseConfigInt(conf, "MaxArraySize"); got != 1001 {
		t.Fatalf("MaxArraySize = %d", got)
	}
	for in, want := range map[string]string{"123\n": "123", "45;other\n": "45"} {
		if got, err := parseSbatch(in); err != nil || got != want {
			t.Errorf("parseSbatch(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := parseSbatch("sbatch: error: Batch job submission failed\n"); err == nil || !strings.Contains(err.Error(), "not a job ID") {
		t.Fatalf("parseSbatch of an error = %v", err)
	}
}

// TestEndedReason: every way Slurm ends a job that wrote no result says what happened
// and what to do.
func TestEndedReason(t *testing.T) {
	for _, c := range []struct {
		e    entry
		want []string
	}{
		{entry{ID: "5", Task: -1, State: "NODE_FAIL"}, []string{"Slurm job 5 (cluster c)", "node failed", "NODE_FAIL"}},
		{entry{ID: "5", Task: -1, State: "TIMEOUT"}, []string{"time limit", "timeout="}},
		{entry{ID: "5", Task: -1, State: "OUT_OF_MEMORY", ExitCode: "0:125"}, []string{"out of memory", "--mem="}},
		{entry{ID: "5", Task: -1, State: "CANCELLED"}, []string{"cancelled in Slurm", "scancel"}},
		{entry{ID: "5", Task: -1, State: "PREEMPTED"}, []string{"preempted", "again"}},
		{entry{ID: "9", ArrayID: "7", Task: 3, State: "FAILED", ExitCode: "0:9", Reason: "NonZeroExitCode"}, []string{"Slurm job 7_3", "ended FAILED by signal 9", "runner was killed", "NonZeroExitCode"}},
		{entry{ID: "5", Task: -1, State: "FAILED", ExitCode: "2:0"}, []string{"with exit code 2"}},
		{entry{ID: "5", Task: -1, State: "FAILED", ExitCode: "137:0"}, []string{"ended FAILED with exit code 137 (signal 9) without the runner writing a result"}},
		{entry{ID: "5", Task: -1, State: "COMPLETED", ExitCode: "0:0"}, []string{"slurm_kinetic"}},
	} {
		got := c.e.endedReason("c")
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: reason %q lacks %q", c.e.State, got, w)
			}
		}
	}
}

// FuzzParse: the parsers of what Slurm's commands print take anything without
// panicking, and what they keep is well formed.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"9|7|2|RUNNING|None\n7|7|5|PENDING|JobArrayTaskLimit\n",
		"13_2|15|OUT_OF_MEMORY|0:125|OutOfMemory\n13_[3-9]|13|PENDING|0:0|x\n",
		"JobId=2 JobState=FAILED Reason=NonZeroExitCode ExitCode=3:0\n",
		"ClusterName = x\n", "123;c\n", "", "|||||", "_|_|_|_|_",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, es := range [][]entry{parseSqueue(s), parseSacct(s)} {
			for _, e := range es {
				if !isJobID(e.ID) || e.State == "" || (e.Task >= 0) != (e.ArrayID != "") {
					t.Fatalf("malformed entry %+v from %q", e, s)
				}
				_ = e.endedReason("c")
				_ = e.waitingReason()
			}
		}
		if e, ok := parseScontrolJob(s); ok && (!isJobID(e.ID) || e.State == "") {
			t.Fatalf("malformed entry %+v from %q", e, s)
		}
		for _, h := range parseList(s) {
			if !job.ValidName(h.JobID) || (h.GroupID != "") != (h.GroupIndex != "") {
				t.Fatalf("malformed handle %+v from %q", h, s)
			}
		}
		parseClusterName(s)
		parseConfigInt(s, "MaxArraySize")
		if id, err := parseSbatch(s); err == nil && !isJobID(id) {
			t.Fatalf("parseSbatch(%q) = %q", s, id)
		}
	})
}

// TestTasksDone: a task squeue lists as ended has ended, and so has one of the batch's
// that it no longer lists (slurmctld forgot it MinJobAge after it ended, while the rest
// of the array runs on); a task it lists as pending or running has not.
func TestTasksDone(t *testing.T) {
	es := parseSqueue("11|10|1|COMPLETED|None\n12|10|2|RUNNING|None\n10|10|4|PENDING|JobArrayTaskLimit\n13|10|3|FAILED|NonZeroExitCode\n")
	want := map[int]bool{0: true, 1: true, 3: true, 5: true}
	if d := cmp.Diff(want, tasksDone(es, 6)); d != "" {
		t.Fatalf("tasksDone (-want +got):\n%s", d)
	}
}

// TestStoppedBySignal: the runner's reports of a call stopped by a signal, which Status
// looks up in Slurm, and reports of other failures, which it does not.
func TestStoppedBySignal(t *testing.T) {
	for reason, want := range map[string]bool{
		`kinetic.CommandError: command "sh -c sleep 300" failed: killed by signal terminated (phase call)`: true,
		`kinetic.CommandError: command "sh -c sleep 300" failed: exit code 143 (phase call)`:               true,
		`kinetic.CommandError: command "x" failed: exit code 137 (phase call)`:                             true,
		"kinetic.RunnerError: call: stopped: the worker received terminated: interrupted":                  true,
		`kinetic.CommandError: command "x" failed: exit code 3 (phase call)`:                               false,
		`kinetic.CommandError: command "x" failed: exit code 1430 (phase call)`:                            false,
		"ValueError: bad input": false,
	} {
		if got := stoppedBySignal(reason); got != want {
			t.Errorf("stoppedBySignal(%q) = %v, want %v", reason, got, want)
		}
	}
}

// TestParseList: squeue's names become the handles of the jobs Kinetic named: a job by
// its ID, a batch's array task by its input's derived ID; other jobs are not listed.
func TestParseList(t *testing.T) {
	const gid = "grp-0123456789abcdefghijklm"
	const id = "job-0123456789abcdefghijklm"
	out := id + "|N/A\n" + gid + "|0\n" + gid + "|1\n" + id + "|N/A\nmy-training|N/A\n" + gid + "|x\n" + "grp-short|2\n" + "Job-Upper|N/A\n\n"
	var got []string
	for _, h := range parseList(out) {
		got = append(got, h.JobID+" "+h.GroupID+" "+h.GroupIndex+" "+h.K8sName)
	}
	want := []string{
		id + "   " + id,
		job.ChildID(gid, 0) + " " + gid + " 0 " + gid,
		job.ChildID(gid, 1) + " " + gid + " 1 " + gid,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("parseList (-want +got):\n%s", d)
	}
}

// TestParseListStates: a job in a final state is marked ended (List then leaves it out
// once Cleanup removed its output); a running or completing one is not.
func TestParseListStates(t *testing.T) {
	const gid = "grp-0123456789abcdefghijklm"
	const id = "job-0123456789abcdefghijklm"
	const other = "job-0123456789abcdefghijkln"
	out := id + "|N/A|CANCELLED\n" + gid + "|0|RUNNING\n" + gid + "|1|COMPLETED\n" + other + "|N/A|COMPLETING\n"
	hs, ended := parseListStates(out)
	if len(hs) != 4 {
		t.Fatalf("%d handles, want 4", len(hs))
	}
	want := map[string]bool{id: true, job.ChildID(gid, 1): true}
	if d := cmp.Diff(want, ended); d != "" {
		t.Errorf("ended (-want +got):\n%s", d)
	}
}

package slurm

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/kinetic-run/kinetic/job"
)

// What Slurm says about its jobs, parsed from squeue, scontrol and sacct. Their output
// is another program's (any version, any site's configuration), so the parsers take
// anything and keep what they recognise (FuzzParse).

// entry is one Slurm job, or one task of a job array, as a command listed it.
type entry struct {
	// ID is the job's own Slurm ID (an array task has one of its own).
	ID string
	// ArrayID is the array's job ID ("" for a job that is not an array task).
	ArrayID string
	// Task is the array task's index (-1 for a job that is not an array task).
	Task int
	// State is Slurm's job state (PENDING, RUNNING, COMPLETED, FAILED, ...), without
	// what sacct adds ("CANCELLED by 0" is CANCELLED).
	State string
	// Reason is Slurm's reason for the state ("Resources", "NonZeroExitCode", ...).
	Reason string
	// ExitCode is Slurm's "code:signal" of the batch script ("" when not known).
	ExitCode string
}

// squeueFormat is what parseSqueue reads: job ID, array job ID, array task ID, state,
// reason, one line per job or array task (squeue -r).
const squeueFormat = "%A|%F|%K|%T|%r"

// parseSqueue parses squeue -h -r -o squeueFormat. Lines it cannot read are skipped.
func parseSqueue(out string) []entry {
	var es []entry
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) < 5 || !isJobID(f[0]) {
			continue
		}
		e := entry{ID: f[0], Task: -1, State: stateWord(f[3]), Reason: strings.TrimSpace(strings.Join(f[4:], "|"))}
		if t, err := strconv.Atoi(f[2]); err == nil && t >= 0 && isJobID(f[1]) {
			e.ArrayID, e.Task = f[1], t
		}
		if e.State == "" {
			continue
		}
		es = append(es, e)
	}
	return es
}

// sacctFields is what parseSacct reads (sacct -n -P -X -o sacctFields).
const sacctFields = "JobID,JobIDRaw,State,ExitCode,Reason"

// parseSacct parses sacct -n -P -X -o sacctFields: JobID is "123" or "123_4" for an
// array task (or "123_[4-9]" for tasks that never started, which are skipped).
func parseSacct(out string) []entry {
	var es []entry
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) < 5 || !isJobID(f[1]) {
			continue
		}
		e := entry{ID: f[1], Task: -1, State: stateWord(f[2]), ExitCode: exitCode(f[3]), Reason: strings.TrimSpace(f[4])}
		if a, t, ok := strings.Cut(f[0], "_"); ok {
			n, err := strconv.Atoi(t)
			if err != nil || n < 0 || !isJobID(a) {
				continue
			}
			e.ArrayID, e.Task = a, n
		} else if !isJobID(f[0]) {
			continue
		}
		if e.State == "" {
			continue
		}
		es = append(es, e)
	}
	return es
}

var (
	reJobState = regexp.MustCompile(`(?:^|\s)JobState=(\S+)`)
	reReason   = regexp.MustCompile(`(?:^|\s)Reason=(\S+)`)
	reExitCode = regexp.MustCompile(`(?:^|\s)ExitCode=(\d+:\d+)`)
	reJobID    = regexp.MustCompile(`(?:^|\s)JobId=(\d+)`)
	reCluster  = regexp.MustCompile(`(?m)^ClusterName\s*=\s*(\S+)\s*$`)
)

// parseScontrolJob parses scontrol -o show job ID (one line per job; the first is
// taken). ok is false when the output names no job.
func parseScontrolJob(out string) (e entry, ok bool) {
	line, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
	id := reJobID.FindStringSubmatch(line)
	st := reJobState.FindStringSubmatch(line)
	if id == nil || st == nil {
		return entry{}, false
	}
	e = entry{ID: id[1], Task: -1, State: stateWord(st[1])}
	if m := reReason.FindStringSubmatch(line); m != nil && m[1] != "None" {
		e.Reason = m[1]
	}
	if m := reExitCode.FindStringSubmatch(line); m != nil {
		e.ExitCode = m[1]
	}
	return e, e.State != ""
}

// parseClusterName finds ClusterName in scontrol show config ("" if absent).
func parseClusterName(out string) string {
	if m := reCluster.FindStringSubmatch(out); m != nil {
		return m[1]
	}
	return ""
}

// slurmConfig is what the backend reads of Slurm's configuration.
type slurmConfig struct {
	name         string // ClusterName
	maxArraySize int    // MaxArraySize: an array's indexes are below it (0: not said)
}

// parseConfigInt finds the integer key in scontrol show config (0 if absent).
func parseConfigInt(out, key string) int {
	for _, line := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.TrimSpace(k) != key {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err == nil && n > 0 {
			return n
		}
	}
	return 0
}

// parseSbatch parses sbatch --parsable: "ID" or "ID;CLUSTER".
func parseSbatch(out string) (string, error) {
	line, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
	id, _, _ := strings.Cut(line, ";")
	if !isJobID(id) {
		return "", fmt.Errorf("sbatch printed %q, not a job ID", clip(out))
	}
	return id, nil
}

func isJobID(s string) bool {
	if s == "" || len(s) > 20 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// stateWord is the state's first word, upper case ("CANCELLED by 0" → CANCELLED), or ""
// when it is not a word of capitals and underscores.
func stateWord(s string) string {
	w, _, _ := strings.Cut(strings.TrimSpace(s), " ")
	w = strings.TrimSuffix(w, "+") // sacct marks a state cut short, e.g. CANCELLED+
	if w == "" || len(w) > 32 {
		return ""
	}
	for _, c := range w {
		if (c < 'A' || c > 'Z') && c != '_' {
			return ""
		}
	}
	return w
}

// exitCode keeps s if it is Slurm's "code:signal".
func exitCode(s string) string {
	s = strings.TrimSpace(s)
	if a, b, ok := strings.Cut(s, ":"); ok && isJobID(a) && isJobID(b) {
		return s
	}
	return ""
}

// Where a Slurm state leaves a job.
const (
	phaseWaiting = iota // queued, held, suspended: not running yet
	phaseRunning
	phaseEnded
)

// phaseOf is where Slurm's state leaves a job. A state this code does not know is taken
// as still running: Status then leaves it to Slurm to end it, as it will.
func phaseOf(state string) int {
	switch state {
	case "PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD", "SUSPENDED", "STOPPED":
		return phaseWaiting
	case "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED",
		"BOOT_FAIL", "DEADLINE", "SPECIAL_EXIT", "REVOKED":
		return phaseEnded
	}
	return phaseRunning
}

// state is the job.State of a job that Slurm has not ended.
func (e entry) state() job.State {
	if phaseOf(e.State) == phaseWaiting {
		return job.Pending
	}
	return job.Running
}

// waitingReason says why Slurm has not started the job yet ("" when it gives none).
func (e entry) waitingReason() string {
	switch {
	case e.State == "SUSPENDED" || e.State == "STOPPED":
		return fmt.Sprintf("the Slurm job %s is %s (by an administrator or a preemption); it resumes when Slurm resumes it", e.slurmID(), strings.ToLower(e.State))
	case e.Reason == "" || e.Reason == "None":
		return ""
	}
	return fmt.Sprintf("waiting in Slurm's queue (job %s, reason %s; `squeue -j %s` says more)", e.slurmID(), e.Reason, e.slurmID())
}

// slurmID is how Slurm's commands name the job: "123", or "123_4" for an array task.
func (e entry) slurmID() string {
	if e.ArrayID != "" && e.Task >= 0 {
		return e.ArrayID + "_" + strconv.Itoa(e.Task)
	}
	return e.ID
}

// slurmEnds says, for each way Slurm ends a job by itself, what happened and what to do.
var slurmEnds = map[string]string{
	"NODE_FAIL":     "its node failed (NODE_FAIL); submit it again, and tell the cluster's administrators if it repeats",
	"TIMEOUT":       "it ran past its Slurm time limit (TIMEOUT); ask for more time with timeout= or slurm_sbatch_args=--time=...",
	"OUT_OF_MEMORY": "it ran out of memory (OUT_OF_MEMORY); ask for more with slurm_sbatch_args=--mem=...",
	"CANCELLED":     "it was cancelled in Slurm (scancel, by a person or an administrator) (CANCELLED)",
	"PREEMPTED":     "a job of higher priority preempted it (PREEMPTED); submit it again",
	"BOOT_FAIL":     "its node failed to boot (BOOT_FAIL); submit it again",
	"DEADLINE":      "it did not start before its deadline (DEADLINE)",
}

// endedReason says, for a person, how a job Slurm ended went when its runner wrote no
// result: what Slurm says, and what to do about it.
func (e entry) endedReason(cluster string) string {
	where := slurmVerdict + e.slurmID()
	if cluster != "" {
		where += " (cluster " + cluster + ")"
	}
	because := ""
	if e.Reason != "" && e.Reason != "None" {
		because = "; Slurm's reason: " + e.Reason
	}
	code := e.exitWords()
	if why, ok := slurmEnds[e.State]; ok {
		return where + " ended" + code + ": " + why + because
	}
	if e.State == "COMPLETED" {
		return where + " ended" + code + ": its batch script ended without the runner writing a result: the runner did not start (is slurm_kinetic a path the nodes can run?) or was killed"
	}
	return where + " ended " + e.State + code + " without the runner writing a result: the runner was killed, or could not start" + because
}

// exitWords says how the batch script exited (" by signal 9", " with exit code 137
// (signal 9)"), "" when it exited 0 or Slurm did not say.
func (e entry) exitWords() string {
	c, sig, ok := strings.Cut(e.ExitCode, ":")
	switch {
	case !ok:
		return ""
	case sig != "0":
		return " by signal " + sig
	case c == "0":
		return ""
	}
	if n, err := strconv.Atoi(c); err == nil && n > 128 && n < 160 && slurmEnds[e.State] == "" {
		return fmt.Sprintf(" with exit code %d (signal %d)", n, n-128)
	}
	return " with exit code " + c
}

func clip(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

package job

import "time"

// State is the observable status of a job; the five values are the API reference's JobStatus.
type State string

const (
	Pending   State = "PENDING"
	Running   State = "RUNNING"
	Succeeded State = "SUCCEEDED"
	Failed    State = "FAILED"
	NotFound  State = "NOT_FOUND"
)

// Terminal reports whether the state can no longer change (NOT_FOUND included: a job
// that is gone stays gone).
func (s State) Terminal() bool { return s == Succeeded || s == Failed || s == NotFound }

// Status is status.json: what a backend last recorded about a job.
type Status struct {
	State     State     `json:"state"`
	Reason    string    `json:"reason,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
	ExitCode  *int      `json:"exit_code,omitempty"`
	// Local holds what the local backend needs to check liveness and cancel; other
	// backends leave it empty.
	Local *LocalProcess `json:"local,omitempty"`
}

// LocalProcess identifies the supervisor of a job on the local backend.
type LocalProcess struct {
	BootID        string `json:"boot_id"`
	SupervisorPID int    `json:"supervisor_pid"`
	LockPath      string `json:"lock_path"`
	Workspace     string `json:"workspace"`
	// Queue is set for a batch child waiting in (or run from) a worker pool's queue.
	Queue string `json:"queue,omitempty"`
	// QueuedAt is when the child was queued.
	QueuedAt time.Time `json:"queued_at,omitzero"`
}

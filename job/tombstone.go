package job

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Tombstone is tombstones/ID.json: what is left of a successful job once its result was
// collected and the job cleaned up (result(cleanup=True), the default, and a blocking
// call). It is written before the job's objects are deleted, so a reader that finds it
// knows the job's logs and result are going or gone, and a reader that does not find it
// after reading them knows it read them whole. The API's status() of such a job is still
// NOT_FOUND; the CLI reads the tombstone to say "succeeded; result collected and cleaned
// up at T".
type Tombstone struct {
	JobID       string    `json:"job_id"`
	State       State     `json:"state"` // always SUCCEEDED today: only successes are collected
	DisplayName string    `json:"display_name,omitempty"`
	Accelerator string    `json:"accelerator,omitempty"`
	Backend     string    `json:"backend,omitempty"`
	CreatedAt   string    `json:"created_at,omitempty"`
	GroupID     string    `json:"group_id,omitempty"`
	GroupIndex  string    `json:"group_index,omitempty"`
	FinishedAt  time.Time `json:"finished_at,omitzero"`
	CleanedAt   time.Time `json:"cleaned_at"`
	// CollectedBy names the process that collected the result ("pid 4242 on host-a
	// (alice)"): what a second collector is told, with CleanedAt.
	CollectedBy string `json:"collected_by,omitempty"`
	// Removed says what the cleanup removes: "store" (jobs/ID/: handle, spec, payload,
	// logs, result) and "backend" (the backend's resources: a local workspace, a
	// Kubernetes Job).
	Removed []string `json:"removed"`
}

// NewTombstone is the tombstone of h, collected and cleaned up at now.
func NewTombstone(h *Handle, finished, now time.Time) *Tombstone {
	return &Tombstone{
		JobID: h.JobID, State: Succeeded, DisplayName: h.DisplayName, Accelerator: h.Accelerator,
		Backend: h.Backend, CreatedAt: h.CreatedAt, GroupID: h.GroupID, GroupIndex: h.GroupIndex,
		FinishedAt: finished.UTC(), CleanedAt: now.UTC(), Removed: []string{"backend", "store"},
	}
}

// DecodeTombstone parses tombstones/ID.json.
func DecodeTombstone(id string, raw []byte) (*Tombstone, error) {
	var t Tombstone
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, damagedTombstone(id, raw, err)
	}
	if t.JobID != id {
		return nil, damagedTombstone(id, raw, fmt.Errorf("it names job %q", t.JobID))
	}
	return &t, nil
}

// Encode is the tombstone as stored.
func (t *Tombstone) Encode() []byte {
	b, _ := json.MarshalIndent(t, "", "  ")
	return b
}

// Summary is how a person is told: "succeeded; result collected by P and cleaned up at T".
func (t *Tombstone) Summary() string {
	return fmt.Sprintf("succeeded; result collected%s and cleaned up at %s", t.by(), t.CleanedAt.Local().Format(time.DateTime))
}

// by is " by P" when the collector is known (tombstones written before it was recorded
// do not say).
func (t *Tombstone) by() string {
	if t.CollectedBy == "" {
		return ""
	}
	return " by " + t.CollectedBy
}

// CollectedBySummary is "collected by P at T": who took the result, and when.
func (t *Tombstone) CollectedBySummary() string {
	return fmt.Sprintf("collected%s at %s", t.by(), t.CleanedAt.Local().Format(time.DateTime))
}

// damagedTombstone is the error of a tombstone that cannot be read: it names the object,
// what is wrong with it, and the cleanup that removes it.
func damagedTombstone(id string, raw []byte, cause error) error {
	return &tombstoneError{damagedError{fmt.Sprintf("job %s was collected and cleaned up, but its record of that, tombstones/%s.json, %s; `kinetic jobs cleanup %s` removes it", id, id, Describe(raw, cause), id)}}
}

// ErrTombstoneDamaged is what the error of a damaged tombstone is (besides ErrDamaged):
// a cleanup removes the tombstone, as nothing else of the job is left.
var ErrTombstoneDamaged = errors.New("tombstone damaged")

type tombstoneError struct{ damagedError }

func (e *tombstoneError) Is(target error) bool {
	return target == ErrTombstoneDamaged || e.damagedError.Is(target)
}

package job

import (
	"encoding/json"
	"errors"
	"fmt"
)

// ErrDamaged marks a store object that exists but cannot be read: empty (a write cut
// short), or not what its name says. It is never the same as absent: a reader that
// treated it so would lose the job.
var ErrDamaged = errors.New("damaged store object")

// Damaged returns the error for job id's object file (e.g. "status.json") that could
// not be decoded because of cause (nil when the object is empty).
func Damaged(id, file string, raw []byte, cause error) error {
	what := "is empty (a write was cut short, a full disk say)"
	if len(raw) > 0 {
		what = fmt.Sprintf("cannot be read (%d bytes: %v)", len(raw), cause)
	}
	return fmt.Errorf("job %s: %s %s; `kinetic jobs cleanup %s` removes the job: %w", id, file, what, id, ErrDamaged)
}

// DecodeStatus parses status.json of job id.
func DecodeStatus(id string, raw []byte) (*Status, error) {
	var s Status
	if err := json.Unmarshal(raw, &s); err != nil || s.State == "" {
		if err == nil {
			err = errors.New("no state")
		}
		return nil, Damaged(id, "status.json", raw, err)
	}
	return &s, nil
}

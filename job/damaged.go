package job

import (
	"encoding/json"
	"errors"
	"fmt"
)

// ErrDamaged marks a store object that exists but cannot be read: empty (a write cut
// short), or not what its name says, or missing while the objects written after it are
// there. It is never the same as absent: a reader that treated it so would lose the job.
var ErrDamaged = errors.New("damaged store object")

// DamagedError is an error with message msg that is ErrDamaged (errors.Is), for a
// damaged object of something other than a job (a batch's): the message says it all,
// without the sentinel's words after it.
func DamagedError(msg string) error { return &damagedError{msg} }

type damagedError struct{ msg string }

func (e *damagedError) Error() string        { return e.msg }
func (e *damagedError) Is(target error) bool { return target == ErrDamaged }

// Damaged returns the error for job id's object file (e.g. "status.json") that could
// not be decoded because of cause (nil when the object is empty).
func Damaged(id, file string, raw []byte, cause error) error {
	return DamagedError(fmt.Sprintf("job %s is damaged: %s %s; `kinetic jobs cleanup %s` removes the job", id, file, Describe(raw, cause), id))
}

// Missing returns the error for job id whose object file is gone while others that are
// written after it are there (why says which): the job is damaged, not absent.
func Missing(id, file, why string) error {
	return DamagedError(fmt.Sprintf("job %s is damaged: its %s is missing (%s); `kinetic jobs cleanup %s` removes the job", id, file, why, id))
}

// Describe says in a person's words what is wrong with raw, an object that should hold
// JSON and could not be decoded because of cause: empty, cut short, not JSON, or JSON
// that is not what its name says. It never repeats the decoder's own text.
func Describe(raw []byte, cause error) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case len(raw) == 0:
		return "is empty (a write was cut short, a full disk say)"
	case errors.As(cause, &syntax) && syntax.Offset >= int64(len(raw)):
		return fmt.Sprintf("is cut short (%d bytes, its end missing)", len(raw))
	case errors.As(cause, &syntax), !json.Valid(raw):
		return fmt.Sprintf("is not JSON (%d bytes of something else)", len(raw))
	case errors.As(cause, &typ):
		where := typ.Field
		if where == "" {
			where = "the whole object"
		}
		return fmt.Sprintf("does not hold what it should (%d bytes; %s is a JSON %s)", len(raw), where, typ.Value)
	case cause != nil:
		return fmt.Sprintf("does not hold what it should (%d bytes: %v)", len(raw), cause)
	default:
		return fmt.Sprintf("does not hold what it should (%d bytes)", len(raw))
	}
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

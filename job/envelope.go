package job

import (
	"encoding/json"
	"fmt"
	"time"
)

// Phases in which a job can fail, in the order the runner goes through them.
const (
	PhaseSubmit   = "submit"
	PhaseDownload = "download"
	PhaseVerify   = "verify"
	PhaseExtract  = "extract"
	PhasePlan     = "plan"
	PhaseInstall  = "install"
	PhaseUnpickle = "unpickle"
	PhaseEnv      = "env"
	PhaseData     = "data"
	PhaseDebugger = "debugger" // starting debugpy and waiting for a debugger (debug jobs)
	PhaseCall     = "call"
	PhaseResult   = "result"
	PhaseSystem   = "system" // killed, cancelled, lost: nothing the function did
)

// Envelope is result.json: how the job ended. The value itself (a pickle on success, the
// pickled exception on failure) is in result.pkl beside it; Envelope is written after it,
// so an envelope that exists always has its value.
type Envelope struct {
	Success bool `json:"success"`
	// Phase is the phase that failed ("" on success).
	Phase string `json:"phase,omitempty"`
	// Host is the index of the host that wrote the envelope ("0" on single-host jobs).
	Host string `json:"host"`
	// HasValue says result.pkl holds the pickled value (success) or exception (failure),
	// or Value does.
	HasValue bool `json:"has_value"`
	// Value is that pickle itself when its writer kept it here instead of in result.pkl:
	// a batch input's small value (one object per input rather than two; a local map's
	// group worker writes it). Readers look here first.
	Value []byte `json:"value,omitempty"`
	// ValueRepr is repr(value), cut to 2,000 characters, for readers without Python.
	ValueRepr string `json:"value_repr,omitempty"`
	// ExcType is the exception's qualified type name, e.g. "builtins.ValueError".
	ExcType    string `json:"exc_type,omitempty"`
	ExcMessage string `json:"exc_message,omitempty"`
	Traceback  string `json:"traceback,omitempty"`
	// ExitCode is set for command jobs and for Python jobs that called sys.exit.
	ExitCode *int `json:"exit_code,omitempty"`
	// StartedAt is when the runner started (the download phase), CalledAt when the
	// function or command was started (after download, install, env and data), and
	// FinishedAt when the envelope was made: the job's timeline as the worker saw it
	// (the dashboard draws it). Zero in envelopes of older runners.
	StartedAt  time.Time `json:"started_at,omitzero"`
	CalledAt   time.Time `json:"called_at,omitzero"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
}

// DecodeEnvelope parses result.json.
func DecodeEnvelope(b []byte) (*Envelope, error) {
	if e, ok := decodeFast(b); ok {
		return e, nil
	}
	var e Envelope
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, err
	}
	return &e, nil
}

// FailureReason is the one-line reason of a failed envelope: the exception and the
// phase it happened in.
// TimeoutExcType is the exception type of a call the runner stopped at its time limit;
// the job's reason then starts "timeout:".
const TimeoutExcType = "kinetic.Timeout"

func (e *Envelope) FailureReason() string {
	if e.ExcType == TimeoutExcType {
		return "timeout: " + e.ExcMessage
	}
	msg := e.ExcType
	if e.ExcMessage != "" {
		msg += ": " + e.ExcMessage
	}
	if len(msg) > 500 {
		msg = msg[:500] + "..."
	}
	return fmt.Sprintf("%s (phase %s)", msg, e.Phase)
}

package jobview

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// Result is how a job ended, with its value.
type Result struct {
	State    job.State     `json:"state"`
	Reason   string        `json:"reason,omitempty"`
	Envelope *job.Envelope `json:"envelope,omitempty"`
	// ValuePath is a local file holding result.pkl (the value or the exception), when
	// the caller asked for one.
	ValuePath string `json:"value_path,omitempty"`
	// Value is result.pkl itself instead, when it is at most ValueTo.InlineMax bytes.
	Value []byte `json:"value,omitempty"`
	// Skipped says the value was larger than ValueTo.InlineMax and, with
	// ValueTo.InlineOnly, not read.
	Skipped bool `json:"-"`
}

// ValueTo says where a result's value goes: a file in Dir ("": nowhere, the envelope
// alone is read), or inline (Result.Value) when it is at most InlineMax bytes, which
// saves a file per result (a batch's results()).
type ValueTo struct {
	Dir       string
	InlineMax int
	// InlineOnly reads a value of at most InlineMax bytes and skips a larger one
	// (Result.Skipped) instead of copying it to a file: a batch's watch carries the
	// small values of its children with their ends.
	InlineOnly bool
}

var copyBufs = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// ErrNoResult means the job ended without an envelope (killed, cancelled, lost)
// (errs.NoResult).
var ErrNoResult = errs.New(errs.NoResult, "the job ended without a result")

// Result waits for the job and reads its envelope; with valueDir, result.pkl is copied
// to a file there. It returns ErrNoResult (wrapped, with the reason and the log tail)
// when the job failed before it could report.
func (j *Job) Result(ctx context.Context, valueTo ValueTo) (*Result, error) {
	state, reason, err := j.Wait(ctx, nil)
	if err != nil {
		return nil, err
	}
	return j.ResultOf(ctx, state, reason, valueTo)
}

// ResultOf is Result for a job already known to be in the terminal state given (the
// caller waited for it), so it is not looked up again.
func (j *Job) ResultOf(ctx context.Context, state job.State, reason string, valueTo ValueTo) (*Result, error) {
	if state == job.NotFound {
		return nil, fmt.Errorf("job %s no longer exists (it was cleaned up): %w", j.ID, ErrNotFound)
	}
	envKey, valueKey := store.EnvelopeKey(j.ID), store.ResultKey(j.ID)
	raw, err := j.Store.Get(ctx, envKey)
	if store.IsNotFound(err) && state == job.Failed {
		// A multi-host job whose worker failed before the leader finished: the worker's
		// exception is the job's.
		if h, ok, herr := failedHost(ctx, j.Store, j.ID); herr != nil {
			return nil, herr
		} else if ok {
			envKey, valueKey = store.HostEnvelopeKey(j.ID, h), store.HostResultKey(j.ID, h)
			raw, err = j.Store.Get(ctx, envKey)
		}
	}
	var env *job.Envelope
	if store.IsNotFound(err) {
		// result.json is written after result.pkl: a job that has result.pkl and no
		// result.json lost it (deleted), or was stopped between the two.
		pkl, perr := j.Store.Exists(ctx, valueKey)
		if perr != nil {
			return nil, perr
		}
		switch {
		case state == job.Succeeded && pkl:
			// Its end recorded as a success: result.pkl holds the value (the SDK says
			// so if it is not whole).
			env, err = &job.Envelope{Success: true, HasValue: true, Host: "0"}, nil
		case state == job.Succeeded:
			return nil, job.Missing(j.ID, store.ObjectName(j.ID, envKey), "it succeeded, and its "+store.ObjectName(j.ID, valueKey)+", which holds the value, is missing too")
		case pkl:
			return &Result{State: state, Reason: reason}, job.Missing(j.ID, store.ObjectName(j.ID, envKey),
				fmt.Sprintf("it %s (%s); its %s is there, but without %s it cannot be told whether that holds a value or an exception", strings.ToLower(string(state)), reason, store.ObjectName(j.ID, valueKey), store.ObjectName(j.ID, envKey)))
		}
	}
	if env == nil && store.IsNotFound(err) {
		tail, _ := j.Tail(ctx, 20)
		msg := fmt.Sprintf("job %s %s: %s", j.ID, strings.ToLower(string(state)), reason)
		if tail != "" {
			msg += "\nlast log lines:\n" + tail
		}
		return &Result{State: state, Reason: reason}, fmt.Errorf("%s: %w", msg, ErrNoResult)
	}
	if err != nil {
		return nil, err
	}
	if env == nil {
		if env, err = job.DecodeEnvelope(raw); err != nil || len(raw) == 0 {
			// Named within the job: result.json, or a host's hosts/N/result.json.
			return nil, job.Damaged(j.ID, store.ObjectName(j.ID, envKey), raw, err)
		}
	}
	return j.resultWith(ctx, state, reason, env, envKey, valueKey, valueTo)
}

// ErrNothingRecorded is ResultRecorded's answer for a job that has neither a status.json
// nor an envelope in the store: nothing of its end was written (a batch child whose pod
// wrote nothing, say).
var ErrNothingRecorded = errs.New(errs.NoResult, "the store records nothing of the job's end")

// ResultRecorded is Result for a job whose end the store records, read as Recorded
// reads it (a final status.json decides, else the envelope) and without a second read
// of the envelope for the result. ok is false when the store records no end (or one
// that cannot be read): the caller asks the job's backend, and Result says why.
func (j *Job) ResultRecorded(ctx context.Context, valueTo ValueTo) (res *Result, ok bool, err error) {
	s, serr := ReadStatus(ctx, j.Store, j.ID)
	if serr == nil && s.State.Terminal() {
		res, err := j.ResultOf(ctx, s.State, s.Reason, valueTo)
		return res, true, err
	} else if serr != nil && !store.IsNotFound(serr) {
		return nil, false, nil
	}
	envKey := store.EnvelopeKey(j.ID)
	raw, err := j.Store.Get(ctx, envKey)
	if store.IsNotFound(err) && store.IsNotFound(serr) {
		return nil, false, ErrNothingRecorded
	}
	if err != nil {
		return nil, false, nil
	}
	env, err := job.DecodeEnvelope(raw)
	if err != nil || len(raw) == 0 {
		return nil, false, nil
	}
	state, reason := EnvelopeState(env)
	res, err = j.resultWith(ctx, state, reason, env, envKey, store.ResultKey(j.ID), valueTo)
	return res, true, err
}

// resultWith is the result of a job that ended in state with envelope env (read from
// envKey), its value read from valueKey as valueTo says.
func (j *Job) resultWith(ctx context.Context, state job.State, reason string, env *job.Envelope, envKey, valueKey string, valueTo ValueTo) (*Result, error) {
	res := &Result{State: state, Reason: reason, Envelope: env}
	var carried []byte // the value the envelope carries itself (job.Envelope Value)
	if len(env.Value) > 0 {
		// It goes out as a value, never inside the envelope a reader prints (`jobs
		// result --json`).
		bare := *env
		bare.Value, carried = nil, env.Value
		res.Envelope = &bare
	}
	if (valueTo.Dir != "" || valueTo.InlineOnly) && env.HasValue {
		var r io.ReadCloser
		var err error
		if carried != nil {
			r = io.NopCloser(bytes.NewReader(carried))
		} else {
			r, err = j.Store.NewReader(ctx, valueKey)
		}
		if store.IsNotFound(err) {
			return nil, job.Missing(j.ID, store.ObjectName(j.ID, valueKey), "its "+store.ObjectName(j.ID, envKey)+" says it holds the "+valueOrException(env))
		}
		if err != nil {
			return nil, err
		}
		defer r.Close()
		buf := copyBufs.Get().(*[]byte)
		defer copyBufs.Put(buf)
		// Read up to InlineMax+1 bytes: a value that fits is returned inline. (At most
		// the buffer less one: a larger InlineMax must not pass a cut value as whole.)
		limit := min(valueTo.InlineMax, len(*buf)-1)
		head := (*buf)[:limit+1]
		n, err := io.ReadFull(r, head)
		if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
			return nil, err
		}
		if n == 0 {
			// No pickle is empty: an empty value would read as None.
			return nil, job.DamagedError(fmt.Sprintf("job %s is damaged: %s is empty (a write was cut short, a full disk say), though its %s says it holds the %s; `kinetic jobs cleanup %s` removes the job", j.ID, store.ObjectName(j.ID, valueKey), store.ObjectName(j.ID, envKey), valueOrException(env), j.ID))
		}
		if n <= limit {
			res.Value = append([]byte{}, head[:n]...)
			return res, nil
		}
		if valueTo.InlineOnly {
			res.Skipped = true
			return res, nil
		}
		f, err := os.CreateTemp(valueTo.Dir, "kinetic-result-*.pkl")
		if err != nil {
			return nil, err
		}
		// Not io.Copy: the bucket's reader would copy through a fresh 1 MiB buffer, for
		// values that are mostly a few bytes.
		_, err = f.Write(head[:n])
		if err == nil {
			_, err = io.CopyBuffer(struct{ io.Writer }{f}, struct{ io.Reader }{r}, *buf)
		}
		if err != nil {
			f.Close()
			os.Remove(f.Name())
			return nil, err
		}
		if err := f.Close(); err != nil {
			return nil, err
		}
		res.ValuePath = f.Name()
	}
	return res, nil
}

// valueOrException is what the result.pkl of a job that ended as env holds.
func valueOrException(env *job.Envelope) string {
	if env.Success {
		return "value"
	}
	return "exception"
}

// failedHost returns the first host of a multi-host job that wrote a failure envelope
// (a host that ended well writes a successful one, which is skipped).
func failedHost(ctx context.Context, st *store.Store, id string) (string, bool, error) {
	objs, err := st.List(ctx, store.HostsPrefix(id))
	if err != nil {
		return "", false, err
	}
	for _, o := range objs {
		rest := strings.TrimPrefix(o.Key, store.HostsPrefix(id))
		host, ok := strings.CutSuffix(rest, "/result.json")
		if !ok || strings.Contains(host, "/") {
			continue
		}
		raw, err := st.Get(ctx, o.Key)
		if store.IsNotFound(err) {
			continue
		}
		if err != nil {
			return "", false, err
		}
		if env, err := job.DecodeEnvelope(raw); err == nil && env.Success {
			continue
		}
		return host, true, nil
	}
	return "", false, nil
}

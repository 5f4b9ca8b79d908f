package plan

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"
	"unicode/utf8"

	"github.com/kinetic-run/kinetic/job"
)

// call validates what is called (the payload, the entry or the command), its debug
// options, its time limit and the working directory it is called from.
func call(ctx context.Context, env Env, req *Request, p *Job) error {
	debug, err := DebugSpec(req)
	if err != nil {
		return err
	}
	timeout, err := timeoutSeconds(req.Timeout)
	if err != nil {
		return err
	}
	p.Spec.Debug, p.Spec.TimeoutSeconds = debug, timeout
	cwd := req.Cwd
	if cwd == "" {
		if cwd, err = os.Getwd(); err != nil {
			return fmt.Errorf("the current working directory cannot be read (%v): cd into an existing directory and submit again", err)
		}
	}
	if fi, err := os.Stat(cwd); err != nil || !fi.IsDir() {
		return fmt.Errorf("working directory %q cannot be read: %v (run from a directory you can read)", cwd, err)
	}
	p.cwd = cwd
	switch req.Kind {
	case job.KindPickle:
		p.Payload = req.Payload
		if req.PayloadPath != "" {
			if p.Payload, err = os.ReadFile(req.PayloadPath); err != nil {
				return fmt.Errorf("payload: %w", err)
			}
		}
		if len(p.Payload) == 0 {
			return errors.New("empty payload: the function could not be pickled")
		}
	case job.KindEntry:
		if req.Entry == nil || req.Entry.File == "" || req.Entry.Func == "" {
			return errors.New("an entry needs FILE.py::FUNC")
		}
	case job.KindCommand:
		if len(req.Command) == 0 {
			return errors.New("no command given after --")
		}
		for i, a := range req.Command {
			// The spec is JSON: bytes that are not UTF-8 would arrive changed.
			if !utf8.ValidString(a) {
				return fmt.Errorf("command argument %d (%q) is not valid UTF-8, and would not reach the job unchanged: pass it in a file, or encode it (base64, say)", i, Clip(a))
			}
		}
		p.Spec.Command = req.Command
	default:
		return fmt.Errorf("unknown job kind %q", req.Kind)
	}
	return nil
}

// DebugSpec validates the request's debug options and returns the spec's debug settings
// (nil when the job is not a debug job).
func DebugSpec(req *Request) (*job.DebugSpec, error) {
	if !req.Debug {
		if req.DebugWait != 0 {
			return nil, errors.New("debug_wait is set but debug is not: set debug=True (--debug) too, or drop debug_wait")
		}
		return nil, nil
	}
	if req.Kind == job.KindCommand {
		return nil, errors.New("debug=True needs a Python function: a command job has no Python process to attach a debugger to (run FILE.py::FUNC instead, or drop --debug)")
	}
	wait := time.Duration(req.DebugWait * float64(time.Second))
	switch {
	case req.DebugWait == 0:
		wait = DefaultDebugWait
	case req.DebugWait < 1 || req.DebugWait > 7*24*3600:
		return nil, fmt.Errorf("debug_wait %v: want a number of seconds from 1 to 604800 (a week)", req.DebugWait)
	}
	return &job.DebugSpec{WaitSeconds: int(wait.Round(time.Second) / time.Second)}, nil
}

// timeoutSeconds is a call's time limit in whole seconds (rounded up; 0 = none).
func timeoutSeconds(d time.Duration) (int, error) {
	if d < 0 {
		return 0, fmt.Errorf("timeout %s is negative: give a positive time limit for the call (e.g. 3600 seconds), or none", d)
	}
	return int((d + time.Second - 1) / time.Second), nil
}

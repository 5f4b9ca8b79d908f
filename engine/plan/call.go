package plan

import (
	"context"
	"os"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/internal/seconds"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
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
	if err := outputDirScheme(req.OutputDir, p.Cfg.Get(config.OutputDir)); err != nil {
		return err
	}
	cwd := req.Cwd
	if cwd == "" {
		if cwd, err = os.Getwd(); err != nil {
			return errs.Errorf(errs.FailedPrecondition, "the current working directory cannot be read (%v): cd into an existing directory and submit again", err)
		}
	}
	if fi, err := os.Stat(cwd); err != nil || !fi.IsDir() {
		return errs.Errorf(errs.FailedPrecondition, "working directory %q cannot be read: %v (run from a directory you can read)", cwd, err)
	}
	p.cwd = cwd
	switch req.Kind {
	case job.KindPickle:
		p.Payload = req.Payload
		if req.PayloadPath != "" {
			if p.Payload, err = os.ReadFile(req.PayloadPath); err != nil {
				return errs.Errorf(errs.InvalidArgument, "payload file %s cannot be read: %w", req.PayloadPath, err)
			}
		}
		if len(p.Payload) == 0 {
			return errs.New(errs.InvalidArgument, "empty payload: the function could not be pickled")
		}
	case job.KindEntry:
		if req.Entry == nil || req.Entry.File == "" || req.Entry.Func == "" {
			return errs.New(errs.InvalidArgument, "an entry needs FILE.py::FUNC")
		}
	case job.KindCommand:
		if len(req.Command) == 0 {
			return errs.New(errs.InvalidArgument, "no command given after --")
		}
		for i, a := range req.Command {
			// The spec is JSON: bytes that are not UTF-8 would arrive changed.
			if !utf8.ValidString(a) {
				return errs.Errorf(errs.InvalidArgument, "command argument %d (%q) is not valid UTF-8, and would not reach the job unchanged: pass it in a file, or encode it (base64, say)", i, Clip(a))
			}
		}
		p.Spec.Command = req.Command
	default:
		return errs.Errorf(errs.InvalidArgument, "unknown job kind %q: want pickle, entry or command", req.Kind)
	}
	return nil
}

// DebugSpec validates the request's debug options and returns the spec's debug settings
// (nil when the job is not a debug job).
func DebugSpec(req *Request) (*job.DebugSpec, error) {
	if !req.Debug {
		if req.DebugWait != 0 {
			return nil, errs.New(errs.InvalidArgument, "debug_wait is set but debug is not: set debug=True (--debug) too, or drop debug_wait")
		}
		return nil, nil
	}
	if req.Kind == job.KindCommand {
		return nil, errs.New(errs.InvalidArgument, "debug=True needs a Python function: a command job has no Python process to attach a debugger to (run FILE.py::FUNC instead, or drop --debug)")
	}
	wait := DefaultDebugWait
	if req.DebugWait != 0 {
		if req.DebugWait < 1 || req.DebugWait > 7*24*3600 {
			return nil, errs.Errorf(errs.InvalidArgument, "debug_wait %v: want a number of seconds from 1 to 604800 (a week)", req.DebugWait)
		}
		wait = seconds.Duration(req.DebugWait)
	}
	return &job.DebugSpec{WaitSeconds: int(wait.Round(time.Second) / time.Second)}, nil
}

// timeoutSeconds is a call's time limit in whole seconds (rounded up; 0 = none).
func timeoutSeconds(d time.Duration) (int, error) {
	if d < 0 {
		return 0, errs.Errorf(errs.InvalidArgument, "timeout %s is negative: give a positive time limit for the call (e.g. 3600 seconds), or none", d)
	}
	return int((d + time.Second - 1) / time.Second), nil
}

// outputDirScheme refuses an output directory (the request's, else the configured one)
// whose URL scheme no job can write to (ftp://...), before anything is made: it would
// reach the job as KINETIC_OUTPUT_DIR and fail there, or be written nowhere.
func outputDirScheme(req, configured string) error {
	dir, what := req, "output_dir"
	if dir == "" {
		dir, what = configured, "output_dir (KINETIC_OUTPUT_DIR or the profile)"
	}
	i := strings.Index(dir, "://")
	// The schemes of the shared stores this program links (store.OutputSchemes).
	schemes := store.OutputSchemes()
	if i <= 0 || slices.Contains(schemes, strings.ToLower(dir[:i])) {
		return nil
	}
	return errs.Errorf(errs.InvalidArgument, "%s %q: the scheme %s:// is not one an output directory can have; give a path, or a URL with one of %s", what, dir, dir[:i], store.SchemeList(schemes))
}

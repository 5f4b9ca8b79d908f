package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/engine/plan"
	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/jobview"
	"github.com/kinetic-run/kinetic/pack"
)

// runOpts are kinetic run's flags.
type runOpts struct {
	acc, image, python  string
	capture             []string
	async, asJSON, spot bool
	debug, yes          bool
	g                   *Globals // its Quiet is the global -q, which run also shows
	debugWait, timeout  time.Duration
}

func newRunCmd(g *Globals) *cobra.Command {
	var o runOpts
	cmd := &cobra.Command{
		Use:   "run [flags] FILE.py::FUNC [ARGS...] | run [flags] -- CMD [ARGS...]",
		Short: "Run a Python function or a command on an accelerator and print its result",
		Long: `Run a Python function (FILE.py::FUNC) or a command (after --) as a job, stream its
logs to stderr, and print the function's return value (its repr) to stdout. With
--async, print the job's handle and return at once; follow it with "kinetic jobs".

ARGS are the function's arguments: each is read as a Python literal (3 is an int, 0.5
a float, True a bool, None, [1, 2] a list, {'a': 1} a dict, 'x' a str), else kept as
a string (adam, data/train.csv). NAME=VALUE is a keyword argument, its VALUE read the
same way; positional ARGS come first. A string holding = is written as a literal:
"'a=b'". FUNC is looked for in FILE before anything is submitted.

A working directory and local Data larger than upload_confirm_mb together (1 GiB by
default) are uploaded only when the person at the terminal says yes, or with --yes.`,
		Example: `  kinetic run examples/hello.py::add 1 2
  kinetic run examples/hello.py::main n=5
  kinetic run --accelerator tpu-v6e-8 train.py::train 3e-4
  kinetic run --async -- python3 -c 'print("hi")'`,
	}
	o.g = g
	o.flags(cmd)
	vals := keyFlags(cmd)
	hideKeys(cmd, infraKeys...)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		req, err := o.request(cmd, args)
		if err != nil {
			return err
		}
		e, err := newEngine(cmd, g, keyFlagArgs(vals))
		if err != nil {
			return err
		}
		defer e.Close()
		if err := o.precheck(cmd, e, req); err != nil {
			return err
		}
		j, err := e.Submit(cmd.Context(), req)
		if err != nil {
			return err
		}
		if o.async {
			return o.printSubmitted(cmd, j)
		}
		return o.wait(cmd, e, j)
	}
	return cmd
}

// flags registers run's own flags.
func (o *runOpts) flags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVarP(&o.acc, "accelerator", "a", engine.DefaultAccelerator, "accelerator, e.g. cpu, gpu-l4, tpu-v6e-8 (see: kinetic accelerators); left out, with nothing configured (no backend, project or profile), the job runs on this machine's CPU")
	f.StringVar(&o.image, "container-image", "", `"bundled" (default), "prebuilt", or an image URI`)
	f.StringVar(&o.python, "python", "", "Python interpreter for the local backend (default: python3 on PATH)")
	f.StringArrayVar(&o.capture, "capture-env", nil, "environment variable (NAME or PREFIX*) to send with the job; repeatable")
	f.BoolVar(&o.spot, "spot", false, "run on spot capacity")
	f.BoolVar(&o.debug, "debug", false, "start debugpy in the job and wait for a debugger before the call (attach with: kinetic jobs debug ID)")
	durationFlag(f, &o.debugWait, "debug-wait", 0, "with --debug, how long the job waits for a debugger before it fails, in seconds or as a duration (default 10m)")
	durationFlag(f, &o.timeout, "timeout", 0, "stop the job after this long, in seconds or as a duration (1800, 30m, 2h); it then fails with reason timeout")
	// The global -q (Globals.Quiet), shown among run's own flags, where people look for it.
	f.BoolVarP(&o.g.Quiet, "quiet", "q", false, "no progress, notices or status lines on stderr (the job's logs and failures still show)")
	f.BoolVar(&o.async, "async", false, "submit, print the handle, and return")
	f.BoolVar(&o.asJSON, "json", false, "print the result (or the handle with --async) as JSON")
	f.BoolVarP(&o.yes, "yes", "y", false, "upload a working directory and Data larger than upload_confirm_mb without asking")
}

// request is the job the arguments ask for: FILE.py::FUNC [ARGS...] or -- CMD.
func (o *runOpts) request(cmd *cobra.Command, args []string) (*engine.SubmitRequest, error) {
	req := &engine.SubmitRequest{Accelerator: o.acc, AcceleratorDefault: !cmd.Flags().Changed("accelerator"), ContainerImage: o.image, Python: o.python, CaptureEnv: o.capture, Spot: o.spot,
		Debug: o.debug, DebugWait: o.debugWait.Seconds(), Timeout: o.timeout, ConfirmUpload: o.confirmUpload(cmd)}
	if dash := cmd.ArgsLenAtDash(); dash >= 0 {
		if dash != 0 {
			return nil, fmt.Errorf("give either FILE.py::FUNC or -- CMD, not both")
		}
		if len(args) == 0 || args[0] == "" {
			return nil, errors.New("nothing to run after --: give the command and its arguments (e.g. -- python3 train.py)")
		}
		if err := utf8Args(args); err != nil {
			return nil, err
		}
		req.Kind, req.Command = job.KindCommand, args
		return req, nil
	}
	entry, err := entryArgs(args)
	if err != nil {
		return nil, err
	}
	req.Kind, req.Entry = job.KindEntry, entry
	return req, nil
}

// entryArgs reads FILE.py::FUNC [ARGS...], checking FILE is there.
func entryArgs(args []string) (*job.Entry, error) {
	if len(args) == 0 {
		return nil, usageErrorf("nothing to run: give FILE.py::FUNC [ARGS...] or -- CMD [ARGS...]")
	}
	file, fn, ok := strings.Cut(args[0], "::")
	if !ok || file == "" || fn == "" || !strings.HasSuffix(file, ".py") {
		return nil, usageErrorf("%s is not FILE.py::FUNC (e.g. train.py::main); to run a command, put it after --", errs.Quote(args[0]))
	}
	if !pyName(fn) {
		return nil, usageErrorf("%s after :: is not a Python function name (letters, digits and _, e.g. train.py::main or train.py::Trainer.fit)", errs.Quote(fn))
	}
	if err := utf8Args(args); err != nil {
		return nil, err
	}
	if _, err := os.Stat(file); errors.Is(err, fs.ErrNotExist) {
		return nil, usageErrorf("%s: no such file (FILE.py::FUNC names a Python file from here, %s)", errs.Quote(file), "the working directory")
	} else if err != nil {
		return nil, fmt.Errorf("%s: %w", errs.Quote(file), err)
	}
	pos, kw, err := splitArgs(args[1:])
	if err != nil {
		return nil, err
	}
	return &job.Entry{File: file, Func: fn, Args: pos, Kwargs: kw}, nil
}

// precheck checks, before anything is submitted, the cluster a Kubernetes backend needs
// and that FUNC is in FILE; it quiets the engine for --quiet.
func (o *runOpts) precheck(cmd *cobra.Command, e *engine.Engine, req *engine.SubmitRequest) error {
	if err := plan.Preflight(e.Config()); err != nil {
		return err
	}
	if req.Kind == job.KindEntry {
		// FUNC is looked for in FILE before anything is submitted (Python's ast,
		// without importing the user's module), with the interpreter the job would
		// run here (a pyenv shim resolved once, shared with the submission).
		py := o.python
		if py == "" {
			py = e.Config().Get(config.Python)
		}
		if py == "" {
			py = e.PathPython()
		}
		if err := checkEntry(cmd.Context(), py, req.Entry.File, req.Entry.Func); err != nil {
			return err
		}
	}
	if o.g.Quiet {
		e.Quiet, e.Bars, e.Notice = true, false, io.Discard
	}
	return nil
}

// confirmUpload is how run agrees to a large upload (engine.SubmitRequest.ConfirmUpload):
// --yes, else a question on a terminal (default no), else a refusal naming --yes.
func (o *runOpts) confirmUpload(cmd *cobra.Command) func(context.Context, engine.UploadSize) error {
	return func(_ context.Context, u engine.UploadSize) error {
		if o.yes {
			return nil
		}
		limit := pack.HumanBytes(u.Threshold)
		if !isTerminal(cmd.InOrStdin()) || !isTerminal(cmd.ErrOrStderr()) {
			return usageErrorf("this job would upload %s, more than %s (upload_confirm_mb); nothing was uploaded: pass --yes to upload it, leave files out with .kineticignore, or set KINETIC_UPLOAD_CONFIRM_MB (0: never ask)", u, limit)
		}
		ok, err := newPrompter(cmd.InOrStdin(), cmd.ErrOrStderr()).Confirm(fmt.Sprintf("kinetic: this job would upload %s, more than %s (upload_confirm_mb). Upload it?", u, limit))
		if err != nil {
			return err
		}
		if !ok {
			return usageErrorf("nothing was uploaded (the answer was no): leave files out with .kineticignore, or pass --yes to upload without asking")
		}
		return nil
	}
}

// printSubmitted prints an --async job's handle: its ID (or the handle as JSON) on
// stdout, what to do next on stderr.
func (o *runOpts) printSubmitted(cmd *cobra.Command, j *engine.Job) error {
	if o.asJSON {
		return writeJSON(cmd.OutOrStdout(), j.Handle)
	}
	fmt.Fprintln(cmd.OutOrStdout(), j.Handle.JobID)
	if !o.g.Quiet {
		// The ID is the data (stdout); what to do with it is for the person.
		id := j.Handle.JobID
		fmt.Fprintf(cmd.ErrOrStderr(), "kinetic: job %s submitted (%s on %s); next: `kinetic jobs logs -f %s` to follow it, `kinetic jobs result %s` for its value, `kinetic jobs cancel %s` to stop it\n",
			id, j.Handle.Accelerator, j.Handle.Backend, id, id, id)
	}
	return nil
}

// wait follows a job run started: its logs to stderr until it ends, then its value.
// Ctrl-C cancels the job (and says so); a second one leaves at once, the job running,
// with the commands to re-attach or stop it.
func (o *runOpts) wait(cmd *cobra.Command, e *engine.Engine, j *engine.Job) error {
	ctx := cmd.Context()
	if !o.g.Quiet {
		fmt.Fprintf(cmd.ErrOrStderr(), "kinetic: job %s submitted (%s on %s)\n", j.Handle.JobID, j.Handle.Accelerator, j.Handle.Backend)
	}
	setLeaveMessage(leftRunning(j.Handle.JobID))
	defer setLeaveMessage("")
	if o.debug {
		s, err := attachDebugger(cmd, j)
		if err != nil {
			return err
		}
		defer s.Close()
	}
	e.NoticeWhilePending(ctx, j)
	// The logs follow the store's copy until the result is in: one status poll (the
	// result's), and no wait for the follower's next look after the end.
	logsDone, ended := make(chan error, 1), make(chan struct{})
	go func() { logsDone <- j.LogsUntil(ctx, cmd.ErrOrStderr(), ended) }()
	res, err := j.Result(ctx, jobview.ValueTo{})
	close(ended)
	<-logsDone
	if err != nil && Interrupted(ctx, err) {
		return cancelInterrupted(cmd.ErrOrStderr(), j)
	}
	if err != nil && res == nil {
		return err
	}
	return printResult(cmd, j.Handle.JobID, res, err, o.asJSON)
}

// attachDebugger says where the debugger of a --debug job goes (stderr: stdout is for
// the value); the caller keeps any forward open while the job runs.
func attachDebugger(cmd *cobra.Command, j *engine.Job) (*engine.DebugSession, error) {
	s, err := j.DebugAttach(cmd.Context(), 0)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "kinetic: the job waits for a debugger at %s:%d; VS Code launch.json configuration:\n", s.Host, s.Port)
	if err := writeJSON(cmd.ErrOrStderr(), s.Launch); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// printResult prints a finished job's value (stdout) or failure (stderr) and turns a
// failure into a non-zero exit: the command's own exit code for command jobs.
func printResult(cmd *cobra.Command, id string, res *engine.Result, resErr error, asJSON bool) error {
	if asJSON {
		out := resultJSON{JobID: id, Result: res}
		if env := res.Envelope; env != nil && env.Success && env.ValueRepr != "" {
			out.Value = reprAsJSON(cmd.Context(), env.ValueRepr)
		}
		if err := writeJSON(cmd.OutOrStdout(), out); err != nil {
			return err
		}
	}
	env := res.Envelope
	if env != nil && env.Success {
		if !asJSON && env.ValueRepr != "" {
			// A value that cannot be written (a closed pipe) is an error: the caller
			// must not clean up what nobody received.
			if _, err := fmt.Fprintln(cmd.OutOrStdout(), env.ValueRepr); err != nil {
				return fmt.Errorf("the value could not be written to standard output (%v); the job is kept: `kinetic jobs result JOB_ID` prints it again", err)
			}
		}
		return nil
	}
	if env == nil {
		return &ExitError{Code: 1, Err: resErr}
	}
	code := 1
	if env.ExitCode != nil && *env.ExitCode != 0 {
		code = *env.ExitCode
	}
	if env.Traceback != "" && !asJSON {
		fmt.Fprint(cmd.ErrOrStderr(), "remote traceback:\n"+env.Traceback)
	}
	return &ExitError{Code: code, Err: fmt.Errorf("job failed in phase %s: %s: %s", env.Phase, env.ExcType, env.ExcMessage)}
}

// resultJSON is a finished job as --json prints it: its ID, its state and envelope, and
// its value as JSON when the value is JSON-able (a dict of numbers, a list of strings,
// ...): value_repr in the envelope stays the Python form.
type resultJSON struct {
	JobID string `json:"job_id"`
	*engine.Result
	// Value shadows Result.Value (the pickle, never inlined here).
	Value json.RawMessage `json:"value,omitempty"`
}

// reprAsJSON turns a value's Python repr into JSON with Python's own reader
// (ast.literal_eval, then json.dumps with no NaN): nil when the repr is not a literal (an
// object, a truncated repr) or not JSON-able (a set, bytes, a tuple key), or when no
// python3 is at hand.
func reprAsJSON(ctx context.Context, repr string) json.RawMessage {
	py, err := exec.LookPath("python3")
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, py, "-I", "-c", "import ast, json, sys\nv = ast.literal_eval(sys.stdin.read())\nif isinstance(v, (set, frozenset, bytes, complex)): sys.exit(1)\nprint(json.dumps(v, allow_nan=False))")
	c.Stdin = strings.NewReader(repr)
	out, err := c.Output()
	if err != nil || !json.Valid(out) {
		return nil
	}
	return json.RawMessage(out)
}

// cancelInterrupted cancels the job a blocking command started, after the first Ctrl-C.
func cancelInterrupted(w io.Writer, j *engine.Job) error {
	id := j.Handle.JobID
	fmt.Fprintf(w, "\nkinetic: interrupted: cancelling job %s (Ctrl-C again to stop waiting)\n", id)
	setLeaveMessage(fmt.Sprintf("kinetic: stopped waiting; job %s was told to stop and may still be running its grace period. Check: `kinetic jobs status %s`; again: `kinetic jobs cancel %s`", id, id, id))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := j.Cancel(ctx); err != nil {
		fmt.Fprintf(w, "kinetic: could not cancel job %s: %v\n%s\n", id, err, leftRunning(id))
		return &ExitError{Code: ExitInterrupted, Err: ErrInterrupted}
	}
	fmt.Fprintf(w, "kinetic: job %s cancelled\n", id)
	return &ExitError{Code: ExitInterrupted, Err: ErrInterrupted}
}

// utf8Args refuses an argument that is not UTF-8 text: a job's arguments travel as
// JSON text, where such bytes would silently become U+FFFD.
func utf8Args(args []string) error {
	for i, a := range args {
		if !utf8.ValidString(a) {
			return fmt.Errorf("argument %d (%s) is not valid UTF-8; kinetic sends arguments as text: pass a file name or base64 instead", i+1, errs.Quote(strings.ToValidUTF8(a, "\uFFFD")))
		}
	}
	return nil
}

// pyName reports whether fn is a Python name, possibly dotted (Class.method), as the
// entry point of FILE.py::FUNC must be.
func pyName(fn string) bool {
	for _, part := range strings.Split(fn, ".") {
		if part == "" {
			return false
		}
		for i, r := range part {
			if !(r == '_' || unicode.IsLetter(r) || (i > 0 && unicode.IsDigit(r))) {
				return false
			}
		}
	}
	return true
}

package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/kinetic-run/kinetic/internal/calltrace"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/data"
	"github.com/kinetic-run/kinetic/engine/images"
	"github.com/kinetic-run/kinetic/engine/plan"
	"github.com/kinetic-run/kinetic/image"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/pack"
	"github.com/kinetic-run/kinetic/pyenv"
	"github.com/kinetic-run/kinetic/store"
)

// SubmitRequest is one call to run somewhere else (package plan plans it).
type SubmitRequest = plan.Request

// DataArg is one Data(...) of a call.
type DataArg = plan.DataArg

// DefaultAccelerator is the accelerator of a call that names none (SDK and CLI).
const DefaultAccelerator = plan.DefaultAccelerator

// UploadSize is what a job would upload (SubmitRequest.ConfirmUpload is asked about it).
type UploadSize = plan.UploadSize

// DefaultDebugWait is how long a debug job waits for a debugger, as the reference does.
const DefaultDebugWait = plan.DefaultDebugWait

// planned is a job planned (plan.Job) with what the engine keeps while writing it.
type planned struct {
	*plan.Job
	args []byte // a template's job: its arguments (its function is the shared blob)
	// shared, for a template's job: the function pickle stored once for all its jobs.
	shared *atomic.Pointer[job.BlobRef]
	// dataDone: the Data were uploaded already (a template's, once for all its jobs).
	dataDone bool
}

// Submit validates req, writes the job to the store and starts it. Bad input fails
// before anything is written; a failure after the first write removes what was written.
func (e *Engine) Submit(ctx context.Context, req *SubmitRequest) (*Job, error) {
	p, err := e.plan(ctx, req)
	if err != nil {
		return nil, err
	}
	calltrace.Mark("engine.planned", p.Handle.JobID)
	return e.submitPlanned(ctx, p, nil)
}

// plan validates req and plans its job, in the named steps of package plan.
func (e *Engine) plan(ctx context.Context, req *SubmitRequest) (*planned, error) {
	j, err := plan.Make(ctx, planEnv{e}, req)
	if err != nil {
		return nil, err
	}
	return &planned{Job: j}, nil
}

// planEnv is the engine as planning asks it (plan.Env).
type planEnv struct{ e *Engine }

func (v planEnv) Resolve(args map[config.Key]string) (*config.Resolved, error) {
	return v.e.resolve(args)
}
func (v planEnv) Store(ctx context.Context, url string) (*store.Store, error) {
	return v.e.Store(ctx, url)
}
func (v planEnv) PathPython() string { return v.e.pathPython() }
func (v planEnv) PythonVersion(python string) string {
	return v.e.pythonVersion(python)
}
func (v planEnv) ImagePython(ctx context.Context, ref name.Reference) string {
	return v.e.custom.Python(ctx, ref)
}
func (v planEnv) NoticeOnce(msg string) { v.e.noticeOnce(msg) }
func (v planEnv) Warning(msg string) {
	if v.e.Warn != nil {
		v.e.Warn(msg)
	}
}
func (v planEnv) EnsureImage(ctx context.Context, cfg *config.Resolved, req *image.BuildRequest) (image.Result, error) {
	r := *req
	r.Progress = v.e.Notice
	return v.e.images.Ensurer(cfg).Ensure(ctx, &r)
}

func (v planEnv) AddRunner(ctx context.Context, where *job.Handle, st *store.Store, img name.Reference, into name.Repository) (image.WithRunner, bool) {
	be, err := v.e.backendFor(where, st)
	if ri, ok := be.(backend.RunnerImager); err == nil && ok {
		return images.AddRunner(ctx, img, into, ri.RunnerImage, v.e.Notice, v.e.noticeOnce)
	}
	return image.WithRunner{}, false // Submit says why, or the backend copies no runner in
}

// submitPlanned writes a planned job and hands it to its backend; in, for a job of a
// template (Template.Submit), says how.
func (e *Engine) submitPlanned(ctx context.Context, p *planned, in *Instance) (*Job, error) {
	be, err := e.backendFor(p.Handle, p.Store)
	if err != nil {
		return nil, err
	}
	id := p.Handle.JobID
	if in != nil && in.Prepare != nil {
		if err := in.Prepare(ctx, p.Handle); err != nil {
			return nil, err
		}
	}
	if err := e.write(ctx, p); err != nil {
		p.Store.DeletePrefix(context.WithoutCancel(ctx), store.JobPrefix(id))
		return nil, err
	}
	calltrace.Mark("engine.written", id)
	start := func(ctx context.Context, _ backend.Backend, h *job.Handle, _ *job.Spec) error {
		return be.Submit(ctx, h)
	}
	if in != nil && in.Start != nil {
		start = in.Start
	}
	if err := start(ctx, be, p.Handle, p.Spec); err != nil {
		p.Store.DeletePrefix(context.WithoutCancel(ctx), store.JobPrefix(id))
		return nil, fmt.Errorf("submit %s: %w", id, err)
	}
	calltrace.Mark("engine.started", id)
	return &Job{Handle: p.Handle, Store: p.Store, Backend: be, Unwritten: e.unwritten}, nil
}

// write puts the job's objects in the store; handle.json goes last, since its presence
// is what makes a job exist.
func (e *Engine) write(ctx context.Context, p *planned) error {
	id := p.Handle.JobID
	if err := e.writeShared(ctx, p); err != nil {
		return err
	}
	if p.args != nil {
		// A batch child: the function is shared content, the arguments are its own.
		if len(p.args) <= job.InlineArgs {
			p.Spec.ArgsInline = p.args
		} else {
			asum := sha256.Sum256(p.args)
			p.Spec.Args = &job.BlobRef{Key: store.ArgsKey(id), SHA256: hex.EncodeToString(asum[:]), Size: int64(len(p.args))}
			if err := p.Store.Put(ctx, store.ArgsKey(id), p.args); err != nil {
				return err
			}
		}
	}
	if len(p.Env) > 0 {
		b, _ := json.Marshal(p.Env)
		if err := p.Store.Put(ctx, store.EnvKey(id), b); err != nil {
			return err
		}
	}
	if err := p.Store.Put(ctx, store.SpecKey(id), p.Spec.Encode()); err != nil {
		return err
	}
	p.Handle.SubmittedAt = time.Now().UTC().Format(time.RFC3339Nano)
	return p.Store.Put(ctx, store.HandleKey(id), p.Handle.Encode())
}

// uploadData uploads the job's Data (once per content hash in the store), unless they
// were already (a batch child's).
func (e *Engine) uploadData(ctx context.Context, p *planned) error {
	if p.dataDone {
		return nil
	}
	for i := range p.Spec.Data {
		r := &p.Spec.Data[i]
		if r.Fuse && backend.SharesFiles(p.Handle.Backend) && p.Spec.Container == "" {
			continue // used in place on this machine
		}
		update, finish := e.progress(fmt.Sprintf("uploading Data(%q)", r.Source))
		err := data.UploadWarn(ctx, p.Store, r, update, e.Warn)
		finish(-1)
		if err != nil {
			return fmt.Errorf("upload Data(%q): %w", r.Source, err)
		}
	}
	p.dataDone = true
	return nil
}

// writeShared puts in the store what a job shares with others like it: the shipped
// tree, its Data, and its function (once for a whole batch: p.args != nil).
func (e *Engine) writeShared(ctx context.Context, p *planned) error {
	id := p.Handle.JobID
	if err := e.writeTree(ctx, p); err != nil {
		return err
	}
	if err := e.uploadData(ctx, p); err != nil {
		return err
	}
	switch {
	case p.args != nil:
		if ref := p.sharedPayload(); ref != nil {
			p.Spec.Payload = ref // stored by an earlier child: no request
			return nil
		}
		key, sum, err := p.Store.PutBlob(ctx, p.Payload)
		if err != nil {
			return err
		}
		p.Spec.Payload = &job.BlobRef{Key: key, SHA256: sum, Size: int64(len(p.Payload))}
		if p.shared != nil {
			p.shared.Store(p.Spec.Payload)
		}
	case p.Payload != nil:
		sum := sha256.Sum256(p.Payload)
		p.Spec.Payload = &job.BlobRef{Key: store.PayloadKey(id), SHA256: hex.EncodeToString(sum[:]), Size: int64(len(p.Payload))}
		return p.Store.Put(ctx, store.PayloadKey(id), p.Payload)
	}
	return nil
}

// writeTree uploads the planned working directory (only what the store lacks) and
// points the spec at its manifest.
func (e *Engine) writeTree(ctx context.Context, p *planned) error {
	if p.Manifest == nil {
		return nil
	}
	update, finish := e.progress("uploading the working directory")
	uo := pack.UploadOptions{CacheDir: plan.PackCache(), Progress: update}
	{
		ref, stats, err := pack.Upload(ctx, p.Store, p.Manifest, uo)
		if errors.Is(err, pack.ErrFileChanged) {
			// A file changed between scan and upload: scan again, once.
			if p.Manifest, err = pack.Scan(ctx, p.Manifest.Root, p.PackOpts); err == nil {
				ref, stats, err = pack.Upload(ctx, p.Store, p.Manifest, uo)
			}
		}
		finish(stats.UploadedBytes)
		if err != nil {
			return fmt.Errorf("upload the working directory: %w", err)
		}
		p.Spec.Workdir = &job.BlobRef{Key: ref.Key, SHA256: ref.SHA256, Size: ref.Size, Format: job.FormatManifest}
	}
	p.Manifest = nil
	return nil
}

// Root returns the shipped root for code in sourceFile (the Python SDK pickles modules
// under it by value).
func (e *Engine) Root(sourceFile, cwd string) (string, error) {
	return plan.ShippedRoot(e.cfg, &SubmitRequest{SourceFile: sourceFile}, cwd)
}

func defaultOutputDir(st *store.Store, id string) string { return plan.DefaultOutputDir(st, id) }

// sharedPayload is the template's function pickle if an earlier job stored it.
func (p *planned) sharedPayload() *job.BlobRef {
	if p.shared == nil {
		return nil
	}
	return p.shared.Load()
}

// pathPython is the interpreter the python3 on PATH runs, found once per engine: itself
// when it is a binary, else (a script: pyenv's shims, asdf's, a wrapper) what it reports
// as sys.executable. "" when there is none, or it cannot tell.
// PathPython is the interpreter the python3 on PATH runs (a shim such as pyenv's
// resolved to the real one, once per engine), "" when there is none: what a local job of
// FILE.py::FUNC runs with when no python is configured.
func (e *Engine) PathPython() string { return e.pathPython() }

func (e *Engine) pathPython() string {
	e.pyOnce.Do(func() {
		p, err := exec.LookPath("python3")
		if err != nil {
			return
		}
		if !isScript(p) {
			e.pyPath = p
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, p, "-c", "import sys; print(sys.executable)").Output()
		if err != nil {
			return
		}
		if real := strings.TrimSpace(string(out)); filepath.IsAbs(real) && !isScript(real) {
			e.pyPath = real
		}
	})
	return e.pyPath
}

// pythonVersion is the minor version ("3.12") of the interpreter python ("" = the
// python3 on PATH), asked once per interpreter; "" when there is none or it cannot say.
func (e *Engine) pythonVersion(python string) string {
	if python == "" {
		python = e.pathPython()
	}
	if python == "" {
		return ""
	}
	e.mu.Lock()
	v, ok := e.pyVers[python]
	e.mu.Unlock()
	if ok {
		return v
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	v, _ = pyenv.MinorVersion(ctx, python)
	e.mu.Lock()
	if e.pyVers == nil {
		e.pyVers = map[string]string{}
	}
	e.pyVers[python] = v
	e.mu.Unlock()
	return v
}

// isScript reports whether the file at p starts with "#!".
func isScript(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [2]byte
	n, _ := f.Read(b[:])
	return n == 2 && string(b[:]) == "#!"
}

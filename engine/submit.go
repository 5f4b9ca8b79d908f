package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/kinetic-run/kinetic/accel"
	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/data"
	"github.com/kinetic-run/kinetic/deps"
	"github.com/kinetic-run/kinetic/internal/mountns"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/pack"
	"github.com/kinetic-run/kinetic/store"
	"github.com/kinetic-run/kinetic/version"
)

// SubmitRequest is one call to run somewhere else.
type SubmitRequest struct {
	// Kind is job.KindPickle, job.KindEntry or job.KindCommand.
	Kind string
	// Payload is the pickled (func, args, kwargs) of a KindPickle job; with Args, the
	// pickled function alone (shared by the children of a batch, stored once).
	Payload []byte
	// Args is the pickled (args, kwargs) of one input of a batch.
	Args []byte
	// PayloadPath is a file holding Payload (the Python SDK hands over a temp file).
	PayloadPath string
	// Entry is FILE.py::FUNC for KindEntry (File as given, relative to Cwd or absolute).
	Entry *job.Entry
	// Command is the argv of a KindCommand job.
	Command []string

	FuncName    string
	DisplayName string
	// SourceFile is the file that defines the function: the shipped root is found from it.
	SourceFile string
	// Cwd is the submitter's working directory (default: this process's).
	Cwd string
	// Python is the interpreter the local backend runs (the SDK sends sys.executable, so
	// pickles load in the same Python that made them).
	Python string

	Accelerator    string
	ContainerImage string
	CaptureEnv     []string
	Environ        map[string]string // the submitter's environment, for CaptureEnv
	OutputDir      string
	Spot           bool
	// Timeout limits the call (0 = none): the job is stopped after it and FAILS with a
	// reason starting "timeout:" (docs/jobs.md).
	Timeout time.Duration
	// Debug starts debugpy in the job's Python and waits for a debugger before the call
	// (docs/debug.md); DebugWait bounds the wait in seconds (default DefaultDebugWait).
	Debug     bool
	DebugWait float64
	// Data are the Data(...) objects of the call, in sentinel order (see python/kinetic/data.py);
	// those with a Mount come from volumes=.
	Data []DataArg
	// NoWorkdir skips shipping the working directory.
	NoWorkdir bool

	// Config are per-call arguments (project, zone, cluster, namespace, backend, store).
	Config map[config.Key]string
}

// plan is a validated request, ready to write.
type plan struct {
	cfg      *config.Resolved
	st       *store.Store
	spec     *job.Spec
	handle   *job.Handle
	payload  []byte
	args     []byte
	manifest *pack.Manifest
	packOpts pack.Options
	env      map[string]string
	root     string             // the shipped root ("" when no working directory is shipped)
	reqs     *deps.Requirements // the filtered requirements (nil: none)
	// inContainer says the job runs in a container (a cluster, or container= locally).
	inContainer bool
	// shared, for a batch child: the function pickle stored once for the whole batch.
	shared *atomic.Pointer[job.BlobRef]
	// dataDone: the Data were uploaded already (a batch's, once for all its children).
	dataDone bool
}

// DefaultDebugWait is how long a debug job waits for a debugger, as the reference does.
const DefaultDebugWait = 10 * time.Minute

// Submit validates req, writes the job to the store and starts it. Bad input fails
// before anything is written; a failure after the first write removes what was written.
func (e *Engine) Submit(ctx context.Context, req *SubmitRequest) (*Job, error) {
	p, err := e.plan(ctx, req, nil)
	if err != nil {
		return nil, err
	}
	return e.submitPlanned(ctx, p, nil)
}

// submitPlanned writes a planned job and hands it to its backend; c, for the child of a
// batch (Template.Submit), says how.
func (e *Engine) submitPlanned(ctx context.Context, p *plan, c *Child) (*Job, error) {
	be, err := e.backendFor(p.handle, p.st)
	if err != nil {
		return nil, err
	}
	id := p.handle.JobID
	submit := be.Submit
	if backend.TraitsOf(p.handle.Backend).ObjectsNamedAfterJob {
		p.handle.K8sName = id
	}
	if c != nil {
		p.handle.GroupID, p.handle.GroupKind, p.handle.GroupIndex = c.GroupID, "map", strconv.Itoa(c.Index)
		if c.Record != nil {
			if err := c.Record(ctx, p.handle); err != nil {
				return nil, err
			}
		}
	}
	if err := e.write(ctx, p); err != nil {
		p.st.DeletePrefix(context.WithoutCancel(ctx), store.JobPrefix(id))
		return nil, err
	}
	// Children that run in a local container are started one by one, not queued to the
	// in-process workers.
	if q, ok := be.(backend.Queuer); ok && c != nil && c.Parallelism > 0 && p.spec.Container == "" {
		submit = func(ctx context.Context, h *job.Handle) error { return q.Enqueue(ctx, h, c.Parallelism) }
	}
	if err := submit(ctx, p.handle); err != nil {
		p.st.DeletePrefix(context.WithoutCancel(ctx), store.JobPrefix(id))
		return nil, fmt.Errorf("submit %s: %w", id, err)
	}
	return &Job{Handle: p.handle, Store: p.st, Backend: be}, nil
}

// plan validates req and plans its job; child, for the child of a batch, holds what was
// planned once for the batch (the tree, the environment, the image).
func (e *Engine) plan(ctx context.Context, req *SubmitRequest, child *childPlan) (*plan, error) {
	cfg, err := e.resolve(req.Config)
	if err != nil {
		return nil, err
	}
	acc := req.Accelerator
	if acc == "" {
		acc = "cpu"
	}
	spec, err := accel.Parse(acc)
	if err != nil {
		return nil, err
	}
	if req.Spot && !spec.Spot {
		if spec, err = accel.Parse(spec.Name + ":spot"); err != nil {
			return nil, err
		}
	}
	where, err := planBackend(cfg, spec)
	if err != nil {
		return nil, err
	}
	debug, err := debugSpec(req)
	if err != nil {
		return nil, err
	}
	timeout, err := timeoutSeconds(req.Timeout)
	if err != nil {
		return nil, err
	}
	cwd := req.Cwd
	if cwd == "" {
		if cwd, err = os.Getwd(); err != nil {
			return nil, fmt.Errorf("the current working directory cannot be read (%v): cd into an existing directory and submit again", err)
		}
	}
	if fi, err := os.Stat(cwd); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("working directory %q cannot be read: %v (run from a directory you can read)", cwd, err)
	}
	if req.Python == "" && req.Kind != job.KindCommand && backend.RunsOnThisMachine(where.Backend) && cfg.Get(config.Container) == "" && cfg.Get(config.Python) == "" {
		// kinetic run FILE.py::FUNC: the python3 on PATH, resolved through a shim
		// (pyenv's is a shell script, which warm workers cannot be made of).
		req.Python = e.pathPython()
	}
	if req.Python != "" && backend.RunsOnThisMachine(where.Backend) && cfg.Get(config.Container) == "" {
		// On this machine the interpreter must be the one asked for: falling back to
		// another Python would run the job with other packages, silently.
		if fi, err := os.Stat(req.Python); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return nil, fmt.Errorf("python %q is not an executable file: give the path of a Python 3 interpreter (e.g. $(command -v python3)), or leave it out", clip(req.Python))
		}
	}
	onHere := backend.RunsOnThisMachine(where.Backend)
	p := &plan{cfg: cfg, inContainer: !onHere || cfg.Get(config.Container) != ""}
	if onHere && spec.Kind != accel.CPU {
		e.noticeOnce(fmt.Sprintf("kinetic: the %s backend runs %s jobs on this machine's CPU: no %s is attached here (a cluster backend runs them on one: see kinetic up)\n",
			where.Backend, spec.Name, strings.ToUpper(string(spec.Kind))))
	}
	id := job.NewID()
	p.spec = &job.Spec{Version: job.SpecVersion, JobID: id, Kind: req.Kind, Python: req.Python, Accelerator: spec.Name, Spot: spec.Spot, Debug: debug, TimeoutSeconds: timeout}

	switch req.Kind {
	case job.KindPickle:
		p.payload = req.Payload
		if req.PayloadPath != "" {
			if p.payload, err = os.ReadFile(req.PayloadPath); err != nil {
				return nil, fmt.Errorf("payload: %w", err)
			}
		}
		if len(p.payload) == 0 {
			return nil, errors.New("empty payload: the function could not be pickled")
		}
		p.args = req.Args
		if child != nil && len(p.args) == 0 {
			return nil, errors.New("this input could not be pickled on the client")
		}
	case job.KindEntry:
		if req.Entry == nil || req.Entry.File == "" || req.Entry.Func == "" {
			return nil, errors.New("an entry needs FILE.py::FUNC")
		}
	case job.KindCommand:
		if len(req.Command) == 0 {
			return nil, errors.New("no command given after --")
		}
		for i, a := range req.Command {
			// The spec is JSON: bytes that are not UTF-8 would arrive changed.
			if !utf8.ValidString(a) {
				return nil, fmt.Errorf("command argument %d (%q) is not valid UTF-8, and would not reach the job unchanged: pass it in a file, or encode it (base64, say)", i, clip(a))
			}
		}
	default:
		return nil, fmt.Errorf("unknown job kind %q", req.Kind)
	}

	// Environment capture is validated now so a bad pattern writes nothing.
	warn := e.Warn
	if child != nil {
		warn = nil // said once for the whole batch
	}
	if p.env, err = captureEnv(req.CaptureEnv, req.Environ, warn); err != nil {
		return nil, err
	}
	for k := range p.env {
		p.spec.EnvNames = append(p.spec.EnvNames, k)
	}
	sortStrings(p.spec.EnvNames)

	p.spec.Command = req.Command
	if child != nil && child.dataDone {
		// A batch child: the batch's Data were planned and uploaded once; it carries
		// the ones its own input uses (and the volumes).
		p.spec.Data, p.dataDone = job.DataFor(child.base.Data, req.Args), true
	} else if p.spec.Data, err = planData(req); err != nil {
		return nil, err
	}
	if onHere && cfg.Get(config.Container) == "" {
		if err := volumesHere(p.spec.Data); err != nil {
			return nil, err
		}
	}
	// The store first: the tree's scan leaves out a file store inside the shipped root.
	st, err := e.Store(ctx, cfg.Get(config.Store))
	if err != nil {
		return nil, err
	}
	p.st = st
	if child != nil {
		// A batch child: the tree and the environment were planned once for the batch.
		base := child.base
		p.spec.Workdir, p.spec.Cwd, p.spec.Entry = base.Workdir, base.Cwd, base.Entry
		p.spec.Requirements, p.spec.Constraints, p.spec.EnvKey, p.spec.RequirementsSource = base.Requirements, base.Constraints, base.EnvKey, base.RequirementsSource
		p.root = child.root
		p.shared = &child.payload
		copyImage(p.spec, base)
	} else {
		if err := e.planTree(ctx, p, req, cwd, spec.Category()); err != nil {
			return nil, err
		}
		if err := e.planImage(ctx, p, req, p.reqs, spec.Category()); err != nil {
			return nil, err
		}
	}

	outDir := req.OutputDir
	if outDir == "" {
		outDir = cfg.Get(config.OutputDir)
	}
	if outDir == "" {
		outDir = defaultOutputDir(st, id)
	}
	p.spec.OutputDir = outDir
	name := req.FuncName
	if name == "" {
		switch req.Kind {
		case job.KindEntry:
			name = req.Entry.Func
		case job.KindCommand:
			name = filepath.Base(req.Command[0])
		}
	}
	display := req.DisplayName
	if display == "" {
		display = name
	}
	imageURI := req.ContainerImage
	if p.spec.Image != "" {
		imageURI = p.spec.Image // what the job really runs in (a digest for bundled images)
	}
	p.handle = &job.Handle{
		JobID: id, Backend: where.Backend, Project: where.Project,
		ClusterName: where.ClusterName, Zone: where.Zone, Namespace: where.Namespace,
		BucketName: st.Bucket(), K8sName: id, ImageURI: imageURI, Accelerator: spec.Name,
		FuncName: name, DisplayName: display, CreatedAt: time.Now().UTC().Format(time.RFC3339Nano),
		Debug: strconv.FormatBool(req.Debug), Store: st.URL(), OutputDir: outDir,
		Spot: strconv.FormatBool(spec.Spot), KubeContext: where.KubeContext, ShippedRoot: p.root,
	}
	if p.spec.TimeoutSeconds > 0 {
		p.handle.TimeoutSeconds = strconv.Itoa(p.spec.TimeoutSeconds)
	}
	return p, nil
}

// write puts the job's objects in the store; handle.json goes last, since its presence
// is what makes a job exist.
func (e *Engine) write(ctx context.Context, p *plan) error {
	id := p.handle.JobID
	if err := e.writeShared(ctx, p); err != nil {
		return err
	}
	if p.args != nil {
		// A batch child: the function is shared content, the arguments are its own.
		if len(p.args) <= job.InlineArgs {
			p.spec.ArgsInline = p.args
		} else {
			asum := sha256.Sum256(p.args)
			p.spec.Args = &job.BlobRef{Key: store.ArgsKey(id), SHA256: hex.EncodeToString(asum[:]), Size: int64(len(p.args))}
			if err := p.st.Put(ctx, store.ArgsKey(id), p.args); err != nil {
				return err
			}
		}
	}
	if len(p.env) > 0 {
		b, _ := json.Marshal(p.env)
		if err := p.st.Put(ctx, store.EnvKey(id), b); err != nil {
			return err
		}
	}
	if err := p.st.Put(ctx, store.SpecKey(id), p.spec.Encode()); err != nil {
		return err
	}
	p.handle.SubmittedAt = time.Now().UTC().Format(time.RFC3339Nano)
	return p.st.Put(ctx, store.HandleKey(id), p.handle.Encode())
}

// uploadData uploads the job's Data (once per content hash in the store), unless they
// were already (a batch child's).
func (e *Engine) uploadData(ctx context.Context, p *plan) error {
	if p.dataDone {
		return nil
	}
	for i := range p.spec.Data {
		r := &p.spec.Data[i]
		if r.Fuse && backend.RunsOnThisMachine(p.handle.Backend) && p.spec.Container == "" {
			continue // used in place on this machine
		}
		update, finish := e.progress(fmt.Sprintf("uploading Data(%q)", r.Source))
		err := data.Upload(ctx, p.st, r, update)
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
func (e *Engine) writeShared(ctx context.Context, p *plan) error {
	id := p.handle.JobID
	if err := e.writeTree(ctx, p); err != nil {
		return err
	}
	if err := e.uploadData(ctx, p); err != nil {
		return err
	}
	switch {
	case p.args != nil:
		if ref := p.sharedPayload(); ref != nil {
			p.spec.Payload = ref // stored by an earlier child: no request
			return nil
		}
		key, sum, err := p.st.PutBlob(ctx, p.payload)
		if err != nil {
			return err
		}
		p.spec.Payload = &job.BlobRef{Key: key, SHA256: sum, Size: int64(len(p.payload))}
		if p.shared != nil {
			p.shared.Store(p.spec.Payload)
		}
	case p.payload != nil:
		sum := sha256.Sum256(p.payload)
		p.spec.Payload = &job.BlobRef{Key: store.PayloadKey(id), SHA256: hex.EncodeToString(sum[:]), Size: int64(len(p.payload))}
		return p.st.Put(ctx, store.PayloadKey(id), p.payload)
	}
	return nil
}

// shippedRoot is the setting package_root, else the root detected from the code's
// directory (pack.FindRoot).
func shippedRoot(cfg *config.Resolved, req *SubmitRequest, cwd string) (string, error) {
	if r := cfg.Get(config.PackageRoot); r != "" {
		return r, nil
	}
	home, _ := os.UserHomeDir()
	return pack.FindRoot(codeDir(req, cwd), home), nil
}

// codeDir is the directory of the code being run: the function's file, the entry file,
// or else the working directory. Root detection and dependency discovery start there.
func codeDir(req *SubmitRequest, cwd string) string {
	if req.Kind == job.KindEntry && req.Entry != nil {
		f := req.Entry.File
		if !filepath.IsAbs(f) {
			f = filepath.Join(cwd, f)
		}
		return filepath.Dir(f)
	}
	if req.SourceFile != "" {
		if fi, err := os.Stat(req.SourceFile); err == nil && !fi.IsDir() {
			return filepath.Dir(req.SourceFile)
		}
	}
	return cwd
}

// Root returns the shipped root for code in sourceFile (the Python SDK pickles modules
// under it by value).
func (e *Engine) Root(sourceFile, cwd string) (string, error) {
	return shippedRoot(e.cfg, &SubmitRequest{SourceFile: sourceFile}, cwd)
}

func defaultOutputDir(st *store.Store, id string) string { return store.DefaultOutputDir(st.URL(), id) }

// planDeps discovers the job's requirements (from the function's directory up to the
// shipped root), drops the accelerator runtimes, says so, and keys the environment.
func (e *Engine) planDeps(p *plan, req *SubmitRequest, cwd, root, category string) error {
	s := p.spec
	reqs, err := deps.Discover(codeDir(req, cwd), root)
	if err != nil {
		return err
	}
	kept, dropped := reqs.Filtered()
	e.noticeOnce(deps.DroppedMessage(dropped, p.inContainer))
	s.Requirements, s.Constraints, s.RequirementsSource = kept.Lines(), kept.ConstraintLines(), reqs.Source
	p.reqs = kept
	// Locally the "base image" is the interpreter the environment is made from.
	base := "python:" + req.Python
	if req.Python == "" {
		base = "python:python3"
	}
	if p, err := filepath.EvalSymlinks(req.Python); err == nil {
		base = "python:" + p
	}
	s.EnvKey = deps.EnvKey(kept, base, category, version.Version)
	return nil
}

// DataArg is one Data(...) of a call.
type DataArg struct {
	Path              string
	Fuse              bool
	HFTrustRemoteCode bool
	Mount             string
}

// dataPaths are the local paths of the request's Data, left out of the shipped root.
func (r *SubmitRequest) dataPaths() []string {
	var out []string
	for _, d := range r.Data {
		if !strings.Contains(d.Path, "://") {
			out = append(out, d.Path)
		}
	}
	return out
}

// planData validates the call's Data; uploads happen in write.
func planData(req *SubmitRequest) ([]data.Ref, error) {
	var refs []data.Ref
	for i, d := range req.Data {
		r, err := data.Parse(d.Path, d.Fuse, d.HFTrustRemoteCode)
		if err != nil {
			return nil, fmt.Errorf("Data #%d: %w", i, err)
		}
		if d.Mount != "" {
			if !filepath.IsAbs(d.Mount) || filepath.Clean(d.Mount) == "/" {
				return nil, fmt.Errorf("volumes: mount path %q must be an absolute path other than /, e.g. /data", d.Mount)
			}
			r.Mount = filepath.Clean(d.Mount)
		}
		refs = append(refs, r)
	}
	return refs, nil
}

// volumesHere refuses volumes a job on this machine could not be given: they are
// mounted in a mount namespace of the job's own (internal/mountns), which this machine
// must allow, since nothing is ever made at their paths on the machine itself.
func volumesHere(refs []data.Ref) error {
	for _, r := range refs {
		if r.Mount == "" {
			continue
		}
		if err := mountns.Available(); err != nil {
			return fmt.Errorf("volumes: %s cannot be mounted for a job on this machine: %v; run the job in a container (container=\"podman\" or \"docker\"), which mounts volumes itself, or pass the Data as an argument (the function gets its path)", r.Mount, err)
		}
	}
	return nil
}

// packCache holds the hash cache and pack index that make resubmits incremental.
func packCache() string { return filepath.Join(config.DataDir(), "cache", "pack") }

// planTree packages the shipped root and plans the job's environment.
func (e *Engine) planTree(ctx context.Context, p *plan, req *SubmitRequest, cwd, category string) error {
	if req.NoWorkdir {
		if req.Kind == job.KindEntry {
			return errors.New("an entry job needs its working directory")
		}
		return nil
	}
	// The shipped root.
	root, err := shippedRoot(p.cfg, req, cwd)
	if err != nil {
		return err
	}
	// Kinetic's own state never ships: a KINETIC_HOME or file store inside the root
	// (a project that keeps them there, or a root that is the home directory) changes
	// while it is scanned, and holds every job.
	skip := append(req.dataPaths(), config.DataDir())
	if d := p.st.LocalDir(); d != "" {
		skip = append(skip, d)
	}
	p.packOpts = pack.Options{CacheDir: packCache(), Skip: pack.SkipPaths(root, cwd, skip),
		NoDefaultExcludes: p.cfg.Get(config.NoDefaultExcludes) == "true"}
	m, err := pack.Scan(ctx, root, p.packOpts)
	if err != nil {
		return fmt.Errorf("working directory %s: %w", root, err)
	}
	mb, _ := strconv.ParseFloat(p.cfg.Get(config.ContextSizeWarnMB), 64)
	threshold := int64(mb * (1 << 20))
	if msg := pack.SizeWarning(m, threshold); msg != "" {
		e.Warn(msg)
	}
	for i, n := range m.Notes {
		if i == 5 {
			e.Warn(fmt.Sprintf("... and %d more left out of the working directory", len(m.Notes)-i))
			break
		}
		e.Warn(n)
	}
	p.manifest, p.root = m, root
	if rel, err := filepath.Rel(root, cwd); err == nil && !strings.HasPrefix(rel, "..") {
		p.spec.Cwd = filepath.ToSlash(rel)
	}
	if req.Kind == job.KindEntry {
		f := req.Entry.File
		if !filepath.IsAbs(f) {
			f = filepath.Join(cwd, f)
		}
		if _, err := os.Stat(f); err != nil {
			return fmt.Errorf("entry file %s: %w", req.Entry.File, err)
		}
		rel, err := filepath.Rel(root, f)
		if err != nil || strings.HasPrefix(rel, "..") {
			return fmt.Errorf("entry file %s is outside the shipped root %s", req.Entry.File, root)
		}
		p.spec.Entry = &job.Entry{File: filepath.ToSlash(rel), Func: req.Entry.Func, Args: req.Entry.Args}
	}
	if req.Kind != job.KindCommand {
		if err := e.planDeps(p, req, cwd, root, category); err != nil {
			return err
		}
	}
	return nil
}

// writeTree uploads the planned working directory (only what the store lacks) and
// points the spec at its manifest.
func (e *Engine) writeTree(ctx context.Context, p *plan) error {
	if p.manifest == nil {
		return nil
	}
	update, finish := e.progress("uploading the working directory")
	uo := pack.UploadOptions{CacheDir: packCache(), Progress: update}
	{
		ref, stats, err := pack.Upload(ctx, p.st, p.manifest, uo)
		if errors.Is(err, pack.ErrFileChanged) {
			// A file changed between scan and upload: scan again, once.
			if p.manifest, err = pack.Scan(ctx, p.manifest.Root, p.packOpts); err == nil {
				ref, stats, err = pack.Upload(ctx, p.st, p.manifest, uo)
			}
		}
		finish(stats.UploadedBytes)
		if err != nil {
			return fmt.Errorf("upload the working directory: %w", err)
		}
		p.spec.Workdir = &job.BlobRef{Key: ref.Key, SHA256: ref.SHA256, Size: ref.Size, Format: job.FormatManifest}
	}
	p.manifest = nil
	return nil
}

// debugSpec validates the request's debug options and returns the spec's debug settings
// (nil when the job is not a debug job).
func debugSpec(req *SubmitRequest) (*job.DebugSpec, error) {
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

// planBackend returns where a job with accelerator spec runs: a handle with the backend's
// name and the cluster fields of cfg, as the factory of the configured backend settles
// them (Factory.Plan: the Kubernetes backends send a slice over several hosts to
// Pathways; the local backend refuses it, since it runs one host).
func planBackend(cfg *config.Resolved, spec accel.Spec) (*job.Handle, error) {
	name := cfg.Get(config.Backend)
	if name == "" {
		name = config.DefaultBackend
	}
	h := &job.Handle{Backend: name, Project: cfg.Get(config.Project), ClusterName: cfg.Get(config.Cluster),
		Zone: cfg.Get(config.Zone), Namespace: cfg.Get(config.Namespace), KubeContext: cfg.Get(config.KubeContext)}
	f, ok := backend.Lookup(name)
	if !ok {
		return nil, fmt.Errorf("unknown backend %q: this kinetic runs %s", name, strings.Join(backend.Names(), ", "))
	}
	if err := f.Plan(h, spec, settings{cfg}); err != nil {
		return nil, err
	}
	return h, nil
}

// sharedPayload is the batch's function pickle if an earlier child stored it.
func (p *plan) sharedPayload() *job.BlobRef {
	if p.shared == nil {
		return nil
	}
	return p.shared.Load()
}

// clip shortens a user's input echoed in an error: a 100 KB argument must not fill the
// terminal.
func clip(s string) string {
	const max = 200
	if len(s) <= max {
		return s
	}
	return s[:max] + fmt.Sprintf("... (%d bytes)", len(s))
}

// timeoutSeconds is a call's time limit in whole seconds (rounded up; 0 = none).
func timeoutSeconds(d time.Duration) (int, error) {
	if d < 0 {
		return 0, fmt.Errorf("timeout %s is negative: give a positive time limit for the call (e.g. 3600 seconds), or none", d)
	}
	return int((d + time.Second - 1) / time.Second), nil
}

// pathPython is the interpreter the python3 on PATH runs, found once per engine: itself
// when it is a binary, else (a script: pyenv's shims, asdf's, a wrapper) what it reports
// as sys.executable. "" when there is none, or it cannot tell.
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

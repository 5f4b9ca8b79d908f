package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// Warm pods (docs/kubernetes.md, "Warm pods"): the runner of a Kubernetes job whose pod
// may be kept does not exit when its job ends. It cleans up after the job, says in the
// store that it waits (WarmRecord, beside the job's result), and for WarmPodIdle takes
// the next job handed to it over HTTP (POST /take, through the apiserver's pod proxy;
// the engine that sends it claimed the pod first, so one job comes at a time). The
// runner never writes to the apiserver: the engine does all of that.

// WarmRecordKey is where a warm pod's runner says, once job id has ended, that it waits
// for another job (a WarmRecord).
func WarmRecordKey(id string) string { return store.JobPrefix(id) + "warm.json" }

// WarmTakenKey is written by a warm pod's runner when it accepts job id, before it
// answers: an engine that lost the answer learns from it whether the job was taken.
func WarmTakenKey(id string) string { return store.JobPrefix(id) + "warm-taken.json" }

// WarmRecord is what a warm pod's runner says once a job has ended.
type WarmRecord struct {
	Job   string    `json:"job"`   // the job that ended
	Pod   string    `json:"pod"`   // its pod's name (HOSTNAME)
	Port  int       `json:"port"`  // where the runner listens (pod proxy)
	Key   string    `json:"key"`   // the pod's warm key (its label, as the engine set it)
	Until time.Time `json:"until"` // it takes no job after this
	Since time.Time `json:"since"` // when it began to wait (its job's end)
	// Nonce must come with a job handed over: only a reader of the store can hand one.
	Nonce string `json:"nonce"`
}

// TakeRequest is the body of POST /take.
type TakeRequest struct {
	Job   string `json:"job"`
	Nonce string `json:"nonce"`
}

// Answers of the warm pod's runner besides 200 (taken): a refusal means the job was not
// taken and the engine may start it elsewhere.
const (
	// WarmRefusedStatus: not waiting for a job (busy, cleaning failed, window over,
	// wrong nonce). The job was not taken.
	WarmRefusedStatus = http.StatusConflict
)

// DefaultWarmPodPort is where a warm pod's runner listens.
const DefaultWarmPodPort = 8471

// warmPod is the runner's state between jobs.
type warmPod struct {
	mu    sync.Mutex
	nonce string
	until time.Time
	// state: "busy" (a job runs or is being cleaned up after), "ready" (takes a job),
	// "closed" (takes none again).
	state string
	ready chan struct{} // closed when the state leaves "busy"
	next  chan string   // the job handed over
}

func newWarmPod() *warmPod {
	return &warmPod{state: "busy", ready: make(chan struct{}), next: make(chan string, 1)}
}

// offer starts a new wait: until and nonce are the new job's record; the pod is busy
// (cleaning) until settle.
func (w *warmPod) offer(nonce string, until time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.nonce, w.until, w.state = nonce, until, "busy"
	w.ready = make(chan struct{})
}

// settle ends the clean-up: ok makes the pod take a job, else it takes none again.
func (w *warmPod) settle(ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if ok {
		w.state = "ready"
	} else {
		w.state = "closed"
	}
	close(w.ready)
}

// close makes every later take a refusal.
func (w *warmPod) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.state == "busy" {
		close(w.ready)
	}
	w.state = "closed"
}

// take hands job id over if the pod waits for one with this nonce. A take that comes
// while the runner still cleans up waits for it (a little).
func (w *warmPod) take(ctx context.Context, req TakeRequest, mark func(context.Context, string) error) (int, string) {
	w.mu.Lock()
	ready := w.ready
	w.mu.Unlock()
	select {
	case <-ready:
	case <-time.After(5 * time.Second):
		return WarmRefusedStatus, "still cleaning up after the last job"
	case <-ctx.Done():
		return WarmRefusedStatus, "the request ended"
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.state != "ready":
		return WarmRefusedStatus, "not waiting for a job (" + w.state + ")"
	case req.Nonce == "" || req.Nonce != w.nonce:
		return WarmRefusedStatus, "wrong nonce"
	case !job.ValidName(req.Job):
		return http.StatusBadRequest, "not a job ID"
	case time.Now().After(w.until):
		w.state = "closed"
		return WarmRefusedStatus, "the idle window is over"
	}
	// Recorded before the answer: an engine that loses the answer reads it.
	if err := mark(ctx, req.Job); err != nil {
		return WarmRefusedStatus, "cannot write to the store: " + err.Error()
	}
	w.state = "busy"
	w.ready = make(chan struct{})
	w.next <- req.Job
	return http.StatusOK, "taken"
}

// serve answers POST /take and POST /release (the engine has enough idle pods of this
// kind: the runner exits) on ln.
func (w *warmPod) serve(ln net.Listener, mark func(context.Context, string) error, release func()) *http.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /take", func(rw http.ResponseWriter, r *http.Request) {
		var req TakeRequest
		if err := json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&req); err != nil {
			http.Error(rw, "body is not a take request", http.StatusBadRequest)
			return
		}
		code, msg := w.take(r.Context(), req, mark)
		if code != http.StatusOK {
			fmt.Fprintf(os.Stderr, "kinetic: not taking job %s: %s\n", req.Job, msg)
		}
		http.Error(rw, msg, code)
	})
	mux.HandleFunc("POST /release", func(rw http.ResponseWriter, r *http.Request) {
		var req TakeRequest
		json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&req)
		w.mu.Lock()
		ok := w.state == "ready" && req.Nonce != "" && req.Nonce == w.nonce
		if ok {
			w.state = "closed"
		}
		w.mu.Unlock()
		if !ok {
			http.Error(rw, "not idle", WarmRefusedStatus)
			return
		}
		http.Error(rw, "released", http.StatusOK)
		release()
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	return srv
}

// runWarmPod runs the worker's job and then, while its pod is clean and wanted, the jobs
// handed to it (Worker.WarmPodIdle). Each job gets a workspace of its own under the
// worker's, a session of its own, and the pod's base environment plus its own.
func runWarmPod(ctx context.Context, st *store.Store, w Worker, o Options) error {
	p := newWarmPodRun(st, w, o)
	if srv := p.serve(); srv != nil {
		defer srv.Close()
	}
	for n, id := 0, o.JobID; ; n++ {
		if stop, err := p.job(ctx, n, id); stop {
			return err
		}
		next, ok := p.waitNext(ctx, id)
		if !ok {
			return nil
		}
		id = next
	}
}

// warmPodRun is a warm pod's runner: one job, then the jobs handed to it.
type warmPodRun struct {
	st       *store.Store
	w        Worker
	o        Options
	base     string // the worker's workspace: the jobs' are under it
	port     int
	pod      string
	tmp0     map[string]bool // /tmp before the first job
	mem0     memUse          // memory in use before the first job: the runner alone
	memErr   error
	wp       *warmPod
	released chan struct{} // closed when the pod is released
	once     sync.Once
}

// newWarmPodRun makes the runner this pod's reaper (else the pod is not kept warm) and
// notes what is there before the first job.
func newWarmPodRun(st *store.Store, w Worker, o Options) *warmPodRun {
	p := &warmPodRun{st: st, w: w, o: o, base: o.Workspace, port: w.WarmPodPort, pod: os.Getenv("HOSTNAME"), wp: newWarmPod(), released: make(chan struct{})}
	if p.base == "" {
		p.base = "/tmp/kinetic"
	}
	if p.port == 0 {
		p.port = DefaultWarmPodPort
	}
	if err := becomeSubreaper(); err != nil {
		fmt.Fprintf(os.Stderr, "kinetic: this pod will not be kept warm: %v\n", err)
		p.w.WarmPodIdle = 0
	}
	p.tmp0 = tmpEntries()
	p.mem0, p.memErr = readMemUse()
	return p
}

// serve listens for hand-overs while the pod is to be kept warm; nil when it is not.
func (p *warmPodRun) serve() *http.Server {
	ln, err := net.Listen("tcp", ":"+strconv.Itoa(p.port))
	if err != nil {
		fmt.Fprintf(os.Stderr, "kinetic: this pod will not be kept warm: listen on port %d: %v\n", p.port, err)
		p.w.WarmPodIdle = 0
		return nil
	}
	if p.w.WarmPodIdle <= 0 {
		ln.Close()
		return nil
	}
	return p.wp.serve(ln, p.markTaken, func() { p.once.Do(func() { close(p.released) }) })
}

// markTaken records that this pod took job id.
func (p *warmPodRun) markTaken(ctx context.Context, id string) error {
	b, _ := json.Marshal(map[string]string{"pod": os.Getenv("HOSTNAME"), "at": time.Now().UTC().Format(time.RFC3339Nano)})
	return p.st.Put(ctx, WarmTakenKey(id), b)
}

// job runs job id, the pod's nth; stop says the pod ends, with err.
func (p *warmPodRun) job(ctx context.Context, n int, id string) (stop bool, err error) {
	jo, offered := p.jobOptions(ctx, id)
	if n > 0 {
		fmt.Fprintf(os.Stderr, "kinetic: this warm pod takes job %s\n", id)
		if AlreadyFinal(ctx, p.st, id) {
			return true, nil // cancelled while handed over: its canceller deletes this pod
		}
	}
	env, err := Run(ctx, jo)
	if err != nil {
		p.wp.close()
		return true, err
	}
	if p.kept(ctx, jo.Workspace, *offered) {
		return false, nil
	}
	p.wp.close()
	if n == 0 && !env.Success {
		return true, ErrJobFailed
	}
	return true, nil
}

// jobOptions are the options of job id; offered is set once the pod has offered itself
// for the next job.
func (p *warmPodRun) jobOptions(ctx context.Context, id string) (jo Options, offered *bool) {
	jo = p.o
	jo.JobID = id
	jo.Workspace = filepath.Join(p.base, id)
	jo.Session = true
	offered = new(bool)
	if p.w.WarmPodIdle > 0 {
		// Said before the result, so the engine that sees the result finds it.
		jo.BeforeResult = func() { *offered = p.offer(ctx, id) }
	}
	return jo, offered
}

// offer records that the pod takes another job after job id, until its idle time ends.
func (p *warmPodRun) offer(ctx context.Context, id string) bool {
	nonce := newNonce()
	since := time.Now()
	until := since.Add(p.w.WarmPodIdle)
	p.wp.offer(nonce, until)
	rec, _ := json.Marshal(WarmRecord{Job: id, Pod: p.pod, Port: p.port, Key: p.w.WarmPodKey, Until: until.UTC(), Since: since.UTC(), Nonce: nonce})
	return p.st.Put(context.WithoutCancel(ctx), WarmRecordKey(id), rec) == nil
}

// kept cleans up after a job and says whether the pod takes another: offered, clean,
// within its memory, and not stopped.
func (p *warmPodRun) kept(ctx context.Context, workspace string, offered bool) bool {
	clean := cleanAfterJob(workspace, p.tmp0)
	if offered && clean == nil {
		clean = memoryAfterJob(p.mem0, p.memErr, p.w.WarmMemoryGrowth)
	}
	if clean != nil {
		fmt.Fprintf(os.Stderr, "kinetic: this pod is not kept for another job: %v\n", clean)
	}
	return offered && clean == nil && ctx.Err() == nil
}

// waitNext waits, after job ended, for the next job handed over; ok is false when the pod is to exit
// (none came in time, it was released, or ctx ended).
func (p *warmPodRun) waitNext(ctx context.Context, ended string) (id string, ok bool) {
	p.wp.settle(true)
	p.wp.mu.Lock()
	until := p.wp.until
	p.wp.mu.Unlock()
	fmt.Fprintf(os.Stderr, "kinetic: job %s ended and was cleaned up after; this pod waits for the next job until %s\n", ended, until.UTC().Format(time.RFC3339))
	timer := time.NewTimer(time.Until(until))
	defer timer.Stop()
	select {
	case id = <-p.wp.next:
		return id, true
	case <-timer.C:
		p.wp.close()
		fmt.Fprintf(os.Stderr, "kinetic: no job came within %s; this warm pod exits\n", p.w.WarmPodIdle)
	case <-p.released:
		fmt.Fprintln(os.Stderr, "kinetic: released (enough idle pods of this kind); this warm pod exits")
	case <-ctx.Done():
		p.wp.close()
	}
	return "", false
}

// cleanAfterJob removes what a job left (its workspace, the /tmp entries that were not
// there when the runner started) and reports a process of it that is still alive: the
// job's session was killed, so one alive left it (setsid, a double fork), and the pod
// must not take another job.
func cleanAfterJob(workspace string, tmp0 map[string]bool) error {
	var errs []error
	if err := os.RemoveAll(workspace); err != nil {
		errs = append(errs, fmt.Errorf("remove the job's workspace: %w", err))
	}
	for name := range tmpEntries() {
		if !tmp0[name] {
			if err := os.RemoveAll(filepath.Join(os.TempDir(), name)); err != nil {
				errs = append(errs, fmt.Errorf("remove the job's %s: %w", filepath.Join(os.TempDir(), name), err))
			}
		}
	}
	// SIGKILLed processes are gone within milliseconds on an idle node; on a loaded one
	// their exit can take longer, and a pod given up for that is a cold start for the
	// next job. The wait is only spent when something is still there.
	if left := survivors(3 * time.Second); len(left) > 0 {
		errs = append(errs, fmt.Errorf("processes the job started are still running (%s)", strings.Join(left, ", ")))
	}
	return errors.Join(errs...)
}

// tmpEntries names what is in the temporary directory.
func tmpEntries() map[string]bool {
	out := map[string]bool{}
	ents, _ := os.ReadDir(os.TempDir())
	for _, e := range ents {
		out[e.Name()] = true
	}
	return out
}

// survivors reaps the runner's dead children and names those still alive after wait
// (the watchdog of a job's group ends at once; anything else is the job's).
func survivors(wait time.Duration) []string {
	deadline := time.Now().Add(wait)
	for {
		var alive []string
		for _, p := range children() {
			var ws syscall.WaitStatus
			if got, _ := syscall.Wait4(p.pid, &ws, syscall.WNOHANG, nil); got == p.pid {
				continue // it was a zombie: reaped
			}
			alive = append(alive, fmt.Sprintf("%d %s", p.pid, p.comm))
		}
		if len(alive) == 0 || time.Now().After(deadline) {
			return alive
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type proc struct {
	pid  int
	comm string
}

// children lists the processes whose parent is this one, from /proc.
func children() []proc {
	self := os.Getpid()
	ents, _ := os.ReadDir("/proc")
	var out []proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); ppid == self {
			comm := s[strings.IndexByte(s, '(')+1 : i]
			out = append(out, proc{pid, comm})
		}
	}
	return out
}

func newNonce() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

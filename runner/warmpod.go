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
	base := o.Workspace
	if base == "" {
		base = "/tmp/kinetic"
	}
	port := w.WarmPodPort
	if port == 0 {
		port = DefaultWarmPodPort
	}
	if err := becomeSubreaper(); err != nil {
		fmt.Fprintf(os.Stderr, "kinetic: this pod will not be kept warm: %v\n", err)
		w.WarmPodIdle = 0
	}
	tmp0 := tmpEntries()
	mem0, memErr := readMemUse() // before the first job: the runner alone
	ln, err := net.Listen("tcp", ":"+strconv.Itoa(port))
	if err != nil {
		fmt.Fprintf(os.Stderr, "kinetic: this pod will not be kept warm: listen on port %d: %v\n", port, err)
		w.WarmPodIdle = 0
	}
	wp := newWarmPod()
	released := make(chan struct{})
	var once sync.Once
	mark := func(ctx context.Context, id string) error {
		b, _ := json.Marshal(map[string]string{"pod": os.Getenv("HOSTNAME"), "at": time.Now().UTC().Format(time.RFC3339Nano)})
		return st.Put(ctx, WarmTakenKey(id), b)
	}
	if ln != nil && w.WarmPodIdle > 0 {
		srv := wp.serve(ln, mark, func() { once.Do(func() { close(released) }) })
		defer srv.Close()
	} else if ln != nil {
		ln.Close()
	}
	pod := os.Getenv("HOSTNAME")
	id := o.JobID
	for n := 0; ; n++ {
		jo := o
		jo.JobID = id
		jo.Workspace = filepath.Join(base, id)
		jo.Session = true
		offered := false
		if w.WarmPodIdle > 0 {
			jo.BeforeResult = func() {
				// Said before the result, so the engine that sees the result finds it.
				nonce := newNonce()
				since := time.Now()
				until := since.Add(w.WarmPodIdle)
				wp.offer(nonce, until)
				rec, _ := json.Marshal(WarmRecord{Job: id, Pod: pod, Port: port, Key: w.WarmPodKey, Until: until.UTC(), Since: since.UTC(), Nonce: nonce})
				offered = st.Put(context.WithoutCancel(ctx), WarmRecordKey(id), rec) == nil
			}
		}
		if n > 0 {
			fmt.Fprintf(os.Stderr, "kinetic: this warm pod takes job %s\n", id)
			if AlreadyFinal(ctx, st, id) {
				return nil // cancelled while handed over: its canceller deletes this pod
			}
		}
		env, err := Run(ctx, jo)
		if err != nil {
			wp.close()
			return err
		}
		clean := cleanAfterJob(jo.Workspace, tmp0)
		if offered && clean == nil {
			clean = memoryAfterJob(mem0, memErr, w.WarmMemoryGrowth)
		}
		if clean != nil {
			fmt.Fprintf(os.Stderr, "kinetic: this pod is not kept for another job: %v\n", clean)
		}
		if !offered || clean != nil || ctx.Err() != nil {
			wp.close()
			if n == 0 && !env.Success {
				return ErrJobFailed
			}
			return nil
		}
		wp.settle(true)
		wp.mu.Lock()
		until := wp.until
		wp.mu.Unlock()
		fmt.Fprintf(os.Stderr, "kinetic: job %s ended and was cleaned up after; this pod waits for the next job until %s\n", id, until.UTC().Format(time.RFC3339))
		timer := time.NewTimer(time.Until(until))
		select {
		case id = <-wp.next:
			timer.Stop()
		case <-timer.C:
			wp.close()
			fmt.Fprintf(os.Stderr, "kinetic: no job came within %s; this warm pod exits\n", w.WarmPodIdle)
			return nil
		case <-released:
			timer.Stop()
			fmt.Fprintln(os.Stderr, "kinetic: released (enough idle pods of this kind); this warm pod exits")
			return nil
		case <-ctx.Done():
			wp.close()
			return nil
		}
	}
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

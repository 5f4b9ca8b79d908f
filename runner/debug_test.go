package runner

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

func TestDebugOnlyOnTheLeaderOfPythonJobs(t *testing.T) {
	dbg := &job.DebugSpec{WaitSeconds: 60}
	for name, tc := range map[string]struct {
		spec job.Spec
		host string
		port int
		want bool
	}{
		"leader, any free port": {job.Spec{Kind: job.KindPickle, Debug: dbg}, "0", 0, true},
		"leader, port 5678":     {job.Spec{Kind: job.KindPickle, Debug: dbg}, "0", DefaultDebugPort, true},
		"entry":                 {job.Spec{Kind: job.KindEntry, Debug: dbg}, "0", 0, true},
		"other host":            {job.Spec{Kind: job.KindPickle, Debug: dbg}, "1", 0, false},
		"not debug":             {job.Spec{Kind: job.KindPickle}, "0", 0, false},
		"command job":           {job.Spec{Kind: job.KindCommand, Debug: dbg}, "0", 0, false},
	} {
		t.Run(name, func(t *testing.T) {
			d := newDebugSession(&tc.spec, Options{Host: tc.host, Workspace: t.TempDir(), DebugPort: tc.port}, t.TempDir())
			if (d != nil) != tc.want {
				t.Fatalf("debug session: %v, want %v", d != nil, tc.want)
			}
			if d == nil {
				return
			}
			env := strings.Join(d.env, "\n")
			for _, want := range []string{"KINETIC_DEBUGPY_PORT=" + strconv.Itoa(tc.port) + "\n", "KINETIC_DEBUGPY_WAIT=60\n", "KINETIC_DEBUGPY_READY=", "KINETIC_DEBUGPY_LIB="} {
				if !strings.Contains(env, want) {
					t.Errorf("env lacks %q:\n%s", want, env)
				}
			}
		})
	}
}

// TestDebugWatchWritesTheMarker: the bootstrap's ready file becomes debug.json in the
// store, with the worker's tree for the path mappings; once the bootstrap says a
// debugger attached, debug.json says when (the other hosts wait for that).
func TestDebugWatchWritesTheMarker(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	id := job.NewID()
	spec := &job.Spec{Kind: job.KindPickle, Debug: &job.DebugSpec{WaitSeconds: 30}}
	o := Options{JobID: id, Host: "0", Workspace: t.TempDir()}
	out := t.TempDir()
	d := newDebugSession(spec, o, out)
	done := make(chan struct{})
	go func() { d.watch(ctx, st, spec, o, "/w/root", "/w/root/src", os.Stderr); close(done) }()
	os.WriteFile(filepath.Join(out, "debugpy.json"), []byte(`{"host": "127.0.0.1", "port": 40001, "pid": 7}`), 0o644)
	marker := func() *job.DebugMarker {
		t.Helper()
		raw, err := st.Get(ctx, store.DebugKey(id))
		if err != nil {
			return nil
		}
		m, err := job.DecodeDebugMarker(raw)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	deadline := time.Now().Add(10 * time.Second)
	var m *job.DebugMarker
	for m = marker(); m == nil; m = marker() {
		if time.Now().After(deadline) {
			t.Fatal("no marker written")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if m.Port != 40001 || m.PID != 7 || m.RemoteRoot != "/w/root" || m.Cwd != "/w/root/src" || m.HostIndex != "0" || m.WaitSeconds != 30 || m.AttachedAt != nil {
		t.Fatalf("marker = %+v", m)
	}
	select {
	case <-done:
		t.Fatal("the watch ended before a debugger attached")
	case <-time.After(200 * time.Millisecond):
	}
	os.WriteFile(filepath.Join(out, "debugpy.json"), []byte(`{"host": "127.0.0.1", "port": 40001, "pid": 7, "attached": true}`), 0o644)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the attach was not announced")
	}
	got := marker()
	if got.AttachedAt == nil || got.AttachedAt.Before(got.Time) || !got.Time.Equal(m.Time) || got.Port != 40001 {
		t.Fatalf("marker after the attach = %+v (before: %+v)", got, m)
	}
}

// TestWorkerWaitsForTheLeadersDebugger: a non-leader host of a multi-host debug job does
// not call the function until debug.json says a debugger attached to the leader; if the
// job ends first (no debugger came), it never calls it and writes nothing.
func TestWorkerWaitsForTheLeadersDebugger(t *testing.T) {
	py := realPython(t, false)
	ctx := context.Background()
	url := "file://" + t.TempDir()
	st, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	called := filepath.Join(t.TempDir(), "called")
	newJob := func(name string) (string, string) {
		id := "job-debugwait-" + name
		ws := filepath.Join(t.TempDir(), id)
		root := filepath.Join(ws, "root")
		if err := os.MkdirAll(root, 0o755); err != nil {
			t.Fatal(err)
		}
		src := "def f():\n    open(" + strconv.Quote(called+"-"+name) + ", 'w').write('x')\n    return 1\n"
		if err := os.WriteFile(filepath.Join(root, "main.py"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		spec := &job.Spec{Version: job.SpecVersion, JobID: id, Kind: job.KindEntry, Python: py,
			Entry: &job.Entry{File: "main.py", Func: "f"}, Debug: &job.DebugSpec{WaitSeconds: 60}}
		if err := st.Put(ctx, store.SpecKey(id), spec.Encode()); err != nil {
			t.Fatal(err)
		}
		return id, ws
	}
	hostLog := func(id string) string {
		objs, _ := st.List(ctx, store.HostLogsPrefix(id, "1"))
		var b strings.Builder
		for _, o := range objs {
			raw, _ := st.Get(ctx, o.Key)
			b.Write(raw)
		}
		return b.String()
	}
	// run starts host 1 of job id, waits until it says it waits, and checks that it has
	// not called the function.
	run := func(id, ws, name string) (chan *job.Envelope, *syncBuffer) {
		out := &syncBuffer{mark: "waits for the leader's debugger", seen: make(chan struct{})}
		done := make(chan *job.Envelope, 1)
		go func() {
			env, err := Run(ctx, Options{StoreURL: url, JobID: id, Workspace: ws, Host: "1", Stdout: out})
			if err != nil {
				t.Error(err)
			}
			done <- env
		}()
		select {
		case <-out.seen:
		case env := <-done:
			t.Fatalf("host 1 ran without waiting: %+v\n%s", env, out.String())
		case <-time.After(30 * time.Second):
			t.Fatalf("host 1 did not say it waits:\n%s", out.String())
		}
		time.Sleep(1500 * time.Millisecond)
		if _, err := os.Stat(called + "-" + name); err == nil {
			t.Fatalf("host 1 called the function before the leader's debugger attached:\n%s", out.String())
		}
		return done, out
	}

	t.Run("attached", func(t *testing.T) {
		id, ws := newJob("attached")
		done, out := run(id, ws, "attached")
		// debug.json without AttachedAt: the leader still waits.
		m := &job.DebugMarker{Host: "127.0.0.1", Port: 5678, RemoteRoot: "/w/root", HostIndex: "0", Time: time.Now().UTC(), WaitSeconds: 60}
		if err := st.Put(ctx, store.DebugKey(id), m.Encode()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1500 * time.Millisecond)
		if _, err := os.Stat(called + "-attached"); err == nil {
			t.Fatal("host 1 called the function while the leader still waited for its debugger")
		}
		now := time.Now().UTC()
		m.AttachedAt = &now
		if err := st.Put(ctx, store.DebugKey(id), m.Encode()); err != nil {
			t.Fatal(err)
		}
		select {
		case env := <-done:
			if env == nil || !env.Success {
				t.Fatalf("envelope %+v\n%s", env, out.String())
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("host 1 still waits after the attach:\n%s", out.String())
		}
		if _, err := os.Stat(called + "-attached"); err != nil {
			t.Errorf("host 1 did not call the function after the attach:\n%s", out.String())
		}
		if !strings.Contains(hostLog(id), "waits for the leader's debugger") {
			t.Errorf("host 1's log in the store: %q", hostLog(id))
		}
	})

	t.Run("the leader went on without a debugger", func(t *testing.T) {
		id, ws := newJob("wenton")
		done, out := run(id, ws, "wenton")
		now := time.Now().UTC()
		m := &job.DebugMarker{Host: "127.0.0.1", Port: 5678, RemoteRoot: "/w/root", HostIndex: "0", Time: now, WaitSeconds: 60, WentOnAt: &now}
		if err := st.Put(ctx, store.DebugKey(id), m.Encode()); err != nil {
			t.Fatal(err)
		}
		select {
		case env := <-done:
			if env == nil || !env.Success {
				t.Fatalf("envelope %+v\n%s", env, out.String())
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("host 1 still waits after the leader went on:\n%s", out.String())
		}
		if _, err := os.Stat(called + "-wenton"); err != nil {
			t.Errorf("host 1 did not call the function after the leader went on:\n%s", out.String())
		}
		if !strings.Contains(out.String(), "calls the function without one") {
			t.Errorf("host 1's output does not say why it goes on:\n%s", out.String())
		}
	})

	t.Run("the leader gave up", func(t *testing.T) {
		id, ws := newJob("ended")
		done, out := run(id, ws, "ended")
		env := &job.Envelope{Success: false, Phase: "debugger", Host: "0", ExcType: "builtins.TimeoutError", ExcMessage: "no debugger attached within 60s (debug_wait)"}
		if err := st.Put(ctx, store.EnvelopeKey(id), env.Encode()); err != nil {
			t.Fatal(err)
		}
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("host 1 still waits after the job ended:\n%s", out.String())
		}
		if _, err := os.Stat(called + "-ended"); err == nil {
			t.Error("host 1 called the function of a job that had ended")
		}
		if ok, _ := st.Exists(ctx, store.HostEnvelopeKey(id, "1")); ok {
			t.Error("host 1 wrote a failure envelope: the leader's verdict must stand alone")
		}
		if !strings.Contains(out.String(), "before a debugger attached to its leader") {
			t.Errorf("host 1's output does not say why it stops:\n%s", out.String())
		}
	})
}

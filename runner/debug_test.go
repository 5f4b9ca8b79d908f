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
// store, with the worker's tree for the path mappings.
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
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("no marker written")
	}
	raw, err := st.Get(ctx, store.DebugKey(id))
	if err != nil {
		t.Fatal(err)
	}
	m, err := job.DecodeDebugMarker(raw)
	if err != nil {
		t.Fatal(err)
	}
	if m.Port != 40001 || m.PID != 7 || m.RemoteRoot != "/w/root" || m.Cwd != "/w/root/src" || m.HostIndex != "0" || m.WaitSeconds != 30 {
		t.Fatalf("marker = %+v", m)
	}
}

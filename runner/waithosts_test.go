package runner

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// TestLeaderWaitsForTheOtherHosts: the leader of a multi-host job whose call has ended
// writes the job's envelope only once every other host has ended. A worker that starts
// after the leader's call (TestPathwaysTwoHosts' worker pod came up late on a loaded
// node) therefore still runs, and its output is in the store when the job's value is;
// a host that fails while the leader waits fails the job (no value from the leader); a
// verdict recorded meanwhile (cancel) ends the wait; so does the pod's end.
func TestLeaderWaitsForTheOtherHosts(t *testing.T) {
	ctx := context.Background()
	url := "file://" + t.TempDir()
	st, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	newJob := func(name string) string {
		id := "job-waithosts" + strings.Repeat("0", 14-len(name)) + name
		script := `echo "from host $KINETIC_HOST_INDEX"; [ "$KINETIC_HOST_INDEX" != 2 ] || exit 3`
		spec := &job.Spec{Version: job.SpecVersion, Kind: job.KindCommand, Command: []string{"sh", "-c", script}}
		if err := st.Put(ctx, store.SpecKey(id), spec.Encode()); err != nil {
			t.Fatal(err)
		}
		return id
	}
	type ran struct {
		env *job.Envelope
		err error
	}
	start := func(ctx context.Context, id, host string, hosts int) chan ran {
		done := make(chan ran, 1)
		go func() {
			env, err := Run(ctx, Options{StoreURL: url, JobID: id, Workspace: t.TempDir(), Host: host, Hosts: hosts})
			done <- ran{env, err}
		}()
		return done
	}
	logs := func(prefix string) string {
		objs, _ := st.List(ctx, prefix)
		var b strings.Builder
		for _, o := range objs {
			raw, _ := st.Get(ctx, o.Key)
			b.Write(raw)
		}
		return b.String()
	}
	wait := func(t *testing.T, done chan ran, what string) ran {
		t.Helper()
		select {
		case r := <-done:
			return r
		case <-time.After(60 * time.Second):
			t.Fatalf("%s did not end", what)
			return ran{}
		}
	}

	t.Run("a worker that starts after the leader's call", func(t *testing.T) {
		id := newJob("late")
		leader := start(ctx, id, "0", 2)
		// The leader's call ends at once; the worker is not there yet.
		time.Sleep(1500 * time.Millisecond)
		if ok, _ := st.Exists(ctx, store.EnvelopeKey(id)); ok {
			t.Fatal("the leader wrote the job's envelope while host 1 had not run: the job ended without it")
		}
		select {
		case r := <-leader:
			t.Fatalf("the leader ended before host 1 ran: %+v %v", r.env, r.err)
		default:
		}
		// The late worker is not told the job is over: it runs.
		if done, err := HostAlreadyRan(ctx, Options{Store: st, JobID: id, Host: "1"}); err != nil || done {
			t.Fatalf("host 1 starting after the leader's call: already ran = %v (%v), want a run", done, err)
		}
		w := wait(t, start(ctx, id, "1", 2), "host 1")
		if w.err != nil || !w.env.Success {
			t.Fatalf("host 1: %+v %v", w.env, w.err)
		}
		r := wait(t, leader, "the leader")
		if r.err != nil || !r.env.Success {
			t.Fatalf("leader: %+v %v", r.env, r.err)
		}
		raw, err := st.Get(ctx, store.EnvelopeKey(id))
		if err != nil {
			t.Fatalf("the job's envelope: %v", err)
		}
		if env, err := job.DecodeEnvelope(raw); err != nil || !env.Success || env.Host != "0" {
			t.Errorf("the job's envelope: %+v %v", env, err)
		}
		if got := logs(store.HostLogsPrefix(id, "1")); !strings.Contains(got, "from host 1") {
			t.Errorf("host 1's output in the store: %q", got)
		}
		if got := logs(store.LogsPrefix(id)); !strings.Contains(got, "from host 0") {
			t.Errorf("the leader's output: %q", got)
		}
	})

	t.Run("a host fails while the leader waits", func(t *testing.T) {
		id := newJob("fails")
		leader := start(ctx, id, "0", 3)
		if w := wait(t, start(ctx, id, "1", 3), "host 1"); w.err != nil || !w.env.Success {
			t.Fatalf("host 1: %+v %v", w.env, w.err)
		}
		if w := wait(t, start(ctx, id, "2", 3), "host 2"); w.err != nil || w.env.Success {
			t.Fatalf("host 2 should have failed: %+v %v", w.env, w.err)
		}
		if r := wait(t, leader, "the leader"); r.err != nil {
			t.Fatal(r.err)
		}
		if ok, _ := st.Exists(ctx, store.EnvelopeKey(id)); ok {
			t.Error("the leader wrote a result although host 2 failed: the job would read SUCCEEDED")
		}
		if got := logs(store.LogsPrefix(id)); !strings.Contains(got, "host 2 failed") {
			t.Errorf("the leader's output does not say why it stopped: %q", got)
		}
	})

	t.Run("the job is judged while the leader waits", func(t *testing.T) {
		id := newJob("judged")
		leader := start(ctx, id, "0", 2)
		time.Sleep(500 * time.Millisecond)
		raw, _ := json.Marshal(job.Status{State: job.Failed, Reason: "cancelled", UpdatedAt: time.Now().UTC()})
		if err := st.Put(ctx, store.StatusKey(id), raw); err != nil {
			t.Fatal(err)
		}
		if r := wait(t, leader, "the leader"); r.err != nil {
			t.Fatal(r.err)
		}
		if ok, _ := st.Exists(ctx, store.EnvelopeKey(id)); ok {
			t.Error("the leader wrote a result over a recorded verdict")
		}
	})

	t.Run("the leader's pod ends while it waits", func(t *testing.T) {
		id := newJob("stopped")
		cctx, cancel := context.WithCancel(ctx)
		leader := start(cctx, id, "0", 2)
		time.Sleep(500 * time.Millisecond)
		cancel()
		r := wait(t, leader, "the leader")
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.env.Success || r.env.Phase != job.PhaseCall || !strings.Contains(r.env.ExcMessage, "stopped") {
			t.Errorf("envelope of a leader stopped while it waited: %+v", r.env)
		}
	})

	t.Run("one host", func(t *testing.T) {
		id := newJob("one")
		r := wait(t, start(ctx, id, "0", 1), "a one-host job")
		if r.err != nil || !r.env.Success {
			t.Fatalf("%+v %v", r.env, r.err)
		}
	})
}

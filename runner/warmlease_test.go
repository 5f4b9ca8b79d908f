package runner

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/job"
)

// leased waits for the lease LeaseAhead is taking and returns its spare's pid.
func leased(t *testing.T) int {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		warmLease.Lock()
		pid, held, busy := warmLease.pid, warmLease.conn != nil, warmLease.renewing != nil
		warmLease.Unlock()
		if held {
			return pid
		}
		if !busy {
			t.Fatal("no lease was taken")
		}
	}
	t.Fatal("the lease was not taken within 10s")
	return 0
}

// startedServer is h's warm server for this process's environment, started.
func startedServer(t *testing.T, h *harness) *warmServer {
	t.Helper()
	w, err := warmFor(h.warm, h.py, os.Environ())
	if err != nil {
		t.Fatal(err)
	}
	conn, err := w.connect(context.Background()) // starts it
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	return w
}

func TestWarmLease(t *testing.T) {
	h := newHarness(t)
	h.lease = true
	t.Cleanup(releaseLease)
	h.value(h.entry(pidsSrc, "pids", nil)) // the server this process leases from
	server := h.serverPID()

	t.Run("the call runs in the leased spare", func(t *testing.T) {
		spare := leased(t)
		pid, ppid := pids(t, h.value(h.entry(pidsSrc, "pids", nil)))
		if pid != spare || ppid != server {
			t.Errorf("call ran in %d (parent %d), want the leased spare %d of server %d", pid, ppid, spare, server)
		}
	})

	t.Run("nothing of one leased call reaches the next", func(t *testing.T) {
		spare := leased(t)
		if got := h.value(h.entry(leakSrc, "leak", nil)); got != fmt.Sprint(spare) {
			t.Fatalf("leak ran in %s, want the leased spare %d", got, spare)
		}
		spare = leased(t)
		if got := h.value(h.entry(leakSrc, "check", nil)); !leakFree(got, spare, server) {
			t.Errorf("after a leased call leaked state, the next leased call saw %s, want nothing of it, run in the leased spare %d of server %d", got, spare, server)
		}
	})

	t.Run("a leased spare that died is replaced, and the call runs once", func(t *testing.T) {
		spare := leased(t)
		syscall.Kill(spare, syscall.SIGKILL)
		if !gone(spare, 3*time.Second) {
			t.Fatalf("spare %d survived SIGKILL", spare)
		}
		count := filepath.Join(t.TempDir(), "count")
		src := fmt.Sprintf(`
import os
def once():
    with open(%q, "a") as f:
        f.write("x")
    return os.getpid()
`, count)
		got := h.value(h.entry(src, "once", nil))
		if got == fmt.Sprint(spare) {
			t.Errorf("the call ran in the dead spare %d", spare)
		}
		if b, _ := os.ReadFile(count); string(b) != "x" {
			t.Errorf("the call ran %d times, want once", len(b))
		}
	})

	t.Run("a lease given back ends its spare", func(t *testing.T) {
		spare := leased(t)
		releaseLease()
		if !gone(spare, 3*time.Second) {
			t.Errorf("spare %d still alive after its lease was given back", spare)
		}
		if pid := childOf(server, 0); pid == spare {
			t.Errorf("spare %d is still the server's child", spare)
		}
	})
}

// A runner that dies while its leased spare runs the call: the server, which never
// reads the leased connection, sees it close and kills the call's process group.
func TestWarmLeasedRunnerDeathKillsJob(t *testing.T) {
	h := newHarness(t)
	t.Cleanup(releaseLease)
	w := startedServer(t, h)
	warmLease.Lock()
	warmLease.last = w
	warmLease.Unlock()
	LeaseAhead()
	spare := leased(t)
	conn := takeLease(w)
	if conn == nil {
		t.Fatal("takeLease returned no lease")
	}
	runnerDies(t, conn, spare)
}

// A leased spare given a request it cannot run says so and runs nothing (the runner
// then asks the server, as without a lease), and exits.
func TestWarmLeasedSpareRefusesABadRequest(t *testing.T) {
	h := newHarness(t)
	t.Cleanup(releaseLease)
	w := startedServer(t, h)
	w.renewLease()
	spare := leased(t)
	conn := takeLease(w)
	if conn == nil {
		t.Fatal("takeLease returned no lease")
	}
	defer conn.Close()
	pr, pw, _ := os.Pipe()
	defer pr.Close()
	if _, _, err := conn.WriteMsgUnix([]byte{'K'}, syscall.UnixRights(int(pw.Fd())), nil); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	fmt.Fprintf(conn, "{\"v\":%d,\"argv\":\"not a list\",\"env\":{},\"cwd\":\"/\"}\n", warmProto)
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := io.ReadAll(conn)
	if !strings.Contains(string(line), `"error": "bad request: bad argv"`) || strings.Contains(string(line), `"pid"`) {
		t.Errorf("reply %q (%v), want a bad request error and no pid", line, err)
	}
	if !gone(spare, 3*time.Second) {
		t.Errorf("spare %d still alive after refusing its request", spare)
	}
}

// A leased call is cancelled as any call is: SIGTERM to its group, and it is gone.
func TestWarmLeasedCallCancel(t *testing.T) {
	h := newHarness(t)
	h.lease = true
	t.Cleanup(releaseLease)
	h.value(h.entry(pidsSrc, "pids", nil))
	spare := leased(t)
	src := `
import os, time
def sleep():
    print("started %d ." % os.getpid(), flush=True)
    time.sleep(60)
`
	id := h.entry(src, "sleep", nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &syncBuffer{mark: " .", seen: make(chan struct{})}
	done := make(chan *job.Envelope, 1)
	go func() {
		env, _ := Run(ctx, Options{StoreURL: h.url, JobID: id, Workspace: filepath.Join(h.ws, id), Stdout: out, WarmDir: h.warm, Grace: time.Second, LeaseSpare: true})
		done <- env
	}()
	select {
	case <-out.seen:
	case <-time.After(20 * time.Second):
		t.Fatalf("the leased call did not start\n%s", out)
	}
	var pid int
	if _, err := fmt.Sscanf(out.String()[strings.Index(out.String(), "started"):], "started %d", &pid); err != nil || pid != spare {
		t.Fatalf("call ran in %d (%v), want the leased spare %d", pid, err, spare)
	}
	cancel()
	select {
	case env := <-done:
		if env == nil || env.Success || !strings.Contains(env.ExcMessage, "cancelled") {
			t.Errorf("envelope %+v, want a cancelled failure", env)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled leased call still runs after 10s")
	}
	if !gone(pid, 3*time.Second) {
		t.Errorf("leased call %d still alive after its cancel", pid)
	}
}

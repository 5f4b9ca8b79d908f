package runner

import (
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestWarmPodTake(t *testing.T) {
	ctx := context.Background()
	var marked []string
	mark := func(_ context.Context, id string) error { marked = append(marked, id); return nil }
	w := newWarmPod()
	w.offer("n1", time.Now().Add(time.Minute))

	// While the runner cleans up, a take waits; a failed clean-up refuses it.
	done := make(chan int)
	go func() {
		code, _ := w.take(ctx, TakeRequest{Job: "job-a", Nonce: "n1"}, mark)
		done <- code
	}()
	time.Sleep(50 * time.Millisecond)
	w.settle(false)
	if code := <-done; code != WarmRefusedStatus {
		t.Errorf("take after an unclean job: %d, want %d", code, WarmRefusedStatus)
	}

	w = newWarmPod()
	w.offer("n2", time.Now().Add(time.Minute))
	w.settle(true)
	if code, msg := w.take(ctx, TakeRequest{Job: "job-a", Nonce: "wrong"}, mark); code != WarmRefusedStatus {
		t.Errorf("take with a wrong nonce: %d %s", code, msg)
	}
	if code, msg := w.take(ctx, TakeRequest{Job: "../etc", Nonce: "n2"}, mark); code != http.StatusBadRequest {
		t.Errorf("take of a bad job ID: %d %s", code, msg)
	}

	// Two takes at once: exactly one job is handed over.
	var wg sync.WaitGroup
	codes := make(chan int, 2)
	for _, id := range []string{"job-one", "job-two"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, _ := w.take(ctx, TakeRequest{Job: id, Nonce: "n2"}, mark)
			codes <- code
		}()
	}
	wg.Wait()
	close(codes)
	ok := 0
	for c := range codes {
		if c == http.StatusOK {
			ok++
		}
	}
	if ok != 1 || len(w.next) != 1 || len(marked) != 1 {
		t.Errorf("two takes at once: %d taken, %d handed over, %d marked; want 1 each", ok, len(w.next), len(marked))
	}

	// Past its window the pod takes nothing.
	w = newWarmPod()
	w.offer("n3", time.Now().Add(-time.Millisecond))
	w.settle(true)
	if code, _ := w.take(ctx, TakeRequest{Job: "job-late", Nonce: "n3"}, mark); code != WarmRefusedStatus {
		t.Errorf("take after the window: %d", code)
	}

	// A store that cannot record the take refuses it (the engine could not tell later).
	w = newWarmPod()
	w.offer("n4", time.Now().Add(time.Minute))
	w.settle(true)
	fail := func(context.Context, string) error { return errors.New("store down") }
	if code, _ := w.take(ctx, TakeRequest{Job: "job-x", Nonce: "n4"}, fail); code != WarmRefusedStatus || len(w.next) != 0 {
		t.Errorf("take with the store down: %d, %d handed over", code, len(w.next))
	}
}

// TestCleanAfterJob: the job's workspace and its /tmp entries go, what was there before
// stays, and a process that left the job's session is found.
func TestCleanAfterJob(t *testing.T) {
	if err := becomeSubreaper(); err != nil {
		t.Skip(err)
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	os.WriteFile(filepath.Join(tmp, "before"), []byte("x"), 0o600)
	tmp0 := tmpEntries()
	ws := filepath.Join(t.TempDir(), "job-a")
	os.MkdirAll(filepath.Join(ws, "root"), 0o700)
	os.WriteFile(filepath.Join(tmp, "left-by-job"), []byte("x"), 0o600)
	os.MkdirAll(filepath.Join(tmp, "dir-by-job", "sub"), 0o700)
	if err := cleanAfterJob(ws, tmp0); err != nil {
		t.Fatalf("clean job: %v", err)
	}
	for _, p := range []string{ws, filepath.Join(tmp, "left-by-job"), filepath.Join(tmp, "dir-by-job")} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s left after the job", p)
		}
	}
	if _, err := os.Stat(filepath.Join(tmp, "before")); err != nil {
		t.Errorf("a file that was there before the job was removed: %v", err)
	}

	// A process that escaped with setsid: the shell exits, the sleep is orphaned to us.
	cmd := exec.Command("/bin/sh", "-c", "setsid sleep 30 >/dev/null 2>&1 &")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	err := cleanAfterJob(filepath.Join(t.TempDir(), "job-b"), tmp0)
	if err == nil || !strings.Contains(err.Error(), "sleep") {
		t.Fatalf("an escaped process was not found: %v", err)
	}
	for _, p := range children() {
		if p.comm == "sleep" {
			syscall.Kill(p.pid, syscall.SIGKILL)
		}
	}
	if left := survivors(2 * time.Second); len(left) > 0 {
		t.Errorf("after killing it: %v", left)
	}
}

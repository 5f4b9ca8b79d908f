package dirwatch

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// TestWakesOnNewEntry: a file made in the directory ends a long Sleep at once, as does a
// rename into it (how the store writes objects); with nothing made, Sleep lasts its time.
func TestWakesOnNewEntry(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("inotify is Linux's")
	}
	dir := t.TempDir()
	w := New(dir)
	if w == nil {
		t.Fatal("New returned no watcher for an existing directory")
	}
	defer w.Close()
	ctx := context.Background()

	start := time.Now()
	if err := w.Sleep(ctx, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 45*time.Millisecond {
		t.Fatalf("Sleep with nothing made returned after %s, want 50ms", d)
	}

	for i, mk := range []func() error{
		func() error { return os.WriteFile(filepath.Join(dir, "entry"), nil, 0o644) },
		func() error {
			if err := os.WriteFile(filepath.Join(dir, ".tmp"), []byte("x"), 0o644); err != nil {
				return err
			}
			return os.Rename(filepath.Join(dir, ".tmp"), filepath.Join(dir, "status.json"))
		},
	} {
		made := make(chan struct{})
		go func() {
			defer close(made)
			time.Sleep(20 * time.Millisecond)
			if err := mk(); err != nil {
				t.Error(err)
			}
		}()
		start = time.Now()
		if err := w.Sleep(ctx, 30*time.Second); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("case %d: Sleep woke after %s, want at the new entry", i, d)
		}
		// The watcher may wake at the first step of mk (the temporary file's create):
		// let mk finish before the directory is used again or removed with the test.
		<-made
		// Drain what the same change may have signalled twice (create, then close).
		w.Sleep(ctx, 10*time.Millisecond)
	}
}

// TestMissingDirectory: a directory that cannot be watched gives the nil Watcher, whose
// Sleep still sleeps and ends with its context.
func TestMissingDirectory(t *testing.T) {
	w := New(filepath.Join(t.TempDir(), "missing"))
	if w != nil {
		t.Fatal("a watcher for a missing directory")
	}
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.Sleep(ctx, time.Hour); err != context.Canceled {
		t.Fatalf("Sleep after cancel = %v", err)
	}
}

// TestBounded: a process holds at most MaxWatchers; one closed makes room for another.
func TestBounded(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("inotify is Linux's")
	}
	dir := t.TempDir()
	// Watchers other tests closed give their places back in the background.
	for end := time.Now().Add(5 * time.Second); live.Load() > 0 && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	var ws []*Watcher
	defer func() {
		for _, w := range ws {
			w.Close()
		}
	}()
	for i := 0; i < MaxWatchers; i++ {
		w := New(dir)
		if w == nil {
			t.Fatalf("watcher %d refused below the bound", i)
		}
		ws = append(ws, w)
	}
	if w := New(dir); w != nil {
		w.Close()
		t.Fatalf("watcher %d given beyond the bound of %d", MaxWatchers+1, MaxWatchers)
	}
	ws[0].Close()
	ws[0].Close() // twice: still one place freed
	// The place is free once the instance is closed, in the background.
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		if ws[0] = New(dir); ws[0] != nil {
			break
		}
		if time.Now().After(end) {
			t.Fatal("no watcher after one was closed")
		}
	}
	if w := New(dir); w != nil {
		w.Close()
		t.Fatal("a double Close freed two places")
	}
}

// TestCloseDoesNotWait: Close returns before the instance is closed (the kernel takes
// milliseconds to close one, on the path of every call that waited for its job).
func TestCloseDoesNotWait(t *testing.T) {
	closed := make(chan struct{})
	before := live.Add(1) - 1
	w := &Watcher{c: make(chan struct{}, 1), stop: func() { time.Sleep(time.Second); close(closed) }}
	start := time.Now()
	w.Close()
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("Close waited %v for the instance to close", d)
	}
	<-closed
	for live.Load() > before { // its place is given back once it is closed
		time.Sleep(time.Millisecond)
	}
}

// TestNewForWakesOnlyForItsNames: a watcher for status.json sleeps through a temporary
// file, a rename to another name and a sibling's file, and wakes at the rename that makes
// status.json.
func TestNewForWakesOnlyForItsNames(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("inotify is Linux's")
	}
	dir := t.TempDir()
	w := NewFor(dir, "status.json", "result.json")
	if w == nil {
		t.Fatal("NewFor returned no watcher for an existing directory")
	}
	defer w.Close()
	ctx := context.Background()
	write := func(name string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(".tmp-1")
	if err := os.Rename(filepath.Join(dir, ".tmp-1"), filepath.Join(dir, "result.pkl")); err != nil {
		t.Fatal(err)
	}
	write("7.json")
	start := time.Now()
	if err := w.Sleep(ctx, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 90*time.Millisecond {
		t.Fatalf("woken after %s by entries it does not look for", d)
	}
	write(".tmp-2")
	if err := os.Rename(filepath.Join(dir, ".tmp-2"), filepath.Join(dir, "status.json")); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if err := w.Sleep(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("not woken by status.json: slept %s", d)
	}
}

// A watch of writes wakes for a line appended to a file kept open, once per look: a write
// while the caller looks wakes its next Sleep at once, and no write lets it sleep.
func TestWritesWakeOncePerLook(t *testing.T) {
	dir := t.TempDir()
	f, err := os.OpenFile(filepath.Join(dir, "log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := NewWrites(dir)
	if w == nil {
		t.Skip("no inotify here")
	}
	defer w.Close()
	ctx := context.Background()
	quick := func(what string) {
		t.Helper()
		start := time.Now()
		if err := w.Sleep(ctx, 5*time.Second); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("%s: slept %v", what, d)
		}
	}
	go func() { time.Sleep(50 * time.Millisecond); f.WriteString("a\n") }()
	quick("a line appended while sleeping")
	for range 100 { // while the caller looks
		f.WriteString("b\n")
	}
	time.Sleep(50 * time.Millisecond)
	quick("lines appended while looking")
	f.WriteString("c\n")
	time.Sleep(50 * time.Millisecond)
	quick("a line appended after the last wake")
	start := time.Now()
	w.Sleep(ctx, 300*time.Millisecond)
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Fatalf("woke after %v with nothing written", d)
	}
}

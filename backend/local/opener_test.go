package local

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/internal/filelock"
)

// startingGroup makes a batch's state directory as StartGroup does up to the start of
// its workers: the opener's lock held (by its own open file, as another process's
// would be) and the inputs not open. Closing the returned file is the death of the
// process that started the batch: the kernel drops its lock the same way.
func startingGroup(t *testing.T) (dir string, opener *os.File) {
	t.Helper()
	dir = t.TempDir()
	f, err := filelock.Open(filepath.Join(dir, openerName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := filelock.Wait(f, filelock.Exclusive); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "group.json"), []byte(`{"size":3}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, f
}

// waitingWorker runs awaitOpen as a worker does and then claims what it can.
func waitingWorker(dir string) <-chan []int {
	out := make(chan []int, 1)
	go func() {
		f, err := awaitOpen(dir)
		if err != nil {
			out <- nil
			return
		}
		defer f.Close()
		var got []int
		for {
			i, ok, err := claim(f, 3)
			if err != nil || !ok {
				break
			}
			got = append(got, i)
		}
		out <- got
	}()
	return out
}

// TestWorkersWaitForTheOpen: a worker started before StartGroup finished claims nothing
// until the inputs are open; then it runs them all, and the batch counts as started
// (a withdrawal changes nothing).
func TestWorkersWaitForTheOpen(t *testing.T) {
	dir, opener := startingGroup(t)
	got := waitingWorker(dir)
	select {
	case g := <-got:
		t.Fatalf("the worker claimed %v before the inputs were open", g)
	case <-time.After(200 * time.Millisecond):
	}
	if err := openInputs(dir); err != nil {
		t.Fatal(err)
	}
	opener.Close()
	if g := <-got; len(g) != 3 {
		t.Fatalf("claimed %v, want the 3 inputs", g)
	}
	if started, err := withdrawInputs(dir); err != nil || !started {
		t.Fatalf("withdraw after the open: started %v, %v; want true", started, err)
	}
}

// TestStarterDiedBeforeTheOpen: the process starting a batch dies (its lock goes) before
// it opened the inputs. The waiting worker withdraws the batch and runs nothing; a
// withdrawal after says it had not started; an open after it fails.
func TestStarterDiedBeforeTheOpen(t *testing.T) {
	dir, opener := startingGroup(t)
	got := waitingWorker(dir)
	time.Sleep(50 * time.Millisecond)
	opener.Close() // killed
	if g := <-got; len(g) != 0 {
		t.Fatalf("the worker ran %v of a batch whose start never finished", g)
	}
	if started, err := withdrawInputs(dir); err != nil || started {
		t.Fatalf("withdraw: started %v, %v; want false", started, err)
	}
	if err := openInputs(dir); err == nil {
		t.Fatal("a withdrawn batch was opened")
	}
}

// TestWithdrawRacesTheOpen: a withdrawal (the SDK's, after its engine died) and the
// open (the engine's last step) at the same moment: exactly one wins, and the workers
// do what the winner says.
func TestWithdrawRacesTheOpen(t *testing.T) {
	for round := 0; round < 50; round++ {
		dir, opener := startingGroup(t)
		got := waitingWorker(dir)
		var wg sync.WaitGroup
		var openErr, wErr error
		var started bool
		wg.Add(2)
		go func() { defer wg.Done(); openErr = openInputs(dir) }()
		go func() { defer wg.Done(); started, wErr = withdrawInputs(dir) }()
		wg.Wait()
		opener.Close()
		if wErr != nil {
			t.Fatal(wErr)
		}
		if (openErr == nil) != started {
			t.Fatalf("round %d: open error %v, withdrawal says started=%v", round, openErr, started)
		}
		want := 0
		if started {
			want = 3
		}
		if g := <-got; len(g) != want {
			t.Fatalf("round %d: started=%v and the worker ran %v", round, started, g)
		}
	}
}

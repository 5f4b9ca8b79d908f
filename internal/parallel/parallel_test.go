package parallel

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

func TestForEachCallsEachIndexOnce(t *testing.T) {
	for _, c := range []struct{ n, limit int }{{0, 4}, {1, 4}, {5, 1}, {5, 0}, {100, 3}, {3, 16}} {
		seen := make([]atomic.Int32, c.n)
		if err := ForEach(context.Background(), c.n, c.limit, func(_ context.Context, i int) error {
			seen[i].Add(1)
			return nil
		}); err != nil {
			t.Fatalf("n=%d limit=%d: %v", c.n, c.limit, err)
		}
		for i := range seen {
			if got := seen[i].Load(); got != 1 {
				t.Fatalf("n=%d limit=%d: index %d called %d times", c.n, c.limit, i, got)
			}
		}
	}
}

func TestForEachBoundsConcurrency(t *testing.T) {
	var mu sync.Mutex
	running, most := 0, 0
	release := make(chan struct{})
	done := make(chan error)
	go func() {
		done <- ForEach(context.Background(), 50, 4, func(context.Context, int) error {
			mu.Lock()
			running++
			most = max(most, running)
			mu.Unlock()
			<-release
			mu.Lock()
			running--
			mu.Unlock()
			return nil
		})
	}()
	for i := 0; i < 50; i++ {
		if i == 0 { // all four take an item before any is released
			for {
				mu.Lock()
				r := running
				mu.Unlock()
				if r == 4 {
					break
				}
				runtime.Gosched()
			}
		}
		release <- struct{}{}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if most != 4 {
		t.Fatalf("at most %d calls ran at once, want 4", most)
	}
}

func TestForEachStopsAfterAnError(t *testing.T) {
	boom := errors.New("boom")
	var calls atomic.Int32
	for _, limit := range []int{1, 4} {
		calls.Store(0)
		err := ForEach(context.Background(), 1000, limit, func(ctx context.Context, i int) error {
			calls.Add(1)
			if i == 3 {
				return boom
			}
			return nil
		})
		if !errors.Is(err, boom) {
			t.Fatalf("limit %d: err = %v, want boom", limit, err)
		}
		if n := calls.Load(); n > 100 {
			t.Fatalf("limit %d: %d calls after the error at index 3", limit, n)
		}
	}
}

func TestForEachHonoursACancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, limit := range []int{1, 4} {
		called := false
		err := ForEach(ctx, 10, limit, func(context.Context, int) error { called = true; return nil })
		if !errors.Is(err, context.Canceled) || called {
			t.Fatalf("limit %d: err = %v, called = %v; want context.Canceled and no call", limit, err, called)
		}
	}
}

// BenchmarkForEach against errgroup's Go per item, on a call that needs a deep stack
// (as a store read does).
func BenchmarkForEach(b *testing.B) {
	deep := func(int) error { var buf [4096]byte; buf[0] = 1; return sink(buf[:]) }
	b.Run("ForEach", func(b *testing.B) {
		for range b.N {
			ForEach(context.Background(), 1000, 16, func(_ context.Context, i int) error { return deep(i) })
		}
	})
	b.Run("errgroup", func(b *testing.B) {
		for range b.N {
			g, _ := errgroupWithLimit(16)
			for i := 0; i < 1000; i++ {
				g.Go(func() error { return deep(i) })
			}
			g.Wait()
		}
	})
}

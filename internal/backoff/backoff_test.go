package backoff

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestNext(t *testing.T) {
	b := New(2*time.Millisecond, 10*time.Millisecond)
	var got []time.Duration
	for range 5 {
		got = append(got, b.Next())
	}
	want := []time.Duration{2, 4, 8, 10, 10}
	for i := range want {
		want[i] *= time.Millisecond
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Error(d)
	}
	b.Reset()
	if d := b.Next(); d != 2*time.Millisecond {
		t.Errorf("after Reset: %v", d)
	}
	if d := (&Backoff{}).Next(); d != time.Millisecond {
		t.Errorf("zero value starts at %v", d)
	}
}

func TestWaitEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if err := New(time.Hour, time.Hour).Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait = %v", err)
	}
	if time.Since(start) > time.Second {
		t.Error("Wait did not end with its context")
	}
}

func TestRetry(t *testing.T) {
	n := 0
	err := Retry(context.Background(), New(time.Microsecond, time.Microsecond), func() (bool, error) {
		n++
		return n == 3, nil
	})
	if err != nil || n != 3 {
		t.Fatalf("Retry = %v after %d tries", err, n)
	}
	boom := errors.New("boom")
	if err := Retry(context.Background(), New(0, 0), func() (bool, error) { return false, boom }); !errors.Is(err, boom) {
		t.Fatalf("Retry = %v, want the try's error", err)
	}
}

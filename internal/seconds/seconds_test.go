package seconds

import (
	"math"
	"testing"
	"time"
)

func TestLimit(t *testing.T) {
	for _, c := range []struct {
		name string
		secs float64
		want time.Duration
		ok   bool
	}{
		{"zero", 0, 0, false},
		{"negative", -5, 0, false},
		{"nan", math.NaN(), 0, false},
		{"inf", math.Inf(1), 0, false},
		{"minus inf", math.Inf(-1), 0, false},
		{"a second", 1, time.Second, true},
		{"a fraction", 1.5, 1500 * time.Millisecond, true},
		{"tiny", 1e-12, 1, true},
		{"a century", Century.Seconds(), Century, true},
		{"1e10 (317 years)", 1e10, 0, false},
		{"sys.maxsize", float64(math.MaxInt64), 0, false},
		{"1e300", 1e300, 0, false},
		{"max float", math.MaxFloat64, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, ok := Limit(c.secs)
			if d != c.want || ok != c.ok {
				t.Errorf("Limit(%g) = %v, %v; want %v, %v", c.secs, d, ok, c.want, c.ok)
			}
		})
	}
}

func TestDuration(t *testing.T) {
	for secs, want := range map[float64]time.Duration{
		0: 0, -1: 0, math.NaN(): 0, 2.5: 2500 * time.Millisecond, 1e10: Century, 1e300: Century,
		math.Inf(1): Century, math.Inf(-1): 0,
	} {
		if got := Duration(secs); got != want {
			t.Errorf("Duration(%g) = %v, want %v", secs, got, want)
		}
	}
	if got := Whole(math.MaxInt64); got != Century {
		t.Errorf("Whole(MaxInt64) = %v, want %v", got, Century)
	}
	if got := Whole(90); got != 90*time.Second {
		t.Errorf("Whole(90) = %v", got)
	}
}

// FuzzLimit: no input gives a negative or overflowed duration, a limit is never longer
// than a century, and one is kept exactly when the seconds are a positive number of at
// most a century.
func FuzzLimit(f *testing.F) {
	for _, s := range []float64{0, -1, 1, 1.5, 1e-9, 1e10, 1e300, math.MaxFloat64, float64(math.MaxInt64), math.Inf(1), math.NaN()} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, secs float64) {
		d, ok := Limit(secs)
		if d < 0 || d > Century {
			t.Fatalf("Limit(%g) = %v: out of range", secs, d)
		}
		if want := secs > 0 && secs <= Century.Seconds(); ok != want {
			t.Fatalf("Limit(%g) ok = %v, want %v", secs, ok, want)
		}
		if ok && d == 0 || !ok && d != 0 {
			t.Fatalf("Limit(%g) = %v, %v", secs, d, ok)
		}
		if ok && math.Abs(d.Seconds()-secs) > secs*1e-9+1e-9 {
			t.Fatalf("Limit(%g) = %v: not the same time", secs, d)
		}
		if w := Duration(secs); w < 0 || w > Century {
			t.Fatalf("Duration(%g) = %v: out of range", secs, w)
		}
	})
}

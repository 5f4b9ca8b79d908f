package cli

import (
	"testing"
	"time"
)

func TestHumanDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		300 * time.Millisecond: "0.3s", 45 * time.Second: "45s", 3 * time.Minute: "3m",
		2 * time.Hour: "2h", 2*time.Hour + 5*time.Minute: "2h5m", 30 * time.Hour: "30h", 100 * time.Hour: "4d",
	} {
		if got := humanDuration(d); got != want {
			t.Errorf("humanDuration(%s) = %q, want %q", d, got, want)
		}
	}
}

func TestParseAge(t *testing.T) {
	for s, want := range map[string]time.Duration{"30m": 30 * time.Minute, "1h": time.Hour, "7d": 7 * 24 * time.Hour, "1d12h": 36 * time.Hour} {
		if got, err := parseAge(s); err != nil || got != want {
			t.Errorf("parseAge(%q) = %s, %v; want %s", s, got, err, want)
		}
	}
	for _, bad := range []string{"", "soon", "d", "-1h", "0s", "7x"} {
		if _, err := parseAge(bad); err == nil {
			t.Errorf("parseAge(%q): no error", bad)
		}
	}
}

func FuzzParseAge(f *testing.F) {
	for _, s := range []string{"7d", "1h30m", "1d12h", "d", "99999999999d", "135586085299701d", "106751d23h47m16s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if d, err := parseAge(s); err == nil && (d <= 0 || d > maxFlagDuration) {
			t.Fatalf("parseAge(%q) = %s without an error", s, d)
		}
	})
}

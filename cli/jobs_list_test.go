package cli

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/job"
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

// TestFoldBatchCountsEveryInput: a batch's row counts its inputs from its manifest, not
// the children it happens to see (a batch of 8 stopped by fail_fast after 2 reads
// "FAILED 2 of 8", not "FAILED 2 of 2"); a cancelled job is marked (issue 46).
func TestFoldBatchCountsEveryInput(t *testing.T) {
	now := time.Now()
	kid := func(st job.State, reason string) *listRow {
		return &listRow{Listed: engine.Listed{Handle: &job.Handle{GroupID: "grp-x", DisplayName: "f", JobID: "job-" + string(st)}, State: st, Reason: reason}}
	}
	for _, c := range []struct {
		kids  []*listRow
		total int
		want  string
	}{
		{[]*listRow{kid(job.Failed, "x"), kid(job.Failed, "y")}, 8, "FAILED 2 of 8"},
		{[]*listRow{kid(job.Failed, "x"), kid(job.Succeeded, "")}, 3, "FAILED 1 of 3, 1 ok"},
		{[]*listRow{kid(job.Running, ""), kid(job.Succeeded, "")}, 8, "RUNNING 1/8 done"},
		{[]*listRow{kid(job.Succeeded, ""), kid(job.Succeeded, "")}, 0, "SUCCEEDED 2/2"},
	} {
		tr := foldBatch(c.kids, c.total, now)
		if tr.status != c.want {
			t.Errorf("%d children of %d: %q, want %q", len(c.kids), c.total, tr.status, c.want)
		}
		if n := max(c.total, len(c.kids)); !strings.HasSuffix(tr.function, "×"+strconv.Itoa(n)) {
			t.Errorf("function %q, want ×%d", tr.function, n)
		}
	}
	if !cancelled(kid(job.Failed, "cancelled").Listed) || cancelled(kid(job.Failed, "timeout: 30m").Listed) || cancelled(kid(job.Succeeded, "").Listed) {
		t.Error("cancelled() does not tell a cancelled job")
	}
}

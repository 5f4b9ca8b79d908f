package layout

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/store"
)

// TestSubmitterLost: a manifest whose submitter stopped saving it is complete for every
// reader: the missing inputs are submission failures, and a pod waiting for one of them
// learns at once that it was never submitted.
func TestSubmitterLost(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	gid := "grp-0123456789abcdefghijklm"
	for name, tc := range map[string]struct {
		heartbeat time.Time
		lost      bool
	}{
		"fresh heartbeat":           {time.Now(), false},
		"stale heartbeat":           {time.Now().Add(-2 * SubmitterLostAfter), true},
		"no heartbeat (old writer)": {time.Time{}, false},
	} {
		t.Run(name, func(t *testing.T) {
			m := &Manifest{GroupID: gid, TotalExpected: 3, Heartbeat: tc.heartbeat, Children: []Child{{Index: 0, JobID: "job-a"}}}
			if got := m.SubmitterLost(time.Now()); got != tc.lost {
				t.Fatalf("SubmitterLost = %v, want %v", got, tc.lost)
			}
			if !tc.lost {
				return
			}
			m.MarkLost()
			if !m.SubmissionComplete || len(m.Children) != 3 || m.Children[1].SubmissionError == "" || m.Children[2].Index != 2 {
				t.Fatalf("after MarkLost: %+v", m)
			}
			raw := []byte(`{"group_id":"` + gid + `","total_expected":3,"heartbeat":"` + tc.heartbeat.UTC().Format(time.RFC3339Nano) + `","children":[]}`)
			if err := st.Put(ctx, ManifestKey(gid), raw); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err := ResolveMember(ctx, st, gid, 2, time.Minute)
			if !errors.Is(err, ErrNotSubmitted) || time.Since(start) > 5*time.Second {
				t.Fatalf("ResolveMember of an input a lost submitter never wrote: %v after %s", err, time.Since(start))
			}
		})
	}
}

package dashboard

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kinetic-run/kinetic/job"
)

// TestTimeline: the phases drawn from what the store records, for each kind of job.
func TestTimeline(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	h := &job.Handle{JobID: "job-01k85c78dh20hhoab5e242v", CreatedAt: t0.Format(time.RFC3339Nano), SubmittedAt: at(1).Format(time.RFC3339Nano)}
	for name, tc := range map[string]struct {
		state  job.State
		reason string
		times  jobTimes
		now    time.Time
		want   []string // label: detail
		mark   string
	}{
		"finished": {state: job.Succeeded, times: jobTimes{Start: at(3), Called: at(5), End: at(10)}, now: at(60),
			want: []string{"upload", "pending", "environment", "running"}, mark: "SUCCEEDED"},
		"pending with a reason": {state: job.Pending, reason: "0/3 nodes have nvidia.com/gpu", now: at(20),
			want: []string{"upload", "pending: 0/3 nodes have nvidia.com/gpu"}, mark: "now"},
		"running, from status.json": {state: job.Running, times: jobTimes{Status: &job.Status{State: job.Running, UpdatedAt: at(4)}}, now: at(9),
			want: []string{"upload", "pending", "running"}, mark: "now"},
		"failed before the call": {state: job.Failed, times: jobTimes{Start: at(2), End: at(3)}, now: at(9),
			want: []string{"upload", "pending", "environment: failed before the call"}, mark: "FAILED"},
		"cancelled while pending": {state: job.Failed, times: jobTimes{End: at(7)}, now: at(9),
			want: []string{"upload", "pending"}, mark: "FAILED"},
	} {
		t.Run(name, func(t *testing.T) {
			tl := timeline(h, tc.state, tc.reason, tc.times, tc.now)
			var got []string
			for _, s := range tl.Segments {
				g := s.Label
				if strings.Contains(tc.want[len(got)%len(tc.want)], ":") {
					g += ": " + s.Detail
				}
				got = append(got, g)
				if s.X < 0 || s.X+s.W > 1000.5 {
					t.Errorf("segment %s at %.1f+%.1f leaves the picture", s.Label, s.X, s.W)
				}
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("segments (-want +got):\n%s", d)
			}
			if len(tl.Marks) != 1 || tl.Marks[0].Label != tc.mark {
				t.Errorf("marks %+v, want %s", tl.Marks, tc.mark)
			}
		})
	}
}

// FuzzFilter: any query string gives a filter whose own query reads back the same.
func FuzzFilter(f *testing.F) {
	for _, s := range []string{"", "status=FAILED&page=2", "tag=a%3Db&batch=grp-x", "name=%00&page=-1", "page=99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		v, err := url.ParseQuery(q)
		if err != nil {
			return
		}
		fl := filterOf(v)
		if fl.Page < 1 {
			t.Fatalf("page %d", fl.Page)
		}
		back, err := url.ParseQuery(fl.Query())
		if err != nil {
			t.Fatal(err)
		}
		again := filterOf(back)
		again.Page = fl.Page
		if again != fl {
			t.Fatalf("%q: %+v, read back %+v", q, fl, again)
		}
	})
}

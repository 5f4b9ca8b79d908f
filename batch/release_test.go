package batch

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/batch/driver"
	"github.com/kinetic-run/kinetic/job"
)

// fakeReleaser is a driver whose children are jobs of their own that hold what they
// ran on until released (Pathways: a finished job's hosts hold its slice).
type fakeReleaser struct{ *fakeBackend }

func (f fakeReleaser) Modes(*job.Handle, *job.Spec) driver.Modes { return driver.Modes{} }
func (f fakeReleaser) Enqueue(context.Context, *job.Handle, int) error {
	return driver.ErrUnsupported
}
func (f fakeReleaser) StartGroup(context.Context, driver.Group, *job.Handle) error {
	return driver.ErrUnsupported
}
func (f fakeReleaser) GroupDone(context.Context, string) (map[int]bool, error) { return nil, nil }
func (f fakeReleaser) UnwrittenStatus(ctx context.Context, h *job.Handle) (job.State, string, error) {
	return f.Status(ctx, h)
}
func (f fakeReleaser) CleanupGroup(context.Context, string) error { return nil }

func (f fakeReleaser) Release(ctx context.Context, h *job.Handle) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if j := f.jobs[h.JobID]; j != nil {
		f.calls = append(f.calls, "release "+j.name)
	}
	return nil
}

// TestSchedulerReleasesFinishedChildren: on a driver, a child seen final is
// released before the next input takes its slot, so max_concurrent bounds what the
// batch holds, not only what runs.
func TestSchedulerReleasesFinishedChildren(t *testing.T) {
	fake := newFakeBackend(func(int, int) outcome { return outcome{reads: 1} })
	e := newTestEngine(t, fakeReleaser{fake})
	req := mapRequest(3)
	req.MaxConcurrent, req.Retries = 1, 1 // retries: the submitter watches to the end
	b, err := Map(context.Background(), e, req)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-b.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the batch did not settle")
	}
	calls, _ := fake.log()
	want := []string{"submit 0/0", "release 0/0", "submit 1/0", "release 1/0", "submit 2/0", "release 2/0"}
	if !slices.Equal(calls, want) {
		t.Errorf("backend calls %v, want %v", calls, want)
	}
}

package batch

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/kinetic-run/kinetic/accel"
	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// plans counts the jobs the "plancount" backend's factory planned (Factory.Plan:
// called once by every plan of a call, whatever else the plan skips).
var plans atomic.Int64

// countingFactory is a registered backend factory that counts plans; the backend
// itself is plugged in per engine (engine.RegisterBackend).
type countingFactory struct{}

func (countingFactory) Key(backend.Env) string { return "" }
func (countingFactory) New(backend.Env) (backend.Backend, error) {
	return nil, backend.ErrUnavailable
}
func (countingFactory) Plan(h *job.Handle, acc accel.Spec, s backend.Settings) error {
	plans.Add(1)
	return nil
}

func (countingFactory) Traits() backend.Traits { return backend.Traits{} }

func init() { backend.Register("plancount", countingFactory{}) }

// TestBatchPlansOnce: a batch plans its call once, whether its backend runs it as one
// unit (the template written for the pods), queues its children or takes them one by
// one: no child, and not the template of derived children, plans it again (issue 26:
// a grouped batch planned twice, and every child once more).
func TestBatchPlansOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		be   func(*fakeBackend) backend.Backend
	}{
		{"unit", func(f *fakeBackend) backend.Backend { return fakeGrouper{f} }},
		{"queue", func(f *fakeBackend) backend.Backend { return fakeQueuer{f} }},
		{"one by one", func(f *fakeBackend) backend.Backend { return f }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := newFakeBackend(func(int, int) outcome { return outcome{reads: 0} })
			e := newTestEngine(t, nil)
			be := tc.be(fake)
			e.RegisterBackend("plancount", func(*engine.Engine, *store.Store) (backend.Backend, error) { return be, nil })
			req := mapRequest(20)
			req.Template.Config[config.Backend] = "plancount"
			before := plans.Load()
			b, err := Map(context.Background(), e, req)
			if err != nil {
				t.Fatal(err)
			}
			<-b.Done()
			if n := plans.Load() - before; n != 1 {
				t.Errorf("a batch of 20 inputs planned its call %d times, want 1", n)
			}
			v, err := Read(context.Background(), e, b.GroupID(), "mem://", true)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range v.Statuses {
				if c.Status != job.Succeeded {
					t.Errorf("input %d: %s %s %s, want SUCCEEDED", c.Index, c.Status, c.Reason, c.Error)
				}
			}
		})
	}
}

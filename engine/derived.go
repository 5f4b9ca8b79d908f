package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/batch/layout"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// Derived batch children (batch/layout, derived.go): a batch its backend runs as one
// unit writes a template and its inputs instead of a job per input; each child's job is
// written by its pod when it starts, and made from the template until then.

// WriteDerived writes the template of batch gid and its inputs: every child's job is
// then derived (DerivedJob) instead of written. Done once per batch, it uploads the
// batch's Data and function as a child's submission would.
func (t *Template) WriteDerived(ctx context.Context, gid string, inputs [][]byte) error {
	r := t.req
	r.Args = []byte{0} // a placeholder: each child's arguments are its input
	p, err := t.e.plan(ctx, &r, &t.shared)
	if err != nil {
		return err
	}
	// Every input's Data: each pod keeps the ones its input uses (layout.Materialize).
	p.spec.Data = t.shared.base.Data
	defaultOutputs := p.spec.OutputDir == defaultOutputDir(p.st, p.handle.JobID)
	id := job.ChildID(gid, 0)
	p.handle.JobID, p.spec.JobID = id, id
	p.handle.K8sName = gid // every first attempt is an index of the batch's unit
	p.handle.GroupID, p.handle.GroupKind, p.handle.GroupIndex = gid, "map", "0"
	p.args = []byte{} // non-nil: a child, whose function is the batch's shared blob
	if err := t.e.writeShared(ctx, p); err != nil {
		return err
	}
	tmpl := &layout.Template{Handle: p.handle, Spec: p.spec, DefaultOutputs: defaultOutputs}
	if err := layout.WriteDerived(ctx, p.st, gid, tmpl, p.env, inputs); err != nil {
		return err
	}
	t.e.cacheTemplate(p.st, gid, tmpl)
	return nil
}

// DerivedJob is the first attempt of input i of batch gid, whose children are derived:
// nothing is written.
func (t *Template) DerivedJob(ctx context.Context, gid string, i int) (*Job, error) {
	j, err := t.e.derivedJob(ctx, t.Store, job.ChildID(gid, i))
	if err == nil && j == nil {
		err = fmt.Errorf("batch %s: no template for input %d", gid, i)
	}
	return j, err
}

// DerivedChild is the derived first attempt id of a batch child (nil, nil when it is not
// one, or when it was removed or collected): what Attach finds for it while its pod has
// not written it, without looking for its handle or tombstone first.
func (e *Engine) DerivedChild(ctx context.Context, id, storeURL string) (*Job, error) {
	st, err := e.storeOrDefault(ctx, storeURL)
	if err != nil {
		return nil, err
	}
	return e.derivedJob(ctx, st, id)
}

// derivedJob is the derived child id when id is one (nil, nil when it is not, or when it
// was removed).
func (e *Engine) derivedJob(ctx context.Context, st *store.Store, id string) (*Job, error) {
	gid, i, ok := job.ParseChildID(id)
	if !ok {
		return nil, nil
	}
	t, err := e.template(ctx, st, gid)
	if t == nil || err != nil {
		return nil, err
	}
	if gone, err := layout.Gone(ctx, st, gid, i); err != nil || gone {
		return nil, err
	}
	if _, _, collected, err := collectedChild(ctx, st, gid, id); err != nil || collected {
		return nil, err
	}
	h := t.ChildHandle(gid, i)
	be, err := e.backendFor(h, st)
	if err != nil {
		return nil, err
	}
	return &Job{Handle: h, Store: st, Backend: be}, nil
}

// template returns batch gid's template (nil when its children are not derived), read
// once per engine.
func (e *Engine) template(ctx context.Context, st *store.Store, gid string) (*layout.Template, error) {
	key := st.URL() + "\x00" + gid
	e.mu.Lock()
	t := e.templates[key]
	e.mu.Unlock()
	if t != nil {
		return t, nil
	}
	t, err := layout.ReadTemplate(ctx, st, gid)
	if store.IsNotFound(err) || errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	e.cacheTemplate(st, gid, t)
	return t, nil
}

func (e *Engine) cacheTemplate(st *store.Store, gid string, t *layout.Template) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.templates == nil {
		e.templates = map[string]*layout.Template{}
	}
	e.templates[st.URL()+"\x00"+gid] = t
}

// unwrittenChildren returns, among ids, the derived batch children with nothing in the
// store (not in present, the store's jobs/ listing) whose backend runs their unit: one
// read of each batch's template and of its gone markers, not a read per child.
func (e *Engine) unwrittenChildren(ctx context.Context, st *store.Store, ids []string, present map[string]bool) map[string]*Job {
	out := map[string]*Job{}
	type group struct {
		t         *layout.Template
		gone      map[int]bool
		collected map[string]layout.Collected
		be        backend.Backend
	}
	groups := map[string]*group{}
	for _, id := range ids {
		gid, i, ok := job.ParseChildID(id)
		if !ok || present[id] {
			continue
		}
		g, seen := groups[gid]
		if !seen {
			groups[gid] = nil
			t, err := e.template(ctx, st, gid)
			if t == nil || err != nil {
				continue
			}
			gone, err := layout.GoneSet(ctx, st, gid)
			if err != nil {
				continue
			}
			// Collected with the batch: cleaned up, its tombstone says so (one
			// listing for the batch, not one per child).
			collected, err := layout.ReadCollected(ctx, st, gid)
			if err != nil {
				continue
			}
			be, err := e.backendFor(t.ChildHandle(gid, 0), st)
			if err != nil {
				continue
			}
			if _, ok := be.(backend.Grouper); !ok {
				continue
			}
			g = &group{t: t, gone: gone, collected: collected, be: be}
			groups[gid] = g
		}
		if g == nil || g.gone[i] {
			continue
		}
		if _, collected := g.collected[id]; collected {
			continue
		}
		out[id] = &Job{Handle: g.t.ChildHandle(gid, i), Store: st, Backend: g.be}
	}
	return out
}

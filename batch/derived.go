package batch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/kinetic-run/kinetic/batch/driver"
	"github.com/kinetic-run/kinetic/batch/layout"
	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// Derived children (batch/layout, derived.go): a batch its backend runs as one unit
// (driver.Modes.Unit) writes a template and its inputs instead of a job per input; each
// child's job is written by its pod when it starts, and made from the template until
// then. The engine finds such a child through Unwritten (engine.Unwritten), which the
// program passes to engine.New (engine.WithUnwritten), so that Attach, status, logs and
// result work on it like on any job.

// Unwritten is the engine's finder of derived children: pass it to engine.New with
// engine.WithUnwritten wherever batches are run or looked at.
type Unwritten struct{}

// Handle implements engine.Unwritten.
func (Unwritten) Handle(ctx context.Context, st *store.Store, id string) (*job.Handle, error) {
	return derivedHandle(ctx, st, id)
}

// Tombstone implements engine.Unwritten: a derived child collected with its batch.
func (Unwritten) Tombstone(ctx context.Context, st *store.Store, id string) (*job.Tombstone, error) {
	return derivedTombstone(ctx, st, id)
}

// Templates implements engine.Unwritten: the spec of every batch in st run from a
// template (a unit's template.json), for prune's walk of what the store's jobs use.
func (Unwritten) Templates(ctx context.Context, st *store.Store) ([]*job.Spec, error) {
	gids, err := st.ListDirs(ctx, "groups/")
	if err != nil {
		return nil, err
	}
	var specs []*job.Spec
	for _, gid := range gids {
		t, err := layout.ReadTemplate(ctx, st, strings.TrimSuffix(gid, "/"))
		if store.IsNotFound(err) {
			continue // a batch with a job per input (their specs are read), or gone
		}
		if err != nil {
			return nil, err
		}
		specs = append(specs, t.Spec)
	}
	return specs, nil
}

// writeDerived writes the template of batch gid and its inputs: every child's job is
// then derived instead of written. It plans nothing: the template's call as planned
// once (engine.Template.WriteShared, which also stores the function once).
func writeDerived(ctx context.Context, t *engine.Template, gid string, encoded io.Reader) error {
	pj, err := t.WriteShared(ctx, job.ChildID(gid, 0))
	if err != nil {
		return err
	}
	h := pj.Handle
	h.K8sName = gid // every first attempt is an index of the batch's unit
	h.GroupID, h.GroupKind, h.GroupIndex = gid, "map", "0"
	tmpl := &layout.Template{Handle: h, Spec: pj.Spec, DefaultOutputs: pj.DefaultOutputs}
	if err := layout.WriteDerivedFrom(ctx, t.Store, gid, tmpl, pj.Env, encoded); err != nil {
		return err
	}
	cacheTemplate(t.Store, gid, tmpl)
	return nil
}

// derivedJob is the derived child id (nil, nil when it is not one, or when it was
// removed or collected): what Attach finds for it while its pod has not written it,
// without looking for its handle or tombstone first.
func derivedJob(ctx context.Context, e Engine, st *store.Store, id string) (*engine.Job, error) {
	h, err := derivedHandle(ctx, st, id)
	if h == nil || err != nil {
		return nil, err
	}
	be, err := e.BackendFor(h, st)
	if err != nil {
		return nil, err
	}
	return &engine.Job{Handle: h, Store: st, Backend: be, Unwritten: Unwritten{}}, nil
}

// derivedHandle is the handle of derived child id (nil when it is not one, or when it
// was removed or collected).
func derivedHandle(ctx context.Context, st *store.Store, id string) (*job.Handle, error) {
	gid, i, ok := job.ParseChildID(id)
	if !ok {
		return nil, nil
	}
	t, err := template(ctx, st, gid)
	if t == nil || err != nil {
		return nil, err
	}
	if gone, err := layout.Gone(ctx, st, gid, i); err != nil || gone {
		return nil, err
	}
	if _, _, collected, err := collectedChild(ctx, st, gid, id); err != nil || collected {
		return nil, err
	}
	return t.ChildHandle(gid, i), nil
}

// templates caches the templates of derived batches by store and batch: a template
// never changes once written.
var templates sync.Map // store URL + "\x00" + gid → *layout.Template

// template returns batch gid's template (nil when its children are not derived), read
// once per process.
func template(ctx context.Context, st *store.Store, gid string) (*layout.Template, error) {
	if t, ok := templates.Load(st.URL() + "\x00" + gid); ok {
		return t.(*layout.Template), nil
	}
	t, err := layout.ReadTemplate(ctx, st, gid)
	if store.IsNotFound(err) || errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	cacheTemplate(st, gid, t)
	return t, nil
}

func cacheTemplate(st *store.Store, gid string, t *layout.Template) {
	templates.Store(st.URL()+"\x00"+gid, t)
}

// templateJob is the first attempt of input i of batch gid, whose children are
// derived: nothing is written.
func templateJob(ctx context.Context, e Engine, st *store.Store, gid string, i int) (*engine.Job, error) {
	j, err := derivedJob(ctx, e, st, job.ChildID(gid, i))
	if err == nil && j == nil {
		err = fmt.Errorf("batch %s: no template for input %d", gid, i)
	}
	return j, err
}

// unwrittenChildren returns, among ids, the derived children with nothing in the store
// (not in present, the store's jobs/ listing) whose backend runs their unit: one read
// of each batch's template, of its gone markers and of its collection records, not a
// read per child.
func unwrittenChildren(ctx context.Context, e Engine, st *store.Store, ids []string, present map[string]bool) map[string]*engine.Job {
	out := map[string]*engine.Job{}
	type group struct {
		t         *layout.Template
		gone      map[int]bool
		collected map[string]layout.Collected
		be        driverBackend
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
			t, err := template(ctx, st, gid)
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
			be, err := e.BackendFor(t.ChildHandle(gid, 0), st)
			if err != nil {
				continue
			}
			d, ok := be.(driverBackend)
			if !ok {
				continue
			}
			g = &group{t: t, gone: gone, collected: collected, be: d}
			groups[gid] = g
		}
		if g == nil || g.gone[i] {
			continue
		}
		if _, collected := g.collected[id]; collected {
			continue
		}
		out[id] = &engine.Job{Handle: g.t.ChildHandle(gid, i), Store: st, Backend: g.be, Unwritten: Unwritten{}}
	}
	return out
}

// driverBackend is a backend that runs batches itself.
type driverBackend interface {
	engineBackend
	driver.Driver
}

// Derived children collected by results(cleanup=True) get no tombstone and no gone
// marker of their own: that would be two files written per input for a batch that
// wrote none at submission. Their batch's collection records (groups/ID/collected/,
// layout.RecordCollected, written before the results are returned) say the same for
// every child they list: derivedTombstone makes a child's tombstone from them and the
// batch's template, and a collected child is never derived again.

// collectedGroups caches each batch's collection records by store and batch: the
// records only grow, so a lookup that misses lists them again and reads the new ones.
var collectedGroups sync.Map // store URL + "\x00" + gid → *collectedGroup

type collectedGroup struct {
	mu   sync.Mutex
	read map[string]bool // record keys already read
	ids  map[string]layout.Collected
	tmpl *layout.Template
}

// collectedChild returns the collection record of derived child id of batch gid.
func collectedChild(ctx context.Context, st *store.Store, gid, id string) (layout.Collected, *layout.Template, bool, error) {
	g := collectedGroupOf(st, gid)
	g.mu.Lock()
	defer g.mu.Unlock()
	if c, ok := g.ids[id]; ok {
		return g.found(ctx, st, gid, c)
	}
	if err := g.refresh(ctx, st, gid); err != nil {
		return layout.Collected{}, nil, false, err
	}
	if c, ok := g.ids[id]; ok {
		return g.found(ctx, st, gid, c)
	}
	return layout.Collected{}, nil, false, nil
}

// collectedIDs returns the children of batch gid collected so far, by job ID: one
// listing of its records (the new ones read), for any number of children.
func collectedIDs(ctx context.Context, st *store.Store, gid string) (map[string]bool, error) {
	g := collectedGroupOf(st, gid)
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.refresh(ctx, st, gid); err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(g.ids))
	for id := range g.ids {
		out[id] = true
	}
	return out, nil
}

func collectedGroupOf(st *store.Store, gid string) *collectedGroup {
	v, _ := collectedGroups.LoadOrStore(st.URL()+"\x00"+gid, &collectedGroup{read: map[string]bool{}, ids: map[string]layout.Collected{}})
	return v.(*collectedGroup)
}

// refresh lists batch gid's collection records and reads the ones not read yet (g.mu
// held).
func (g *collectedGroup) refresh(ctx context.Context, st *store.Store, gid string) error {
	objs, err := st.List(ctx, layout.CollectedPrefix(gid))
	if err != nil {
		return err
	}
	var fresh []string
	for _, o := range objs {
		if !g.read[o.Key] && strings.HasSuffix(o.Key, ".json") {
			fresh = append(fresh, o.Key)
		}
	}
	if len(fresh) == 0 {
		return nil
	}
	cs, err := layout.ReadCollectedKeys(ctx, st, gid, fresh)
	if err != nil {
		return err
	}
	for _, k := range fresh {
		g.read[k] = true
	}
	for _, c := range cs {
		if _, ok := g.ids[c.JobID]; !ok { // the first record claimed it (layout.ClaimedBy)
			g.ids[c.JobID] = c
		}
	}
	return nil
}

// found returns c with the batch's template, read the first time a child is found.
func (g *collectedGroup) found(ctx context.Context, st *store.Store, gid string, c layout.Collected) (layout.Collected, *layout.Template, bool, error) {
	if g.tmpl == nil {
		t, err := layout.ReadTemplate(ctx, st, gid)
		if err != nil {
			return layout.Collected{}, nil, false, err
		}
		g.tmpl = t
	}
	return c, g.tmpl, true, nil
}

// derivedTombstone is the tombstone of a derived child collected with its batch (nil
// when id is not one).
func derivedTombstone(ctx context.Context, st *store.Store, id string) (*job.Tombstone, error) {
	gid, i, ok := job.ParseChildID(id)
	if !ok {
		return nil, nil
	}
	c, t, ok, err := collectedChild(ctx, st, gid, id)
	if err != nil || !ok {
		return nil, err
	}
	ts := job.NewTombstone(t.ChildHandle(gid, i), c.CollectedAt, c.CollectedAt)
	ts.CollectedBy = c.CollectedBy
	return ts, nil
}

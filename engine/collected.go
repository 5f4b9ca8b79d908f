package engine

import (
	"context"
	"strings"
	"sync"

	"github.com/kinetic-run/kinetic/batch/layout"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// Derived batch children (derived.go) collected by results(cleanup=True) get no
// tombstone and no gone marker of their own: that would be two files written per input
// for a batch that wrote none at submission. Their batch's collection records
// (groups/ID/collected/, layout.RecordCollected, written before the results are
// returned) say the same for every child they list: derivedTombstone makes a child's
// tombstone from them and the batch's template, and a collected child is never derived
// again (unwrittenChildren, derivedJob).

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
	v, _ := collectedGroups.LoadOrStore(st.URL()+"\x00"+gid, &collectedGroup{read: map[string]bool{}, ids: map[string]layout.Collected{}})
	g := v.(*collectedGroup)
	g.mu.Lock()
	defer g.mu.Unlock()
	if c, ok := g.ids[id]; ok {
		return g.found(ctx, st, gid, c)
	}
	objs, err := st.List(ctx, layout.CollectedPrefix(gid))
	if err != nil {
		return layout.Collected{}, nil, false, err
	}
	var fresh []string
	for _, o := range objs {
		if !g.read[o.Key] && strings.HasSuffix(o.Key, ".json") {
			fresh = append(fresh, o.Key)
		}
	}
	if len(fresh) == 0 {
		return layout.Collected{}, nil, false, nil
	}
	cs, err := layout.ReadCollectedKeys(ctx, st, gid, fresh)
	if err != nil {
		return layout.Collected{}, nil, false, err
	}
	for _, k := range fresh {
		g.read[k] = true
	}
	for _, c := range cs {
		if _, ok := g.ids[c.JobID]; !ok { // the first record claimed it (layout.ClaimedBy)
			g.ids[c.JobID] = c
		}
	}
	if c, ok := g.ids[id]; ok {
		return g.found(ctx, st, gid, c)
	}
	return layout.Collected{}, nil, false, nil
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

// derivedTombstone is the tombstone of a derived batch child collected with its batch
// (nil when id is not one).
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

package engine

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kinetic-run/kinetic/engine/listindex"
	"github.com/kinetic-run/kinetic/store"
	"github.com/kinetic-run/kinetic/testkit/gcstest"
	"github.com/kinetic-run/kinetic/testkit/storefill"
)

// requestCounter is a proxy in front of the GCS emulator that counts the requests a
// store sends, and the listings among them with their matchGlob parameter.
type requestCounter struct {
	total, lists atomic.Int64
	mu           sync.Mutex
	globs        map[string]int
}

func (c *requestCounter) reset() {
	c.total.Store(0)
	c.lists.Store(0)
	c.mu.Lock()
	c.globs = map[string]int{}
	c.mu.Unlock()
}

// countingProxy starts the emulator behind a counting proxy and returns the proxy's
// base URL (a gs:// store URL's endpoint) and the counter.
func countingProxy(t *testing.T) (string, string, *requestCounter) {
	srv := gcstest.Start(t)
	bucket := srv.NewBucket(t)
	target, err := url.Parse(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	c := &requestCounter{}
	c.reset()
	proxy := httputil.NewSingleHostReverseProxy(target)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.total.Add(1)
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/b/"+bucket+"/o") {
			c.lists.Add(1)
			if g := r.URL.Query().Get("matchGlob"); g != "" {
				c.mu.Lock()
				c.globs[g]++
				c.mu.Unlock()
			}
		}
		r.Host = target.Host // the emulator routes by host
		proxy.ServeHTTP(w, r)
	})}
	go hs.Serve(l)
	t.Cleanup(func() { hs.Close() })
	return bucket, "http://" + l.Addr().String(), c
}

// TestListingIndexBucket: in a bucket (the GCS emulator) a final job's indexed row is
// not trusted once its status.json has changed: a status.json truncated, replaced by
// garbage of the same size, emptied or deleted after the listing indexed the job is
// read again (the first three listed as ERROR rows naming jobs/ID/status.json, as `jobs
// status` names it), and a listing of jobs that did not change costs a few requests
// whatever their number: one listing of the status.json objects, not a request per job.
func TestListingIndexBucket(t *testing.T) {
	ctx := context.Background()
	bucket, endpoint, reqs := countingProxy(t)
	// A store under a prefix: the glob must name the bucket's whole key.
	storeURL := "gs://" + bucket + "/team?endpoint=" + endpoint
	dir := t.TempDir()
	e := newTestEngine(t, map[string]string{"KINETIC_STORE": storeURL, "KINETIC_BACKEND": "local", "KINETIC_HOME": filepath.Join(dir, "home")}, "")
	st, err := e.Store(ctx, storeURL)
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	ids, err := storefill.Jobs(ctx, st, n)
	if err != nil {
		t.Fatal(err)
	}
	list := func() map[string]Listed { t.Helper(); return listedByID(t, e) }
	index := func() *listindex.Index { t.Helper(); return readIndex(t, st) }

	first := list()
	if len(first) != n || len(index().Jobs) != n {
		t.Fatalf("first listing: %d rows, %d indexed; want %d", len(first), len(index().Jobs), n)
	}

	// A listing of jobs that did not change reads the index and lists the store.
	reqs.reset()
	again := list()
	unchanged, unchangedLists := reqs.total.Load(), reqs.lists.Load()
	t.Logf("a listing of %d unchanged indexed jobs: %d store requests (%d listings; matchGlob %v)", n, unchanged, unchangedLists, reqs.globs)
	if len(again) != n {
		t.Fatalf("second listing: %d rows", len(again))
	}
	// The index read, the listing of jobs/ and the listing of the status.json objects
	// (the emulator ignores matchGlob: a page per 1,000 objects, 3 objects a job here).
	if unchanged > 6 {
		t.Errorf("a listing of %d unchanged indexed jobs sent %d store requests, want at most 6 (not a request per job)", n, unchanged)
	}
	if want := "team/jobs/*/status.json"; reqs.globs[want] == 0 {
		t.Errorf("no listing asked the bucket for matchGlob %q (asked: %v)", want, reqs.globs)
	}

	// Damage four jobs' status.json after they were indexed.
	damage := map[string]func([]byte) []byte{
		"truncated": func(b []byte) []byte { return b[:len(b)/2] },
		"garbage":   func(b []byte) []byte { return bytes.Repeat([]byte{'#'}, len(b)) }, // the same size
		"emptied":   func([]byte) []byte { return nil },
		"deleted":   nil,
	}
	victim := map[string]string{"truncated": ids[11], "garbage": ids[12], "emptied": ids[20], "deleted": ids[13]}
	before := index()
	for how, f := range damage {
		id := victim[how]
		if f == nil {
			if err := st.Delete(ctx, store.StatusKey(id)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		raw, err := st.Get(ctx, store.StatusKey(id))
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Put(ctx, store.StatusKey(id), f(raw)); err != nil {
			t.Fatal(err)
		}
	}
	reqs.reset()
	rows := list()
	damaged := reqs.total.Load()
	t.Logf("the listing after 4 status.json objects changed: %d store requests (%d listings)", damaged, reqs.lists.Load())
	for how, id := range victim {
		got := rows[id]
		key := store.StatusKey(id)
		j, err := e.Attach(ctx, id, "")
		if err != nil {
			t.Fatal(err)
		}
		state, _, statusErr := j.Status(ctx)
		if how == "deleted" {
			// Not damage to the local backend: the job's result.json says how it ended
			// (e2e job-objects-damaged, "deleted: the envelope says how it ended"). The
			// listing read the job again: its row is the one read now.
			if got.State != state || got.State != first[id].State {
				t.Errorf("a job whose status.json was deleted listed as %s, `jobs status` says %s (%v)", got.State, state, statusErr)
			}
			r, ok := index().Jobs[id]
			if old := before.Jobs[id].Status; !ok || r.Status == nil || (old != nil && *r.Status == *old) {
				t.Errorf("the job whose status.json was deleted kept its indexed row (%+v, %v): it was not read again", r.Status, ok)
			}
			continue
		}
		if got.State != ListError || !strings.Contains(got.Reason, "status.json") || !strings.Contains(got.Reason, id) {
			t.Errorf("a job whose status.json was %s after it was indexed listed as %s %q, want %s naming %s", how, got.State, got.Reason, ListError, key)
		}
		if _, ok := index().Jobs[id]; ok {
			t.Errorf("the index still holds the job whose status.json was %s", how)
		}
		// `jobs status` names the object.
		if statusErr == nil || !strings.Contains(statusErr.Error(), id) || !strings.Contains(statusErr.Error(), "status.json") {
			t.Errorf("`jobs status` of the job whose status.json was %s: %v, want an error naming %s", how, statusErr, key)
		}
	}
	for _, id := range ids {
		if id == victim["truncated"] || id == victim["garbage"] || id == victim["emptied"] || id == victim["deleted"] {
			continue
		}
		if rows[id].State != first[id].State {
			t.Errorf("job %s, not damaged, listed as %s (was %s)", id, rows[id].State, first[id].State)
		}
	}
	// Only the changed jobs are read: a few requests each, not a request per job.
	if damaged > unchanged+4*8 {
		t.Errorf("the listing after 4 status.json objects changed sent %d store requests, want at most %d (%d for the unchanged listing and up to 8 per changed job)", damaged, unchanged+4*8, unchanged)
	}
}

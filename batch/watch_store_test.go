package batch

import (
	"context"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/testkit/gcstest"
)

// TestDerivedBatchWatchStoreRequests: when many members of a batch's unit end at once,
// the watch reads the batch's gone markers and collection records once per round, not
// once per child: a listing per child, one at a time under the batch's lock, was most
// of what the watch of a 10,000-input map spent after its pods ended. The store is the
// GCS emulator behind a proxy that counts the requests.
func TestDerivedBatchWatchStoreRequests(t *testing.T) {
	ctx := context.Background()
	srv := gcstest.Start(t)
	bucket := srv.NewBucket(t)
	target, err := url.Parse(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	var total, collectedLists, goneReads atomic.Int64
	proxy := httputil.NewSingleHostReverseProxy(target)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		total.Add(1)
		q := r.URL.RawQuery + r.URL.Path
		if strings.Contains(q, "collected") {
			collectedLists.Add(1)
		}
		if strings.Contains(q, "gone") {
			goneReads.Add(1)
		}
		r.Host = target.Host // the emulator routes by host
		proxy.ServeHTTP(w, r)
	})}
	go hs.Serve(l)
	t.Cleanup(func() { hs.Close() })
	storeURL := "gs://" + bucket + "?endpoint=http://" + l.Addr().String()

	const n = 300
	fake := newFakeBackend(func(int, int) outcome { return outcome{} }) // every member ends at once
	e := newTestEngine(t, fakeGrouper{fake})
	req := mapRequest(n)
	req.Template.Config[config.Store] = storeURL
	b, err := Map(ctx, e, req)
	if err != nil {
		t.Fatal(err)
	}
	<-b.Done()
	if b.Store() != storeURL {
		t.Logf("the batch's store: %s", b.Store())
	}
	total.Store(0)
	collectedLists.Store(0)
	goneReads.Store(0)
	seen := 0
	if err := Watch(ctx, e, b.GroupID(), b.Store(), func(c ChildStatus) {
		if c.Status == job.Succeeded {
			seen++
		}
	}); err != nil {
		t.Fatal(err)
	}
	if seen != n {
		t.Fatalf("the watch saw %d of %d children succeed", seen, n)
	}
	t.Logf("%d children: %d store requests (%d collection records, %d gone markers)", n, total.Load(), collectedLists.Load(), goneReads.Load())
	// Per ended child at most its status.json and its envelope (here neither exists: its
	// member wrote nothing, as a kwok pod; the unit then judges it, UnwrittenStatus):
	// not the five reads of a Status (the handle, the template and the gone marker too).
	if c, g, all := collectedLists.Load(), goneReads.Load(), total.Load(); c > 10 || g > 10 || all > 2*n+20 {
		t.Errorf("the watch of %d children that ended together sent %d store requests: %d for collection records, %d for gone markers; want a few per round and two per child", n, all, c, g)
	}
}

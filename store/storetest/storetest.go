// Package storetest is the conformance suite every store URL must pass: the layout's
// guarantees (atomic writes, not-found errors, ordered listing, content addressing)
// checked against a real bucket.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kinetic-run/kinetic/store"
)

// Run runs the suite: every case on a fresh store of open's. open must return a fresh,
// empty store for each call.
func Run(t *testing.T, open func(t *testing.T) *store.Store) {
	t.Helper()
	for _, c := range Cases {
		t.Run(c.Name, func(t *testing.T) { c.Check(t, open(t)) })
	}
}

// Case is one concern of the store's contract, checked on a fresh store.
type Case struct {
	Name  string
	Check func(t *testing.T, s *store.Store)
}

// Cases are the suite: the layout's guarantees, then the driver's contract (drivers.go).
var Cases = []Case{
	{"PutGet", putGet},
	{"CreateIsExclusive", createIsExclusive},
	{"NotFound", notFound},
	{"ListNamed", listNamed},
	{"ListOrder", listOrder},
	{"ListDirsAndDeletePrefix", listDirsAndDeletePrefix},
	{"AbortedWriteLeavesNothing", abortedWriteLeavesNothing},
	{"LargeStreamedWrites", largeStreamedWrites},
	{"ReadersSeeWholeObjects", readersSeeWholeObjects},
	{"ContentAddressed", contentAddressed},
	{"URLRoundTrip", urlRoundTrip},
	{"ErrorCodes", errorCodes},
	{"PodReach", podReach},
}

func putGet(t *testing.T, s *store.Store) {
	ctx := context.Background()
	for _, n := range []int{0, 1, 1 << 20} {
		want := bytes.Repeat([]byte{byte(n)}, n)
		key := fmt.Sprintf("jobs/a/obj-%d", n)
		if err := s.Put(ctx, key, want); err != nil {
			t.Fatal(err)
		}
		got, err := s.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: got %d bytes, want %d", key, len(got), len(want))
		}
	}

}

func createIsExclusive(t *testing.T, s *store.Store) {
	ctx := context.Background()
	for _, key := range []string{"tombstones/j1.json", "groups/g/collected/j1.json"} {
		const n = 8
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = s.Create(ctx, key, []byte(fmt.Sprintf("writer %d", i)))
			}()
		}
		wg.Wait()
		won := -1
		for i, err := range errs {
			switch {
			case err == nil && won >= 0:
				t.Fatalf("%s: writers %d and %d both created it", key, won, i)
			case err == nil:
				won = i
			case !errors.Is(err, store.ErrExists):
				t.Fatalf("%s: writer %d: %v, want ErrExists", key, i, err)
			}
		}
		if won < 0 {
			t.Fatalf("%s: no writer created it", key)
		}
		got, err := s.Get(ctx, key)
		if err != nil || string(got) != fmt.Sprintf("writer %d", won) {
			t.Fatalf("%s: %q, %v; want the winner's (writer %d)", key, got, err, won)
		}
	}

}

func notFound(t *testing.T, s *store.Store) {
	ctx := context.Background()
	_, err := s.Get(ctx, "jobs/none/handle.json")
	if !store.IsNotFound(err) {
		t.Fatalf("Get of a missing key: got %v, want ErrNotFound", err)
	}
	if _, err := s.NewReader(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("NewReader of a missing key: got %v, want ErrNotFound", err)
	}
	if ok, err := s.Exists(ctx, "nope"); err != nil || ok {
		t.Fatalf("Exists of a missing key = %v, %v", ok, err)
	}
	if err := s.Delete(ctx, "nope"); err != nil {
		t.Fatalf("Delete of a missing key: %v", err)
	}

}

func listNamed(t *testing.T, s *store.Store) {
	ctx := context.Background()
	keys := []string{"jobs/a/status.json", "jobs/a/handle.json", "jobs/b/handle.json", "jobs/c/status.json",
		"jobs/c/hosts/1/status.json", "jobs/status.json", "jobsx/d/status.json", "groups/g/status.json"}
	for _, k := range keys {
		if err := s.Put(ctx, k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	objs, err := s.ListNamed(ctx, "jobs/", "status.json")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, o.Key)
		if o.Size != int64(len(o.Key)) {
			t.Errorf("ListNamed: %s has size %d, want %d", o.Key, o.Size, len(o.Key))
		}
	}
	if d := cmp.Diff([]string{"jobs/a/status.json", "jobs/c/status.json"}, got); d != "" {
		t.Errorf("ListNamed (-want +got):\n%s", d)
	}

}

// putKeys writes the objects the listing cases list, each holding its own key.
func putKeys(t *testing.T, s *store.Store) {
	keys := []string{"jobs/b/logs/00000002.log", "jobs/a/handle.json", "jobs/b/logs/00000001.log", "jobs/b/handle.json", "groups/g/manifest.json"}
	for _, k := range keys {
		if err := s.Put(context.Background(), k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
}

// listOrder: List is recursive under its prefix, in lexical key order.
func listOrder(t *testing.T, s *store.Store) {
	ctx := context.Background()
	putKeys(t, s)
	objs, err := s.List(ctx, "jobs/b/logs/")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, o.Key)
	}
	if d := cmp.Diff([]string{"jobs/b/logs/00000001.log", "jobs/b/logs/00000002.log"}, got); d != "" {
		t.Errorf("List (-want +got):\n%s", d)
	}
}

// listDirsAndDeletePrefix: ListDirs names the directories that hold an object, and
// DeletePrefix removes everything under its prefix and nothing beside it.
func listDirsAndDeletePrefix(t *testing.T, s *store.Store) {
	ctx := context.Background()
	putKeys(t, s)
	dirs, err := s.ListDirs(ctx, "jobs/")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"a", "b"}, dirs); d != "" {
		t.Errorf("ListDirs (-want +got):\n%s", d)
	}
	if err := s.DeletePrefix(ctx, "jobs/b/"); err != nil {
		t.Fatal(err)
	}
	if objs, _ := s.List(ctx, "jobs/b/"); len(objs) != 0 {
		t.Errorf("after DeletePrefix: %v", objs)
	}
	// A prefix with no object left (nested or not) is no directory, in any store.
	if dirs, _ := s.ListDirs(ctx, "jobs/"); !cmp.Equal([]string{"a"}, dirs) {
		t.Errorf("ListDirs after DeletePrefix = %v, want [a]", dirs)
	}
	if dirs, _ := s.ListDirs(ctx, "nothing/"); len(dirs) != 0 {
		t.Errorf("ListDirs of a prefix never written = %v", dirs)
	}
	if ok, _ := s.Exists(ctx, "jobs/a/handle.json"); !ok {
		t.Error("DeletePrefix removed a sibling")
	}

}

func abortedWriteLeavesNothing(t *testing.T, s *store.Store) {
	ctx := context.Background()
	_, err := s.PutFrom(ctx, "jobs/x/result.pkl", io.MultiReader(strings.NewReader("partial"), errReader{}))
	if err == nil {
		t.Fatal("PutFrom with a failing reader succeeded")
	}
	if ok, _ := s.Exists(ctx, "jobs/x/result.pkl"); ok {
		t.Fatal("a failed PutFrom left an object behind")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.PutFrom(cctx, "jobs/x/result.pkl", strings.NewReader("data")); err == nil {
		if ok, _ := s.Exists(ctx, "jobs/x/result.pkl"); ok {
			// Some drivers finish tiny writes before looking at ctx; that is atomic too.
			got, _ := s.Get(ctx, "jobs/x/result.pkl")
			if string(got) != "data" {
				t.Fatalf("cancelled write left %q", got)
			}
		}
	}

}

func largeStreamedWrites(t *testing.T, s *store.Store) {
	ctx := context.Background()
	// Past one upload chunk (GCS's resumable uploads send 16 MiB at a time, S3's
	// multipart uploads 5 MiB parts): the object still appears whole or not at all,
	// and an aborted overwrite keeps the old object.
	const size = 20 << 20
	want := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	n, err := s.PutFrom(ctx, "blobs/sha256/big", bytes.NewReader(want))
	if err != nil || n != size {
		t.Fatalf("PutFrom of %d bytes = %d, %v", size, n, err)
	}
	got, err := s.Get(ctx, "blobs/sha256/big")
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("Get after a large PutFrom: %d bytes (want %d), %v", len(got), size, err)
	}
	failing := io.MultiReader(bytes.NewReader(bytes.Repeat([]byte("x"), 18<<20)), errReader{})
	if _, err := s.PutFrom(ctx, "blobs/sha256/big", failing); err == nil {
		t.Fatal("PutFrom with a reader that fails after 18 MiB succeeded")
	}
	if got, err := s.Get(ctx, "blobs/sha256/big"); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("an aborted overwrite changed the object: %d bytes, %v", len(got), err)
	}
	if _, err := s.PutFrom(ctx, "blobs/sha256/never", io.MultiReader(bytes.NewReader(want[:18<<20]), errReader{})); err == nil {
		t.Fatal("PutFrom with a failing reader succeeded")
	}
	if ok, _ := s.Exists(ctx, "blobs/sha256/never"); ok {
		t.Fatal("a large aborted PutFrom left an object behind")
	}

}

func readersSeeWholeObjects(t *testing.T, s *store.Store) {
	ctx := context.Background()
	versions := [][]byte{bytes.Repeat([]byte("a"), 300<<10), bytes.Repeat([]byte("b"), 10), bytes.Repeat([]byte("c"), 700<<10)}
	if err := s.Put(ctx, "jobs/r/status.json", versions[0]); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 30; i++ {
			if err := s.Put(ctx, "jobs/r/status.json", versions[i%len(versions)]); err != nil {
				t.Error(err)
				return
			}
		}
		close(stop)
	}()
	for done := false; !done; {
		select {
		case <-stop:
			done = true
		default:
		}
		got, err := s.Get(ctx, "jobs/r/status.json")
		if err != nil {
			t.Fatalf("reader during rewrite: %v", err)
		}
		whole := false
		for _, v := range versions {
			whole = whole || bytes.Equal(got, v)
		}
		if !whole {
			t.Fatalf("reader saw a partial object of %d bytes", len(got))
		}
	}
	wg.Wait()

}

func contentAddressed(t *testing.T, s *store.Store) {
	ctx := context.Background()
	k1, sum1, err := s.PutBlob(ctx, []byte("hello"))
	if err != nil {
		t.Fatal(err)
	}
	k2, sum2, err := s.PutBlob(ctx, []byte("hello"))
	if err != nil || k1 != k2 || sum1 != sum2 {
		t.Fatalf("same content gave %s/%s and %s/%s (%v)", k1, sum1, k2, sum2, err)
	}
	if sum1 != "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824" {
		t.Fatalf("sum = %s", sum1)
	}
	if _, err := s.GetVerified(ctx, k1, sum1); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, k1, []byte("tampered")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetVerified(ctx, k1, sum1); err == nil || !strings.Contains(err.Error(), "SHA-256") {
		t.Fatalf("GetVerified of a corrupted blob: %v", err)
	}

}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

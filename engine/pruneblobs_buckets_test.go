package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/data"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
	"github.com/kinetic-run/kinetic/testkit/gcstest"
	"github.com/kinetic-run/kinetic/testkit/s3test"
)

// TestPruneContentOnBuckets: prune's content walk on gs:// (fake-gcs-server) and s3://
// (gofakes3), where it reads ages from the bucket's listing (a walk that saw no
// modification time would keep everything for ever): nothing goes within the grace
// period; two hours later the blob and the Data no job references go, with their sizes,
// and the payload and the Data a job's spec names stay.
func TestPruneContentOnBuckets(t *testing.T) {
	for _, c := range []struct {
		scheme string
		url    func(t *testing.T) string
	}{
		{"gs", func(t *testing.T) string {
			srv := gcstest.Start(t)
			return "gs://" + srv.NewBucket(t) + "/team?endpoint=" + srv.URL()
		}},
		{"s3", func(t *testing.T) string {
			t.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKey)
			t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretKey)
			srv := s3test.Start(t, "127.0.0.1")
			return srv.URL(srv.NewBucket(t), "team")
		}},
	} {
		t.Run(c.scheme, func(t *testing.T) { pruneContentOn(t, c.url(t)) })
	}
}

func pruneContentOn(t *testing.T, url string) {
	ctx := context.Background()
	st, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	blob := func(content string) string {
		sum := sha256.Sum256([]byte(content))
		k := store.BlobKey(hex.EncodeToString(sum[:]))
		if err := st.Put(ctx, k, []byte(content)); err != nil {
			t.Fatal(err)
		}
		return k
	}
	payload, orphan := blob("the payload a job uses"), blob("a blob no job uses any more")
	used, unused := strings.Repeat("1", 64), strings.Repeat("2", 64)
	for _, h := range []string{used, unused} {
		st.Put(ctx, data.FilesPrefix(h)+"x.csv", []byte("a,b\n"))
		st.Put(ctx, data.MarkerKey(h), []byte("{}"))
	}
	id := "job-01k8j9aaaaaaaaaaaaaaaaa"
	spec := &job.Spec{Version: 1, JobID: id, Kind: job.KindPickle, Payload: &job.BlobRef{Key: payload},
		Data: []job.DataRef{{Kind: job.DataLocalDir, Source: "d", Path: "/d", Hash: used, Prefix: data.Prefix(used)}}}
	if err := st.Put(ctx, store.SpecKey(id), spec.Encode()); err != nil {
		t.Fatal(err)
	}
	noTemplates := func(context.Context, *store.Store) ([]*job.Spec, error) { return nil, nil }

	if f, err := pruneContent(ctx, st, backend.PruneOptions{}, noTemplates); err != nil || len(f) != 0 {
		t.Fatalf("within the grace period: freed %+v, err %v; want nothing", f, err)
	}
	t.Cleanup(func() { pruneNow = time.Now })
	pruneNow = func() time.Time { return time.Now().Add(2 * BlobGrace) }
	f, err := pruneContent(ctx, st, backend.PruneOptions{}, noTemplates)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, x := range f {
		got[x.Kind+" "+strings.TrimPrefix(x.Path, st.URL()+"/")] = x.Bytes
	}
	want := map[string]int64{"blob " + orphan: int64(len("a blob no job uses any more")), "data " + data.Prefix(unused): int64(len("a,b\n") + len("{}"))}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("freed %v: want %s of %d bytes", got, k, n)
		}
	}
	if len(got) != len(want) {
		t.Errorf("freed %v, want only %v", got, want)
	}
	for k, keep := range map[string]bool{payload: true, data.MarkerKey(used): true, orphan: false, data.MarkerKey(unused): false, data.FilesPrefix(unused) + "x.csv": false} {
		if ok, err := st.Exists(ctx, k); err != nil || ok != keep {
			t.Errorf("%s exists %v (%v), want %v", k, ok, err, keep)
		}
	}
}

package store

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"testing"
)

// TestInPlaceWrites: PutInPlace, NewAppender and Size give the same objects on a file
// store (in place, a log growing as it is written) as on any other (Put, whole at Close).
func TestInPlaceWrites(t *testing.T) {
	ctx := context.Background()
	for _, url := range []string{"file://" + filepath.Join(t.TempDir(), "store"), "mem://"} {
		t.Run(url[:4], func(t *testing.T) {
			st, err := Open(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if err := st.PutInPlace(ctx, "jobs/a/result.pkl", []byte("value")); err != nil {
				t.Fatal(err)
			}
			if got, err := st.Get(ctx, "jobs/a/result.pkl"); err != nil || string(got) != "value" {
				t.Errorf("result: %q %v", got, err)
			}
			if n, err := st.Size(ctx, "jobs/a/result.pkl"); err != nil || n != 5 {
				t.Errorf("size %d %v, want 5", n, err)
			}
			if _, err := st.Size(ctx, "jobs/a/none"); !errors.Is(err, ErrNotFound) {
				t.Errorf("size of nothing: %v, want ErrNotFound", err)
			}
			empty := st.NewAppender(ctx, "jobs/a/logs/empty.log")
			if err := empty.Close(); err != nil {
				t.Fatal(err)
			}
			if ok, _ := st.Exists(ctx, "jobs/a/logs/empty.log"); ok {
				t.Error("an appender given nothing made an object")
			}
			w := st.NewAppender(ctx, "jobs/a/logs/00000000.log")
			io.WriteString(w, "one\n")
			if st.dir != "" {
				if got, err := st.Get(ctx, "jobs/a/logs/00000000.log"); err != nil || string(got) != "one\n" {
					t.Errorf("a file store's log before Close: %q %v, want what was written", got, err)
				}
			}
			io.WriteString(w, "two\n")
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if got, err := st.Get(ctx, "jobs/a/logs/00000000.log"); err != nil || string(got) != "one\ntwo\n" {
				t.Errorf("log: %q %v", got, err)
			}
		})
	}
}

// TestExistsAgreesWithTheBucket: a file store answers Exists with one stat; it must
// answer as the bucket would (a file is there; a directory and a missing key are not).
func TestExistsAgreesWithTheBucket(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, "file://"+filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Put(ctx, "jobs/a/result.json", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if err := st.Put(ctx, "groups/g/gone/3", []byte("x")); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"jobs/a/result.json", "jobs/a", "jobs/b/result.json", "groups/g/gone/3", "groups/g/gone/4", "groups/g/gone"} {
		got, err := st.Exists(ctx, key)
		want, werr := st.bucket.Exists(ctx, key)
		if err != nil || werr != nil || got != want {
			t.Errorf("Exists(%q) = %v, %v; the bucket says %v, %v", key, got, err, want, werr)
		}
	}
	if ok, _ := st.Exists(ctx, "jobs/a/result.json"); !ok {
		t.Error("an object written is not there")
	}
	// Under a file the bucket fails ("not a directory"); no object is there, and a
	// file store says so.
	if ok, err := st.Exists(ctx, "jobs/a/result.json/under"); ok || err != nil {
		t.Errorf("a key under an object: %v, %v; want false, nil", ok, err)
	}
}

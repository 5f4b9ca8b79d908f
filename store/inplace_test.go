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

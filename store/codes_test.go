package store_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/store"
	"github.com/kinetic-run/kinetic/store/storetest"
	"github.com/kinetic-run/kinetic/testkit/faultfs"
)

// TestFileStoreErrorCodes: the kernel's refusals keep their codes through the store: a
// full disk (a real tmpfs filled up) is ResourceExhausted for every write path, a
// read-only file system (the tmpfs remounted read-only) PermissionDenied, a missing
// object NotFound, an existing one's Create FailedPrecondition. They were Internal.
func TestFileStoreErrorCodes(t *testing.T) {
	dir := faultfs.Tmpfs(t, 1024)
	ctx := context.Background()
	s, err := store.Open(ctx, "file://"+filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	key := "jobs/a/status.json"
	if err := s.Put(ctx, key, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	storetest.WantCode(t, s, storetest.Get("jobs/none/status.json"), errs.NotFound)
	storetest.WantCode(t, s, storetest.NewReader("jobs/none/status.json"), errs.NotFound)
	storetest.WantCode(t, s, storetest.Create(key), errs.FailedPrecondition)

	t.Run("full", func(t *testing.T) {
		faultfs.Fill(t, dir)
		big := make([]byte, 256<<10) // more than any last free page
		for _, op := range []storetest.Op{
			{Name: "Put", Do: func(ctx context.Context, s *store.Store) error { return s.Put(ctx, "jobs/b/big", big) }},
			{Name: "Put of a key fileblob escapes", Do: func(ctx context.Context, s *store.Store) error { return s.Put(ctx, "jobs/b/odd name", big) }},
			{Name: "PutFrom", Do: func(ctx context.Context, s *store.Store) error {
				_, err := s.PutFrom(ctx, "jobs/b/big", bytes.NewReader(big))
				return err
			}},
			{Name: "Create", Do: func(ctx context.Context, s *store.Store) error { return s.Create(ctx, "jobs/b/new", big) }},
			{Name: "PutInPlace", Do: func(ctx context.Context, s *store.Store) error { return s.PutInPlace(ctx, "jobs/b/inplace", big) }},
		} {
			storetest.WantCode(t, s, op, errs.ResourceExhausted)
		}
	})
	t.Run("read-only", func(t *testing.T) {
		if err := syscall.Mount("", dir, "", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
			t.Skipf("cannot remount the tmpfs read-only: %v", err)
		}
		defer syscall.Mount("", dir, "", syscall.MS_REMOUNT, "")
		for _, op := range []storetest.Op{storetest.Put("jobs/c/x"), storetest.PutFrom("jobs/c/x"), storetest.Create("jobs/c/y"), storetest.Delete(key)} {
			storetest.WantCode(t, s, op, errs.PermissionDenied)
		}
		// A new store there cannot be made: PermissionDenied, the URL said once.
		u := "file://" + filepath.Join(dir, "new-store")
		_, err := store.Open(ctx, u)
		if errs.CodeOf(err) != errs.PermissionDenied || strings.Count(err.Error(), u) != 1 {
			t.Errorf("Open(%s) on a read-only file system = %v (code %v), want PermissionDenied naming the URL once", u, err, errs.CodeOf(err))
		}
	})
}

// TestMemStoreErrorCodes: a missing object is NotFound, an existing one's Create
// FailedPrecondition (mem:// has no faults of its own to inject).
func TestMemStoreErrorCodes(t *testing.T) {
	ctx := context.Background()
	s, err := store.Open(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Put(ctx, "jobs/a/x", []byte("x")); err != nil {
		t.Fatal(err)
	}
	storetest.WantCode(t, s, storetest.Get("jobs/none/x"), errs.NotFound)
	storetest.WantCode(t, s, storetest.NewReader("jobs/none/x"), errs.NotFound)
	storetest.WantCode(t, s, storetest.Create("jobs/a/x"), errs.FailedPrecondition)
}

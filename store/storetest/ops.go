package storetest

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/store"
)

// Op is one store operation, by name, for the error code checks.
type Op struct {
	Name string
	Do   func(ctx context.Context, s *store.Store) error
}

// Operations: the store's writes, reads, listings and deletes of key.
func Put(key string) Op {
	return Op{"Put", func(ctx context.Context, s *store.Store) error { return s.Put(ctx, key, []byte("x")) }}
}

func PutFrom(key string) Op {
	return Op{"PutFrom", func(ctx context.Context, s *store.Store) error {
		_, err := s.PutFrom(ctx, key, bytes.NewReader([]byte("x")))
		return err
	}}
}

func Create(key string) Op {
	return Op{"Create", func(ctx context.Context, s *store.Store) error { return s.Create(ctx, key, []byte("x")) }}
}

func Get(key string) Op {
	return Op{"Get", func(ctx context.Context, s *store.Store) error { _, err := s.Get(ctx, key); return err }}
}

func NewReader(key string) Op {
	return Op{"NewReader", func(ctx context.Context, s *store.Store) error {
		r, err := s.NewReader(ctx, key)
		if err == nil {
			r.Close()
		}
		return err
	}}
}

func List(prefix string) Op {
	return Op{"List", func(ctx context.Context, s *store.Store) error { _, err := s.List(ctx, prefix); return err }}
}

func Delete(key string) Op {
	return Op{"Delete", func(ctx context.Context, s *store.Store) error { return s.Delete(ctx, key) }}
}

// WantCode runs op on s and fails t unless its error carries the code want
// (errs.CodeOf, what the protocol's edge maps) and, for a code a person acts on, says
// the store's URL.
func WantCode(t *testing.T, s *store.Store, op Op, want errs.Code) {
	t.Helper()
	err := op.Do(context.Background(), s)
	if got := errs.CodeOf(err); err == nil || got != want {
		t.Errorf("%s: %v (code %v), want an error with the code %v", op.Name, err, got, want)
		return
	}
	switch want {
	case errs.PermissionDenied, errs.ResourceExhausted, errs.Unavailable:
		if !strings.Contains(err.Error(), s.URL()) {
			t.Errorf("%s: %v: does not name the store %s", op.Name, err, s.URL())
		}
	}
}

package storetest

import (
	"context"
	"testing"

	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/store"
	"github.com/kinetic-run/kinetic/store/driver"
)

// urlRoundTrip: the URL a store reports (the one job handles carry) opens the same
// store again, for a scheme other processes read (not mem://, one process's memory).
func urlRoundTrip(t *testing.T, s *store.Store) {
	ctx := context.Background()
	d, ok := driver.Lookup(s.Scheme())
	if !ok {
		t.Fatalf("the store's scheme %q has no registered driver", s.Scheme())
	}
	if !d.Traits().Shared {
		t.Skipf("%s:// is one process's: its URL opens a new store", s.Scheme())
	}
	if err := s.Put(ctx, "jobs/rt/handle.json", []byte("round trip")); err != nil {
		t.Fatal(err)
	}
	again, err := store.Open(ctx, s.URL())
	if err != nil {
		t.Fatalf("Open(%q), the store's own URL: %v", s.URL(), err)
	}
	defer again.Close()
	if again.URL() != s.URL() {
		t.Errorf("reopened store's URL = %q, want %q", again.URL(), s.URL())
	}
	if got, err := again.Get(ctx, "jobs/rt/handle.json"); err != nil || string(got) != "round trip" {
		t.Errorf("the store reopened from its URL reads %q, %v; want what the first wrote", got, err)
	}
}

// errorCodes: the store's own errors carry errs codes (what the protocol's edge
// maps): a missing object NotFound on every read, an existing one's Create
// FailedPrecondition. (The drivers' refusals, injected, are each driver's tests.)
func errorCodes(t *testing.T, s *store.Store) {
	ctx := context.Background()
	if err := s.Put(ctx, "jobs/ec/status.json", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	for _, op := range []Op{Get("jobs/none/status.json"), NewReader("jobs/none/status.json"), {"GetRange", func(ctx context.Context, s *store.Store) error {
		_, err := s.GetRange(ctx, "jobs/none/status.json", 0, 1)
		return err
	}}} {
		WantCode(t, s, op, errs.NotFound)
	}
	WantCode(t, s, Create("jobs/ec/status.json"), errs.FailedPrecondition)
}

// podReach: the driver's answers agree: a scheme pods reach is shared and names the
// credentials a pod needs (the store_secret's files), one they do not reach needs none,
// and store.FromPods says what the driver says.
func podReach(t *testing.T, s *store.Store) {
	d, _ := driver.Lookup(s.Scheme())
	tr := d.Traits()
	if got := store.FromPods(s.URL()); got != tr.FromPods {
		t.Errorf("store.FromPods(%q) = %v, the driver's Traits say %v", s.URL(), got, tr.FromPods)
	}
	creds := d.PodCredentials("/creds")
	switch {
	case tr.FromPods && !tr.Shared:
		t.Errorf("%s://: pods reach it but other processes do not", s.Scheme())
	case tr.FromPods && len(creds) == 0:
		t.Errorf("%s://: pods reach it, but the driver names no credential variable for them", s.Scheme())
	case !tr.FromPods && len(creds) != 0:
		t.Errorf("%s://: pods do not reach it, but the driver gives them credentials %v", s.Scheme(), creds)
	}
	for _, v := range creds {
		if v.Name == "" || len(v.Value) < len("/creds/") || v.Value[:len("/creds/")] != "/creds/" {
			t.Errorf("%s://: pod credential %s=%q is not a file in the mounted directory", s.Scheme(), v.Name, v.Value)
		}
	}
}

package runner

import (
	"context"
	"strings"
	"testing"

	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// TestHostAlreadyRan: a host of a multi-host job runs the job once; started again (the
// group was recreated), it records its failure instead of running it twice.
func TestHostAlreadyRan(t *testing.T) {
	ctx := context.Background()
	url := "file://" + t.TempDir()
	st, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	id := "job-hold0000000000000000000"
	o := Options{StoreURL: url, JobID: id, Host: "1"}
	if done, err := HostAlreadyRan(ctx, o); err != nil || done {
		t.Fatalf("first start: %v %v", done, err)
	}
	if done, err := HostAlreadyRan(ctx, o); err != nil || !done {
		t.Fatalf("second start: %v %v", done, err)
	}
	raw, err := st.Get(ctx, store.HostEnvelopeKey(id, "1"))
	if err != nil {
		t.Fatal(err)
	}
	env, err := job.DecodeEnvelope(raw)
	if err != nil || env.Success || env.ExcType != "kinetic.HostRestarted" || env.Host != "1" || !strings.Contains(env.ExcMessage, "started again") {
		t.Errorf("restart envelope: %+v %v", env, err)
	}
	// The leader's result ends every host's work.
	o0 := Options{StoreURL: url, JobID: id, Host: "0"}
	if done, err := HostAlreadyRan(ctx, o0); err != nil || done {
		t.Fatalf("leader first start: %v %v", done, err)
	}
	if err := st.Put(ctx, store.EnvelopeKey(id), (&job.Envelope{Success: true, Host: "0"}).Encode()); err != nil {
		t.Fatal(err)
	}
	o2 := Options{StoreURL: url, JobID: id, Host: "2"}
	if done, err := HostAlreadyRan(ctx, o2); err != nil || !done {
		t.Fatalf("after the leader's result: %v %v", done, err)
	}
	if ok, _ := st.Exists(ctx, store.HostEnvelopeKey(id, "2")); ok {
		t.Error("a host that never ran recorded a failure")
	}
}

package jobview

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

func TestResolveMember(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	gid, first, retry := job.NewGroupID(), job.NewID(), job.NewID()
	// Written late, as a member may start before its child is.
	go func() {
		time.Sleep(150 * time.Millisecond)
		put(t, st, childKey(gid, 1), []byte(`{"index":1,"job_id":"`+retry+`","attempts":["`+first+`","`+retry+`"]}`))
		time.Sleep(150 * time.Millisecond)
		put(t, st, store.HandleKey(first), []byte(`{}`))
	}()
	if id, err := ResolveMember(ctx, st, gid, 1, 10*time.Second); err != nil || id != first {
		t.Fatalf("ResolveMember = %q, %v; want the first attempt %s", id, err, first)
	}
	if _, err := ResolveMember(ctx, st, gid, 2, 50*time.Millisecond); err == nil || errors.Is(err, ErrNotSubmitted) {
		t.Fatalf("ResolveMember of an index never written, before the manifest is complete: %v", err)
	}
	put(t, st, store.GroupManifestKey(gid), []byte(`{"group_id":"`+gid+`","submission_complete":true,"stopped":"fail_fast"}`))
	if _, err := ResolveMember(ctx, st, gid, 2, time.Minute); !errors.Is(err, ErrNotSubmitted) {
		t.Fatalf("ResolveMember of an index a stopped batch never submitted: %v, want ErrNotSubmitted", err)
	}
}

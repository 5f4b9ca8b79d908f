package kubernetes

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// TestNewRefusesUnreachableStore: pods cannot read a file:// store.
func TestNewRefusesUnreachableStore(t *testing.T) {
	st, err := store.Open(context.Background(), "mem://")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, err = New(st, Options{})
	if err == nil || !strings.Contains(err.Error(), "gs://, s3://") {
		t.Fatalf("New with mem:// store: %v", err)
	}
}

// TestSubmitFault: an API error names the Job, the namespace and the cause.
func TestSubmitFault(t *testing.T) {
	b := testBackend(t, Options{Namespace: "team-a"})
	cs := fake.NewSimpleClientset()
	cs.PrependReactor("create", "jobs", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "batch", Resource: "jobs"}, "x", errors.New("quota exceeded"))
	})
	b.cs = cs
	err := b.Submit(context.Background(), testHandle("cpu"))
	if err == nil || !strings.Contains(err.Error(), "namespace team-a") || !strings.Contains(err.Error(), "quota exceeded") {
		t.Fatalf("Submit: %v", err)
	}
}

// TestStatusFaults: a job the store does not know is NOT_FOUND; a Job that is gone
// without a result is FAILED (after the grace),
// the verdict is recorded in the store, and an API outage is an error, not a state.
func TestStatusFaults(t *testing.T) {
	ctx := context.Background()
	b := testBackend(t, Options{})
	h := testHandle("cpu")
	h.CreatedAt = time.Now().Add(-time.Hour).UTC().Format(time.RFC3339Nano)
	if err := b.st.Put(ctx, store.HandleKey(h.JobID), h.Encode()); err != nil {
		t.Fatal(err)
	}
	state, reason, err := b.Status(ctx, h)
	if err != nil || state != job.Failed || !strings.Contains(reason, "is gone") {
		t.Fatalf("gone Job: %s %q %v", state, reason, err)
	}
	if _, err := b.st.Get(ctx, store.StatusKey(h.JobID)); err != nil {
		t.Errorf("verdict not recorded: %v", err)
	}
	fresh := testHandle("cpu")
	fresh.JobID, fresh.K8sName = "job-1123456789abcdefghijklm", "job-1123456789abcdefghijklm"
	fresh.CreatedAt = time.Now().UTC().Format(time.RFC3339Nano)
	if err := b.st.Put(ctx, store.HandleKey(fresh.JobID), fresh.Encode()); err != nil {
		t.Fatal(err)
	}
	if state, _, _ := b.Status(ctx, fresh); state != job.Pending {
		t.Errorf("just-written handle without a Job: %s, want PENDING", state)
	}
	cs := fake.NewSimpleClientset()
	cs.PrependReactor("get", "jobs", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("apiserver down")
	})
	b.cs = cs
	other := testHandle("cpu")
	other.JobID, other.K8sName = "job-2123456789abcdefghijklm", "job-2123456789abcdefghijklm"
	if err := b.st.Put(ctx, store.HandleKey(other.JobID), other.Encode()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Status(ctx, other); err == nil {
		t.Error("an apiserver outage must be an error, not a status")
	}
}

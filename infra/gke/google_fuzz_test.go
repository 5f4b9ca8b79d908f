package gke

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// FuzzOpError: Google's failure messages (untrusted text) are worded without panics,
// always naming the operation or what to do.
func FuzzOpError(f *testing.F) {
	f.Add("Quota 'NVIDIA_L4_GPUS' exceeded. Limit: 0.0 in region us-central1.")
	f.Add("Insufficient regional quota to satisfy request: resource \"CPUS\"")
	f.Add("Google Compute Engine does not have enough resources available to fulfill request: us-central1-a. ZONE_RESOURCE_POOL_EXHAUSTED")
	f.Add("Quota '' exceeded. Limit:  in zone ")
	cfg := &Config{Project: "p", Zone: "us-central1-a", Cluster: "c"}
	f.Fuzz(func(t *testing.T, msg string) {
		err := opError(cfg, "operation-1", "node pool x", msg)
		if err == nil || err.Error() == "" {
			t.Fatalf("opError(%q) = %v", msg, err)
		}
		if !IsOpError(err) {
			t.Fatalf("not an OpError: %T", err)
		}
		_ = apiErr("create x", status.Error(codes.ResourceExhausted, msg))
	})
}

// FuzzBusyOp: GKE's refusal of a second operation, whatever its text.
func FuzzBusyOp(f *testing.F) {
	f.Add("Cluster is running incompatible operation operation-1700000000000-abcdef12.")
	f.Add("CLUSTER_ALREADY_HAS_OPERATION")
	f.Add("incompatible operation operation-")
	f.Fuzz(func(t *testing.T, msg string) {
		op, busy := busyOp(status.Error(codes.FailedPrecondition, msg))
		if busy != (strings.Contains(msg, "incompatible operation") || strings.Contains(msg, "CLUSTER_ALREADY_HAS_OPERATION")) {
			t.Errorf("busyOp(%q) = %v", msg, busy)
		}
		if op != "" && !strings.HasPrefix(op, "operation-") {
			t.Errorf("busyOp(%q) names %q", msg, op)
		}
		if _, busy := busyOp(status.Error(codes.NotFound, msg)); busy {
			t.Errorf("a NotFound is not a busy cluster: %q", msg)
		}
	})
}

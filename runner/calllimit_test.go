package runner

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/kinetic-run/kinetic/job"
)

// TestCallLimitSaturates: a spec's time limit above a century (a spec written by
// another client, or by hand) is no limit, never a duration that wrapped around into a
// deadline already past, which stopped the call at once (issue 45).
func TestCallLimitSaturates(t *testing.T) {
	for _, secs := range []int{0, -5, 1e10, math.MaxInt} {
		ctx, cancel := callLimit(context.Background(), &job.Spec{TimeoutSeconds: secs})
		if d, ok := ctx.Deadline(); ok {
			t.Errorf("timeout_seconds %d: a deadline %v away, want none", secs, time.Until(d))
		}
		cancel()
	}
	ctx, cancel := callLimit(context.Background(), &job.Spec{TimeoutSeconds: 30})
	defer cancel()
	if d, ok := ctx.Deadline(); !ok || time.Until(d) < 25*time.Second || time.Until(d) > 31*time.Second {
		t.Errorf("timeout_seconds 30: deadline %v, %v", d, ok)
	}
}

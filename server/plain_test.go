package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/kinetic-run/kinetic/protocol"
)

// Go's words for an ended context never reach the SDK; a handler's own words do.
func TestErrorsSayNoGoText(t *testing.T) {
	for _, err := range []error{
		context.DeadlineExceeded,
		fmt.Errorf("read the status: %w", context.DeadlineExceeded),
		context.Canceled,
		fmt.Errorf("list jobs: %w", context.Canceled),
		timedOut(fmt.Errorf("wait: %w", context.DeadlineExceeded), 1.5, "job job-x did not finish", "it keeps running"),
	} {
		e := toError(err)
		if strings.Contains(e.Message, "context") || strings.Contains(e.Message, "deadline exceeded") {
			t.Errorf("%v → %q", err, e.Message)
		}
		if e.Class != protocol.Timeout && e.Class != protocol.Cancelled {
			t.Errorf("%v → class %s", err, e.Class)
		}
	}
	if got := toError(timedOut(context.DeadlineExceeded, 2, "job job-x did not finish", "it keeps running")).Message; got != "job job-x did not finish within 2s; it keeps running" {
		t.Errorf("timedOut message: %q", got)
	}
	if err := errors.New("other"); timedOut(err, 1, "a", "b") != err {
		t.Error("timedOut changed an error that is no time-out")
	}
}

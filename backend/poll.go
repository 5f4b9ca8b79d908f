package backend

import (
	"context"
	"time"
)

type pollKey struct{}

// WithPollInterval returns ctx carrying d, the longest pause a backend makes between two
// checks that a job it was told to stop (Cancel, Cleanup) has stopped: the SDK's
// cleanup_poll_interval. A backend that waits by polling honours it (the local backend
// checks at once, then backs off up to d); one that waits on a confirmation of its own,
// or does not wait, has nothing to pace with it.
func WithPollInterval(ctx context.Context, d time.Duration) context.Context {
	if d <= 0 {
		return ctx
	}
	return context.WithValue(ctx, pollKey{}, d)
}

// PollInterval is the pause ctx carries (WithPollInterval), else def.
func PollInterval(ctx context.Context, def time.Duration) time.Duration {
	if d, ok := ctx.Value(pollKey{}).(time.Duration); ok {
		return d
	}
	return def
}

package server

import (
	"context"
	"errors"
	"strings"

	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/internal/seconds"
	"github.com/kinetic-run/kinetic/protocol"
)

// invalidf is an InvalidArgument error chosen by a handler (bad params, an unknown
// method): errs.Errorf, so %w keeps its cause.
func invalidf(format string, args ...any) error {
	return errs.Errorf(errs.InvalidArgument, format, args...)
}

// classify says which protocol error class err belongs to, from its errs code alone:
// packages give their errors a code where they start (errs.New for a sentinel, a
// Code method on a typed error, errs.Errorf/Wrap here and in handlers), and this is
// the one place codes become the protocol's classes. An error without a code is
// Internal (a store or cluster that cannot be reached, a bug: nothing the caller's
// arguments can fix). Codes without a class of their own take the closest:
// FailedPrecondition is InvalidArgument (the caller must change something first).
func classify(err error) protocol.Class {
	switch errs.CodeOf(err) {
	case errs.InvalidArgument, errs.FailedPrecondition:
		return protocol.InvalidArgument
	case errs.NotFound:
		return protocol.NotFound
	case errs.DeadlineExceeded:
		return protocol.Timeout
	case errs.NoResult:
		return protocol.NoResult
	case errs.Cancelled:
		return protocol.Cancelled
	case errs.PermissionDenied:
		return protocol.PermissionDenied
	case errs.ResourceExhausted:
		return protocol.ResourceExhausted
	case errs.Unavailable:
		return protocol.Unavailable
	default: // Internal, and an error without a code
		return protocol.Internal
	}
}

// toError is err on the wire. Go's own words for a context that ended ("context
// deadline exceeded", "context canceled") never reach a user: a handler that knows
// what timed out says so (timedOut); anything left is said plainly here.
func toError(err error) *protocol.Error {
	class, msg := classify(err), errs.Message(err)
	switch class {
	case protocol.Timeout:
		msg = plain(msg, context.DeadlineExceeded.Error(), "timed out")
	case protocol.Cancelled:
		msg = plain(msg, context.Canceled.Error(), "cancelled")
	}
	e := &protocol.Error{Class: class, Message: msg}
	if gone := (*engine.CleanedUpError)(nil); errors.As(err, &gone) {
		t := takenBy(gone.Tombstone)
		e.Collected = &t
	}
	return e
}

// plain replaces Go's phrase in msg with word (msg alone when it is only the phrase).
func plain(msg, phrase, word string) string {
	if msg == phrase {
		return word
	}
	return strings.ReplaceAll(msg, phrase, word)
}

// timedOut is err, when a wait of secs seconds ran out, as a Timeout that says what did
// not happen in time and what is left (the job keeps running).
func timedOut(err error, secs float64, what, then string) error {
	if _, limited := seconds.Limit(secs); err == nil || !errors.Is(err, context.DeadlineExceeded) || !limited {
		return err
	}
	return errs.Errorf(errs.DeadlineExceeded, "%s within %gs; %s", what, secs, then)
}

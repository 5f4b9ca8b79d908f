package server

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/kinetic-run/kinetic/accel"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/deps"
	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/protocol"
)

// classError lets a handler choose the class of its error.
type classError struct {
	class protocol.Class
	err   error
}

func (e *classError) Error() string { return e.err.Error() }
func (e *classError) Unwrap() error { return e.err }

// invalidf is an InvalidArgument error.
func invalidf(format string, args ...any) error {
	return &classError{protocol.InvalidArgument, fmt.Errorf(format, args...)}
}

// classify says which protocol error class err belongs to: a class chosen by the
// handler, else the class of a known sentinel or error type, else Internal (a store or
// cluster that cannot be reached, a bug: nothing the caller's arguments can fix).
func classify(err error) protocol.Class {
	var ce *classError
	var unknownAccel *accel.UnknownError
	var depsFile *deps.FileError
	switch {
	case errors.As(err, &ce):
		return ce.class
	case errors.Is(err, engine.ErrNotFound):
		return protocol.NotFound
	case errors.Is(err, engine.ErrNoResult):
		return protocol.NoResult
	case errors.Is(err, context.DeadlineExceeded):
		return protocol.Timeout
	case errors.Is(err, context.Canceled):
		return protocol.Cancelled
	case errors.As(err, &unknownAccel),
		errors.Is(err, config.ErrInvalid),
		errors.Is(err, config.ErrProfileNotFound),
		errors.Is(err, config.ErrCorrupt),
		errors.As(err, &depsFile),
		errors.Is(err, deps.ErrSyntax),
		errors.Is(err, deps.ErrLocalPath),
		errors.Is(err, deps.ErrCredentials),
		errors.Is(err, deps.ErrInclude),
		errors.Is(err, deps.ErrUnsupported),
		errors.Is(err, engine.ErrNotDebug):
		return protocol.InvalidArgument
	default:
		return protocol.Internal
	}
}

// toError is err on the wire. Go's own words for a context that ended ("context
// deadline exceeded", "context canceled") never reach a user: a handler that knows
// what timed out says so (timedOut); anything left is said plainly here.
func toError(err error) *protocol.Error {
	class, msg := classify(err), err.Error()
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
	if err == nil || !errors.Is(err, context.DeadlineExceeded) || secs <= 0 {
		return err
	}
	return &classError{protocol.Timeout, fmt.Errorf("%s within %gs; %s", what, secs, then)}
}

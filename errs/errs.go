// Package errs gives an error a code where it starts, so that the edges (the protocol
// server, the CLI) map a few codes instead of every package's sentinels and types. It is
// modelled on gocloud.dev/gcerrors and is a leaf: it imports the standard library only.
//
// A package attaches a code where an error starts:
//
//	var ErrSyntax = errs.New(errs.InvalidArgument, "invalid requirement syntax") // a sentinel
//	return errs.Errorf(errs.InvalidArgument, "bad path %q: %w", p, err)          // %w kept
//	func (e *UnknownError) Code() errs.Code { return errs.InvalidArgument }      // a typed error
//
// and an edge asks CodeOf(err), which walks the chain. Wrapping never hides the original:
// errors.Is and errors.As see through every error of this package.
package errs

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Code says what kind of failure an error is, whatever package it comes from.
type Code int

// The codes. The zero Code is Internal, so an error nobody classified is Internal.
const (
	// Internal: a bug, or a failure nothing the caller gives can fix.
	Internal Code = iota
	// InvalidArgument: the request cannot be served as given (a bad name, path, value
	// or file).
	InvalidArgument
	// NotFound: the job or batch named does not exist.
	NotFound
	// FailedPrecondition: the request is well formed but the state does not allow it
	// (e.g. a debugger asked of a job that is not a debug job).
	FailedPrecondition
	// Unavailable: a service (store, cluster, registry) could not be reached; trying
	// again may work.
	Unavailable
	// PermissionDenied: the caller's credentials do not allow it.
	PermissionDenied
	// ResourceExhausted: a quota or a limit was reached.
	ResourceExhausted
	// Cancelled: the caller cancelled (context.Canceled).
	Cancelled
	// DeadlineExceeded: a deadline passed first (context.DeadlineExceeded).
	DeadlineExceeded
	// NoResult: a job ended without a result (killed, cancelled, lost).
	NoResult
)

var names = [...]string{
	Internal:           "Internal",
	InvalidArgument:    "InvalidArgument",
	NotFound:           "NotFound",
	FailedPrecondition: "FailedPrecondition",
	Unavailable:        "Unavailable",
	PermissionDenied:   "PermissionDenied",
	ResourceExhausted:  "ResourceExhausted",
	Cancelled:          "Cancelled",
	DeadlineExceeded:   "DeadlineExceeded",
	NoResult:           "NoResult",
}

func (c Code) String() string {
	if c >= 0 && int(c) < len(names) {
		return names[c]
	}
	return fmt.Sprintf("Code(%d)", int(c))
}

// Coder is an error that says its own code. Typed errors implement it; CodeOf asks it.
type Coder interface {
	error
	Code() Code
}

// Standalone is an error whose message is whole on its own: it names what failed and
// the fix. The edges (the CLI's last line, the protocol) show it alone (Message), not
// behind the words of the layers it came up through — a client library's
// `Post "https://…": ` among them.
type Standalone interface {
	error
	Standalone()
}

// Message is what a user is shown for err: the first Standalone error in its chain,
// else err's own text.
func Message(err error) string {
	var s Standalone
	if errors.As(err, &s) {
		return s.Error()
	}
	return err.Error()
}

// Error is an error with a code: a message of its own (New) or a wrapped error (Wrap,
// Errorf), which Unwrap returns.
type Error struct {
	code Code
	msg  string
	err  error
}

// New returns an error with the message msg and the code c, for a sentinel:
// errors.Is(err, sentinel) holds for what wraps it, as for errors.New.
func New(c Code, msg string) error { return &Error{code: c, msg: msg} }

// Wrap returns err with the code c: the same message, and errors.Is and errors.As see
// err through it. Wrap(c, nil) is nil.
func Wrap(c Code, err error) error {
	if err == nil {
		return nil
	}
	return &Error{code: c, err: err}
}

// Errorf is Wrap(c, fmt.Errorf(format, args...)): %w verbs keep their errors in the chain.
func Errorf(c Code, format string, args ...any) error {
	return &Error{code: c, err: fmt.Errorf(format, args...)}
}

func (e *Error) Error() string {
	if e.err != nil {
		return e.err.Error()
	}
	return e.msg
}

// Code is the error's code.
func (e *Error) Code() Code { return e.code }

// Unwrap is the wrapped error (nil for New).
func (e *Error) Unwrap() error { return e.err }

// CodeOf is the code of err: the first code met walking its chain from the outside in
// (depth first through errors.Join and multiple %w), where an error that implements
// Coder says its own, and context.Canceled and context.DeadlineExceeded (or an error
// that Is one of them by its own Is method) are Cancelled and DeadlineExceeded. An error
// with no code anywhere, and nil, are Internal.
func CodeOf(err error) Code {
	if c, ok := find(err); ok {
		return c
	}
	return Internal
}

func find(err error) (Code, bool) {
	for err != nil {
		if c, ok := err.(Coder); ok {
			return c.Code(), true
		}
		switch {
		case err == context.Canceled || isBy(err, context.Canceled):
			return Cancelled, true
		case err == context.DeadlineExceeded || isBy(err, context.DeadlineExceeded):
			return DeadlineExceeded, true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if c, ok := find(e); ok {
					return c, true
				}
			}
			return 0, false
		default:
			return 0, false
		}
	}
	return 0, false
}

// isBy reports whether err's own Is method matches target (errors.Is for one link).
func isBy(err, target error) bool {
	x, ok := err.(interface{ Is(error) bool })
	return ok && x.Is(target)
}

// Is reports whether err's code is c.
func Is(err error, c Code) bool { return CodeOf(err) == c }

var _ Coder = (*Error)(nil)

// MaxQuoted is how much of a user's input an error message repeats: enough to
// recognise it, never a 100 KB argument echoed back whole.
const MaxQuoted = 200

// Quote is %q of s cut to MaxQuoted bytes (on a character boundary), saying how long
// the whole input was when it was cut.
func Quote(s string) string {
	if len(s) <= MaxQuoted {
		return fmt.Sprintf("%q", s)
	}
	cut := MaxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%q… (%d bytes)", s[:cut], len(s))
}

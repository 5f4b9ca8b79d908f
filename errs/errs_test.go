package errs_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/kinetic-run/kinetic/errs"
)

var errSentinel = errs.New(errs.InvalidArgument, "bad thing")

type typed struct{ name string }

func (e *typed) Error() string        { return "typed " + e.name }
func (e *typed) Code() errs.Code      { return errs.NotFound }
func (e *typed) Is(target error) bool { return target == errPlain }
func (e *typed) Unwrap() error        { return context.Canceled } // the outer code wins
var errPlain = errors.New("plain")

// isCancel says it is context.Canceled by its own Is method.
type isCancel struct{}

func (isCancel) Error() string        { return "stopped" }
func (isCancel) Is(target error) bool { return target == context.Canceled }

func TestCodeOf(t *testing.T) {
	pathErr := &fs.PathError{Op: "open", Path: "/x", Err: fs.ErrNotExist}
	for _, c := range []struct {
		name string
		err  error
		want errs.Code
	}{
		{"nil", nil, errs.Internal},
		{"plain", errors.New("boom"), errs.Internal},
		{"sentinel", errSentinel, errs.InvalidArgument},
		{"sentinel wrapped", fmt.Errorf("a: %w", fmt.Errorf("b: %w", errSentinel)), errs.InvalidArgument},
		{"typed", &typed{"x"}, errs.NotFound},
		{"typed wrapped", fmt.Errorf("a: %w", &typed{"x"}), errs.NotFound},
		{"Wrap", errs.Wrap(errs.Unavailable, errors.New("dial")), errs.Unavailable},
		{"Errorf", errs.Errorf(errs.PermissionDenied, "read %s: %w", "k", pathErr), errs.PermissionDenied},
		{"outer code wins", errs.Wrap(errs.DeadlineExceeded, fmt.Errorf("x: %w", errSentinel)), errs.DeadlineExceeded},
		{"outer code over context", errs.Wrap(errs.DeadlineExceeded, context.Canceled), errs.DeadlineExceeded},
		{"canceled", context.Canceled, errs.Cancelled},
		{"canceled wrapped", fmt.Errorf("wait: %w", context.Canceled), errs.Cancelled},
		{"deadline wrapped", fmt.Errorf("wait: %w", context.DeadlineExceeded), errs.DeadlineExceeded},
		{"Is method", fmt.Errorf("x: %w", isCancel{}), errs.Cancelled},
		{"join, first with a code", errors.Join(errors.New("a"), errSentinel, context.Canceled), errs.InvalidArgument},
		{"two %w", fmt.Errorf("%w and %w", errors.New("a"), context.DeadlineExceeded), errs.DeadlineExceeded},
		{"join without a code", errors.Join(errors.New("a"), errors.New("b")), errs.Internal},
		{"zero code", errs.New(errs.Internal, "bug"), errs.Internal},
	} {
		if got := errs.CodeOf(c.err); got != c.want {
			t.Errorf("%s: CodeOf(%v) = %s, want %s", c.name, c.err, got, c.want)
		}
		if !errs.Is(c.err, c.want) {
			t.Errorf("%s: Is(%v, %s) = false", c.name, c.err, c.want)
		}
	}
}

func TestChainsKept(t *testing.T) {
	pathErr := &fs.PathError{Op: "open", Path: "/x", Err: fs.ErrNotExist}
	err := fmt.Errorf("scan: %w", errs.Errorf(errs.InvalidArgument, "data %q: %w", "/x", pathErr))
	if !errors.Is(err, fs.ErrNotExist) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("errors.Is lost fs.ErrNotExist through Errorf: %v", err)
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Path != "/x" {
		t.Errorf("errors.As lost the *fs.PathError through Errorf: %v", err)
	}
	if got, want := err.Error(), `scan: data "/x": open /x: file does not exist`; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
	var e *errs.Error
	if !errors.As(err, &e) || e.Code() != errs.InvalidArgument {
		t.Errorf("errors.As(*errs.Error) = %v", e)
	}

	w := errs.Wrap(errs.NotFound, errPlain)
	if !errors.Is(w, errPlain) || w.Error() != "plain" {
		t.Errorf("Wrap: Is %v, message %q", errors.Is(w, errPlain), w.Error())
	}
	if errs.Wrap(errs.NotFound, nil) != nil {
		t.Error("Wrap(c, nil) is not nil")
	}
	if !errors.Is(fmt.Errorf("x: %w", errSentinel), errSentinel) || errors.Is(errs.New(errs.InvalidArgument, "bad thing"), errSentinel) {
		t.Error("a sentinel made by New is not compared by identity")
	}
	if errSentinel.Error() != "bad thing" {
		t.Errorf("New's message %q", errSentinel.Error())
	}
	if !errors.Is(fmt.Errorf("x: %w", &typed{}), errPlain) {
		t.Error("a typed error's Is method was not consulted")
	}
}

func TestCodeString(t *testing.T) {
	for c, want := range map[errs.Code]string{errs.Internal: "Internal", errs.NoResult: "NoResult", errs.Code(99): "Code(99)"} {
		if got := c.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int(c), got, want)
		}
	}
}

func ExampleCodeOf() {
	errSyntax := errs.New(errs.InvalidArgument, "invalid requirement syntax")
	err := fmt.Errorf("requirements.txt:3: %w", errSyntax)
	fmt.Println(errs.CodeOf(err), errors.Is(err, errSyntax))
	fmt.Println(errs.CodeOf(fmt.Errorf("wait: %w", context.DeadlineExceeded)))
	fmt.Println(errs.CodeOf(errors.New("boom")))
	// Output:
	// InvalidArgument true
	// DeadlineExceeded
	// Internal
}

func TestQuote(t *testing.T) {
	Quote, MaxQuoted := errs.Quote, errs.MaxQuoted
	if got := Quote("abc"); got != `"abc"` {
		t.Errorf("Quote(abc) = %s", got)
	}
	long := strings.Repeat("é", 150) // 300 bytes: the cut must fall on a character boundary
	got := Quote(long)
	if !strings.HasSuffix(got, "… (300 bytes)") || strings.Contains(got, `\x`) || len(got) > MaxQuoted+40 {
		t.Errorf("Quote(300 bytes) = %s", got)
	}
}

type whole struct{}

func (whole) Error() string {
	return "cluster c presents a certificate its CA does not verify: wait, then run again"
}
func (whole) Standalone() {}

// TestMessage: a Standalone error is shown alone, whatever wraps it (a client's
// request line); any other error as it is.
func TestMessage(t *testing.T) {
	wrapped := fmt.Errorf("submit: %w", &url.Error{Op: "Post", URL: "https://10.0.0.1/apis", Err: whole{}})
	if got := errs.Message(wrapped); got != (whole{}).Error() {
		t.Errorf("Message = %q", got)
	}
	if got := errs.Message(fmt.Errorf("submit: %w", errPlain)); got != "submit: plain" {
		t.Errorf("Message of a plain chain = %q", got)
	}
}

package deps

import (
	"fmt"

	"github.com/kinetic-run/kinetic/errs"
)

// Sentinel errors, each errs.InvalidArgument; every error returned by this package that comes from the content of
// a dependency file wraps one of them (test with errors.Is) inside a *FileError.
var (
	// ErrSyntax: the line is not valid requirements-file or PEP 508 syntax.
	ErrSyntax = errs.New(errs.InvalidArgument, "invalid requirement syntax")
	// ErrLocalPath: an editable install or a local path, which cannot be installed on
	// another machine.
	ErrLocalPath = errs.New(errs.InvalidArgument, "local path or editable install not supported")
	// ErrCredentials: a URL with a user name or password in it.
	ErrCredentials = errs.New(errs.InvalidArgument, "credentials embedded in URL")
	// ErrInclude: a -r/-c include that cannot be followed (cycle, URL, missing file).
	ErrInclude = errs.New(errs.InvalidArgument, "cannot follow include")
	// ErrUnsupported: a requirements-file option kinetic does not pass on.
	ErrUnsupported = errs.New(errs.InvalidArgument, "unsupported requirements-file option")
)

// FileError locates a problem in a dependency file. Its code is its Err's, else
// InvalidArgument (a file that cannot be read as a dependency file).
type FileError struct {
	File string // path of the file, as discovered
	Line int    // 1-based line, 0 when the problem concerns the whole file
	Err  error
}

func (e *FileError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.File, e.Err)
}

func (e *FileError) Unwrap() error { return e.Err }

// Code is the code of Err when it has one, else errs.InvalidArgument.
func (e *FileError) Code() errs.Code {
	if c := errs.CodeOf(e.Err); c != errs.Internal {
		return c
	}
	return errs.InvalidArgument
}

type localPathError struct {
	what     string
	editable bool
}

func (e *localPathError) Error() string {
	what := fmt.Sprintf("%q is a local path", e.what)
	if e.editable {
		what = fmt.Sprintf("%q is an editable install", "-e "+e.what)
	}
	return what + ", which cannot be installed where the job runs: ship the code in your " +
		"working directory instead (it is packaged automatically and put on sys.path), or " +
		"publish the package to an index and pin a version (name==1.2.3)"
}

func (e *localPathError) Unwrap() error { return ErrLocalPath }

type credentialsError struct{ url string }

func (e *credentialsError) Error() string {
	return fmt.Sprintf("URL %q embeds credentials: refused, because the dependency list is "+
		"uploaded with the job and the credentials would land in build logs and cached "+
		"artifacts. Instead, use a custom image with the private packages already installed "+
		"(container_image=...), or an index reachable without credentials (public, or allowed "+
		"by network/service-account access from where the build runs)", e.url)
}

func (e *credentialsError) Unwrap() error { return ErrCredentials }

// kindError is an error whose message is its own, classified by a sentinel.
type kindError struct {
	msg  string
	kind error
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.kind }

// wrapf returns an error with the formatted message that errors.Is kind.
func wrapf(kind error, format string, args ...any) error {
	return &kindError{msg: fmt.Sprintf(format, args...), kind: kind}
}

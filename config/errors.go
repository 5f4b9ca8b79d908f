package config

import (
	"fmt"
	"strings"

	"github.com/kinetic-run/kinetic/errs"
)

// ErrProfileNotFound is wrapped by ProfileNotFoundError. Its code is InvalidArgument,
// not NotFound: the caller named a profile that is not there (NotFound, on the
// protocol, is a job or batch).
var ErrProfileNotFound = errs.New(errs.InvalidArgument, "profile not found")

// ErrCorrupt is wrapped by CorruptFileError: the profiles file must be fixed first.
var ErrCorrupt = errs.New(errs.FailedPrecondition, "corrupt profiles file")

// ProfileNotFoundError reports a profile named by --profile, KINETIC_PROFILE or the file's
// "current" that the file does not hold. It lists the profiles that do exist, since the
// usual cause is a typo.
type ProfileNotFoundError struct {
	Name     string
	Origin   string   // who named it: "--profile", "KINETIC_PROFILE", "current in FILE"; may be ""
	Existing []string // sorted
	File     string
}

func (e *ProfileNotFoundError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "profile %q does not exist", e.Name)
	if e.Origin != "" {
		fmt.Fprintf(&b, " (named by %s)", e.Origin)
	}
	if len(e.Existing) == 0 {
		where := "there are no profiles"
		if e.File != "" {
			where = e.File + " has no profiles"
		}
		fmt.Fprintf(&b, "; %s: create one with \"kinetic profile create %s\"", where, e.Name)
	} else {
		fmt.Fprintf(&b, "; existing profiles: %s", strings.Join(e.Existing, ", "))
	}
	return b.String()
}

func (e *ProfileNotFoundError) Unwrap() error { return ErrProfileNotFound }

// CorruptFileError reports a profiles file that cannot be parsed. The message says how
// to recover, because the user cannot run any command until the file is fixed.
type CorruptFileError struct {
	Path string
	Err  error
}

func (e *CorruptFileError) Error() string {
	return fmt.Sprintf("profiles file %s is not valid: %v; fix it by hand, or move it aside and "+
		"recreate your profiles with \"kinetic profile create\" (KINETIC_PROFILES_FILE selects another file)", e.Path, e.Err)
}

func (e *CorruptFileError) Unwrap() []error { return []error{ErrCorrupt, e.Err} }

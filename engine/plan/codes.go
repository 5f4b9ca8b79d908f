package plan

import "github.com/kinetic-run/kinetic/errs"

// withCode is err with the code c, unless an error in its chain already has one (a
// Data path's own InvalidArgument, a store's PermissionDenied): every error a step
// makes reaches the protocol's edge with a code, never as Internal by default.
func withCode(c errs.Code, err error) error {
	if err == nil || errs.CodeOf(err) != errs.Internal {
		return err
	}
	return errs.Wrap(c, err)
}

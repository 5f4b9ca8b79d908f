package cli

import (
	"errors"

	"github.com/kinetic-run/kinetic/backend/provision"
)

// ExitError carries a specific process exit code out of a command (the provisioners'
// type: a setup command's error keeps its code).
type ExitError = provision.ExitError

// ExitCode maps an error returned by a command to the process exit code: 1 unless the
// error says otherwise.
func ExitCode(err error) int {
	var ee *ExitError
	if errors.As(err, &ee) && ee.Code != 0 {
		return ee.Code
	}
	return 1
}

var errJobFailed = errors.New("the job failed")

package runner

import (
	"fmt"
	"syscall"
)

// lowFDLimit is the open-files limit (RLIMIT_NOFILE) below which a Python that exits
// before it reports is said to have likely run out of file descriptors: an interpreter
// with cloudpickle and a few libraries open holds dozens, jax or torch hundreds.
const lowFDLimit = 256

// fdLimitHint is what to add to the error of a Python that exited without a result
// when this process's open-files limit is low (every process a job starts inherits it),
// "" otherwise: "python exited before it loaded the function" alone gave no cause under
// `ulimit -n 64`.
func fdLimitHint() string {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil || r.Cur >= lowFDLimit {
		return ""
	}
	return fmt.Sprintf("; the open-files limit is %d (ulimit -n), likely too low for Python (\"too many open files\"): raise it, e.g. `ulimit -n 4096` in the shell that starts kinetic (the limit is inherited by the jobs it runs), and run it again", r.Cur)
}

// fdLimitSaid is what to add to an error that ran out of file descriptors (EMFILE): the
// limit, and how to raise it.
func fdLimitSaid() string {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return "; raise the open-files limit (ulimit -n) in the shell that starts kinetic, and run it again"
	}
	return fmt.Sprintf("; the open-files limit is %d (ulimit -n): raise it, e.g. `ulimit -n 4096` in the shell that starts kinetic (the jobs it runs inherit it), and run it again", r.Cur)
}

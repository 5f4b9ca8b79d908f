// Package seconds turns a number of seconds (a float from the protocol, a flag, a
// spec's int) into a time.Duration, in one place and without overflow.
//
// time.Duration(secs*1e9) wraps around past about 292 years: 1e10 seconds, 1e300 or
// Python's sys.maxsize became a negative duration, which a context took as a deadline
// already past (result(timeout=1e300) raised TimeoutError at once, a cleanup removed
// nothing). Here a limit longer than a century, or +Inf, is no limit at all, as a person
// who writes timeout=1e300 means.
package seconds

import (
	"math"
	"time"
)

// Century is the longest limit kept as a limit: anything longer is no limit.
const Century = 100 * 365 * 24 * time.Hour

// Limit is secs as a time limit: ok is false when there is none (0 or less, NaN, +Inf,
// or more than a Century), else d is secs as a duration, at least a nanosecond.
func Limit(secs float64) (d time.Duration, ok bool) {
	if !(secs > 0) || secs > Century.Seconds() { // NaN fails secs > 0
		return 0, false
	}
	d = time.Duration(secs * float64(time.Second))
	if d < 1 {
		d = 1
	}
	return d, true
}

// Duration is secs as a span to show or add to a time (an elapsed time, a mark on a
// time axis): NaN and negative values are 0, anything above a Century is a Century.
func Duration(secs float64) time.Duration {
	switch {
	case math.IsNaN(secs) || secs <= 0:
		return 0
	case secs >= Century.Seconds():
		return Century
	}
	return time.Duration(secs * float64(time.Second))
}

// Whole is n whole seconds as a duration, as Duration (a spec's int field).
func Whole(n int64) time.Duration {
	return Duration(float64(n))
}

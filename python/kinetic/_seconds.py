"""Timeouts and intervals of the SDK's public functions, in one place, checked before
anything is sent to the engine (docs/protocol.md, "Timeouts in the SDK"):

- None, float('inf') and anything above a century (1e10, 1e300, sys.maxsize, 10**400)
  mean no limit: never a number that overflows on the way (Go's time.Duration wraps
  around past 292 years; the engine saturates the same way, internal/seconds);
- 0 means "now", as in concurrent.futures: result(timeout=0) returns the value if the job
  has ended and raises TimeoutError at once if not;
- NaN or a negative number raises ValueError, anything that is not a number TypeError,
  naming the function and the parameter. (Python's json would write NaN and Infinity,
  which JSON does not have.)"""

import math
import numbers

# The longest limit kept as a limit, in seconds (as the engine's seconds.Century).
CENTURY = 100 * 365 * 24 * 3600


def seconds(value, func, param):
    """value as a float of seconds (0.0: now), or None for no limit; func(param=...)
    names it in the error."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError("%s(%s=%r): must be a number of seconds or None, got %s"
                        % (func, param, value, type(value).__name__))
    try:
        f = float(value)
    except OverflowError:  # an int too big for a float: past any century, or below 0
        f = math.inf if value > 0 else -math.inf
    if math.isnan(f):
        raise ValueError("%s(%s=nan): must be a number of seconds or None (None or float('inf'): no limit)"
                         % (func, param))
    if f < 0:
        raise ValueError("%s(%s=%s): must be a number of seconds, 0 or more, or None"
                         % (func, param, _short(value)))
    return None if f > CENTURY else f


def _short(value):
    r = repr(value)
    return r if len(r) <= 40 else r[:20] + "..." + r[-8:]


def wire(value):
    """Checked seconds as the engine's timeout param takes them: 0 is no limit."""
    return 0 if value is None else value


def limit(value):
    """Checked seconds as params of a job request: {} for no limit, no_wait for 0 (now),
    else the timeout."""
    if value is None:
        return {}
    if value == 0:
        return {"no_wait": True}
    return {"timeout": value}

"""Timeouts and intervals of the SDK's public functions, checked before anything is sent
to the engine: None and float('inf') mean no limit (0 on the wire, docs/protocol.md);
NaN or a negative number raises ValueError, anything that is not a number TypeError,
naming the function and the parameter. (Python's json would write NaN and Infinity, which JSON does
not have.)"""

import math
import numbers


def seconds(value, func, param):
    """value as a float of seconds, or None for no limit; func(param=...) names it in the
    error."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError("%s(%s=%r): must be a number of seconds or None, got %s"
                        % (func, param, value, type(value).__name__))
    f = float(value)
    if math.isnan(f):
        raise ValueError("%s(%s=nan): must be a number of seconds or None (None or float('inf'): no limit)"
                         % (func, param))
    if f < 0:
        raise ValueError("%s(%s=%r): must be a number of seconds, 0 or more, or None" % (func, param, value))
    return None if math.isinf(f) else f


def wire(value):
    """Checked seconds as the engine takes them: 0 is no limit."""
    return 0 if value is None else value

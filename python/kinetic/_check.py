"""Checks of the public functions' parameters, made before anything is sent to the
engine: a wrong type is a TypeError and a wrong value a ValueError, each naming the
function and the parameter in Python's terms ("kinetic.run(accelerator=...) must be a
str, got int"), never the engine's words."""


def _name(value):
    return type(value).__name__


def fail_type(func, param, want, value):
    raise TypeError("%s(%s=...) must be %s, got %s" % (func, param, want, _name(value)))


def string(value, func, param, optional=True):
    """A str (or None when optional)."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        fail_type(func, param, "a str" + (" or None" if optional else ""), value)
    return value


def boolean(value, func, param, optional=False):
    """True or False (not a truthy string: spot='no' must not mean spot=True)."""
    if value is None and optional:
        return None
    if not isinstance(value, bool):
        fail_type(func, param, "True or False" + (" (or None)" if optional else ""), value)
    return value


# The largest int a parameter takes unless it says otherwise: the engine reads 64-bit
# ints, and a count past this is a mistake (10**30 was "is a JSON number 1e30, not a
# whole number", the engine's words).
MAX_INT = 2**31 - 1


def integer(value, func, param, minimum=None, optional=False, maximum=MAX_INT):
    """An int (not a bool) of at least minimum and at most maximum."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        fail_type(func, param, "an int" + (" or None" if optional else ""), value)
    if minimum is not None and value < minimum:
        raise ValueError("%s(%s=%s): must be %d or more" % (func, param, _clip(value), minimum))
    if maximum is not None and value > maximum:
        raise ValueError("%s(%s=%s): must be at most %d" % (func, param, _clip(value), maximum))
    return value


def _clip(value):
    r = repr(value)
    return r if len(r) <= 40 else r[:20] + "..." + r[-8:]


def str_list(value, func, param):
    """A list (or tuple) of str, or None. A lone str is refused rather than read as its
    letters (or guessed to be one name): the documented type is a list."""
    if value is None:
        return []
    if isinstance(value, str):
        raise TypeError("%s(%s=...) must be a list of str, got str; for one name write %s=[%r]"
                        % (func, param, param, value))
    if not isinstance(value, (list, tuple)):
        fail_type(func, param, "a list of str", value)
    for v in value:
        if not isinstance(v, str):
            raise TypeError("%s(%s=...) must be a list of str; it holds %r, a %s" % (func, param, v, _name(v)))
    return list(value)


def str_dict(value, func, param):
    """A dict of str to str, or None."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        fail_type(func, param, "a dict of str to str", value)
    for k, v in value.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise TypeError("%s(%s=...) must be a dict of str to str; %r: %r is %s: %s"
                            % (func, param, k, v, _name(k), _name(v)))
    return dict(value)


def callable_or_none(value, func, param):
    if value is not None and not callable(value):
        fail_type(func, param, "a callable or None", value)
    return value


def one_of(value, func, param, choices):
    """A str among choices."""
    string(value, func, param, optional=False)
    if value not in choices:
        raise ValueError("%s(%s=%r): must be one of %s" % (func, param, value, ", ".join(repr(c) for c in choices)))
    return value

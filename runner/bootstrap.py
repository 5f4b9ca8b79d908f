# Kinetic's Python bootstrap: the part of the runner that must run inside the job's
# interpreter. It loads the call, runs it, and leaves result.pkl and envelope.json in the
# output directory for the Go runner to upload. It uses only the standard library, plus
# cloudpickle for pickled calls. Arguments: MODE PAYLOAD OUT_DIR ROOT CWD.
import json
import os
import sys
import traceback

REPR_LIMIT = 20000


def _qualname(t):
    mod = getattr(t, "__module__", "builtins") or "builtins"
    return mod + "." + getattr(t, "__qualname__", t.__name__)


def _dumps(obj):
    try:
        import cloudpickle
        return cloudpickle.dumps(obj)
    except ImportError:
        import pickle
        return pickle.dumps(obj)


def _safe_repr(obj, limit=REPR_LIMIT):
    try:
        r = repr(obj)
    except BaseException as e:  # a broken __repr__ must not hide the real problem
        r = "<unrepresentable %s: %r>" % (type(obj).__name__, e)
    return r if len(r) <= limit else r[:limit] + "...[truncated]"


def _write_atomic(path, data, mode="wb"):
    tmp = path + ".tmp"
    with open(tmp, mode) as f:
        f.write(data)
    os.replace(tmp, path)


def _literal(arg):
    import ast
    try:
        return ast.literal_eval(arg)
    except (ValueError, SyntaxError):
        return arg


def _load_entry(path, func_name):
    import importlib.util
    name = os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None:
        raise ImportError("cannot load %s as a Python module" % path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    try:
        return getattr(mod, func_name)
    except AttributeError:
        raise AttributeError("%s has no function %r" % (path, func_name)) from None


_DATA_PREFIX = "\x00kinetic-data:"


def _resolve_data(v, paths):
    """Replace the SDK's Data sentinels, at any depth of lists, tuples and dicts, by paths."""
    if type(v) is str and v.startswith(_DATA_PREFIX) and v.endswith("\x00"):
        return paths[v]
    if type(v) is list:
        return [_resolve_data(x, paths) for x in v]
    if type(v) is tuple:
        return tuple(_resolve_data(x, paths) for x in v)
    if type(v) is dict:
        return {k: _resolve_data(x, paths) for k, x in v.items()}
    return v


def main():
    mode, payload, out_dir, root, cwd = sys.argv[1:6]
    # Optional: the arguments of a batch child (the payload is then the function alone),
    # and a JSON map from Data sentinels to local paths.
    args_path = sys.argv[6] if len(sys.argv) > 6 else ""
    data_map = sys.argv[7] if len(sys.argv) > 7 else ""
    env = {"success": False, "host": os.environ.get("KINETIC_HOST_INDEX", "0"), "has_value": False}
    phase = "plan"
    try:
        if root:
            sys.path.insert(0, root)
        if cwd:
            os.chdir(cwd)
        phase = "unpickle"
        if mode == "python-pickle":
            try:
                import cloudpickle
            except ImportError:
                raise ImportError(
                    "cloudpickle is not installed in the job's Python (%s): install it there "
                    "(pip install cloudpickle) or add it to your requirements" % sys.executable) from None
            with open(payload, "rb") as f:
                if args_path:
                    func = cloudpickle.load(f)
                else:
                    func, args, kwargs = cloudpickle.load(f)
            if args_path:
                with open(args_path, "rb") as f:
                    args, kwargs = cloudpickle.load(f)
            if data_map:
                phase = "data"
                with open(data_map) as f:
                    paths = json.load(f)
                args, kwargs = _resolve_data(tuple(args), paths), _resolve_data(dict(kwargs), paths)
        else:
            with open(payload) as f:
                entry = json.load(f)
            func = _load_entry(entry["file"], entry["func"])
            args, kwargs = [_literal(a) for a in entry.get("args") or []], {}
        phase = "call"
        value = None
        try:
            value = func(*args, **kwargs)
        except SystemExit as e:
            code = e.code
            if code not in (None, 0):
                env["exit_code"] = code if isinstance(code, int) else 1
                raise RuntimeError("the function called sys.exit(%r): a non-zero exit is a failure" % (code,)) from None
            env["exit_code"] = 0
        phase = "result"
        try:
            data = _dumps(value)
        except BaseException as e:
            raise TypeError("the return value of %s could not be pickled (%s: %s); its repr: %s" % (
                getattr(func, "__qualname__", "the function"), type(e).__name__, e, _safe_repr(value))) from None
        _write_atomic(os.path.join(out_dir, "result.pkl"), data)
        env.update(success=True, has_value=True, value_repr=_safe_repr(value, 2000))
    except BaseException as e:
        tb = traceback.format_exc()
        env.update(success=False, phase=phase, exc_type=_qualname(type(e)),
                   exc_message=str(e)[:REPR_LIMIT], traceback=tb)
        try:
            data = _dumps(e)
            _write_atomic(os.path.join(out_dir, "result.pkl"), data)
            env["has_value"] = True
        except BaseException:
            pass
        sys.stderr.write(tb)
    sys.stdout.flush()
    sys.stderr.flush()
    _write_atomic(os.path.join(out_dir, "envelope.json"), json.dumps(env), mode="w")


if __name__ == "__main__":
    main()

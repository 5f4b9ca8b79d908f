# Kinetic's Python bootstrap: the part of the runner that must run inside the job's
# interpreter. It loads the call, runs it, and leaves result.pkl and envelope.json in the
# output directory for the Go runner to upload. It uses only the standard library, plus
# cloudpickle for pickled calls. Arguments: MODE PAYLOAD OUT_DIR ROOT CWD.
import errno
import json
import os
import sys
import time
import traceback

REPR_LIMIT = 20000
# The largest value a warm spare hands back with its exit status (main's keep); a larger
# one is a file, as without a warm spare.
HAND_MAX = 8 << 10


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


def _dumps_exception(e):
    """e pickled so that the caller can rebuild it whole: an exception's reduction carries
    its __cause__/__context__ chain in its state (BaseException.__setstate__ sets each
    key as an attribute), which plain pickling drops. The SDK rebuilds a class whose
    constructor needs other arguments than its args without calling __init__. If the
    chain cannot be pickled, e alone is, as before."""
    try:
        import io
        buf = io.BytesIO()
        _exception_pickler()(buf).dump(e)
        return buf.getvalue()
    except BaseException:
        return _dumps(e)


def _exception_pickler():
    """A pickler (cloudpickle's when there is one) that adds the chain to exceptions."""
    try:
        import cloudpickle
        base = cloudpickle.Pickler
    except ImportError:
        import pickle
        base = pickle.Pickler

    class Pickler(base):
        def reducer_override(self, obj):
            if isinstance(obj, BaseException) and type(obj).__setstate__ is BaseException.__setstate__:
                rv = obj.__reduce__()
                if isinstance(rv, tuple) and len(rv) in (2, 3) and (len(rv) == 2 or isinstance(rv[2], (dict, type(None)))):
                    state = dict(rv[2] or {}) if len(rv) == 3 else {}
                    for k in ("__cause__", "__context__"):
                        if getattr(obj, k, None) is not None:
                            state[k] = getattr(obj, k)
                    if obj.__suppress_context__:
                        state["__suppress_context__"] = True
                    return (rv[0], rv[1], state or None)
            sup = getattr(super(), "reducer_override", None)
            return sup(obj) if sup is not None else NotImplemented

    return Pickler


def _safe_repr(obj, limit=REPR_LIMIT):
    try:
        r = repr(obj)
    except BaseException as e:  # a broken __repr__ must not hide the real problem
        r = "<unrepresentable %s: %r>" % (type(obj).__name__, e)
    return r if len(r) <= limit else r[:limit] + "...[truncated]"


def _write_atomic(path, data, mode="wb"):
    try:
        _write_once(path, data, mode)
    except OSError as e:
        # A full disk (the function's own writes filled it, say): the runner's reserve in
        # the workspace (runner/diskfull.go) is for the call's last records, so that the
        # call ends as itself (its value, or its own OSError), not as a kinetic error.
        d = os.path.dirname(os.path.abspath(path))
        reserves = [os.path.join(p, ".kinetic-reserve") for p in (d, os.path.dirname(d))]
        reserves = [r for r in reserves if os.path.exists(r)]
        if e.errno != errno.ENOSPC or not reserves:
            raise
        for r in reserves:
            os.remove(r)
        _write_once(path, data, mode)


def _write_once(path, data, mode):
    # 0600 whatever the umask: the result goes into the store as it is (docs/store.md).
    tmp = path + ".tmp"
    try:
        with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), mode) as f:
            f.write(data)
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise
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
    try:
        spec.loader.exec_module(mod)
    except ModuleNotFoundError as e:
        if e.name != "kinetic":
            raise
        # A script written for the SDK (`import kinetic`, `@kinetic.run(...)`) run as
        # FILE::FUNC where the SDK is not installed (a job's image): the job is the
        # function itself, so the decorator and Data need no SDK here.
        sys.modules["kinetic"] = _sdk_stand_in()
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    try:
        obj = mod
        for part in func_name.split("."):  # Class.method, as FILE.py::Class.method
            obj = getattr(obj, part)
    except AttributeError:
        raise AttributeError("%s has no function %r" % (path, func_name)) from None
    # A function decorated with the real SDK's @kinetic.run: the job runs the function,
    # not a new submission of it.
    if type(obj).__module__.startswith("kinetic.") and callable(getattr(obj, "__wrapped__", None)):
        obj = obj.__wrapped__
    return obj


def _sdk_stand_in():
    """A module named kinetic for FILE::FUNC jobs whose file imports the SDK where it is
    not installed: run(...) leaves the function as it is, Data(path) is the path; any
    other name says why it is missing."""
    import types
    m = types.ModuleType("kinetic")

    def run(*args, **kwargs):
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]  # @kinetic.run without arguments
        return lambda f: f

    def data(path, *args, **kwargs):
        return path

    def missing(attr):
        raise AttributeError("kinetic.%s is not available inside a FILE::FUNC job: the SDK is not installed "
                             "in the job's environment (add kinetic to its image or requirements to call it)" % attr)

    m.run, m.Data, m.__getattr__ = run, data, missing
    return m


def _debug_config():
    """The runner's debug settings (debug jobs, leader only), taken out of the environment
    so that neither the function nor what it starts sees them."""
    port = os.environ.pop("KINETIC_DEBUGPY_PORT", None)
    wait = os.environ.pop("KINETIC_DEBUGPY_WAIT", None)
    ready = os.environ.pop("KINETIC_DEBUGPY_READY", None)
    lib = os.environ.pop("KINETIC_DEBUGPY_LIB", None)
    if port is None or wait is None or ready is None:
        return None
    return int(port), int(wait), ready, lib or ""


def _import_debugpy(lib):
    """debugpy from the job's Python, else installed with pip into lib (the job's
    workspace: the job's environment is left as it is)."""
    try:
        import debugpy
        return debugpy
    except ImportError:
        pass
    if lib:
        if os.path.isdir(os.path.join(lib, "debugpy")):
            sys.path.insert(0, lib)
        else:
            import subprocess
            print("kinetic: debugpy is not installed in %s; installing it with pip" % sys.executable, flush=True)
            p = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                                "--no-input", "--retries", "1", "--timeout", "15", "--target", lib, "debugpy"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
            if p.returncode != 0:
                said = [l.strip() for l in (p.stdout or "").splitlines() if l.startswith("ERROR:")]
                said = "; ".join(said)[-500:] or "exit code %d" % p.returncode
                raise ImportError(
                    "debugpy is not installed in the job's Python (%s) and pip could not install it (%s): "
                    "add debugpy to your requirements or your image, or make a package index reachable "
                    "from the worker" % (sys.executable, said))
            sys.path.insert(0, lib)
    try:
        import debugpy
        return debugpy
    except ImportError:
        raise ImportError("debugpy is not installed in the job's Python (%s): add debugpy to your requirements "
                          "or your image" % sys.executable) from None


# DEBUGPY_PORT is debugpy's own default and what VS Code's generated "attach"
# configuration fills in: a job that may choose its port (the local backend's) takes it
# when it is free, so that configuration works unchanged.
DEBUGPY_PORT = 5678


def _free(port):
    import socket
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def _start_debugger(cfg):
    """Start debugpy on 127.0.0.1, tell the runner where (it writes debug.json to the
    store), wait a bounded time for a debugger to attach, and tell the runner whether it
    did. With none attached in time the job goes on without one, as the reference's
    does, and says so; debugpy keeps listening, so a debugger may still attach."""
    import threading
    port, wait, ready, lib = cfg
    debugpy = _import_debugpy(lib)
    if port == 0:
        port = DEBUGPY_PORT if _free(DEBUGPY_PORT) else 0
    host, port = debugpy.listen(("127.0.0.1", port))
    _write_atomic(ready, json.dumps({"host": host, "port": port, "pid": os.getpid()}), mode="w")
    job = os.environ.get("KINETIC_JOB_ID", "ID")
    other = "" if port == DEBUGPY_PORT else " (not %d, which is taken: set this port in launch.json)" % DEBUGPY_PORT
    print("kinetic: debugpy listens on %s:%d%s; waiting up to %ds for a debugger "
          "(kinetic jobs debug %s, or JobHandle.debug_attach())" % (host, port, other, wait, job), flush=True)
    t = threading.Thread(target=debugpy.wait_for_client, name="kinetic-debug-wait", daemon=True)
    t.start()
    t.join(wait)
    if t.is_alive():
        debugpy.wait_for_client.cancel()
        print("kinetic: no debugger attached within %ds (debug_wait); the job goes on without one "
              "(debugpy still listens on %s:%d: `kinetic jobs debug %s` can attach while it runs)"
              % (wait, host, port, job), flush=True)
        _write_atomic(ready, json.dumps({"host": host, "port": port, "pid": os.getpid(), "went_on": True}), mode="w")
        return
    print("kinetic: debugger attached", flush=True)
    # The runner announces it in debug.json: the other hosts of a multi-host job wait for
    # it before calling the function.
    _write_atomic(ready, json.dumps({"host": host, "port": port, "pid": os.getpid(), "attached": True}), mode="w")


_DATA_PREFIX = "\x00kinetic-data:"


def _resolve_data(v, paths):
    """Replace the SDK's Data sentinels, at any depth of lists, tuples, sets and dicts (keys
    included), by paths. Each container is copied once (by id), so an argument that holds
    itself arrives holding its copy instead of recursing for ever."""
    memo = {}
    walking = set()

    def walk(v):
        t = type(v)
        if t is str and v.startswith(_DATA_PREFIX) and v.endswith("\x00"):
            return paths[v]
        if t in (list, dict, tuple, set, frozenset) and id(v) in memo:
            return memo[id(v)]
        if t is list:
            out = memo[id(v)] = []
            out.extend(walk(x) for x in v)
            return out
        if t is dict:
            out = memo[id(v)] = {}
            for k, x in v.items():
                out[walk(k)] = walk(x)
            return out
        if t in (tuple, set, frozenset):
            if id(v) in walking:  # reached again through a list inside it: left as it is
                return v
            walking.add(id(v))
            try:
                out = memo[id(v)] = t(walk(x) for x in v)
            finally:
                walking.discard(id(v))
            return out
        return v

    return walk(v)


def _refile_code(co, old, new):
    """co, and every code object in it, with a co_filename under old moved under new."""
    import types
    consts = tuple(_refile_code(c, old, new) if isinstance(c, types.CodeType) else c for c in co.co_consts)
    name = co.co_filename
    if name.startswith(old):
        name = new + name[len(old):]
    return co.replace(co_filename=name, co_consts=consts)


def refile_shipped(func, root):
    """Point the code pickled by value with func (it, the functions and classes of the
    submitter's files it refers to) at the job's copy of those files under root.

    The SDK pickles code under the shipped root by value, so its co_filename is the path
    on the submitting machine. A debugger's path mappings send breakpoints set there to
    the job's copy (remoteRoot), which no code would match, so a breakpoint in a decorated
    function would never stop. The submitter's root is the prefix of func's file whose
    remainder names a file under root (the longest such remainder)."""
    import types
    target = getattr(func, "__func__", func)
    code = getattr(target, "__code__", None)
    if code is None or not root:
        return
    name = code.co_filename
    if not os.path.isabs(name) or any(name.startswith(r + os.sep) for r in (root, os.path.realpath(root))):
        return  # loaded from the job's copy already (FILE::FUNC)
    root = root.rstrip(os.sep)
    parts = name.split(os.sep)
    old = None
    for i in range(1, len(parts)):
        rel = os.sep.join(parts[i:])
        if os.path.isfile(os.path.join(root, rel)):
            old = os.sep.join(parts[:i]) + os.sep
            break
    if old is None:
        return
    new = root + os.sep
    seen = set()

    def visit(o):
        if id(o) in seen:
            return
        seen.add(id(o))
        if isinstance(o, (types.MethodType, classmethod, staticmethod)):
            visit(o.__func__)
        elif isinstance(o, property):
            for f in (o.fget, o.fset, o.fdel):
                if f is not None:
                    visit(f)
        elif isinstance(o, types.FunctionType):
            if not o.__code__.co_filename.startswith(old):
                return  # not the submitter's code: leave it and what it refers to
            o.__code__ = _refile_code(o.__code__, old, new)
            for v in list(o.__globals__.values()) + [c.cell_contents for c in (o.__closure__ or ()) if _has_contents(c)]:
                visit(v)
        elif isinstance(o, type):
            for v in list(vars(o).values()):
                visit(v)

    visit(target)
    self_obj = getattr(func, "__self__", None)
    if self_obj is not None:
        visit(type(self_obj))


def _has_contents(cell):
    try:
        cell.cell_contents
        return True
    except ValueError:
        return False


def enter(root, cwd):
    """Make the shipped root importable and cwd the working directory."""
    if root:
        sys.path.insert(0, root)
    if cwd:
        os.chdir(cwd)


class NoCloudpickle(ImportError):
    """The job's Python has no cloudpickle, so no pickled function can be loaded: a
    set-up failure, reported without a traceback (the runner words it, naming the
    image)."""
    kinetic_type = "kinetic.NoCloudpickle"


def import_cloudpickle():
    try:
        import cloudpickle
        return cloudpickle
    except ImportError:
        raise NoCloudpickle(
            "cloudpickle is not installed in the job's Python (%s): install it there "
            "(pip install cloudpickle) or add it to your requirements" % sys.executable) from None


def call(func, args, kwargs, keep, env):
    """Call func and hand its pickled value to keep (a function of the bytes), filling
    env (the envelope); an exception propagates (failed() reports it)."""
    value = None
    try:
        value = func(*args, **kwargs)
    except SystemExit as e:
        code = e.code
        if code not in (None, 0):
            env["exit_code"] = code if isinstance(code, int) else 1
            raise RuntimeError("the function called sys.exit(%r): a non-zero exit is a failure" % (code,)) from None
        env["exit_code"] = 0
    try:
        data = _dumps(value)
    except BaseException as e:
        env["phase_override"] = "result"
        raise TypeError("the return value of %s could not be pickled (%s: %s); its repr: %s" % (
            getattr(func, "__qualname__", "the function"), type(e).__name__, e, _safe_repr(value))) from None
    try:
        keep(data)
    except OSError as e:
        if e.errno != errno.ENOSPC:
            raise
        # Not the function's failure: the runner says where there was no space.
        env["no_space_for_value"] = len(data)
        return
    env.update(success=True, has_value=True, value_repr=_safe_repr(value, 2000))


def failed(env, phase, e, keep):
    """Fill env for the exception e raised in phase, and hand it pickled to keep."""
    phase = env.pop("phase_override", phase)
    tb = traceback.format_exc()
    env.update(success=False, phase=phase, exc_type=_qualname(type(e)),
               exc_message=str(e)[:REPR_LIMIT], traceback=tb)
    try:
        data = _dumps_exception(e)
        keep(data)
        env["has_value"] = True
    except BaseException:
        pass
    # One line in the log: the traceback travels with the exception (the SDK re-raises
    # it with the remote traceback attached, `kinetic run` and `kinetic jobs result`
    # print it), so a caller who catches the exception sees no traceback, and one who
    # does not sees it once.
    sys.stderr.write("kinetic: the call raised %s: %s (the traceback comes with the exception; "
                     "`kinetic jobs result %s` prints it)\n" % (
                         _qualname(type(e)), _safe_repr(str(e), 200), os.environ.get("KINETIC_JOB_ID", "JOB_ID")))


def _mark(phase):
    # The benchmark's phase marks (internal/calltrace): one appended line, if asked for.
    path = os.environ.get("KINETIC_TRACE")
    if path:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(fd, ("%d %d %s %s\n" % (time.time_ns() // 1000, os.getpid(), phase,
                                         os.environ.get("KINETIC_JOB_ID", ""))).encode())
        os.close(fd)


def main():
    mode, payload, out_dir, root, cwd = sys.argv[1:6]
    # Optional: the arguments of a batch child (the payload is then the function alone),
    # and a JSON map from Data sentinels to local paths.
    args_path = sys.argv[6] if len(sys.argv) > 6 else ""
    data_map = sys.argv[7] if len(sys.argv) > 7 else ""
    _mark("py.main")
    env = {"success": False, "host": os.environ.get("KINETIC_HOST_INDEX", "0"), "has_value": False}
    result = os.path.join(out_dir, "result.pkl")
    # A warm spare with a connection to its runner takes the envelope and a small value
    # with the exit status (docs/warm-workers.md, "The result in the status"): no files
    # made, written and read back on the call's path.
    hand = getattr(sys.modules.get("_kinetic_warm"), "report", None)
    kept = []

    def keep(data):
        if hand is not None and len(data) <= HAND_MAX:
            kept[:] = [data]
            return
        kept[:] = []
        _write_atomic(result, data)

    debug = _debug_config()
    phase = "plan"
    try:
        enter(root, cwd)
        phase = "unpickle"
        if mode == "python-pickle":
            cloudpickle = import_cloudpickle()
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
            args = [_literal(a) for a in entry.get("args") or []]
            kwargs = {k: _literal(v) for k, v in (entry.get("kwargs") or {}).items()}
        if debug is not None:
            phase = "debugger"
            refile_shipped(func, root)
            _start_debugger(debug)
        phase = "call"
        _mark("py.loaded")
        call(func, args, kwargs, keep, env)
        _mark("py.called")
    except NoCloudpickle as e:
        # Before the user's code: no traceback of ours to show.
        env.update(success=False, phase=phase, exc_type=e.kinetic_type, exc_message=str(e))
    except BaseException as e:
        failed(env, phase, e, keep)
    sys.stdout.flush()
    sys.stderr.flush()
    if hand is not None:
        hand(json.dumps(env), kept[0] if kept else None)
    else:
        _write_atomic(os.path.join(out_dir, "envelope.json"), json.dumps(env), mode="w")
    _mark("py.done")


if __name__ == "__main__":
    main()

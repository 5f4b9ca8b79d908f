"""The @kinetic.run decorator: pickles the call and hands it to the engine."""

import base64
import contextlib
import functools
import inspect
import operator
import os
import pickle as _pickle
import re
import sys
import tempfile
import warnings
from typing import Any, Dict, List, Optional

from . import _check
from ._seconds import seconds as _seconds
from ._engine import engine, mark
from .exceptions import EngineDiedError, KineticError
from .batch import BatchHandle
from .data import Collector as DataCollector, Data, extract as extract_data
from .jobs import JobHandle

# The types of a plain value: pickled by the C pickler alone (cloudpickle defers to it).
# A call's pickle at most this big goes in the request (base64); a bigger one through a
# temporary file the engine reads.
_INLINE_PAYLOAD = 256 << 10

_ATOMS = frozenset((int, float, complex, str, bytes, bool, type(None)))

_roots = {}


def _root_for(source_file):
    cwd = os.getcwd()
    key = (source_file, cwd)
    if key not in _roots:
        _roots[key] = engine().call("root", {"source_file": source_file or "", "cwd": cwd})["root"]
    return _roots[key]


# Module file -> its real path. A module's file is resolved once: realpath costs a
# system call per path component, and sys.modules holds hundreds of modules that every
# call would otherwise resolve again.
_realpaths = {}


def _realpath(f):
    r = _realpaths.get(f)
    if r is None:
        r = _realpaths[f] = os.path.realpath(f)
    return r


def _modules_under(root):
    """Modules loaded from files under root (but not from environments inside it)."""
    root = os.path.realpath(root) + os.sep
    own = os.path.dirname(os.path.abspath(__file__)) + os.sep
    out = []
    for name, mod in list(sys.modules.items()):
        f = getattr(mod, "__file__", None)
        if not f or name == "__main__" or not isinstance(f, str):
            continue
        f = _realpath(f)
        if f.startswith(own):
            continue  # the SDK itself is never needed on the worker
        if f.startswith(root) and "site-packages" not in f and "dist-packages" not in f:
            out.append(mod)
    return out


def _payload_warn_mb():
    raw = os.environ.get("KINETIC_PAYLOAD_SIZE_WARN_MB", "")
    try:
        return float(raw) if raw else 50.0
    except ValueError:
        warnings.warn("KINETIC_PAYLOAD_SIZE_WARN_MB=%r is not a number of MiB; using 50" % raw)
        return 50.0


def _warn_if_large(payload, func):
    """A pickled call over KINETIC_PAYLOAD_SIZE_WARN_MB (default 50 MiB; 0: never) is
    said once: big arguments travel with every call, Data(...) travels once."""
    limit = _payload_warn_mb()
    if limit > 0 and len(payload) > limit * (1 << 20):
        warnings.warn("kinetic: the pickled call of %s is %.0f MiB (over KINETIC_PAYLOAD_SIZE_WARN_MB=%g): "
                      "it is uploaded with every call; pass large data as kinetic.Data(path) (uploaded once "
                      "per content) or read it inside the function" % (
                          getattr(func, "__qualname__", "the function"), len(payload) / (1 << 20), limit),
                      stacklevel=4)


@contextlib.contextmanager
def _by_value(root):
    """Code under the shipped root is pickled by value while this lasts, so the worker
    never depends on how this process happened to put it on sys.path (a batch's inputs
    too: an input may be an instance of a class defined there)."""
    import cloudpickle
    registered = []
    for mod in _modules_under(root):
        try:
            cloudpickle.register_pickle_by_value(mod)
            registered.append(mod)
        except (ValueError, AttributeError):
            pass
    try:
        yield cloudpickle
    finally:
        for mod in registered:
            try:
                cloudpickle.unregister_pickle_by_value(mod)
            except (ValueError, AttributeError):
                pass


def _pickle_call(func, args, kwargs, root, func_only=False):
    try:
        import cloudpickle  # noqa: F401
    except ImportError:
        raise KineticError("cloudpickle is required to send Python functions: pip install cloudpickle") from None
    with _by_value(root) as cloudpickle:
        try:
            payload = cloudpickle.dumps(func if func_only else (func, args, kwargs))
            _warn_if_large(payload, func)
            return payload
        except Exception as e:
            name = getattr(func, "__qualname__", repr(func))
            raise TypeError(
                "kinetic: cannot send %s to the worker: the function, its arguments or something it "
                "refers to cannot be pickled (%s: %s). Pass plain data as arguments and create "
                "resources such as open files, locks, sockets or clients inside the function."
                % (name, type(e).__name__, e)) from e


class RemoteFunction:
    """A function that runs remotely when called."""

    def __init__(self, func, options):
        self._func = func
        self._options = options
        functools.update_wrapper(self, func)

    def __get__(self, instance, owner=None):
        # A decorated method: bind the instance, which then travels with the call (it
        # must be picklable), as self does for a plain method.
        if instance is None:
            return self
        return _BoundRemote(self, instance)

    def __reduce__(self):
        # Pickled into a job (a global of the function that job runs), a decorated
        # function travels as the plain function, as the API reference says: called
        # inside the job it runs its body there, and unpickling needs no kinetic (only
        # the standard library's operator.getitem).
        return (operator.getitem, ((self._func,), 0))

    def __call__(self, *args, **kwargs):
        if os.environ.get("KINETIC_JOB_ID"):
            # Inside a job (its module imported there, the decorator run again): the body
            # runs here, no nested job.
            return self._func(*args, **kwargs)
        if self._options.get("debug") and not sys.stdin.isatty() and os.environ.get("KINETIC_NO_TTY_DEBUG", "") in ("", "0"):
            raise RuntimeError("kinetic.run(debug=True) in a blocking call waits for you to attach a debugger, "
                               "and there is no terminal here: use f.run_async(...) and attach from elsewhere "
                               "(`kinetic jobs debug JOB_ID`), or set KINETIC_NO_TTY_DEBUG=1 to wait anyway")
        mark("sdk.call")
        if self._options.get("debug"):
            handle = self.run_async(*args, **kwargs)
            mark("sdk.submitted", handle.job_id)
            # The job waits for a debugger: say where, then wait for the value as usual.
            handle.debug_attach()
            try:
                return handle.result(stream_logs=False)
            except KeyboardInterrupt:
                raise _cancel_on_interrupt(handle) from None
        # Submitted and waited for in one request (the engine's "call"): one round trip
        # to the engine fewer than run_async and then result().
        submitted = []

        def on_submitted(handle):
            submitted.append(handle)
            mark("sdk.submitted", handle.job_id)

        try:
            with self._submission(args, kwargs) as req:
                value, handle = JobHandle._call(req, on_submitted)
            mark("sdk.return", handle.job_id)
            return value
        except KeyboardInterrupt:
            if not submitted:
                raise
            raise _cancel_on_interrupt(submitted[0]) from None
        except EngineDiedError as e:
            raise _call_engine_died(e, submitted, getattr(self._func, "__qualname__", "the function")) from None

    def run_async(self, *args, **kwargs) -> JobHandle:
        """Submit the call and return its JobHandle at once."""
        with self._submission(args, kwargs) as req:
            return JobHandle.from_dict(engine().call("submit", req))

    @contextlib.contextmanager
    def _submission(self, args, kwargs):
        """The submit request of a call of the function with args and kwargs (its pickle in
        a temporary file, removed after)."""
        source, root = self._source_root()
        args, kwargs, data = extract_data(args, kwargs, self._options.get("volumes"))
        payload = _pickle_call(self._func, args, kwargs, root)
        if len(payload) <= _INLINE_PAYLOAD:
            # In the request itself: a temporary file is a new file written, read and
            # removed per call.
            req = self._request("", source)
            req["payload"] = base64.b64encode(payload).decode("ascii")
            req["data"] = data
            yield req
            return
        fd, path = tempfile.mkstemp(prefix="kinetic-payload-", suffix=".pkl")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(payload)
            req = self._request(path, source)
            req["data"] = data
            yield req
        finally:
            os.unlink(path)

    def _source_root(self):
        try:
            source = inspect.getsourcefile(self._func)
        except TypeError:
            source = None
        return source, _root_for(source)

    def _request(self, path, source):
        o = self._options
        req = {
            "kind": "python-pickle",
            **({"payload_path": path} if path else {}),
            "func_name": getattr(self._func, "__qualname__", "function"),
            "source_file": source or "",
            "cwd": os.getcwd(),
            "python": sys.executable,
            # The image's Python is the client's: a pickle loads in the minor version that made it.
            "python_version": "%d.%d" % sys.version_info[:2],
            "accelerator": str(o["accelerator"]),
            **({"accelerator_default": True} if isinstance(o["accelerator"], _DefaultAccelerator) else {}),
            "container_image": o.get("container_image") or "",
            "capture_env_vars": o.get("capture_env_vars") or [],
            "output_dir": o.get("output_dir") or "",
            "spot": bool(o.get("spot")),
            "debug": bool(o.get("debug")),
            "debug_wait": float(o.get("debug_wait") or 0),
            "timeout": float(o.get("timeout") or 0),
            "config": {k: v for k, v in (
                ("project", o.get("project")), ("zone", o.get("zone")), ("cluster", o.get("cluster")),
                ("namespace", o.get("namespace")), ("backend", o.get("backend")), ("store", o.get("store")),
                ("base_image_repo", o.get("base_image_repo"))) if v},
        }
        if req["capture_env_vars"]:
            req["environ"] = dict(os.environ)
        return req

    def run_async_map(self, inputs, input_mode: str = "auto", max_concurrent: Optional[int] = 64, retries: int = 0,
                      fail_fast: bool = False, cancel_running_on_fail: bool = False, name: Optional[str] = None,
                      tags: Optional[Dict[str, str]] = None, project: Optional[str] = None,
                      cluster: Optional[str] = None) -> BatchHandle:
        """Fan the function out over inputs, one job per input; returns a BatchHandle at
        once while the engine goes on submitting. An input that cannot be submitted is
        recorded at its index (jobs[i] is None, submission_failures[i] holds the error).

        ``max_concurrent=None`` submits every input at once. With ``fail_fast`` the first
        input that fails for good stops submission and cancels the inputs not started;
        ``cancel_running_on_fail=True`` cancels the running ones too. ``project`` and
        ``cluster`` override the decorator's."""
        return self._map(inputs, (), input_mode, max_concurrent, retries, fail_fast, cancel_running_on_fail,
                         name, tags, project, cluster)

    def _map(self, inputs, bound, input_mode, max_concurrent, retries, fail_fast, cancel_running_on_fail, name,
             tags, project, cluster) -> BatchHandle:
        """run_async_map; bound is () or (instance,) for a decorated method, put before
        each input's arguments."""
        from .batch import _frame, normalise_input

        f = "run_async_map"
        _check.one_of(input_mode, f, "input_mode", ("auto", "single", "args", "kwargs"))
        if max_concurrent is not None and (isinstance(max_concurrent, bool) or not isinstance(max_concurrent, int)):
            _check.fail_type(f, "max_concurrent", "an int or None (None: every input at once)", max_concurrent)
        if max_concurrent is not None and max_concurrent < 1:
            raise ValueError("run_async_map(max_concurrent=%r): give the number of inputs that may run at once, "
                             "at least 1, or None for every input at once" % (max_concurrent,))
        _check.integer(retries, f, "retries")
        if retries < 0:
            raise ValueError("run_async_map(retries=%r): give how many times a failed input is tried again, 0 or "
                             "more" % (retries,))
        _check.boolean(fail_fast, f, "fail_fast")
        _check.boolean(cancel_running_on_fail, f, "cancel_running_on_fail")
        for param, value in (("name", name), ("project", project), ("cluster", cluster)):
            _check.string(value, f, param)
        tags = _check.str_dict(tags, f, "tags")
        if not hasattr(inputs, "__iter__") and not hasattr(inputs, "__getitem__"):
            _check.fail_type(f, "inputs", "an iterable of inputs (a list, a range, a generator, ...)", inputs)
        inputs = list(inputs)
        if not inputs:
            raise ValueError("run_async_map(inputs=...): no inputs; give at least one")
        if max_concurrent is None or max_concurrent > len(inputs):
            max_concurrent = len(inputs)  # every input at once, as the reference's None
        source, root = self._source_root()
        # Data anywhere in the inputs: one spec per distinct Data for the batch (uploaded
        # once), a sentinel in each input; each input's job gets the ones it names.
        collector = DataCollector()
        extract_data((), {}, self._options.get("volumes"), collector)
        func_payload = _pickle_call(self._func, None, None, root, func_only=True)
        local_failures = {}
        payloads = []
        # An input that is one plain value (a range's ints, strings, ...) can hold no
        # Data and needs no normalising: the C pickler writes the bytes cloudpickle would
        # (it defers to it for these types), several times faster per input.
        plain = not bound and input_mode in ("auto", "single")
        with _by_value(root) as cloudpickle:
            protocol = cloudpickle.DEFAULT_PROTOCOL
            for i, x in enumerate(inputs):
                if plain and type(x) in _ATOMS:
                    payloads.append(_pickle.dumps(((x,), {}), protocol=protocol))
                    continue
                try:
                    a, kw = normalise_input(x, input_mode)
                    a = tuple(bound) + tuple(a)
                    a, kw, _ = extract_data(a, kw, None, collector)
                    payloads.append(cloudpickle.dumps((a, kw)))
                except Exception as e:  # recorded at its index, not raised for the batch
                    local_failures[i] = e
                    payloads.append(b"")
        fd, fpath = tempfile.mkstemp(prefix="kinetic-func-", suffix=".pkl")
        with os.fdopen(fd, "wb") as f:
            f.write(func_payload)
        ipath = _frame(payloads)
        try:
            tmpl = self._request(fpath, source)
            tmpl["data"] = collector.specs
            for key, value in (("project", project), ("cluster", cluster)):
                if value:
                    tmpl["config"][key] = value
            req = {"template": tmpl, "inputs_path": ipath,
                   "max_concurrent": int(max_concurrent), "retries": int(retries), "fail_fast": bool(fail_fast),
                   "cancel_running_on_fail": bool(cancel_running_on_fail),
                   "name": name or "", "tags": tags}
            # The engine says which batch it recorded as soon as it has (the "recorded"
            # event), and again once its inputs run without it (running): if it dies
            # before replying, the error must say whether the batch runs on, or a retry
            # runs every input twice.
            recorded = {}

            def on_event(name, data):
                if name == "recorded" and isinstance(data, dict):
                    recorded.update(data)

            eng = engine()
            try:
                res = eng.call("map", req, on_event=on_event)
            except KineticError as e:
                if not eng.alive():
                    raise _engine_died_error(e, recorded, len(inputs)) from None
                raise
        finally:
            os.unlink(fpath)
            os.unlink(ipath)
        return BatchHandle(res["group_id"], name=name, tags=tags,
                           store=res.get("store") or self._options.get("store") or "",
                           local_failures=local_failures, poll_interval=1.0, total=len(inputs))


def _engine_died_error(err, recorded, n):
    """The error of a run_async_map whose engine died before replying. It says whether
    the batch runs on (then how to attach to it, so that it is not submitted twice) or
    nothing of it runs (then submitting again is safe): a batch recorded but not yet
    running without the engine is removed here first."""
    gid = recorded.get("group_id")
    if not gid:
        e = KineticError(
            "run_async_map: %s before it recorded the batch: nothing was submitted and none of its %d inputs "
            "runs; calling run_async_map again submits it once" % (err, n))
        e.group_id, e.submitted = None, False
        return e
    where = ", store=%r" % recorded["store"] if recorded.get("store") else ""
    running = recorded.get("running")
    cleanup_err = None
    if not running:
        # Recorded, not said to run on its own: removed, unless its unit had started
        # after all (the engine died after starting it, before saying so), and then it
        # runs on. The engine that asked is gone, so the answer cannot change after.
        try:
            res = engine().call("batch_cleanup", {"group_id": gid, "store": recorded.get("store") or "",
                                                  "k8s": True, "gcs": True, "unless_started": True})
            running = bool((res or {}).get("started"))
        except Exception as ce:  # the message says what to do instead
            cleanup_err = ce
    if running:
        e = KineticError(
            "run_async_map: %s after it recorded batch %s (%d inputs) and started it, before it confirmed the "
            "submission. The batch was submitted and its inputs keep running without the engine: do not call "
            "run_async_map again (each input would run twice); attach to it with kinetic.attach_batch(%r%s)"
            % (err, gid, n, gid, where))
        e.group_id, e.submitted = gid, True
        return e
    if cleanup_err is not None:
        e = KineticError(
            "run_async_map: %s after it recorded batch %s (%d inputs) and before it started it, and removing it "
            "failed (%s): remove it with kinetic.attach_batch(%r%s).cleanup() or `kinetic batch cleanup %s`, then "
            "call run_async_map again" % (err, gid, n, cleanup_err, gid, where, gid))
        e.group_id, e.submitted = gid, False
        return e
    e = KineticError(
        "run_async_map: %s after it recorded batch %s (%d inputs) and before it started it: the batch was removed, "
        "nothing was submitted and none of its inputs runs; calling run_async_map again submits it once"
        % (err, gid, n))
    e.group_id, e.submitted = None, False
    return e


def _call_engine_died(err, submitted, name):
    """The error of a blocking call whose engine died: it names the job when the engine
    had said it was submitted (the job runs on without the engine, as run_async_map's
    batch does), so that the value is collected, not the call run a second time."""
    if submitted:
        h = submitted[0]
        where = ", store=%r" % h.store if h.store else ""
        return EngineDiedError(
            "%s: %s while job %s ran. The job was submitted and keeps running without the engine: do not call "
            "%s again (it would run twice); collect its value with kinetic.attach(%r%s).result()"
            % (name, err, h.job_id, name, h.job_id, where), h.job_id, h)
    return EngineDiedError(
        "%s: %s before it reported the job submitted. If it had submitted it, kinetic.list_jobs() shows it (the "
        "newest job of %s) and kinetic.attach(JOB_ID).result() collects it; otherwise calling %s again runs it once"
        % (name, err, name, name))


class _BoundRemote:
    """A decorated method bound to its instance: calls and run_async pass the instance
    as the first argument."""

    def __init__(self, remote, instance):
        self._remote, self._instance = remote, instance
        functools.update_wrapper(self, remote._func)

    def __call__(self, *args, **kwargs):
        return self._remote(self._instance, *args, **kwargs)

    def run_async(self, *args, **kwargs) -> JobHandle:
        return self._remote.run_async(self._instance, *args, **kwargs)

    def run_async_map(self, inputs, input_mode: str = "auto", max_concurrent: Optional[int] = 64, retries: int = 0,
                      fail_fast: bool = False, cancel_running_on_fail: bool = False, name: Optional[str] = None,
                      tags: Optional[Dict[str, str]] = None, project: Optional[str] = None,
                      cluster: Optional[str] = None) -> BatchHandle:
        """run_async_map of the method: the instance travels with every input (it must be
        picklable), as self does for a plain method."""
        return self._remote._map(inputs, (self._instance,), input_mode, max_concurrent, retries, fail_fast,
                                 cancel_running_on_fail, name, tags, project, cluster)


class _DefaultAccelerator(str):
    """The documented default accelerator, told apart from the same name given on purpose:
    with nothing configured (no backend, project or profile), a call that names no
    accelerator runs on this machine's CPU, as `kinetic run` without --accelerator does
    (docs/configuration.md, "Where a job runs")."""
    __slots__ = ()


_DEFAULT_ACCELERATOR = _DefaultAccelerator("tpu-v5e-1")


def run(accelerator: str = _DEFAULT_ACCELERATOR, container_image: Optional[str] = None,
        base_image_repo: Optional[str] = None, zone: Optional[str] = None, project: Optional[str] = None,
        capture_env_vars: Optional[List[str]] = None, cluster: Optional[str] = None,
        backend: Optional[str] = None, namespace: Optional[str] = None,
        volumes: Optional[Dict[str, Any]] = None, spot: bool = False, output_dir: Optional[str] = None,
        debug: bool = False, store: Optional[str] = None, debug_wait: Optional[float] = None,
        timeout: Optional[float] = None):
    """Execute the decorated function on a remote TPU, GPU or CPU.

    Calling the decorated function blocks, streams its logs and returns its value;
    ``f.run_async(...)`` returns a JobHandle at once. Configuration falls back through
    KINETIC_* variables, the active profile and the defaults (see docs/configuration.md);
    with nothing configured, jobs run on this machine (the local backend).

    With ``debug=True`` the job starts debugpy and waits up to ``debug_wait`` seconds
    (default 600) for a debugger before it calls the function, then fails if none came;
    ``JobHandle.debug_attach()`` prints the VS Code configuration (docs/debug.md).

    ``timeout`` limits each call, in seconds (as Modal's): past it the job is stopped
    (SIGTERM, then SIGKILL after the grace period) and FAILS with a reason starting
    "timeout:", on every backend; ``float('inf')`` is no limit, as leaving it out.
    """
    if callable(accelerator) and not isinstance(accelerator, str):
        # @kinetic.run without parentheses (as Ray users write @ray.remote): the function
        # came as the first argument; every option keeps its default.
        return run()(accelerator)
    f = "kinetic.run"
    _check.string(accelerator, f, "accelerator", optional=False)
    if not accelerator.strip():
        raise ValueError("kinetic.run(accelerator=%r): give an accelerator, e.g. 'cpu', 'gpu-l4' or 'tpu-v5e-8' "
                         "(`kinetic accelerators` lists them), or leave it out" % (accelerator,))
    for param, value in (("container_image", container_image), ("base_image_repo", base_image_repo),
                         ("zone", zone), ("project", project), ("cluster", cluster), ("backend", backend),
                         ("namespace", namespace), ("output_dir", output_dir), ("store", store)):
        _check.string(value, f, param)
    capture_env_vars = _check.str_list(capture_env_vars, f, "capture_env_vars")
    for name in capture_env_vars:
        if not _ENV_NAME.match(name):
            raise ValueError("kinetic.run(capture_env_vars=...): %r is not a variable name (letters, digits and '_', "
                             "not starting with a digit) or a PREFIX* pattern" % (name,))
    _check.boolean(spot, f, "spot")
    _check.boolean(debug, f, "debug")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))):
        _check.fail_type(f, "timeout", "a number of seconds or None", timeout)
    if timeout is not None and (timeout != timeout or timeout <= 0):
        raise ValueError("kinetic.run(timeout=%r): give the call's time limit in seconds, a positive number "
                         "(e.g. timeout=3600), or leave it out" % (timeout,))
    # inf, or more than a century (1e12, sys.maxsize): no limit, as when it is left out.
    timeout = None if timeout is None else _seconds(timeout, f, "timeout")
    if debug_wait is not None and (isinstance(debug_wait, bool) or not isinstance(debug_wait, (int, float))):
        _check.fail_type(f, "debug_wait", "a number of seconds or None", debug_wait)
    if debug_wait is not None and (debug_wait != debug_wait or not 1 <= debug_wait <= 7 * 24 * 3600):
        raise ValueError("kinetic.run(debug_wait=%s): give how long a debug job waits for a debugger, in seconds "
                         "from 1 to 604800 (a week), or leave it out (600)" % (_clip(debug_wait),))
    if debug_wait is not None and not debug:
        raise ValueError("kinetic.run(debug_wait=%s): a debug_wait needs debug=True; set it, or drop debug_wait"
                         % (_clip(debug_wait),))
    if output_dir and "://" in output_dir and output_dir.split("://", 1)[0].lower() not in _OUTPUT_SCHEMES:
        raise ValueError("kinetic.run(output_dir=%r): the scheme %r is not one an output directory can have; give a "
                         "path, or a URL with one of %s" % (output_dir, output_dir.split("://", 1)[0] + "://",
                                                            ", ".join(s + "://" for s in _OUTPUT_SCHEMES)))
    if volumes is not None and not isinstance(volumes, dict):
        raise TypeError("kinetic.run(volumes=...) must be a dict of mount path to kinetic.Data, got %s; e.g. "
                        "volumes={\"/data\": Data(\"./dataset/\")}" % type(volumes).__name__)
    for mount, d in (volumes or {}).items():
        if not isinstance(mount, str) or not mount.startswith("/"):
            raise ValueError("kinetic.run(volumes=...): the key %r is not an absolute path; give where the data "
                             "appears in the job, e.g. {\"/data\": Data(\"./dataset/\")}" % (mount,))
        if ".." in mount.split("/") or mount.rstrip("/") == "":
            raise ValueError("kinetic.run(volumes=...): the mount path %r %s; give the directory where the data "
                             "appears in the job itself, e.g. \"/data\"" % (
                                 mount, "has a '..' in it, which leaves the directory it names" if ".." in
                                 mount.split("/") else "is the root directory"))
        if not isinstance(d, Data):
            raise TypeError("kinetic.run(volumes=...): the value for %r is a %s, not a kinetic.Data; wrap it: "
                            "Data(%r)" % (mount, type(d).__name__, d))
    if debug and spot:
        warnings.warn("kinetic.run(debug=True, spot=True): a spot node may be taken back while you debug, "
                      "which ends the session; debug on on-demand capacity", stacklevel=2)
    options = dict(accelerator=accelerator, container_image=container_image, base_image_repo=base_image_repo,
                   zone=zone, project=project, capture_env_vars=capture_env_vars, cluster=cluster,
                   backend=backend, namespace=namespace, spot=spot, output_dir=output_dir, debug=debug,
                   debug_wait=debug_wait, store=store, volumes=dict(volumes or {}), timeout=timeout)

    def decorate(func):
        if isinstance(func, (classmethod, staticmethod)):
            raise TypeError("kinetic.run cannot decorate a %s: put @kinetic.run below it, on the plain function, "
                            "or decorate a module-level function" % type(func).__name__)
        if not callable(func):
            raise TypeError("kinetic.run decorates functions, not %r" % (func,))
        if hasattr(func, "cache_info") and hasattr(func, "cache_clear") and hasattr(func, "__wrapped__"):
            raise TypeError("kinetic.run cannot decorate a functools.lru_cache-wrapped function (%s): its cache "
                            "would not travel to the job; decorate the plain function, and cache inside it or "
                            "around the call" % getattr(func, "__qualname__", func))
        return RemoteFunction(func, options)

    return decorate


# What capture_env_vars takes: a variable's name, NAME* (every variable starting so), or *
# (the engine's own check, engine/plan/capture.go).
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\*?$|^\*$")

# The schemes an output_dir URL may have (a path needs none): the stores' (docs/store.md).
_OUTPUT_SCHEMES = ("file", "gs", "s3")


def _clip(value):
    r = repr(value)
    return r if len(r) <= 40 else r[:20] + "..." + r[-8:]


def _left_running(job_id):
    return ("kinetic: left job %s running. Re-attach: kinetic.attach(%r).result(), or "
            "`kinetic jobs logs -f %s`; stop it: `kinetic jobs cancel %s`\n" % (job_id, job_id, job_id, job_id))


def _cancel_on_interrupt(handle):
    """Ctrl-C during a blocking call: cancel the job it started and say so; a second
    Ctrl-C leaves it running and says how to re-attach. Returns the KeyboardInterrupt to
    raise (it names the job)."""
    jid = handle.job_id
    sys.stderr.write("\nkinetic: interrupted: cancelling job %s (Ctrl-C again to stop waiting)\n" % jid)
    sys.stderr.flush()
    try:
        handle.cancel()
    except KeyboardInterrupt:
        sys.stderr.write("kinetic: stopped waiting; job %s was told to stop and may still be running its grace "
                         "period. Check: kinetic.attach(%r).status(); again: `kinetic jobs cancel %s`\n" % (jid, jid, jid))
        return KeyboardInterrupt("job %s: stopped waiting for its cancellation" % jid)
    except Exception as e:  # the engine gone, the backend unreachable: say what is left
        sys.stderr.write("kinetic: could not cancel job %s: %s\n%s" % (jid, e, _left_running(jid)))
        return KeyboardInterrupt("job %s left running" % jid)
    sys.stderr.write("kinetic: job %s cancelled\n" % jid)
    return KeyboardInterrupt("job %s cancelled" % jid)

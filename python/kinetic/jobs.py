"""Durable handles to submitted jobs."""

import base64
import errno
import dataclasses
import getpass
import io
import math
import os
import pickle
import signal
import socket
import sys
import tempfile
import warnings
from typing import Any, Callable, Optional

from . import _check
from ._engine import engine, mark
from ._seconds import limit, seconds
from .exceptions import EngineDiedError, KineticError, RemoteError, ResultUnreadableError
from .job_status import JobStatus

_STRING_FIELDS = ("job_id", "backend", "project", "cluster_name", "zone", "namespace", "bucket_name",
                  "k8s_name", "image_uri", "accelerator", "func_name", "display_name", "created_at")


@dataclasses.dataclass
class JobHandle:
    """Durable description of a submitted remote job.

    All fields serialise to strings. No function or closure state is kept: only what is
    needed to observe, collect and clean up the job from any machine that reaches its
    store.
    """

    job_id: str
    backend: str = ""
    project: str = ""
    cluster_name: str = ""
    zone: str = ""
    namespace: str = ""
    bucket_name: str = ""
    k8s_name: str = ""
    image_uri: str = ""
    accelerator: str = ""
    func_name: str = ""
    display_name: str = ""
    created_at: str = ""
    group_id: Optional[str] = None
    group_kind: Optional[str] = None
    group_index: Optional[int] = None
    debug: bool = False
    store: str = ""
    output_dir: str = ""
    spot: bool = False
    kube_context: str = ""
    shipped_root: str = ""

    def __post_init__(self):
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if f.name in ("debug", "spot"):
                _check.boolean(v, "JobHandle", f.name)
            elif f.name == "group_index":
                _check.integer(v, "JobHandle", f.name, minimum=0, optional=True)
            else:
                _check.string(v, "JobHandle", f.name, optional=f.name in ("group_id", "group_kind"))

    # -- serialisation -------------------------------------------------------------
    @classmethod
    def from_dict(cls, d):
        """Rebuild a handle from a dict; unknown keys are ignored."""
        if not isinstance(d, dict):
            _check.fail_type("JobHandle.from_dict", "d", "a dict", d)
        kw = {}
        for name, v in d.items():
            kind = _FIELD_KINDS.get(name)
            if kind is None or v is None:
                continue
            if isinstance(v, (dict, list, tuple, set, bytes)):
                raise ValueError("JobHandle.from_dict: the field %r is a %s, not a %s"
                                 % (name, type(v).__name__, "whole number" if kind == "index" else
                                    "true/false" if kind == "bool" else "string"))
            if kind == "index":
                v = _index_field(v)
            elif kind == "bool":
                v = _bool_field(name, v)
            elif kind == "optional":
                v = str(v) or None
            else:
                v = str(v)
            kw[name] = v
        if cls is not JobHandle:
            return cls(**kw)
        # Every value has its field's type now, so __init__'s checks (for handles a
        # person makes) are skipped but for the one a value can still fail: a batch's
        # watch rebuilds a handle per input, and the checks were most of that.
        _check.integer(kw.get("group_index"), "JobHandle", "group_index", minimum=0, optional=True)
        if "job_id" not in kw:
            return cls(**kw)  # the error names the missing job_id
        h = cls.__new__(cls)
        h.__dict__.update(_DEFAULTS)
        h.__dict__.update(kw)
        return h

    def to_dict(self):
        """The handle as a JSON-safe dict of its fields' own types, as the reference's:
        str, bool (debug, spot) and int (group_index); a field that is None is left out.
        (The store's handle.json keeps every field a string; from_dict reads both.)"""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if getattr(self, f.name) is not None}

    def _params(self, **kw):
        if not self.job_id:
            # As attach('') says, rather than an answer (NOT_FOUND) about no job at all.
            raise ValueError("JobHandle(job_id=''): a handle needs its job's ID (IDs look like "
                             "job-0123456789abcdefghijklm; kinetic.list_jobs() lists them)")
        p = {"job_id": self.job_id, "store": self.store}
        p.update(kw)
        return p

    # -- observation ---------------------------------------------------------------
    def status(self) -> JobStatus:
        """The job's current status."""
        return JobStatus(engine().call("status", self._params())["status"])

    def status_reason(self) -> str:
        """Why the job is FAILED (empty otherwise)."""
        return engine().call("status", self._params()).get("reason", "")

    def logs(self, follow: bool = False) -> Optional[str]:
        """Return the logs, or with follow=True print them as they come until the job ends."""
        _check.boolean(follow, "logs", "follow")
        if not follow:
            return engine().call("logs", self._params())["logs"]
        engine().call("logs", self._params(follow=True), on_event=_print_logs)
        return None

    def tail(self, n: int = 100) -> str:
        """The last n log lines (n at least 1, as `kinetic jobs logs -n`)."""
        _check.integer(n, "tail", "n", minimum=1, maximum=None)
        # More lines than any log holds is every line (the engine reads 64-bit ints).
        return engine().call("tail", self._params(n=min(n, _check.MAX_INT)))["logs"]

    def result(self, timeout: Optional[float] = None, cleanup: Optional[bool] = None,
               cleanup_timeout: float = 180, cleanup_poll_interval: float = 2,
               stream_logs: Optional[bool] = None,
               on_status_change: Optional[Callable[[JobStatus], None]] = None) -> Any:
        """Wait for the job and return its value, or re-raise the remote exception.

        Raises TimeoutError after ``timeout`` seconds (the job keeps running and the handle
        stays valid), RuntimeError if the job failed without a result. ``timeout`` None,
        ``float('inf')`` or more than a century waits without limit; ``timeout=0`` does not
        wait (the value if the job has ended, else TimeoutError at once, as
        concurrent.futures); NaN or a negative number is a ValueError.
        """
        timeout = seconds(timeout, "result", "timeout")
        seconds(cleanup_timeout, "result", "cleanup_timeout")
        seconds(cleanup_poll_interval, "result", "cleanup_poll_interval")
        _check.boolean(cleanup, "result", "cleanup", optional=True)
        _check.boolean(stream_logs, "result", "stream_logs", optional=True)
        _check.callable_or_none(on_status_change, "result", "on_status_change")
        if cleanup is None:
            cleanup = not self.debug
        if stream_logs is None:
            stream_logs = False
        if _COLLECTED in self.__dict__:  # collected by this handle already: the same value
            return self.__dict__[_COLLECTED]
        params = self._params(stream_logs=bool(stream_logs), status_events=on_status_change is not None,
                              value_dir=tempfile.gettempdir(), inline_max=INLINE_MAX, **limit(timeout))
        try:
            res = engine().call("result", params, on_event=_result_events(on_status_change))
        except EngineDiedError as e:
            raise EngineDiedError(
                "job %s: %s while this process waited for its result. The job is not affected: result() "
                "again (or kinetic.attach(%r).result()) starts a new engine and collects it"
                % (self.job_id, e, self.job_id), self.job_id, self) from None
        return self._collect(res, cleanup)

    def _collect(self, res, cleanup):
        """The value of result's reply res (or its remote exception raised); with cleanup,
        the engine is told this process holds it (collected)."""
        mark("sdk.result", self.job_id)
        try:
            value = _unpack(res, self.job_id)
        except Exception:
            if cleanup and (res or {}).get("envelope") is not None:
                # A job that ended without a value: as the reference, its backend
                # resources (a cluster's Job and pods, a local workspace) go, and the
                # store's evidence (status, logs, the exception) stays for
                # status_reason(), logs() and `kinetic jobs status`.
                _cleanup_resources(self)
            raise
        if cleanup:
            # The value is in this process now: only then may the job be cleaned up.
            _fault_point("result:before-ack")
            acknowledge(self.store, [self.job_id], wait=False)
            self.__dict__[_COLLECTED] = value
        return value

    @classmethod
    def _call(cls, req, on_submitted):
        """A blocking call: submit request req and wait for its value in one request to
        the engine (call), streaming the job's logs, as run_async() then result(
        stream_logs=True) would. on_submitted gets the job's handle as soon as it is
        submitted. Returns the value and the handle."""
        req = dict(req, result={"stream_logs": True, "value_dir": tempfile.gettempdir(), "inline_max": INLINE_MAX})
        events = _result_events(None)
        submitted = []

        def on_event(name, data):
            if name == "submitted":
                submitted.append(cls.from_dict(data))
                on_submitted(submitted[0])
            else:
                events(name, data)

        res = engine().call("call", req, on_event=on_event)
        # The event came before the reply (one reader, in order).
        return submitted[0]._collect(res, True), submitted[0]

    def debug_attach(self, local_port: Optional[int] = None, working_dir: Optional[str] = None,
                     timeout: Optional[float] = None, quiet: bool = False) -> "DebugSession":
        """Wait for the debug job's debugpy, connect this machine to it, and print the VS Code
        launch.json configuration that attaches to it.

        On a cluster the connection is a port-forward on ``local_port`` (any free port if
        None) that lasts until ``session.close()`` (or ``kinetic.debug.cleanup_port_forward``)
        or the end of this process; on the local backend debugpy is reached directly and
        ``local_port`` is not used. ``working_dir`` overrides the local side of the path
        mappings (default: the shipped root the job was submitted from). Raises
        TimeoutError after ``timeout`` seconds, KineticError if the job is not a debug job
        or ends before its debugger starts.
        """
        from .debug import DebugSession
        timeout = seconds(timeout, "debug_attach", "timeout")
        _check.integer(local_port, "debug_attach", "local_port", minimum=0, optional=True)
        if local_port is not None and local_port > 65535:
            raise ValueError("debug_attach(local_port=%d): must be a port number, 0 to 65535" % local_port)
        _check.string(working_dir, "debug_attach", "working_dir")
        _check.boolean(quiet, "debug_attach", "quiet")
        res = engine().call("debug_attach", self._params(local_port=int(local_port or 0), **limit(timeout)))
        session = DebugSession(self.job_id, res, working_dir)
        if not quiet:
            sys.stderr.write("kinetic: debugpy of %s is reachable at %s:%d; add this configuration to "
                             ".vscode/launch.json and start it:\n" % (self.job_id, session.host, session.port))
            sys.stderr.write(session.launch_json() + "\n")
            sys.stderr.flush()
        return session

    def cancel(self, cleanup_timeout: float = 180, cleanup_poll_interval: float = 2) -> None:
        """Stop the job: SIGTERM (or pod deletion), then a forced stop after a grace period,
        waiting up to ``cleanup_timeout`` seconds for it to stop (None, ``inf`` or more
        than a century: no limit; 0: the job is told to stop and this returns at once)."""
        cleanup_timeout = seconds(cleanup_timeout, "cancel", "cleanup_timeout")
        poll = seconds(cleanup_poll_interval, "cancel", "cleanup_poll_interval")
        engine().call("cancel", self._params(**limit(cleanup_timeout), **_poll(poll)))

    def cleanup(self, k8s: bool = True, gcs: bool = True, cleanup_timeout: float = 180,
                cleanup_poll_interval: float = 2) -> None:
        """Remove the backend's resources (k8s) and the store artifacts (gcs); outputs stay.
        A job still running is stopped first, waiting up to ``cleanup_timeout`` seconds
        (None, ``inf`` or more than a century: no limit; 0: a job still running is left
        as it is and TimeoutError raised at once)."""
        cleanup_timeout = seconds(cleanup_timeout, "cleanup", "cleanup_timeout")
        poll = seconds(cleanup_poll_interval, "cleanup", "cleanup_poll_interval")
        _check.boolean(k8s, "cleanup", "k8s")
        _check.boolean(gcs, "cleanup", "gcs")
        engine().call("cleanup", self._params(k8s=k8s, gcs=gcs, **limit(cleanup_timeout), **_poll(poll)))

    def __repr__(self):
        return "JobHandle(job_id=%r, func_name=%r, accelerator=%r, backend=%r)" % (
            self.job_id, self.func_name, self.accelerator, self.backend)


def _poll(interval):
    """The poll_interval parameter of a cancel or cleanup: cleanup_poll_interval, the
    longest pause between two checks that the job stopped (None or inf: the backend's own
    pace; 0: as often as the backend checks at its quickest)."""
    if interval is None or interval == math.inf or interval <= 0:
        return {}
    return {"poll_interval": float(interval)}


def _result_events(on_status_change):
    """The events of a wait for a result: logs printed, status changes to
    on_status_change, warnings on stderr."""
    def on_event(name, data):
        if name == "log":
            _print_logs(name, data)
        elif name == "status" and on_status_change is not None:
            try:
                on_status_change(JobStatus(data))
            except Exception as e:  # never break result collection
                sys.stderr.write("kinetic: on_status_change raised %r (ignored)\n" % (e,))
        elif name == "warning":
            sys.stderr.write("kinetic: warning: %s\n" % data)
    return on_event


def _print_logs(name, data):
    if name == "log":
        sys.stdout.write(data)
        sys.stdout.flush()


def _index_field(v):
    """A handle's group_index as from_dict reads it: a whole number written as an int or
    a string of digits ("" or None: none)."""
    if isinstance(v, bool):
        raise ValueError("JobHandle.from_dict: the field 'group_index' is %r, not a whole number" % (v,))
    if isinstance(v, int):
        return v
    s = str(v).strip()
    if s == "":
        return None
    if not (s.isascii() and s.isdigit()):  # "²" and "٣" are digits to isdigit(), not to int()
        raise ValueError("JobHandle.from_dict: the field 'group_index' is %r, not a whole number (an input's "
                         "index in its batch, 0 or more)" % (v if len(str(v)) <= 40 else str(v)[:40] + "...",))
    return int(s)


def _bool_field(name, v):
    """A handle's debug or spot as from_dict reads it: a bool, or "true"/"false"
    (any case; "" is false)."""
    if isinstance(v, bool):
        return v
    s = str(v).strip().lower()
    if s in ("true", "false", ""):
        return s == "true"
    raise ValueError("JobHandle.from_dict: the field %r is %r, not true or false" % (name, v))


# JobHandle.from_dict's view of the fields: how each value is read, and the defaults.
_FIELD_KINDS = {f.name: ("index" if f.name == "group_index" else "bool" if f.name in ("debug", "spot")
                         else "optional" if f.name in ("group_id", "group_kind") else "string")
                for f in dataclasses.fields(JobHandle)}
_DEFAULTS = {f.name: f.default for f in dataclasses.fields(JobHandle) if f.default is not dataclasses.MISSING}

# Values of at most this many bytes come in the engine's reply instead of a file.
INLINE_MAX = 60000


def _result_object(job_id):
    """The store object that holds job_id's pickled result: result.pkl under the job, or
    for a batch child (job-<23 characters>-<index>) its batch's results/<index>.pkl."""
    head, _, index = (job_id or "").rpartition("-")
    if head.startswith("job-") and len(head) == 27 and index.isdigit():
        return "groups/grp-%s/results/%s.pkl" % (head[4:], index)
    return "result.pkl"


def _load(path, job_id="", data=None):
    """Unpickle a result: data (inline in the reply), else the file at path (removed)."""
    try:
        if data is not None:
            return pickle.loads(data)
        with open(path, "rb") as f:
            return pickle.load(f)
    except Exception as e:  # a damaged or cut-short result.pkl, or a missing class
        size = len(data) if data is not None else (os.path.getsize(path) if os.path.exists(path) else 0)
        raise ResultUnreadableError(
            "job %s: its result (%s, %d bytes) could not be unpickled: %s: %s "
            "(a truncated or damaged file, or a class this Python cannot import; "
            "run the job again, or unpickle it where the job's code is importable)"
            % (job_id or "?", _result_object(job_id), size, type(e).__name__, e)) from e
    finally:
        if data is None:
            try:
                os.unlink(path)
            except OSError:
                pass


# A handle's collected value, kept on the handle (not a dataclass field) so that
# result() again returns it instead of finding the job cleaned up.
_COLLECTED = "_kinetic_collected_value"


_collector = [0, ""]  # (pid, name): named once per process, not per result


def collector_name() -> str:
    """This process, as a collection record names it: "pid 4242 on host-a (alice)"."""
    pid = os.getpid()
    if _collector[0] == pid:
        return _collector[1]
    try:
        user = getpass.getuser()
    except Exception:  # no user name for this uid (a container)
        user = ""
    name = "pid %d on %s" % (pid, socket.gethostname() or "an unknown host")
    _collector[:] = [pid, name + (" (%s)" % user if user else "")]
    return _collector[1]


def acknowledge(store: str, job_ids, wait: bool = True) -> dict:
    """Tell the engine this process holds the values of job_ids: it claims them (a
    tombstone, a batch's collection record) and cleans them up after answering. Jobs
    another collector claimed first are left to it (the reply's "taken"). A failure to
    acknowledge only leaves the jobs in the store: the values are here already.

    With wait=False the reply is not awaited (a sync call's value returns at once): the
    engine claims before it reads this process's next request, and a failure is
    written as the same warning when the reply comes."""
    if not job_ids:
        return {}
    if not wait:
        def on_reply(msg):
            if msg.get("error"):
                sys.stderr.write("kinetic: warning: the results were received but their jobs were not cleaned up "
                                 "(%s); `kinetic jobs cleanup JOB_ID` removes them\n"
                                 % msg["error"].get("message", msg["error"]))
        try:
            engine().send("collected", {"job_ids": list(job_ids), "store": store,
                                        "collector": collector_name()}, on_reply)
        except (KineticError, OSError) as e:
            sys.stderr.write("kinetic: warning: the results were received but their jobs were not cleaned up "
                             "(%s); `kinetic jobs cleanup JOB_ID` removes them\n" % e)
        return {}
    try:
        return engine().call("collected", {"job_ids": list(job_ids), "store": store,
                                           "collector": collector_name()}) or {}
    except KineticError as e:
        sys.stderr.write("kinetic: warning: the results were received but their jobs were not cleaned up "
                         "(%s); `kinetic jobs cleanup JOB_ID` removes them\n" % e)
        return {}


def _fault_point(name: str) -> None:
    """Fault injection for the collection tests: KINETIC_TEST_KILL_AT=name kills this
    process (SIGKILL, as a crash or the OOM killer would) when it reaches name."""
    if os.environ.get("KINETIC_TEST_KILL_AT") == name:
        os.kill(os.getpid(), signal.SIGKILL)


def _cleanup_resources(h):
    """Remove what the backend holds for h (not the store's objects), without waiting for
    the reply: a failure only leaves them, said as a warning."""
    def on_reply(msg):
        if msg.get("error"):
            sys.stderr.write("kinetic: warning: job %s failed, and its resources were not removed (%s); "
                             "`kinetic jobs cleanup %s` removes them\n"
                             % (h.job_id, msg["error"].get("message", msg["error"]), h.job_id))
    try:
        engine().send("cleanup", h._params(k8s=True, gcs=False), on_reply)
    except (KineticError, OSError) as e:
        sys.stderr.write("kinetic: warning: job %s failed, and its resources were not removed (%s); "
                         "`kinetic jobs cleanup %s` removes them\n" % (h.job_id, e, h.job_id))


def _unpack(res, job_id=""):
    if not res or not (res.get("envelope") or res.get("state")):
        # Not a job's end (an engine older than this SDK answered a read it did not
        # make with an empty entry): never taken for a failure of the job's own.
        raise KineticError("job %s: the engine sent no result for it (it was not read); ask again" % (job_id or "?"))
    env = res.get("envelope") or {}
    path = res.get("value_path")
    data = base64.b64decode(res["value"]) if res.get("value") else None
    if env.get("success"):
        return _load(path, job_id, data) if path or data is not None else None
    tb = env.get("traceback", "")
    phase = env.get("phase", "")
    exc = None
    if path or data is not None:
        exc = _load_exception(path, data, env)
    if not isinstance(exc, BaseException):
        exc = RemoteError(env.get("exc_type", "Exception"), env.get("exc_message", ""), tb, phase)
    exc.remote_traceback = tb
    exc.remote_phase = phase
    if tb and hasattr(exc, "add_note"):
        exc.add_note("\nRemote traceback (phase %s):\n%s" % (phase, tb.rstrip()))
    raise exc


def _load_exception(path, data, env):
    """The remote exception, or None when it cannot be rebuilt here. Unpickled as usual
    first; when that fails (its class needs other constructor arguments than its args,
    say), rebuilt without calling __init__: its class, args, __dict__, chain and notes
    (_Rebuilder)."""
    try:
        if data is None:
            with open(path, "rb") as f:
                data = f.read()
    except OSError:
        return None
    finally:
        if path:
            try:
                os.unlink(path)
            except OSError:
                pass
    try:
        return pickle.loads(data)
    except Exception:
        pass
    try:
        return _Rebuilder(io.BytesIO(data), env).load()
    except Exception:
        return None


class _Rebuilder(pickle._Unpickler):
    """An unpickler that rebuilds exceptions whose class cannot be called with their
    args: the instance is made with cls.__new__ (which sets args and calls no
    __init__), then its state (__dict__, __notes__, __cause__, __context__) is set. When
    even that fails, it is an instance of a subclass of both its class and RemoteError
    (as Ray's as_instanceof_cause), so ``except TheirClass:`` still catches it."""

    dispatch = dict(pickle._Unpickler.dispatch)

    def __init__(self, file, env):
        super().__init__(file)
        self._env = env

    def load_reduce(self):
        args = self.stack.pop()
        func = self.stack[-1]
        if isinstance(func, type) and issubclass(func, BaseException):
            try:
                obj = func(*args)
            except Exception:
                obj = _without_init(func, args, self._env)
        else:
            obj = func(*args)
        self.stack[-1] = obj

    dispatch[pickle.REDUCE[0]] = load_reduce

    def load_build(self):
        state, inst = self.stack[-1], self.stack[-2]
        if not (isinstance(inst, BaseException) and isinstance(state, dict)):
            return pickle._Unpickler.load_build(self)
        self.stack.pop()
        for k, v in state.items():  # as BaseException.__setstate__, one by one
            try:
                setattr(inst, k, v)
            except Exception:  # a read-only property: the rest is still set
                pass

    dispatch[pickle.BUILD[0]] = load_build


def _without_init(cls, args, env):
    """An instance of the exception class cls holding args, made without calling its
    __init__; else of a subclass of cls and RemoteError; else a RemoteError."""
    try:
        obj = cls.__new__(cls, *args)
        if isinstance(obj, cls):
            obj.args = args
            return obj
    except Exception:
        pass
    name = "%s.%s" % (getattr(cls, "__module__", "?"), getattr(cls, "__qualname__", cls.__name__))
    message = str(args[0]) if len(args) == 1 else str(args)
    try:
        sub = type(cls.__name__, (cls, RemoteError), {"__module__": cls.__module__,
                                                      "__qualname__": getattr(cls, "__qualname__", cls.__name__)})
        obj = BaseException.__new__(sub)
    except Exception:  # the two classes cannot be combined (their layouts differ)
        return RemoteError(name, message, env.get("traceback", ""), env.get("phase", ""))
    RemoteError.__init__(obj, name, message, env.get("traceback", ""), env.get("phase", ""))
    obj.args = args
    return obj


def attach(job_id: str, project: Optional[str] = None, cluster: Optional[str] = None,
           store: Optional[str] = None) -> JobHandle:
    """Rebuild the handle of a submitted job from the store, from any process or machine.

    ``project`` and ``cluster`` say where the job is when ``store`` is not given: they
    resolve as a submission's settings do (argument > ``KINETIC_*`` > profile > default),
    and a profile whose project and cluster are the ones named supplies its store, so a
    job of another cluster than the active profile's is found."""
    _check.string(job_id, "attach", "job_id", optional=False)
    for param, value in (("project", project), ("cluster", cluster), ("store", store)):
        _check.string(value, "attach", param)
    return JobHandle.from_dict(engine().call("attach", {"job_id": job_id, "store": store or "",
                                                         "config": _cluster_config(project=project, cluster=cluster)}))


def _existing_store(store, func):
    """Refuse a file store (a path or file://) whose directory does not exist."""
    path = store[len("file://"):] if store.startswith("file://") else store
    if "://" in path or not path:
        return
    path = os.path.expanduser(path)
    if not os.path.isdir(path):
        raise FileNotFoundError(errno.ENOENT, "%s(store=...): no such directory, so no jobs there (check the path; "
                                "a store is made by the first job submitted to it)" % func, store)


def _cluster_config(**kw):
    return {k: v for k, v in kw.items() if v}


def list_jobs(project: Optional[str] = None, zone: Optional[str] = None, cluster: Optional[str] = None,
              namespace: Optional[str] = None, store: Optional[str] = None):
    """Handles of the jobs the backend knows, newest first. A local ``store`` directory
    that does not exist is refused (FileNotFoundError), as `kinetic jobs list --store`
    does: it holds no jobs, and looking must not create it."""
    for param, value in (("project", project), ("zone", zone), ("cluster", cluster), ("namespace", namespace),
                         ("store", store)):
        _check.string(value, "list_jobs", param)
    if store:
        _existing_store(store, "list_jobs")
    config = {k: v for k, v in (("project", project), ("zone", zone), ("cluster", cluster),
                                ("namespace", namespace)) if v}
    rows = engine().call("list", {"store": store or "", "config": config})
    out = []
    for r in rows:
        if r.get("status") == "ERROR":  # a job the store holds but that cannot be read
            warnings.warn("kinetic: %s" % r.get("reason", ""), RuntimeWarning, stacklevel=2)
            continue
        out.append(JobHandle.from_dict(r["handle"]))
    return out

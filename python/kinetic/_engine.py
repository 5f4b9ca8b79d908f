"""The SDK's link to the Go engine: one long-lived ``kinetic serve --stdio`` subprocess
per Python process, speaking JSON lines (docs/protocol.md). All orchestration lives in
the engine; this module only sends requests, routes events and maps errors."""

import atexit
import io
import itertools
import json
import logging
import os
import shutil
import subprocess
import sys
import threading

from .exceptions import (EngineDiedError, InvalidArgumentError, JobNotFoundError, KineticError, PermissionDeniedError,
                         ResourceExhaustedError, ResultCollectedError, UnavailableError)

PROTOCOL = 2

# KINETIC_LOG_LEVEL (DEBUG, INFO, WARNING, ...) sets the SDK's logger ("kinetic": every
# engine request at DEBUG) and, inherited, the engine's own.
_log = logging.getLogger("kinetic")
_log.setLevel(logging.INFO)  # the reference's default; KINETIC_LOG_LEVEL changes it
if os.environ.get("KINETIC_LOG_LEVEL"):
    try:
        _log.setLevel(os.environ["KINETIC_LOG_LEVEL"].upper())
        if not _log.handlers:
            _h = logging.StreamHandler()
            _h.setFormatter(logging.Formatter("kinetic: %(levelname)s: %(message)s"))
            _log.addHandler(_h)
    except ValueError:
        sys.stderr.write("kinetic: warning: KINETIC_LOG_LEVEL=%r: want DEBUG, INFO, WARNING or ERROR\n"
                         % os.environ["KINETIC_LOG_LEVEL"])

_TRACE = os.environ.get("KINETIC_TRACE")


def mark(phase, job_id=""):
    """The benchmark's phase marks (internal/calltrace in the engine): one line appended
    to $KINETIC_TRACE, only when it is set."""
    if _TRACE:
        import time
        fd = os.open(_TRACE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(fd, ("%d %d %s %s\n" % (time.time_ns() // 1000, os.getpid(), phase, job_id)).encode())
        os.close(fd)


def find_binary():
    """Locate the kinetic binary: $KINETIC_BIN, the one shipped in the package, PATH."""
    env = os.environ.get("KINETIC_BIN")
    if env:
        if not os.access(env, os.X_OK):
            raise KineticError("KINETIC_BIN=%s is not an executable file" % env)
        return env
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bin", "kinetic")
    if os.access(here, os.X_OK):
        return here
    found = shutil.which("kinetic")
    if found:
        return found
    raise KineticError(
        "the kinetic binary was not found: build it with `go build -o bin/kinetic ./cmd/kinetic` "
        "in the kinetic repository and put it on PATH, or set KINETIC_BIN to its path")


class _Pending:
    __slots__ = ("event", "reply", "on_event", "line", "on_reply")

    def __init__(self, on_event):
        self.event = threading.Event()
        self.reply = None
        self.on_event = on_event
        self.line = 0  # its request's number among the lines sent to the engine
        self.on_reply = None  # for a request sent without waiting (send): gets the reply


def _encode(msg):
    """One request line. allow_nan=False: Python's json would write NaN and Infinity,
    which JSON has not (the public functions check their numbers first and name them)."""
    try:
        return (json.dumps(msg, allow_nan=False) + "\n").encode()
    except ValueError:
        raise ValueError("kinetic: the %s request holds a NaN or infinite number, which cannot be sent to the "
                         "engine" % msg.get("method")) from None


class Engine:
    """A running engine subprocess."""

    def __init__(self, binary=None):
        self.binary = binary or find_binary()
        self._proc = subprocess.Popen(
            [self.binary, "serve", "--stdio"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None,
            bufsize=0, close_fds=True,
            # Its own session: a Ctrl-C in the terminal reaches this process alone, which
            # decides what it means (cancel the job a blocking call started); the engine
            # ends when this process closes its stdin, or dies.
            start_new_session=True)
        self._wlock = threading.Lock()
        self._plock = threading.Lock()
        self._pending = {}
        self._ids = itertools.count(1)
        self._lines = 0  # lines written to the engine (under _wlock)
        self._dead = None
        # Replies are read through a buffer: the pipe itself is unbuffered (bufsize=0, for
        # stdin's sake), and a line read from it directly costs a system call per byte.
        self._out = io.BufferedReader(self._proc.stdout, 1 << 16)
        greeting = self._out.readline()
        try:
            hello = json.loads(greeting)
        except ValueError:
            raise KineticError("%s did not start the engine (it said %r)" % (self.binary, greeting[:200]))
        if hello.get("protocol") != PROTOCOL:
            raise KineticError(
                "%s speaks engine protocol %r but this SDK speaks %d: install matching versions of "
                "the kinetic binary and the Python package" % (self.binary, hello.get("protocol"), PROTOCOL))
        self.version = hello.get("kinetic")
        self._reader = threading.Thread(target=self._read, name="kinetic-engine", daemon=True)
        self._reader.start()

    def _read(self):
        for line in self._out:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            with self._plock:
                p = self._pending.get(msg.get("id"))
            if p is None:
                if msg.get("error") and "event" not in msg:
                    self._unmatched(msg)
                continue
            if "event" in msg:
                if p.on_event is not None:
                    try:
                        p.on_event(msg["event"], msg.get("data"))
                    except Exception:  # a callback must never break the engine link
                        pass
                continue
            p.reply = msg
            p.event.set()
            if p.on_reply is not None:
                with self._plock:
                    self._pending.pop(msg.get("id"), None)
                try:
                    p.on_reply(msg)
                except Exception:  # a callback must never break the engine link
                    pass
        self._dead = "the kinetic engine (%s) exited with code %s" % (self.binary, self._proc.wait())
        with self._plock:
            for p in self._pending.values():
                p.event.set()

    def _unmatched(self, msg):
        """An error for no call this process is waiting for: the engine could not read a
        line and found no id in it. It names the line: that call gets the error. Without
        a line this process sent, the call is not known: say so, and leave the others
        waiting (failing them all would drop a result the engine goes on to collect and
        clean up)."""
        line = msg.get("line")
        with self._plock:
            p = next((p for p in self._pending.values() if line and p.line == line), None)
        if p is not None:
            p.reply = msg
            p.event.set()
            return
        sys.stderr.write("kinetic: warning: the engine answered a request this process is not waiting for: %s\n"
                         % msg["error"].get("message", msg["error"]))
        sys.stderr.flush()

    def alive(self):
        return self._dead is None and self._proc.poll() is None

    def call(self, method, params=None, on_event=None):
        """Send one request and wait for its reply; events go to on_event(name, data)."""
        if _TRACE:
            mark("sdk.send." + method)
        rid, p = self.start(method, params, on_event)
        try:
            while not p.event.wait(0.5):
                pass
        except KeyboardInterrupt:
            self.cancel(rid)
            raise
        if _TRACE:
            mark("sdk.reply." + method)
        return self.finish(rid, p)

    def send(self, method, params, on_reply):
        """Send one request without waiting for its reply: on_reply(message) gets it on
        the reader's thread. The engine serves such a request (protocol.md: "collected")
        before it reads the next line, so what this process asks next sees its effect."""
        self.start(method, params, on_reply=on_reply)

    def start(self, method, params=None, on_event=None, on_reply=None):
        """Send a request without waiting: returns (id, pending); see finish and cancel."""
        if self._dead:
            raise EngineDiedError(self._dead)
        rid = next(self._ids)
        line = _encode({"id": rid, "method": method, "params": params or {}})
        p = _Pending(on_event)
        p.on_reply = on_reply
        with self._plock:
            self._pending[rid] = p
        _log.debug("engine request %d: %s", rid, method)
        try:
            with self._wlock:
                self._lines += 1
                p.line = self._lines
                self._proc.stdin.write(line)
        except BaseException:
            with self._plock:
                self._pending.pop(rid, None)
            raise
        return rid, p

    def finish(self, rid, p):
        """The result of a started request once p.event is set (raises its error)."""
        with self._plock:
            self._pending.pop(rid, None)
        if p.reply is None:
            raise EngineDiedError(self._dead or "no reply from the kinetic engine")
        err = p.reply.get("error")
        if err:
            raise _exception(err)
        return p.reply.get("result")

    def cancel(self, rid):
        """Cancel an in-flight request (its reply is a Cancelled error)."""
        self._cancel(rid)

    def _cancel(self, rid):
        try:
            line = _encode({"id": -rid, "method": "cancel_request", "params": {"request_id": rid}})
            with self._wlock:
                self._lines += 1
                self._proc.stdin.write(line)
        except OSError:
            pass

    def close(self):
        """Let the engine go: it exits once its in-flight work is done (a batch still
        being submitted, cleanups after a reply), which may outlive this process."""
        try:
            self._proc.stdin.close()
        except OSError:
            pass
        try:
            self._proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            pass  # still finishing a batch's submission: it carries on by itself


def _exception(err):
    typ, msg = err.get("type"), err.get("message", "")
    if typ == "NotFound" and err.get("collected"):
        c = err["collected"]
        return ResultCollectedError(msg, c.get("collected_by", ""), c.get("collected_at", ""))
    if typ == "NotFound":
        return JobNotFoundError(msg)
    if typ == "Timeout":
        return TimeoutError(msg)
    if typ == "NoResult":
        return RuntimeError(msg)
    if typ == "Cancelled":
        return KeyboardInterrupt(msg)
    if typ == "InvalidArgument":
        return InvalidArgumentError(msg)
    # A class this SDK does not know is Internal (protocol.Class).
    return _CLASSES.get(typ, KineticError)(msg)


_CLASSES = {
    "PermissionDenied": PermissionDeniedError,
    "ResourceExhausted": ResourceExhaustedError,
    "Unavailable": UnavailableError,
}


_engine = None
_engine_lock = threading.Lock()


def engine():
    """The process's engine, started on first use (and again after a fork or a crash)."""
    global _engine
    with _engine_lock:
        if _engine is None or not _engine.alive():
            _engine = Engine()
        return _engine


def _reset_after_fork():
    global _engine, _engine_lock
    _engine, _engine_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)


@atexit.register
def _close():
    if _engine is not None:
        _engine.close()

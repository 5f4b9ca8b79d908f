"""Remote debugging of jobs submitted with debug=True (docs/debug.md).

The reference's public names are here with its meanings, over the engine (no kubectl):
DEBUGPY_PORT, DEBUG_WAIT_TIMEOUT, start_port_forward, print_attach_instructions,
wait_for_debug_server and cleanup_port_forward.
"""

import copy
import json
import sys
import time
from typing import Any, Dict, Optional

from . import _check
from ._engine import engine
from ._seconds import seconds

# debugpy's default port, which VS Code fills into a generated "attach" configuration:
# debug_attach() forwards it on this machine when it is free, and a local job's debugpy
# listens on it when it is free, so that configuration works unchanged.
DEBUGPY_PORT = 5678

# The default wait of a debug job for its debugger, in seconds (debug_wait=): after it the
# job goes on without one.
DEBUG_WAIT_TIMEOUT = 600


class DebugSession:
    """A debugger's way into a debug job: where to connect from this machine, and the VS
    Code launch.json configuration ("request": "attach") that does it.

    On a cluster the session holds a port-forward open until ``close()``; on the local
    backend there is nothing to close (``close()`` is harmless).
    """

    def __init__(self, job_id: str, reply: Dict[str, Any], working_dir: Optional[str] = None):
        _check.string(job_id, "DebugSession", "job_id", optional=False)
        if not isinstance(reply, dict):
            _check.fail_type("DebugSession", "reply", "a dict (the engine's debug_attach reply)", reply)
        _check.string(working_dir, "DebugSession", "working_dir")
        self.job_id = job_id
        self.host = reply["host"]
        self.port = int(reply["port"])
        self.remote_root = reply.get("remote_root", "")
        self.local_root = working_dir or reply.get("local_root", "")
        self.forwarded = bool(reply.get("forwarded"))
        self._session_id = reply.get("session_id") or ""
        self.config = copy.deepcopy(reply["launch"])
        if working_dir:
            for m in self.config.get("pathMappings", []):
                m["localRoot"] = working_dir

    def launch_json(self) -> str:
        """The configuration as launch.json expects it."""
        return json.dumps({"version": "0.2.0", "configurations": [self.config]}, indent=2)

    def close(self) -> None:
        """End the port-forward, if the session holds one."""
        if self._session_id:
            engine().call("debug_detach", {"session_id": self._session_id})
            self._session_id = ""

    # Popen-like names, for code written against the reference's debug_attach.
    terminate = close

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return "DebugSession(job_id=%r, host=%r, port=%d)" % (self.job_id, self.host, self.port)


def _handle(job, fn):
    from .jobs import JobHandle, attach
    if isinstance(job, JobHandle):
        return job
    if isinstance(job, str) and job:
        return attach(job)
    _check.fail_type(fn, "job", "a JobHandle or a job ID", job)


def start_port_forward(pod_name, namespace=None, local_port=DEBUGPY_PORT, remote_port=DEBUGPY_PORT) -> DebugSession:
    """Forward ``local_port`` on this machine to the debug job's debugpy, as the reference's
    helper of this name does with kubectl; here the engine forwards (client-go), and
    ``pod_name`` may be the job's ID or JobHandle (a pod name of the job, ``JOB-…``, is
    taken to its job). ``namespace`` and ``remote_port`` are accepted for the reference's
    signature: the job's own namespace and debugpy port come from its record. Returns a
    DebugSession, which has the Popen-like ``terminate()`` the reference's callers use.
    Raises RuntimeError if the port cannot be forwarded (for example, it is taken)."""
    _check.string(namespace, "start_port_forward", "namespace")
    _check.integer(local_port, "start_port_forward", "local_port", minimum=0)
    _check.integer(remote_port, "start_port_forward", "remote_port", minimum=1)
    from .exceptions import JobNotFoundError, KineticError
    h = None
    if isinstance(pod_name, str):
        # A pod of the job: "JOB-ID-INDEX-RANDOM" or "JOB-ID-RANDOM"; try the longest prefix.
        parts = pod_name.split("-")
        for n in range(len(parts), 0, -1):
            try:
                h = _handle("-".join(parts[:n]), "start_port_forward")
                h.status()
                break
            except (JobNotFoundError, ValueError):
                h = None
        if h is None:
            raise RuntimeError("start_port_forward: no debug job found for %r: give the job's ID (kinetic jobs list)" % pod_name)
    else:
        h = _handle(pod_name, "start_port_forward")
    try:
        return h.debug_attach(local_port=local_port, quiet=True)
    except KineticError as e:
        raise RuntimeError("port-forward to job %s on local port %d failed: %s; try another port: "
                           "handle.debug_attach(local_port=PORT) or kinetic jobs debug %s --port PORT"
                           % (h.job_id, local_port, e, h.job_id)) from e


def print_attach_instructions(local_port, working_dir=None, remote_root=None) -> None:
    """Print, on stdout, the VS Code launch.json configuration that attaches to a debugger
    forwarded to ``local_port`` (the reference's helper). ``working_dir`` is the local side
    of the path mappings (default ``${workspaceFolder}``), ``remote_root`` the job's
    materialised tree (DebugSession.remote_root; JobHandle.debug_attach() prints the
    exact configuration of a job, this prints its shape)."""
    _check.integer(local_port, "print_attach_instructions", "local_port", minimum=1)
    _check.string(working_dir, "print_attach_instructions", "working_dir")
    _check.string(remote_root, "print_attach_instructions", "remote_root")
    cfg = {"name": "Kinetic Debug", "type": "debugpy", "request": "attach",
           "connect": {"host": "localhost", "port": local_port},
           "pathMappings": [{"localRoot": working_dir or "${workspaceFolder}", "remoteRoot": remote_root or "."}]}
    print("Add this configuration to .vscode/launch.json in your workspace, set breakpoints, "
          "then start debugging (F5):")
    print(json.dumps({"version": "0.2.0", "configurations": [cfg]}, indent=2))
    sys.stdout.flush()


def wait_for_debug_server(handle, timeout=DEBUG_WAIT_TIMEOUT, poll_interval=5) -> None:
    """Wait until the debug job's debugpy listens (the reference's helper). Raises
    TimeoutError after ``timeout`` seconds, RuntimeError if the job ends first."""
    from .exceptions import KineticError
    h = _handle(handle, "wait_for_debug_server")
    timeout = seconds(timeout, "wait_for_debug_server", "timeout")
    seconds(poll_interval, "wait_for_debug_server", "poll_interval")  # the engine waits on events
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        # The engine waits on the job's debug record itself; the session is closed at once
        # (on a cluster it held a port-forward only for this check).
        left = None if deadline is None else max(0.001, deadline - time.monotonic())
        h.debug_attach(timeout=left, quiet=True).close()
    except TimeoutError:
        raise TimeoutError("timed out after %ss waiting for debugpy to start on job %s" % (timeout, h.job_id)) from None
    except KineticError as e:
        raise RuntimeError("job %s: %s" % (h.job_id, e)) from e


def cleanup_port_forward(session) -> None:
    """End a debug session's port-forward (the reference's name). Takes the DebugSession of
    start_port_forward() or JobHandle.debug_attach(); anything else with the Popen-like
    ``terminate()`` is terminated (the reference's kubectl process)."""
    if isinstance(session, DebugSession):
        session.close()
        return
    if callable(getattr(session, "terminate", None)):
        session.terminate()
        wait = getattr(session, "wait", None)
        if callable(wait):
            try:
                wait(timeout=5)
            except Exception:
                getattr(session, "kill", lambda: None)()
        return
    _check.fail_type("cleanup_port_forward", "session", "a DebugSession (from JobHandle.debug_attach())", session)

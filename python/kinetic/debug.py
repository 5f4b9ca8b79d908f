"""Remote debugging of jobs submitted with debug=True (docs/debug.md)."""

import copy
import json
from typing import Any, Dict, Optional

from . import _check
from ._engine import engine


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


def cleanup_port_forward(session: DebugSession) -> None:
    """End a debug session's port-forward (what the reference calls its port-forward cleanup)."""
    if not isinstance(session, DebugSession):
        _check.fail_type("cleanup_port_forward", "session", "a DebugSession (from JobHandle.debug_attach())", session)
    session.close()

"""debug=True end to end on the local backend: debugpy in the job (Debian's
python3-debugpy), JobHandle.debug_attach, and a minimal Debug Adapter Protocol client that
attaches the way VS Code does."""

import json
import socket

import pytest

import kinetic


class Dap:
    """Just enough of the Debug Adapter Protocol over TCP."""

    def __init__(self, host, port):
        self.sock = socket.create_connection((host, port), timeout=60)
        self.buf = b""
        self.seq = 0
        self.pending = []

    def send(self, command, arguments=None):
        self.seq += 1
        body = json.dumps({"seq": self.seq, "type": "request", "command": command,
                           "arguments": arguments or {}}).encode()
        self.sock.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        return self.seq

    def _read(self):
        while b"\r\n\r\n" not in self.buf:
            self.buf += self._recv()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        n = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0])
        while len(self.buf) < n:
            self.buf += self._recv()
        msg, self.buf = self.buf[:n], self.buf[n:]
        return json.loads(msg)

    def _recv(self):
        b = self.sock.recv(65536)
        if not b:
            raise EOFError("the debug adapter closed the connection")
        return b

    def wait(self, pred):
        for i, m in enumerate(self.pending):
            if pred(m):
                return self.pending.pop(i)
        while True:
            m = self._read()
            if pred(m):
                return m
            self.pending.append(m)

    def response(self, seq):
        m = self.wait(lambda m: m.get("type") == "response" and m.get("request_seq") == seq)
        assert m["success"], m
        return m.get("body", {})

    def event(self, name):
        return self.wait(lambda m: m.get("type") == "event" and m.get("event") == name).get("body", {})


def test_debug_attach_with_a_dap_client():
    @kinetic.run(accelerator="cpu", debug=True, debug_wait=120)
    def triple(x):
        return x * 3

    h = triple.run_async(14)
    assert h.debug and h.shipped_root
    session = h.debug_attach(quiet=True)
    try:
        assert session.config["request"] == "attach"
        assert session.config["connect"] == {"host": session.host, "port": session.port}
        assert session.config["pathMappings"] == [{"localRoot": h.shipped_root, "remoteRoot": session.remote_root}]
        assert json.loads(session.launch_json())["configurations"] == [session.config]
        dap = Dap(session.host, session.port)
        dap.response(dap.send("initialize", {"clientID": "pytest", "adapterID": "debugpy", "pathFormat": "path",
                                             "linesStartAt1": True, "columnsStartAt1": True}))
        attach = dap.send("attach", {"justMyCode": False, "pathMappings": session.config["pathMappings"]})
        dap.event("initialized")
        dap.response(dap.send("configurationDone"))
        dap.response(attach)
        assert h.result(timeout=60) == 42
    finally:
        session.close()


def test_working_dir_overrides_the_local_root():
    @kinetic.run(accelerator="cpu", debug=True, debug_wait=2)
    def f():
        return 1

    h = f.run_async()
    with h.debug_attach(working_dir="/src/mine", quiet=True) as s:
        assert s.config["pathMappings"][0]["localRoot"] == "/src/mine"
    # Nobody attached within debug_wait: the job goes on without a debugger, as the
    # reference's does, and its log says so.
    assert h.result(timeout=60, cleanup=False) == 1
    assert h.status() == kinetic.JobStatus.SUCCEEDED
    assert "no debugger attached within 2s (debug_wait); the job goes on without one" in h.logs()


def test_debug_attach_of_a_plain_job_is_refused():
    @kinetic.run(accelerator="cpu")
    def f():
        return 1

    h = f.run_async()
    with pytest.raises(kinetic.KineticError, match="not submitted with debug=True"):
        h.debug_attach()
    assert h.result(timeout=60) == 1


def test_spot_reaches_the_handle():
    @kinetic.run(accelerator="cpu", spot=True)
    def f():
        return 2

    h = f.run_async()
    assert h.spot and h.accelerator == "cpu:spot"
    assert kinetic.attach(h.job_id).spot
    assert h.to_dict()["spot"] is True
    assert h.result(timeout=60) == 2


def test_sync_debug_call_without_a_terminal_is_refused(monkeypatch):
    """debug=True in a blocking call needs a terminal to attach from; KINETIC_NO_TTY_DEBUG
    overrides (the next test)."""
    monkeypatch.delenv("KINETIC_NO_TTY_DEBUG", raising=False)

    @kinetic.run(accelerator="cpu", debug=True, debug_wait=5)
    def nope():
        return 1

    with pytest.raises(RuntimeError, match="KINETIC_NO_TTY_DEBUG=1"):
        nope()
    assert not [j for j in kinetic.list_jobs() if j.func_name.endswith("nope")]  # nothing was submitted


def test_sync_debug_call_prints_the_configuration_and_returns(capfd, monkeypatch):
    import threading
    import time

    monkeypatch.setenv("KINETIC_NO_TTY_DEBUG", "1")  # pytest has no terminal on stdin

    @kinetic.run(accelerator="cpu", debug=True, debug_wait=120)
    def square(x):
        return x * x

    out = {}
    t = threading.Thread(target=lambda: out.setdefault("value", square(9)), daemon=True)
    t.start()
    deadline = time.time() + 60
    h = None
    while h is None and time.time() < deadline:
        h = next((j for j in kinetic.list_jobs() if j.func_name.endswith("square") and j.status() != kinetic.JobStatus.SUCCEEDED), None)
        time.sleep(0.1)
    assert h is not None, "the debug job did not appear"
    session = h.debug_attach(quiet=True)
    dap = Dap(session.host, session.port)
    dap.response(dap.send("initialize", {"adapterID": "debugpy", "pathFormat": "path"}))
    attach = dap.send("attach", {"pathMappings": session.config["pathMappings"]})
    dap.event("initialized")
    dap.response(dap.send("configurationDone"))
    dap.response(attach)
    t.join(60)
    assert out.get("value") == 81
    err = capfd.readouterr().err
    assert '"request": "attach"' in err and h.job_id in err


def _port_free(port):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def test_the_reference_debug_names_and_port_5678():
    # kinetic.debug has the reference's public names and defaults, over the engine.
    from kinetic import debug
    assert debug.DEBUGPY_PORT == 5678 and debug.DEBUG_WAIT_TIMEOUT == 600
    for name in ("start_port_forward", "print_attach_instructions", "wait_for_debug_server", "cleanup_port_forward"):
        assert callable(getattr(debug, name)), name

    @kinetic.run(accelerator="cpu", debug=True, debug_wait=120)
    def f():
        return 7

    free = _port_free(5678)
    h = f.run_async()
    debug.wait_for_debug_server(h, timeout=60)
    session = debug.start_port_forward(h.job_id)
    try:
        # debugpy takes 5678 when it is free, so VS Code's generated attach configuration
        # works unchanged.
        if free:
            assert session.port == 5678, session
        dap = Dap(session.host, session.port)
        dap.response(dap.send("initialize", {"adapterID": "kinetic-test"}))
        attach = dap.send("attach", {"justMyCode": False, "pathMappings": session.config["pathMappings"]})
        dap.event("initialized")
        dap.response(dap.send("configurationDone"))
        dap.response(attach)
        assert h.result(timeout=60) == 7
    finally:
        debug.cleanup_port_forward(session)
    with pytest.raises(TypeError, match="cleanup_port_forward"):
        debug.cleanup_port_forward("nothing")

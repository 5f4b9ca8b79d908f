"""Replays the golden transcripts of the engine protocol (server/testdata/*.jsonl, also
replayed by server/golden_test.go) through the SDK's own Engine, so the Go server and the
Python client cannot drift apart: the requests go out as the SDK frames them, the replies
and events come back through its reader, and each error class must map to the exception
docs/protocol.md promises. The transcript format is described in server/golden_test.go."""

import glob
import itertools
import json
import os
import queue
import re
import sys
import threading
import time

import pytest

from kinetic import _engine
from kinetic.exceptions import (InvalidArgumentError, JobNotFoundError, KineticError, PermissionDeniedError,
                                ResourceExhaustedError, UnavailableError)

from conftest import REPO

TESTDATA = os.path.join(REPO, "server", "testdata")
TRANSCRIPTS = sorted(glob.glob(os.path.join(TESTDATA, "*.jsonl")))
PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")

# The exception each error class must raise in the SDK.
EXCEPTIONS = {
    "InvalidArgument": InvalidArgumentError, "NotFound": JobNotFoundError, "Timeout": TimeoutError,
    "NoResult": RuntimeError, "Cancelled": KeyboardInterrupt, "Internal": KineticError,
    "PermissionDenied": PermissionDeniedError, "ResourceExhausted": ResourceExhaustedError,
    "Unavailable": UnavailableError,
}


def _lines(path):
    out = []
    with open(path) as f:
        for s in f:
            if s.strip():
                line = json.loads(s)
                if "comment" not in line:
                    out.append(line)
    return out


def _substitute(v, names):
    if isinstance(v, str):
        m = PLACEHOLDER.fullmatch(v)
        if m:
            return names[m.group(1)]
        return PLACEHOLDER.sub(lambda m: str(names[m.group(1)]), v)
    if isinstance(v, dict):
        return {k: _substitute(x, names) for k, x in v.items()}
    if isinstance(v, list):
        return [_substitute(x, names) for x in v]
    return v


def _match(want, got, names, bound, later):
    if isinstance(want, str):
        if want in ("<any>", "<any?>"):
            return True
        if want.startswith("<re:") and want.endswith(">"):
            expr = PLACEHOLDER.sub(lambda m: re.escape(str(names.get(m.group(1)))), want[4:-1])
            return isinstance(got, str) and re.search(expr, got) is not None
        m = PLACEHOLDER.fullmatch(want)
        if m:
            name = m.group(1)
            if name in names:
                return names[name] == got
            if name in bound:
                return bound[name] == got
            bound[name] = got
            return True
        later.append(lambda: _substitute(want, dict(names, **bound)) == got)
        return True
    if isinstance(want, dict):
        if not isinstance(got, dict) or any(k not in want for k in got):
            return False
        for k, w in want.items():
            if k not in got:
                if w != "<any?>":
                    return False
            elif not _match(w, got[k], names, bound, later):
                return False
        return True
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(
            _match(w, g, names, bound, later) for w, g in zip(want, got))
    return type(want) is type(got) and want == got or (
        isinstance(want, (int, float)) and not isinstance(want, bool) and
        isinstance(got, (int, float)) and not isinstance(got, bool) and want == got)


def match(want, got, names):
    bound, later = {}, []
    if not _match(want, got, names, bound, later):
        return False
    try:
        if not all(f() for f in later):
            return False
    except KeyError:
        return False
    names.update(bound)
    return True


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=[os.path.basename(p)[:-6] for p in TRANSCRIPTS])
def test_transcript(path, tmp_path, monkeypatch):
    home = tmp_path / "home"
    for d in ("work", "values"):
        (home / d).mkdir(parents=True)
    monkeypatch.setenv("KINETIC_HOME", str(home))
    monkeypatch.setenv("KINETIC_PROFILES_FILE", str(home / "profiles.json"))
    for k in ("KINETIC_STORE", "KINETIC_BACKEND", "KINETIC_PROFILE"):
        monkeypatch.delenv(k, raising=False)
    names = {"STORE": "file://" + str(home / "store"), "STORE_DIR": str(home / "store"),
             "WORK": str(home / "work"), "VALUE_DIR": str(home / "values"), "TESTDATA": TESTDATA,
             "PYTHON": sys.executable}
    lines = _lines(path)
    greeting = lines.pop(0)["recv"]
    assert greeting["protocol"] == _engine.PROTOCOL, "the Go server and the SDK speak different protocols"

    eng = _engine.Engine(os.environ["KINETIC_BIN"])
    try:
        assert match(greeting, {"kinetic": eng.version, "protocol": _engine.PROTOCOL}, names)
        msgs = queue.Queue()

        def send(req):
            tid = req["id"]

            def on_event(name, data):
                m = {"id": tid, "event": name}
                if data is not None:
                    m["data"] = data
                msgs.put(m)

            rid, pending = eng.start(req["method"], req.get("params"), on_event)

            def reply():
                pending.event.wait()
                m = dict(pending.reply or {}, id=tid)
                err = m.get("error")
                try:
                    eng.finish(rid, pending)
                    m["raised"] = None
                except BaseException as e:  # KeyboardInterrupt for Cancelled
                    m["raised"] = (err or {}).get("type"), e
                msgs.put(m)

            threading.Thread(target=reply, daemon=True).start()

        i = 0
        while i < len(lines):
            if "poll" in lines[i]:
                # Send again (a fresh id each time) until the reply matches "until".
                poll, deadline = lines[i]["poll"], time.monotonic() + 120
                for tid in itertools.count(1000):
                    send(dict(_substitute(poll["send"], names), id=tid))
                    m = msgs.get(timeout=120)
                    m.pop("raised", None)
                    assert m.get("id") == tid, "poll: unexpected message %s" % json.dumps(m)
                    if match(poll["until"], m, names):
                        break
                    assert time.monotonic() < deadline, "poll: still %s after 120 s" % json.dumps(m)
                    time.sleep(0.02)
                i += 1
                continue
            if "send" in lines[i]:
                send(_substitute(lines[i]["send"], names))
                i += 1
            group = []
            while i < len(lines) and "send" not in lines[i] and "poll" not in lines[i]:
                group.append(lines[i]["recv"])
                i += 1
            while group:
                m = msgs.get(timeout=120)
                raised = m.pop("raised", None)
                k = next((k for k, w in enumerate(group) if match(w, m, names)), None)
                assert k is not None, "unexpected message %s\nexpected one of %s" % (json.dumps(m), json.dumps(group))
                group.pop(k)
                if raised:
                    cls, exc = raised
                    assert type(exc) is EXCEPTIONS[cls], "%s raised %r" % (cls, exc)
        assert msgs.empty(), "unexpected messages: %s" % list(msgs.queue)
    finally:
        eng.close()


def test_exceptions_cover_error_classes():
    """Every class the server may send is one the SDK maps (docs/protocol.md)."""
    with open(os.path.join(REPO, "protocol", "protocol.go")) as f:
        classes = re.findall(r'^\t[A-Za-z]+ Class = "([A-Za-z]+)"', f.read(), re.M)
    assert sorted(classes) == sorted(EXCEPTIONS)
    for cls, exc in EXCEPTIONS.items():
        assert type(_engine._exception({"type": cls, "message": "m"})) is exc

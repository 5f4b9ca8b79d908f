"""Every public parameter of the SDK is checked before anything is sent to the engine
(issue 30): a wrong type is a TypeError, a wrong value a ValueError, each naming the
parameter in Python's terms and never carrying the engine's (Go's) words."""

import inspect
import os

import pytest

import kinetic
from kinetic import _decorator, _engine, batch, data, debug, jobs
from kinetic.debug import DebugSession

GO_TEXT = ("json:", "Go struct", "strconv", "context canceled", "deadline exceeded", "Unmarshal", "bad params")


class EngineCalled(BaseException):
    """Raised if a check let a call through to the engine (not an Exception: nothing in
    the SDK catches it)."""


def _no_engine(*a, **kw):
    raise EngineCalled()


@pytest.fixture
def offline(monkeypatch):
    for mod in (jobs, batch, _engine, _decorator, debug):
        monkeypatch.setattr(mod, "engine", _no_engine)
    monkeypatch.setattr(_decorator, "_root_for", lambda source: _no_engine())


@kinetic.run(accelerator="cpu")
def ident(x):
    return x


class Model:
    @kinetic.run(accelerator="cpu")
    def scale(self, x):
        return 3 * x


REPLY = {"host": "127.0.0.1", "port": 5678, "launch": {"name": "x", "pathMappings": []}}

# Valid values for the parameters a call needs, so each parameter is tried alone.
REQUIRED = {"job_id": "job-x", "group_id": "grp-x", "inputs": [1, 2], "path": ".", "reply": REPLY,
            "submit_fn": ident, "session": None, "d": {"job_id": "job-x"}, "pod_name": "job-x",
            "handle": "job-x", "local_port": 5678}


def _wrong_values(param):
    """Values of the wrong type for param, from its annotation and default."""
    ann = param.annotation if isinstance(param.annotation, str) else inspect.formatannotation(param.annotation)
    ann = ann.replace("typing.", "")
    wrong = [object()]
    if "bool" in ann or isinstance(param.default, bool):
        wrong.append("no")  # spot='no' must not mean spot=True
    elif "int" in ann or "float" in ann:
        wrong.append("x")
    elif "Dict" in ann or "dict" in ann or "List" in ann or "list" in ann:
        wrong.append("x")
    elif "str" in ann:
        wrong += [123, ["a"]]
    return wrong


def _targets():
    """(label, callable) for every public function, constructor and method of the SDK,
    found from kinetic.__all__ and the public modules' names."""
    h = kinetic.JobHandle(job_id="job-x")
    b = kinetic.BatchHandle("grp-x", total=1)
    instances = {kinetic.JobHandle: h, kinetic.BatchHandle: b, kinetic.RemoteFunction: ident,
                 kinetic.Data: kinetic.Data("."), DebugSession: DebugSession("job-x", REPLY)}
    names = [(n, getattr(kinetic, n)) for n in kinetic.__all__]
    for mod in (kinetic.debug, kinetic.collections):
        names += [(mod.__name__.split(".")[-1] + "." + n, v) for n, v in vars(mod).items()
                  if not n.startswith("_") and getattr(v, "__module__", "") == mod.__name__]
    seen, out = set(), []
    for label, obj in names:
        if inspect.ismodule(obj) or obj in seen:
            continue
        seen.add(obj)
        if inspect.isclass(obj):
            if issubclass(obj, BaseException) or issubclass(obj, kinetic.JobStatus):
                continue  # raised or returned by the SDK, not called with user input
            if obj is not kinetic.RemoteFunction:  # made by kinetic.run, checked there
                out.append((label, obj))
            inst = instances[obj]
            for m, fn in vars(obj).items():
                if not m.startswith("_") and (inspect.isfunction(fn) or isinstance(fn, classmethod)):
                    out.append(("%s.%s" % (label, m), getattr(inst, m)))
        elif callable(obj):
            out.append((label, obj))
    # A decorated method's bound form has the methods of the function.
    out.append(("Model().scale.run_async_map", Model().scale.run_async_map))
    return out


def _cases():
    for label, fn in _targets():
        for p in inspect.signature(fn).parameters.values():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.name == "self":
                continue
            for wrong in _wrong_values(p):
                yield pytest.param(fn, p.name, wrong, id="%s(%s=%s)" % (label, p.name, type(wrong).__name__))


def _call(fn, name, value):
    kw = {}
    for p in inspect.signature(fn).parameters.values():
        if p.name == name:
            kw[p.name] = value
        elif p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            kw[p.name] = REQUIRED[p.name]
    return fn(**kw)


def test_every_public_parameter_is_walked():
    labels = {l for l, _ in _targets()}
    for want in ("run", "attach", "attach_batch", "list_jobs", "JobHandle.result", "JobHandle.tail",
                 "JobHandle.cancel", "BatchHandle.results", "RemoteCallable.run_async_map", "Data",
                 "collections.map", "debug.cleanup_port_forward", "Model().scale.run_async_map"):
        assert want in labels, sorted(labels)


@pytest.mark.parametrize("fn, name, wrong", list(_cases()))
def test_wrong_type_named_before_sending(offline, fn, name, wrong):
    with pytest.raises((TypeError, ValueError)) as exc:
        result = _call(fn, name, wrong)
        if inspect.isgenerator(result):
            next(result)
    msg = str(exc.value)
    assert name + "=" in msg or name + ")" in msg, msg
    for go in GO_TEXT:
        assert go not in msg, msg


def _rows():
    """The rows of issue 30 (and 28's call-time ValueErrors): the call, the class of error."""
    h = kinetic.JobHandle(job_id="job-x")
    b = kinetic.BatchHandle("grp-x", total=1)
    run = lambda **kw: kinetic.run(accelerator="cpu", **kw)
    return [
        (lambda: kinetic.run(accelerator=123), TypeError, "kinetic.run(accelerator=...) must be a str, got int"),
        (lambda: run(store=123), TypeError, "kinetic.run(store=...) must be a str or None, got int"),
        (lambda: run(zone=["a"]), TypeError, "kinetic.run(zone=...) must be a str or None, got list"),
        (lambda: run(output_dir=123), TypeError, "output_dir="),
        (lambda: kinetic.attach(123), TypeError, "attach(job_id=...) must be a str, got int"),
        (lambda: kinetic.attach_batch(123), TypeError, "attach_batch(group_id=...) must be a str, got int"),
        (lambda: kinetic.list_jobs(store=123), TypeError, "list_jobs(store=...)"),
        (lambda: h.result(timeout="x"), TypeError, "result(timeout='x'): must be a number of seconds"),
        (lambda: h.tail(n="x"), TypeError, "tail(n=...) must be an int, got str"),
        (lambda: h.tail(n=-5), ValueError, "tail(n=-5): must be 1 or more"),
        (lambda: h.cancel(cleanup_timeout="x"), TypeError, "cancel(cleanup_timeout='x')"),
        (lambda: ident.run_async_map([1], name=123), TypeError, "run_async_map(name=...)"),
        (lambda: ident.run_async_map([1], tags={"a": 1}), TypeError, "run_async_map(tags=...)"),
        (lambda: run(spot="no"), TypeError, "kinetic.run(spot=...) must be True or False, got str"),
        (lambda: run(capture_env_vars="ZZVAR"), TypeError, "capture_env_vars=['ZZVAR']"),
        (lambda: run(volumes=["/data"]), TypeError, "kinetic.run(volumes=...) must be a dict"),
        (lambda: run(debug_wait="x"), TypeError, "kinetic.run(debug_wait=...)"),
        (lambda: ident.run_async_map([1], tags="x"), TypeError, "run_async_map(tags=...)"),
        (lambda: kinetic.attach_batch("grp-x", poll_timeout="x"), TypeError, "attach_batch(poll_timeout='x')"),
        (lambda: kinetic.list_jobs(project=object()), TypeError, "list_jobs(project=...)"),
        (lambda: b.results(timeout="x"), TypeError, "results(timeout='x')"),
        (lambda: ident.run_async_map([1], input_mode="bogus"), ValueError, "run_async_map(input_mode='bogus')"),
        (lambda: ident.run_async_map([]), ValueError, "run_async_map(inputs=...): no inputs"),
        (lambda: Model().scale.run_async_map([], input_mode="bogus"), ValueError, "input_mode="),
        (lambda: kinetic.Data(""), ValueError, "Data(path='')"),
        (lambda: kinetic.Data(5), TypeError, "Data(path=...) must be a str, got int"),
    ]


@pytest.mark.parametrize("i", range(len(_rows())))
def test_issue_rows(offline, i):
    call, cls, says = _rows()[i]
    with pytest.raises(cls) as exc:
        call()
    assert type(exc.value) is cls, exc.value
    assert says in str(exc.value), str(exc.value)


def test_list_jobs_refuses_a_missing_store_and_makes_nothing(tmp_path):
    missing = tmp_path / "no" / "such" / "dir"
    for store in (str(missing), "file://" + str(missing)):
        with pytest.raises(FileNotFoundError) as exc:
            kinetic.list_jobs(store=store)
        assert "list_jobs(store=...)" in str(exc.value) and "no such directory" in str(exc.value), exc.value
    assert not (tmp_path / "no").exists()


def test_list_jobs_of_an_empty_existing_store(tmp_path):
    assert kinetic.list_jobs(store=str(tmp_path)) == []


def test_an_argument_that_holds_itself(tmp_path):
    x = [1]
    x.append(x)
    d = {"n": 2}
    d["me"] = d
    path = tmp_path / "f.txt"
    path.write_text("hello")
    (rx, rd, rdata), text = _with_data_text((x, d, [kinetic.Data(str(path))]))
    assert rx[0] == 1 and rx[1] is rx
    assert rd["n"] == 2 and rd["me"] is rd
    # The Data's path is the worker's: read there (the job's copy may be gone once it ends).
    assert isinstance(rdata[0], str) and text == "hello"


@kinetic.run(accelerator="cpu")
def _with_data_text(v):
    return v, open(v[2][0]).read()


def test_capture_env_vars_as_a_list_arrives(monkeypatch):
    monkeypatch.setenv("ZZVAR", "zz-value")

    @kinetic.run(accelerator="cpu", capture_env_vars=["ZZVAR"])
    def read():
        return os.environ.get("ZZVAR")

    assert read() == "zz-value"


def test_run_async_map_on_a_decorated_method():
    m = Model()
    out = m.scale.run_async_map([1, 2, 3]).results(return_exceptions=True)
    assert out == [3, 6, 9], [getattr(e, "remote_traceback", e) for e in out]
    assert kinetic.collections.map(m.scale.run_async, [4]).results() == [12]


def test_max_concurrent_none_submits_everything():
    b = ident.run_async_map(range(5), max_concurrent=None)
    assert b.results() == [0, 1, 2, 3, 4]

"""A wait that runs out says what timed out and that the job keeps running: never Go's
"context deadline exceeded"."""

import contextlib
import json
import signal
import time

import pytest

import kinetic


@kinetic.run(accelerator="cpu")
def sleepy(seconds):
    import time
    time.sleep(seconds)
    return seconds


def test_result_timeout_says_what_and_keeps_the_job():
    h = sleepy.run_async(60)
    try:
        start = time.time()
        with pytest.raises(TimeoutError) as exc:
            h.result(timeout=1)
        assert time.time() - start < 20
        msg = str(exc.value)
        assert "deadline exceeded" not in msg and "context" not in msg, msg
        assert "job %s did not finish within 1s" % h.job_id in msg, msg
        assert "keeps running" in msg, msg
        assert h.status() in (kinetic.JobStatus.PENDING, kinetic.JobStatus.RUNNING), h.status()
    finally:
        h.cancel()


@kinetic.run(accelerator="cpu", timeout=2)
def too_long():
    import time
    time.sleep(120)


def test_per_job_timeout_stops_the_call():
    h = too_long.run_async()
    start = time.time()
    with pytest.raises(Exception) as exc:
        h.result()
    assert time.time() - start < 60
    assert "time limit of 2s" in str(exc.value), exc.value
    assert h.status() == kinetic.JobStatus.FAILED


def test_bad_timeout_is_refused_at_decoration():
    for bad in (-1, 0, float("nan"), float("-inf")):
        with pytest.raises(ValueError, match="timeout="):
            kinetic.run(accelerator="cpu", timeout=bad)
    for bad in ("10", True):  # not a number: TypeError (issue 30)
        with pytest.raises(TypeError, match="timeout="):
            kinetic.run(accelerator="cpu", timeout=bad)


# -- inf, nan and negative timeouts (issue 25) --------------------------------------------
# Python's json writes float('inf') and float('nan') as Infinity and NaN, which the engine
# cannot read: the call used to wait for ever. Every wait here is bounded by an alarm, so
# a regression fails instead of hanging.

class Hung(Exception):
    pass


@contextlib.contextmanager
def deadline(seconds):
    """Raise Hung in the main thread if the block takes longer than seconds."""
    def fire(signum, frame):
        raise Hung("still waiting after %ds" % seconds)
    old = signal.signal(signal.SIGALRM, fire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@kinetic.run(accelerator="cpu")
def double(x):
    return 2 * x


@kinetic.run(accelerator="cpu", timeout=float("inf"))
def double_no_limit(x):
    return 2 * x


def test_inf_timeout_means_no_limit():
    with deadline(240):
        assert double.run_async(21).result(timeout=float("inf")) == 42
        assert double_no_limit(4) == 8  # run(timeout=inf): no limit, as when left out
        b = double.run_async_map(range(3))
        assert b.results(timeout=float("inf")) == [0, 2, 4]
        h = double.run_async(1)
        h.cancel(cleanup_timeout=float("inf"))
        h.cleanup(cleanup_timeout=float("inf"))


def _no_engine(*a, **kw):
    raise AssertionError("a request was sent to the engine")


@pytest.mark.parametrize("call, says", [
    (lambda h, b: h.result(timeout="10"), "result(timeout='10'): must be a number of seconds or None, got str"),
    (lambda h, b: h.result(timeout=True), "result(timeout=True)"),
])
def test_not_a_number_is_a_type_error(monkeypatch, call, says):
    from kinetic import _engine, batch, jobs
    for mod in (jobs, batch, _engine):
        monkeypatch.setattr(mod, "engine", _no_engine)
    with pytest.raises(TypeError) as exc:
        call(kinetic.JobHandle(job_id="job-x"), kinetic.BatchHandle("grp-x", total=1))
    assert says in str(exc.value), exc.value


@pytest.mark.parametrize("call, says", [
    (lambda h, b: h.result(timeout=NAN), "result(timeout=nan): must be a number of seconds or None"),
    (lambda h, b: h.result(timeout=-1), "result(timeout=-1): must be a number of seconds, 0 or more"),
    (lambda h, b: h.result(cleanup_timeout=NAN), "result(cleanup_timeout=nan)"),
    (lambda h, b: h.result(cleanup_poll_interval=NAN), "result(cleanup_poll_interval=nan)"),
    (lambda h, b: h.debug_attach(timeout=NAN), "debug_attach(timeout=nan)"),
    (lambda h, b: h.cancel(cleanup_timeout=NAN), "cancel(cleanup_timeout=nan)"),
    (lambda h, b: h.cancel(cleanup_timeout=-5), "cancel(cleanup_timeout=-5)"),
    (lambda h, b: h.cleanup(cleanup_timeout=NAN), "cleanup(cleanup_timeout=nan)"),
    (lambda h, b: h.cleanup(cleanup_poll_interval=-1), "cleanup(cleanup_poll_interval=-1)"),
    (lambda h, b: b.wait(timeout=NAN), "wait(timeout=nan)"),
    (lambda h, b: b.results(timeout=NAN), "results(timeout=nan)"),
    (lambda h, b: b.results(timeout=-0.5), "results(timeout=-0.5)"),
    (lambda h, b: b.as_completed(timeout=NAN), "as_completed(timeout=nan)"),
    (lambda h, b: b.as_completed(poll_interval=NAN), "as_completed(poll_interval=nan)"),
    (lambda h, b: kinetic.attach_batch("grp-x", poll_timeout=NAN), "attach_batch(poll_timeout=nan)"),
    (lambda h, b: kinetic.attach_batch("grp-x", poll_interval=-1), "attach_batch(poll_interval=-1)"),
    (lambda h, b: kinetic.run(accelerator="cpu", timeout=NAN), "kinetic.run(timeout=nan)"),
    (lambda h, b: kinetic.run(accelerator="cpu", debug=True, debug_wait=NAN), "kinetic.run(debug_wait=nan)"),
    (lambda h, b: kinetic.run(accelerator="cpu", debug=True, debug_wait=float("inf")), "kinetic.run(debug_wait=inf)"),
])
def test_nan_and_negative_refused_before_sending(monkeypatch, call, says):
    from kinetic import _engine, batch, jobs
    for mod in (jobs, batch, _engine):
        monkeypatch.setattr(mod, "engine", _no_engine)
    h = kinetic.JobHandle(job_id="job-x")
    b = kinetic.BatchHandle("grp-x", total=1)
    with deadline(10):
        with pytest.raises(ValueError) as exc:
            call(h, b)
    assert says in str(exc.value), exc.value


NAN = float("nan")


def test_engine_answers_a_line_it_cannot_read(monkeypatch):
    """An engine line with NaN (as this SDK sent before it checked) gets an error for its
    own call; a line with no id to read is matched by its line number."""
    from kinetic import _engine
    eng = _engine.engine()
    with deadline(30):
        monkeypatch.setattr(_engine, "_encode", lambda msg: (json.dumps(msg) + "\n").encode())
        with pytest.raises(kinetic.KineticError) as exc:
            eng.call("result", {"job_id": "job-x", "timeout": NAN})
        assert "could not read request" in str(exc.value) and "NaN or Infinity" in str(exc.value), exc.value
        monkeypatch.setattr(_engine, "_encode", lambda msg: b"{this is not a request\n")
        with pytest.raises(kinetic.KineticError) as exc:
            eng.call("status", {"job_id": "job-x"})
        assert "could not read line" in str(exc.value), exc.value
        monkeypatch.undo()
        assert eng.call("hello")["protocol"] == _engine.PROTOCOL  # still serving

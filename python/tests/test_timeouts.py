"""A wait that runs out says what timed out and that the job keeps running: never Go's
"context deadline exceeded"."""

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
    for bad in (-1, 0, "10", True):
        with pytest.raises(ValueError, match="timeout="):
            kinetic.run(accelerator="cpu", timeout=bad)

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

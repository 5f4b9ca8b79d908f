"""A success collected by result() (which cleans it up) stays visible: a tombstone says
so, logs() after result() gives the whole log or a clear "removed by cleanup", status()
is NOT_FOUND as the API says, and the CLI says the job succeeded."""

import json
import os
import re
import subprocess

import pytest

import kinetic


@kinetic.run(accelerator="cpu")
def chatty(n):
    import sys
    line = "x" * 99 + "\n"
    for _ in range(n):
        sys.stdout.write(line)
    sys.stdout.flush()
    return n


def _cli(*args):
    return subprocess.run([os.environ["KINETIC_BIN"], *args], capture_output=True, text=True, timeout=60)


def test_logs_right_after_result_whole_or_removed_by_cleanup():
    lines = 14000  # 1.4 MB of log
    outcomes = []
    for _ in range(10):
        h = chatty.run_async(lines)
        assert h.result() == lines
        try:
            logs = h.logs()
        except kinetic.JobNotFoundError as e:
            assert "removed by cleanup" in str(e), str(e)
            outcomes.append("removed")
        else:
            assert logs.count("x" * 99 + "\n") == lines, "a partial log: %d bytes" % len(logs)
            outcomes.append("whole")
        assert h.status() == kinetic.JobStatus.NOT_FOUND or h.status().value == "NOT_FOUND"
    assert len(outcomes) == 10


def test_cli_says_a_collected_job_succeeded(store_dir):
    h = chatty.run_async(3)
    assert h.result() == 3
    p = _cli("jobs", "status", h.job_id)
    assert p.returncode == 0, p.stderr
    assert re.match(r"SUCCEEDED: result collected by pid %d on .* and cleaned up at " % os.getpid(), p.stdout), p.stdout
    p = _cli("jobs", "status", h.job_id, "--json")
    got = json.loads(p.stdout)
    assert got["status"] == "SUCCEEDED" and got["collected"] is True and got["cleaned_at"]
    assert got["collected_by"].startswith("pid %d on " % os.getpid()), got
    assert os.path.exists(os.path.join(store_dir, "tombstones", h.job_id + ".json"))
    with pytest.raises(kinetic.JobNotFoundError, match="removed by cleanup"):
        h.tail(5)
    # An explicit cleanup removes the tombstone too.
    p = _cli("jobs", "cleanup", h.job_id)
    assert p.returncode == 0, p.stderr
    assert "removed the tombstone" in p.stderr
    assert not os.path.exists(os.path.join(store_dir, "tombstones", h.job_id + ".json"))
    p = _cli("jobs", "status", h.job_id)
    assert p.returncode != 0 and "no job" in p.stderr


def test_cli_batch_results_after_collection():
    b = chatty.run_async_map([1, 2])
    assert sorted(b.results()) == [1, 2]
    # statuses() right after results() lists both as NOT_FOUND (as the API says), also
    # while the cleanup is still removing them.
    assert [s.value for _, s in b.statuses()] == ["NOT_FOUND", "NOT_FOUND"]
    p = _cli("batch", "status", b.group_id)
    assert p.returncode == 0, p.stderr
    assert "SUCCEEDED 2 (2 collected and cleaned up)" in p.stdout, p.stdout
    assert "NOT_FOUND" not in p.stdout
    p = _cli("batch", "results", b.group_id)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "failed" not in p.stderr and p.stdout.count("result collected and cleaned up at") == 2, p.stdout

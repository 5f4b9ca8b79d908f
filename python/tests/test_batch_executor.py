"""Local batches run by executors (docs/local-backend.md, "Batches: executors"): the
batch is written as one unit, each worker runs its inputs in one long-lived Python, and
batch_isolation says what carries from one input to the next."""

import json
import os

import pytest

import kinetic
from kinetic import BatchError, JobStatus

from conftest import logged_ends
from test_batch import _restart_engine

_COUNTER = [0]


@kinetic.run(accelerator="cpu")
def count(x):
    # Module state: carries from one input to the next in one executor (worker), not
    # across forked children (process).
    _COUNTER[0] += 1
    return os.getpid(), _COUNTER[0], os.environ["KINETIC_JOB_ID"]


@kinetic.run(accelerator="cpu")
def talk(x):
    import sys
    if x % 2:
        print("out", x)
        print("err", x, file=sys.stderr)
    return x


@kinetic.run(accelerator="cpu")
def crash_on_two(x):
    if x == 2:
        os._exit(3)
    return x


@kinetic.run(accelerator="cpu", timeout=1)
def slow_on_one(x):
    import time
    if x == 1:
        time.sleep(30)
    return x


@pytest.fixture
def isolation(request, monkeypatch):
    monkeypatch.setenv("KINETIC_BATCH_ISOLATION", request.param)
    _restart_engine()
    yield request.param
    monkeypatch.delenv("KINETIC_BATCH_ISOLATION")
    _restart_engine()


def _store_files(store_dir, gid, ids):
    """Each child's objects: its result (in its batch's results/, named by its index) and
    whatever is under jobs/ID/ (its log)."""
    out = {}
    results = os.path.join(store_dir, "groups", gid, "results")
    for k, i in enumerate(ids):
        d = os.path.join(store_dir, "jobs", i)
        files = [os.path.relpath(os.path.join(r, f), d) for r, _, fs in os.walk(d) for f in fs]
        if os.path.isdir(results):
            files += ["results/" + f for f in os.listdir(results) if f.split(".")[0] == str(k)]
        out[i] = sorted(files)
    return out


def test_a_batch_is_one_unit_in_the_store(store_dir):
    """Submission writes the manifest, the template and the inputs: no job per input;
    each input leaves only its result (and its log when it printed)."""
    b = talk.run_async_map(range(6), max_concurrent=2)
    assert b.results(timeout=60, cleanup=False) == list(range(6))
    group = os.path.join(store_dir, "groups", b.group_id)
    # The envelopes are lines of the workers' logs in ends/: no file per input.
    assert sorted(os.listdir(group)) == ["ends", "inputs.bin", "manifest.json", "template.json"]
    ends = logged_ends(store_dir, b.group_id)
    files = _store_files(store_dir, b.group_id, [h.job_id for h in b.jobs])
    for i, h in enumerate(b.jobs):
        # A small value is kept in the input's envelope: one line per input.
        assert json.loads(ends[i])["success"] is True
        want = ["logs/00000000.log"] if i % 2 else []
        assert files[h.job_id] == sorted(want), (i, files[h.job_id])
        assert h.status() == JobStatus.SUCCEEDED
    # Each input's output is its own, stdout and stderr alike.
    assert b.jobs[3].logs() == "out 3\nerr 3\n"
    assert b.jobs[2].logs() == ""
    # attach() by ID finds a child that has no handle object.
    again = kinetic.attach(b.jobs[5].job_id)
    assert again.result() == 5
    b.cleanup()


@pytest.mark.parametrize("isolation", ["worker", "process"], indirect=True)
def test_isolation(isolation):
    """worker: one Python runs input after input, module state carries; process: each
    input in a child forked from it, nothing carries. KINETIC_JOB_ID is each input's."""
    b = count.run_async_map(range(8), max_concurrent=1)
    out = b.results(timeout=60)
    assert [job for _, _, job in out] == [h.job_id for h in b.jobs]
    pids = {pid for pid, _, _ in out}
    counters = [n for _, n, _ in out]
    if isolation == "worker":
        assert len(pids) == 1 and counters == list(range(1, 9)), out
    else:
        assert len(pids) == 8 and counters == [1] * 8, out


@pytest.mark.parametrize("isolation", ["worker", "process"], indirect=True)
def test_a_crash_fails_only_its_input(isolation):
    b = crash_on_two.run_async_map(range(5), max_concurrent=1)
    out = b.results(timeout=60, return_exceptions=True)
    assert [out[i] for i in (0, 1, 3, 4)] == [0, 1, 3, 4]
    assert isinstance(out[2], RuntimeError) and "python exited without a result" in str(out[2]), out[2]
    assert b.jobs[2].status() == JobStatus.FAILED


def test_time_limit_of_one_input():
    b = slow_on_one.run_async_map(range(3), max_concurrent=1)
    with pytest.raises(BatchError) as info:
        b.results(timeout=60)
    assert info.value.partial_results[0] == 0 and info.value.partial_results[2] == 2
    assert "time limit" in b.jobs[1].status_reason(), b.jobs[1].status_reason()


@kinetic.run(accelerator="cpu")
def size_of(b):
    return len(b), b[:1]


def test_large_inputs_are_read_one_by_one():
    """A batch whose inputs are larger than a worker keeps in memory (64 MiB) is read
    input by input, with the same results."""
    inputs = [bytes([i]) * (25 << 20) for i in range(3)]
    assert size_of.run_async_map(inputs, max_concurrent=1).results(timeout=120) == [
        (25 << 20, bytes([i])) for i in range(3)]


@kinetic.run(accelerator="cpu")
def nap_for(s):
    import time
    time.sleep(s)
    return s


def test_killed_workers_fail_their_inputs_and_the_batch_ends():
    """Workers killed with SIGKILL (nothing written on their way out): the inputs they
    ran and the ones left fail, saying so, and results() returns at once."""
    import subprocess
    import time
    b = nap_for.run_async_map([30] * 6, max_concurrent=2)
    deadline = time.time() + 30
    while b.status_counts().get("RUNNING", 0) < 1 and time.time() < deadline:
        time.sleep(0.1)
    # The processes serving the batch (long-lived supervisors, or `supervise --group`
    # processes), as their workers' running files name them.
    import glob
    import signal
    workers = os.path.join(os.environ["KINETIC_HOME"], "local", "groups", b.group_id, "workers")
    pids = set()
    for path in glob.glob(os.path.join(workers, "*.running")):
        with open(path) as f:
            fields = f.read().split()
        if len(fields) == 2 and int(fields[1]) > 0:
            pids.add(int(fields[1]))
    assert pids, os.listdir(workers)
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    t = time.time()
    out = b.results(return_exceptions=True, timeout=30)
    assert time.time() - t < 15
    assert all(isinstance(v, RuntimeError) for v in out), out
    assert any("stopped while it ran this input" in str(v) for v in out), out
    assert any("stopped before this input finished" in str(v) for v in out), out
    assert b.status_counts() == {"FAILED": 6}


def test_a_batch_is_served_by_long_lived_supervisors():
    """The workers of a batch are the long-lived supervisors that run single calls
    (`kinetic supervise --queue`), not processes started for the batch: they live on
    after it, and serve the next one."""
    import time
    count(0)  # the supervisors are up
    for _ in range(2):
        b = count.run_async_map(range(4), max_concurrent=1)
        assert len(b.results(cleanup=False)) == 4
        path = os.path.join(os.environ["KINETIC_HOME"], "local", "groups", b.group_id, "workers", "0.running")
        with open(path) as f:
            pid = int(f.read().split()[1])
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            argv = f.read().split(b"\0")
        assert b"supervise" in argv and b"--queue" in argv and b"--group" not in argv, argv
        time.sleep(0.5)
        os.kill(pid, 0)  # still there: a batch's own worker would have exited
        b.cleanup()


def test_cleanup_of_a_running_batch_stops_it_and_its_supervisor_serves_on():
    """Cleaning up a batch while an input runs stops that input at once; the long-lived
    supervisor that served it lives on and runs the next call."""
    import time
    b = nap_for.run_async_map([30, 30], max_concurrent=1)
    deadline = time.time() + 30
    while b.status_counts().get("RUNNING", 0) < 1 and time.time() < deadline:
        time.sleep(0.1)
    path = os.path.join(os.environ["KINETIC_HOME"], "local", "groups", b.group_id, "workers", "0.running")
    with open(path) as f:
        pid = int(f.read().split()[1])
    t = time.time()
    b.cleanup()
    assert time.time() - t < 15
    os.kill(pid, 0)  # the supervisor is still there
    assert count(1)[2].startswith("job-")

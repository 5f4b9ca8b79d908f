"""Batches (run_async_map, BatchHandle, attach_batch) end to end on the local backend.

On the local backend a batch is written as one unit and run by executors
(test_batch_executor.py); the tests of submission one child at a time (a submitter killed
mid-way, attach while submitting) run with batch_isolation = "job", where each child is a
job of its own, queued and served by at most min(max_concurrent, slots) workers."""

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

import kinetic
from kinetic import BatchError, JobStatus
from conftest import logged_ends

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@kinetic.run(accelerator="cpu")
def maybe_fails(x):
    if x % 17 == 5:
        raise ValueError("input %d is bad" % x)
    return x * 2


@kinetic.run(accelerator="cpu")
def ident(x):
    return x


@kinetic.run(accelerator="cpu")
def ident_or_fails(x):
    if x == 5:
        raise ValueError("input 5 is bad")
    return x


@kinetic.run(accelerator="cpu")
def nap(seconds, value=None):
    import time
    time.sleep(seconds)
    return value


@kinetic.run(accelerator="cpu")
def fails_once(marker, value):
    import os
    if not os.path.exists(marker):
        open(marker, "w").close()
        raise RuntimeError("first attempt fails")
    return value


@kinetic.run(accelerator="cpu")
def fail_or_nap(x):
    import time
    if x == 0:
        raise KeyError("fail fast")
    time.sleep(30)
    return x


@kinetic.run(accelerator="cpu")
def spread(*args, **kwargs):
    return list(args), kwargs


def test_input_mode_auto_spreads_lists_tuples_and_identifier_dicts():
    """input_mode="auto": a list or tuple is spread as *args, a dict whose keys are all
    identifiers and none a keyword as **kwargs (the reference's is_valid_kwargs_dict),
    anything else (a dict with other keys too) is one argument."""
    inputs = [[1, 2], (3, 4), {"a": 1, "b": 2}, {"a-b": 1}, {1: "x"}, 5, "s", {"class": 1}]
    got = spread.run_async_map(inputs).results()
    assert got == [([1, 2], {}), ([3, 4], {}), ([], {"a": 1, "b": 2}), ([{"a-b": 1}], {}),
                   ([{1: "x"}], {}), ([5], {}), (["s"], {}), ([{"class": 1}], {})]


def _group_dir(store_dir, gid):
    return os.path.join(store_dir, "groups", gid)


def _manifest(store_dir, gid):
    with open(os.path.join(_group_dir(store_dir, gid), "manifest.json")) as f:
        return json.load(f)


def _children_entries(store_dir, gid):
    d = os.path.join(_group_dir(store_dir, gid), "children")
    out = {}
    for name in os.listdir(d) if os.path.isdir(d) else []:
        if not name.endswith(".json"):
            continue  # a write in progress (the store writes a temp file, then renames it)
        with open(os.path.join(d, name)) as f:
            c = json.load(f)
        out[c["index"]] = c
    return out


def _job_dir(store_dir, job_id):
    return os.path.join(store_dir, "jobs", job_id)


def _wait_until(cond, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError("not within %ss: %s" % (timeout, what))


def _script_env():
    return dict(os.environ, PYTHONPATH=PYTHON_DIR)


def _restart_engine():
    from kinetic import _engine
    with _engine._engine_lock:
        if _engine._engine is not None:
            _engine._engine.close()
        _engine._engine = None


@pytest.fixture
def one_job_per_input(monkeypatch):
    """batch_isolation = "job": each input a job of its own, submitted one by one (the
    path these tests are about; by default a local batch is written in O(1) objects and
    run by executors, so there is no submission to watch)."""
    monkeypatch.setenv("KINETIC_BATCH_ISOLATION", "job")
    _restart_engine()
    yield
    monkeypatch.delenv("KINETIC_BATCH_ISOLATION")
    _restart_engine()


# 1 -------------------------------------------------------------------------------------
def test_results_with_failures(store_dir):
    n = 200
    bad = [i for i in range(n) if i % 17 == 5]
    b = maybe_fails.run_async_map(range(n))
    out = b.results(return_exceptions=True, timeout=120, cleanup=False)
    assert len(out) == n
    for i, v in enumerate(out):
        if i in bad:
            assert isinstance(v, ValueError), (i, v)
            assert str(v) == "input %d is bad" % i
            assert "in maybe_fails" in v.remote_traceback
            assert 'raise ValueError("input %d is bad" % x)' in v.remote_traceback
        else:
            assert v == i * 2, (i, v)

    failed = b.failures()
    assert sorted(h.group_index for h in failed) == bad
    assert all(h.group_id == b.group_id for h in failed)

    with pytest.raises(BatchError) as info:
        b.results(timeout=120, cleanup=False)
    e = info.value
    assert e.group_id == b.group_id
    assert e.partial_results == [None if i in bad else i * 2 for i in range(n)]
    assert [h.group_index for h in e.failures] == bad
    assert [h.job_id for h in e.failures] == [b.jobs[i].job_id for i in bad]
    assert [h.job_id for h in b.failures()] == [h.job_id for h in e.failures]
    assert b.status_counts() == {"SUCCEEDED": n - len(bad), "FAILED": len(bad)}
    b.cleanup()
    assert not os.path.exists(_group_dir(store_dir, b.group_id))


# 2 -------------------------------------------------------------------------------------
def test_as_completed_yields_before_submission_ends(store_dir, one_job_per_input):
    # Submission costs about a millisecond per child; the first trivial child is done
    # long before 600 are submitted.
    n = 300
    # Warm the local workers first: a cold interpreter start (a second or more on a loaded
    # machine) is longer than submitting 300 children, and is not what this test is about.
    assert ident(-1) == -1
    b = ident.run_async_map(range(n))
    seen = []
    complete_at_first = None
    children_at_first = None
    for h in b.as_completed(timeout=120):
        if complete_at_first is None:
            complete_at_first = _manifest(store_dir, b.group_id)["submission_complete"]
            children_at_first = len(_children_entries(store_dir, b.group_id))
            assert h.status() == JobStatus.SUCCEEDED
        seen.append(h.group_index)
    assert complete_at_first is False, "the first child was yielded only after submission ended"
    assert children_at_first < n
    assert sorted(seen) == list(range(n))
    assert _manifest(store_dir, b.group_id)["submission_complete"] is True
    assert b.results(timeout=60) == list(range(n))
    b.cleanup()


# 3 -------------------------------------------------------------------------------------
SUBMITTER = """
import sys, time, kinetic

@kinetic.run(accelerator="cpu")
def tenfold(x):
    return x * 10

b = tenfold.run_async_map(range(%d), max_concurrent=2)
print(b.group_id, kinetic._engine.engine()._proc.pid, flush=True)
time.sleep(600)
"""


def _start_submitter(tmp_path, source):
    path = tmp_path / "submitter.py"
    path.write_text(source)
    return subprocess.Popen([sys.executable, str(path)], cwd=str(tmp_path), env=_script_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def _read_gid(p):
    """The batch's group ID the submitter prints, with its engine's pid (p.engine_pid):
    the engine runs in a session of its own, so killing the submitter's process group
    does not reach it (_kill_submitter kills both, as a machine that dies would)."""
    line = p.stdout.readline().strip()
    if not line.startswith("grp-"):
        p.kill()
        raise AssertionError("submitter said %r: %s" % (line, p.stderr.read()))
    gid, pid = line.split()
    p.engine_pid = int(pid)
    return gid


def _kill_submitter(p):
    pids = [("group", p.pid)]
    if getattr(p, "engine_pid", 0) > 1:
        pids.append(("pid", p.engine_pid))
    for kind, pid in pids:
        try:
            os.killpg(pid, signal.SIGKILL) if kind == "group" else os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    p.wait()


def test_attach_after_submitter_killed_mid_submission(store_dir, tmp_path, one_job_per_input):
    n = 3000
    p = _start_submitter(tmp_path, SUBMITTER % n)
    try:
        gid = _read_gid(p)
        _wait_until(lambda: len(_children_entries(store_dir, gid)) >= 10, 60, "10 children")
    finally:
        _kill_submitter(p)  # the SDK process and its engine, as if the machine died
    time.sleep(0.2)
    entries = _children_entries(store_dir, gid)
    assert _manifest(store_dir, gid)["submission_complete"] is False
    assert 10 <= len(entries) < n, len(entries)

    b = kinetic.attach_batch(gid, poll_interval=0.2, poll_timeout=2)
    assert len(b) == n
    # Every child whose job was written before the kill is seen (the very last entry may
    # have been written just before its job: then it has no job and counts as unsubmitted).
    submitted = {i for i, h in enumerate(b.jobs) if h is not None}
    assert submitted <= set(entries)
    assert len(set(entries) - submitted) <= 1
    for i in submitted:
        assert b.jobs[i].job_id == entries[i]["job_id"]
        assert b.jobs[i].group_index == i

    # A child whose job was written but not yet handed to the backend when the submitter
    # died has neither a status.json nor a queue entry (a queued child's PENDING state):
    # the local backend reports it PENDING until a grace period (a minute) has passed, then
    # FAILED. Everything else must finish.
    queue = os.path.join(os.path.dirname(store_dir), "local", "queues", gid)
    limbo = [i for i in submitted
             if not os.path.exists(os.path.join(_job_dir(store_dir, b.jobs[i].job_id), "status.json"))
             and not os.path.exists(os.path.join(queue, b.jobs[i].job_id))]
    assert len(limbo) <= 1
    for i in submitted - set(limbo):
        assert b.jobs[i].result(timeout=60, cleanup=False) == i * 10
    if limbo:
        # Handed over in the instant of the kill (its supervisor was starting: seen on a
        # loaded machine), it runs to the end; otherwise it waits for the grace period.
        st = b.jobs[limbo[0]].status()
        assert st in (JobStatus.PENDING, JobStatus.RUNNING, JobStatus.SUCCEEDED), st
        if st != JobStatus.PENDING:
            assert b.jobs[limbo[0]].result(timeout=60, cleanup=False) == limbo[0] * 10
        b.cleanup()
        pytest.xfail("child %d was written but never handed to the backend: PENDING until the grace period ends" % limbo[0])

    t = time.time()
    out = b.results(return_exceptions=True, timeout=120, cleanup=False)
    assert time.time() - t < 60
    assert len(out) == n
    for i in range(n):
        if i in submitted:
            assert out[i] == i * 10, (i, out[i])
        else:
            assert isinstance(out[i], kinetic.KineticError), (i, out[i])
            assert "never submitted" in str(out[i])
    fails = b.submission_failures
    assert set(fails) == set(range(n)) - submitted
    assert all(b.jobs[i] is None for i in fails)
    assert b.failures() == []
    with pytest.raises(BatchError) as info:
        b.results(timeout=60, cleanup=False)
    assert info.value.partial_results == [i * 10 if i in submitted else None for i in range(n)]
    # As the reference's: failures never holds None; the inputs that never became jobs
    # are in submission_failures.
    assert info.value.failures == []
    assert set(info.value.submission_failures) == set(range(n)) - submitted
    b.cleanup()


# 4 -------------------------------------------------------------------------------------
def test_cancel_stops_pending_and_running_children():
    t = time.time()
    b = nap.run_async_map([30] * 20, max_concurrent=20)
    _wait_until(lambda: len(b.statuses()) == 20 and b.status_counts().get("RUNNING", 0) >= 1, 30,
                "every child submitted, one running")
    b.cancel()
    counts = b.status_counts()
    assert counts == {"FAILED": 20}, counts
    out = b.results(return_exceptions=True, timeout=30)
    assert all(isinstance(v, Exception) for v in out)
    assert time.time() - t < 30
    for h in b.jobs:
        assert h.status() == JobStatus.FAILED
        assert "cancel" in h.status_reason()
    b.cleanup()


def test_cancelled_children_are_not_failures():
    """After cancel(), statuses() keeps the seeds' FAILED for the cancelled children (their
    reason says cancelled) and failures() leaves them out, as the reference's failures()
    leaves out its cancelled jobs (NOT_FOUND there); a child that failed on its own is
    still listed (issue 47, docs/parity.md)."""
    b = maybe_fails_or_naps.run_async_map([5, 300, 300], max_concurrent=3)
    _wait_until(lambda: len(b.statuses()) == 3 and dict(b.statuses()).get(0) == JobStatus.FAILED, 120,
                "every child submitted, input 0 failed")
    b.cancel()
    assert [s for _, s in b.statuses()] == [JobStatus.FAILED] * 3
    assert [h.job_id for h in b.failures()] == [b.jobs[0].job_id]
    for h in b.jobs[1:]:
        assert h.status_reason().startswith("cancelled"), h.status_reason()
    b.cleanup()


@kinetic.run(accelerator="cpu")
def maybe_fails_or_naps(x):
    import time
    if x == 5:
        raise ValueError("input %d is bad" % x)
    time.sleep(x)
    return x


# 5 -------------------------------------------------------------------------------------
def test_retries_recover_an_input_that_fails_once(store_dir, tmp_path):
    markers = [str(tmp_path / ("marker-%d" % i)) for i in range(4)]
    open(markers[0], "w").close()
    open(markers[1], "w").close()
    open(markers[3], "w").close()  # only input 2 fails its first attempt
    b = fails_once.run_async_map([(m, i) for i, m in enumerate(markers)], retries=1)
    assert b.results(timeout=120, cleanup=False) == [0, 1, 2, 3]
    m = _manifest(store_dir, b.group_id)
    assert m["settled"] is True and m["retries"] == 1
    # A derived batch (the default on the local backend) lists only the inputs retried;
    # the others ran their first attempt, named after the batch and the index.
    attempts = {c["index"]: c["attempts"] for c in m["children"] if c.get("attempts")}
    assert len(attempts[2]) == 2
    assert attempts[2][-1] == b.jobs[2].job_id
    assert all(len(attempts.get(i, [b.jobs[i].job_id])) == 1 for i in (0, 1, 3))
    assert kinetic.attach(attempts[2][0]).status() == JobStatus.FAILED
    b.cleanup()


# 6 -------------------------------------------------------------------------------------
def test_fail_fast_stops_submission_and_cancels_running(store_dir):
    t = time.time()
    b = fail_or_nap.run_async_map(range(40), fail_fast=True, cancel_running_on_fail=True, max_concurrent=2)
    out = b.results(return_exceptions=True, timeout=60)
    assert time.time() - t < 30
    assert isinstance(out[0], KeyError)
    m = _manifest(store_dir, b.group_id)
    # On the local backend every input is queued at once, so fail-fast cancels the
    # queued and running children rather than stopping submission.
    assert m["submission_complete"] and m.get("stopped", "fail_fast") == "fail_fast"
    # Nothing is left running: every other input failed (cancelled, or never submitted).
    # (An input never submitted because submission stopped comes back as None: see the report.)
    assert all(isinstance(v, Exception) or b.jobs[i] is None for i, v in enumerate(out)), out
    for i, s in b.statuses():
        assert s == JobStatus.FAILED or s == JobStatus.NOT_FOUND, (i, s)
    assert len(b.failures()) >= 1
    b.cleanup()


# 7 -------------------------------------------------------------------------------------
SLOW_SUBMITTER = """
import time, kinetic

@kinetic.run(accelerator="cpu")
def ident(x):
    return x

b = ident.run_async_map(range(%d))
print(b.group_id, kinetic._engine.engine()._proc.pid, flush=True)
b.wait(timeout=300)
"""


def test_attach_while_still_submitting_polls(store_dir, tmp_path, one_job_per_input):
    # 500 jobs submitted one by one take a few seconds to submit, long enough to attach
    # mid-submission; the generous limits are for a loaded 2-core CI machine (1,000
    # inputs with 120 s limits once timed out there).
    n = 500
    p = _start_submitter(tmp_path, SLOW_SUBMITTER % n)
    try:
        gid = _read_gid(p)
        b = kinetic.attach_batch(gid, poll_interval=0.2, poll_timeout=300)
        first = sum(h is not None for h in b.jobs)
        assert not _manifest(store_dir, gid)["submission_complete"] or first == n
        seen = set()
        grew = False
        for h in b.as_completed(timeout=300):
            seen.add(h.group_index)
            if not grew and sum(j is not None for j in b.jobs) > first:
                grew = True
        assert sorted(seen) == list(range(n))
        assert len(b.jobs) == n and all(h is not None for h in b.jobs)
        assert first < n, "submission was over before attach_batch: nothing to poll"
        assert b.results(timeout=120) == list(range(n))
        assert p.wait(timeout=120) == 0
    finally:
        if p.poll() is None:
            _kill_submitter(p)


# 8 -------------------------------------------------------------------------------------
def test_unpicklable_input_is_a_submission_failure():
    lock = threading.Lock()
    b = ident.run_async_map([1, {"lock": lock}, 3])
    out = b.results(return_exceptions=True, timeout=60, cleanup=False)
    assert out[0] == 1 and out[2] == 3
    assert b.jobs[1] is None and b.jobs[0] is not None and b.jobs[2] is not None
    fails = b.submission_failures
    assert set(fails) == {1}
    assert isinstance(fails[1], TypeError) and "lock" in str(fails[1])
    assert out[1] is fails[1] or (type(out[1]) is type(fails[1]) and str(out[1]) == str(fails[1]))
    assert b.failures() == []
    with pytest.raises(BatchError) as info:
        b.results(timeout=60)
    assert info.value.partial_results == [1, None, 3]
    assert info.value.failures == [] and set(info.value.submission_failures) == {1}
    b.cleanup()


# 9 -------------------------------------------------------------------------------------
def test_cleanup_semantics(store_dir):
    b = maybe_fails.run_async_map([1, 5, 22, 2])  # 5 and 22 fail
    # Seed: "jobs: list[JobHandle | None]": a slot per input from the start.
    assert len(b.jobs) == 4 and all(h is None or h.group_index == i for i, h in enumerate(b.jobs))
    out = b.results(return_exceptions=True, timeout=60)  # cleanup=True by default
    assert out[0] == 2 and out[3] == 4
    assert isinstance(out[1], ValueError) and isinstance(out[2], ValueError)
    ids = [h.job_id for h in b.jobs]
    # (The prefix of a successful child can linger briefly after results() returns: see the report.)
    gid = b.group_id
    _wait_until(lambda: not {0, 3} & set(logged_ends(store_dir, gid)), 10, "successful children cleaned up")
    assert not os.path.exists(_job_dir(store_dir, ids[0])) and not os.path.exists(_job_dir(store_dir, ids[3]))
    assert {1, 2} <= set(logged_ends(store_dir, gid))
    assert os.path.exists(os.path.join(_group_dir(store_dir, b.group_id), "manifest.json"))
    # The failure list is the one from the collection pass.
    assert sorted(h.group_index for h in b.failures()) == [1, 2]
    again = kinetic.attach_batch(b.group_id)
    # Successful children are gone from the store; the failed ones are still attached.
    assert [h.job_id if h else None for h in again.jobs] == [None, ids[1], ids[2], None]
    # Which submitted inputs cannot be read now: index -> job ID, as the reference's.
    gone = again.unavailable_children
    assert gone == {0: ids[0], 3: ids[3]}, gone
    assert b.unavailable_children.keys() == gone.keys()
    assert b.jobs[0].job_id == ids[0]  # this process's handle is kept
    b.cleanup(gcs=True)
    assert not os.path.exists(_group_dir(store_dir, b.group_id))
    assert not os.path.exists(_job_dir(store_dir, ids[1]))
    assert not os.path.exists(_job_dir(store_dir, ids[2]))
    with pytest.raises(kinetic.JobNotFoundError):
        kinetic.attach_batch(b.group_id)


# 11 ------------------------------------------------------------------------------------
def test_submitter_exiting_normally_does_not_cut_the_batch_short(run_script):
    """A script may return right after run_async_map: the engine finishes submitting."""
    p = run_script(
        "import kinetic\n"
        "@kinetic.run(accelerator='cpu')\n"
        "def triple(x):\n"
        "    return 3 * x\n"
        "print(triple.run_async_map(range(150)).group_id)\n")
    gid = p.stdout.strip().splitlines()[-1]
    b = kinetic.attach_batch(gid, poll_interval=0.2)
    assert b.results(timeout=120) == [3 * x for x in range(150)]


@kinetic.run(accelerator="cpu")
def fail_late_or_finish(x):
    import time
    if x == 0:
        time.sleep(1.5)
        raise KeyError("fail fast")
    time.sleep(4 if x == 1 else 3)
    return x


def test_fail_fast_lets_running_children_finish_by_default(store_dir):
    """fail_fast=True, cancel_running_on_fail=False (the reference's default): the inputs
    not started are cancelled, the ones running finish."""
    b = fail_late_or_finish.run_async_map(range(8), fail_fast=True, max_concurrent=2)
    out = b.results(return_exceptions=True, timeout=90)
    assert isinstance(out[0], KeyError), out[0]
    assert out[1] == 1, out[1]  # it was running: it finished
    # The ones waiting were cancelled; one may have taken the slot input 0 freed before
    # the failure was seen, and then runs to its end like any running input.
    cancelled = [i for i in range(2, 8) if isinstance(out[i], Exception) or b.jobs[i] is None]
    assert len(cancelled) >= 5, out
    b.cleanup()


@kinetic.run(accelerator="cpu", backend="local")
def ident_here(x):
    return x


def test_run_async_map_takes_project_and_cluster():
    # A project given with no backend anywhere means GKE (docs/configuration.md): the
    # backend is pinned to local here, where no cluster is.
    b = ident_here.run_async_map([1, 2], project="some-project", cluster="some-cluster")
    assert sorted(b.results(timeout=60)) == [1, 2]


def test_collections_map_is_run_async_map():
    """kinetic.collections.map(submit_fn, inputs, ...): the decorated function or its
    run_async, with run_async_map's keyword arguments; anything else is refused."""
    b = kinetic.collections.map(maybe_fails, [1, 2, 3], max_concurrent=2, name="via-collections")
    assert isinstance(b, kinetic.BatchHandle) and b.name == "via-collections"
    assert b.results(timeout=60) == [2, 4, 6]
    b2 = kinetic.collections.map(maybe_fails.run_async, [(4,), [5]])  # auto: lists/tuples spread
    out = b2.results(timeout=60, return_exceptions=True)
    assert out[0] == 8 and isinstance(out[1], ValueError)
    b2.cleanup()
    with pytest.raises(TypeError, match="decorated with @kinetic.run"):
        kinetic.collections.map(lambda x: x, [1])


@kinetic.run(accelerator="cpu")
def read_data(path, more=None):
    import os
    def read(p):
        if os.path.isdir(p):
            return {n: open(os.path.join(p, n)).read() for n in sorted(os.listdir(p))}
        return open(p).read()
    return read(path), (read(more["d"]) if more else None)


def test_data_in_map_inputs_arrives_as_paths(store_dir, tmp_path):
    """Data(...) inside run_async_map's inputs: uploaded once per Data for the batch,
    each input's function gets a path, and each input's job carries only its own Data."""
    files = []
    for i in range(4):
        p = tmp_path / ("f%d.txt" % i)
        p.write_text("file %d" % i)
        files.append(kinetic.Data(str(p)))
    d = tmp_path / "shared"
    d.mkdir()
    (d / "a.txt").write_text("A")
    shared = kinetic.Data(str(d))
    inputs = [(files[0],), (files[1], {"d": shared}), {"path": files[2], "more": {"d": shared}}, [files[3]]]
    b = read_data.run_async_map(inputs)
    out = b.results(timeout=120, cleanup=False)
    assert out == [("file 0", None), ("file 1", {"a.txt": "A"}), ("file 2", {"a.txt": "A"}), ("file 3", None)], out
    for i, h in enumerate(b.jobs):
        with open(os.path.join(_job_dir(store_dir, h.job_id), "spec.json")) as f:
            refs = json.load(f).get("data") or []
        want = 2 if i in (1, 2) else 1
        assert len(refs) == want, (i, refs)
    b.cleanup()


def test_results_after_a_complete_watch_asks_for_no_handles(monkeypatch):
    # The watch reports every input with its handle and, its value being small, its
    # result: results() then asks for nothing but the acknowledgement, neither the
    # "batch" request that reads every handle again nor "results_many", which read every
    # result again at the batch's end.
    from kinetic._engine import engine
    b = ident.run_async_map([1, 2, 3])
    eng = engine()
    asked = []
    call = eng.call

    def counting(method, params=None, on_event=None):
        asked.append(method)
        return call(method, params, on_event)

    send = eng.send

    def counting_send(method, params, on_reply):
        asked.append(method + " (not waited for)")
        return send(method, params, on_reply)

    monkeypatch.setattr(eng, "call", counting)
    monkeypatch.setattr(eng, "send", counting_send)
    assert b.results() == [1, 2, 3]
    assert asked == ["collected (not waited for)"], asked


def test_large_values_are_read_at_the_end_the_small_ones_with_the_watch(monkeypatch):
    # A value above INLINE_MAX does not travel with the watch's report: results() reads
    # it (and only it) with results_many, from a file. A failure's exception travels as a
    # value does.
    from kinetic._engine import engine
    from kinetic.jobs import INLINE_MAX
    big = "x" * (INLINE_MAX + 10)
    b = ident_or_fails.run_async_map([1, big, 5])
    eng = engine()
    asked = []
    call = eng.call

    def counting(method, params=None, on_event=None):
        asked.append((method, list((params or {}).get("job_ids") or [])))
        return call(method, params, on_event)

    monkeypatch.setattr(eng, "call", counting)
    out = b.results(return_exceptions=True)
    assert out[0] == 1 and out[1] == big, out[:2]
    assert isinstance(out[2], ValueError) and "input 5 is bad" in str(out[2]), out[2]
    many = [ids for m, ids in asked if m == "results_many"]
    assert many == [[b.jobs[1].job_id]], asked


@kinetic.run(accelerator="cpu")
def writes_some_outputs(x):
    import os
    out = os.environ["KINETIC_OUTPUT_DIR"]
    seen = sorted(os.listdir(out))  # must be empty: nothing of another input's
    if x % 3 == 0:
        with open(os.path.join(out, "ckpt-%d.txt" % x), "w") as f:
            f.write("input %d" % x)
    return out, seen


def test_batch_inputs_have_their_own_output_directories(store_dir):
    # Each input runs with KINETIC_OUTPUT_DIR an existing, empty directory of its own
    # (outputs/CHILD); what an input wrote stays there after the batch is cleaned up; an
    # input that wrote nothing leaves no directory (as a bucket prefix with no objects),
    # and the workers leave nothing else in outputs/.
    n = 30
    b = writes_some_outputs.run_async_map(range(n))
    got = b.results(timeout=120)
    outs = os.path.join(store_dir, "outputs")
    for i, (out, seen) in enumerate(got):
        assert os.path.realpath(out) == os.path.realpath(os.path.join(outs, b.jobs[i].job_id)), (i, out)
        assert seen == [], (i, seen)
        if i % 3 == 0:
            with open(os.path.join(out, "ckpt-%d.txt" % i)) as f:
                assert f.read() == "input %d" % i
            assert os.listdir(out) == ["ckpt-%d.txt" % i]
    # An input that wrote nothing leaves its directory empty, where it waits for the
    # worker's next input (renamed to its name) or the worker's end (removed): once the
    # workers are done, only the writers' directories are left, and nothing else.
    ids = {h.job_id for h in b.jobs}
    want = sorted(b.jobs[i].job_id for i in range(0, n, 3))
    _wait_until(lambda: sorted(e for e in os.listdir(outs) if e in ids) == want, 30, "only the writers' directories left")
    assert not [e for e in os.listdir(outs) if e.startswith(".spare-")], os.listdir(outs)

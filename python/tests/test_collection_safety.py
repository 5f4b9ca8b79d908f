"""Collecting results is safe to repeat and safe to die in (issue 25).

Values reach the caller before anything is deleted: result() and results() read the
values, and only once they are unpickled in this process do they acknowledge them (the
engine's ``collected``), which claims them and cleans the jobs up. So a collector killed
at any point before its acknowledgement loses nothing, a second collection gets the
values or an error that names who took them and when, and never a silent None."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import kinetic

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.dirname(HERE)


@kinetic.run(accelerator="cpu")
def square(x):
    return x * x


@kinetic.run(accelerator="cpu")
def slow_square(x):
    import time
    time.sleep(1.5)
    return x * x


SCRIPT_PRELUDE = textwrap.dedent('''
    import json, sys
    sys.path.insert(0, %r)
    import kinetic
''') % PYTHON_DIR


def _python(code, env=None, timeout=120):
    """Run code in a fresh interpreter (the same KINETIC_HOME and binary)."""
    e = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    e.update(env or {})
    return subprocess.run([sys.executable, "-c", SCRIPT_PRELUDE + textwrap.dedent(code)], env=e,
                          capture_output=True, text=True, timeout=timeout)


def test_results_twice_returns_the_same_values():
    b = square.run_async_map([1, 2, 3])
    assert b.results() == [1, 4, 9]
    assert b.results() == [1, 4, 9]  # was [None, None, None]
    assert b.results(ordered=False) is not None


def test_result_twice_returns_the_same_value():
    h = square.run_async(7)
    assert h.result() == 49
    assert h.result() == 49  # this handle holds it; the job is cleaned up


def test_reattached_batch_after_collection_names_the_collector():
    b = square.run_async_map([1, 2, 3])
    assert b.results() == [1, 4, 9]
    with pytest.raises(kinetic.ResultCollectedError) as ei:
        kinetic.attach_batch(b.group_id).results()
    e = ei.value
    msg = str(e)
    assert "pid %d on " % os.getpid() in msg and "cleanup=False" in msg, msg
    assert "3 of 3 inputs" in msg, msg
    assert e.collected_by.startswith("pid %d on " % os.getpid()) and e.collected_at
    assert isinstance(e, kinetic.JobNotFoundError)  # except JobNotFoundError still catches it


def test_reattached_job_after_collection_names_the_collector():
    h = square.run_async(5)
    assert h.result() == 25
    with pytest.raises(kinetic.ResultCollectedError) as ei:
        kinetic.attach(h.job_id).result()
    assert "pid %d on " % os.getpid() in str(ei.value), str(ei.value)
    assert ei.value.collected_by.startswith("pid %d on " % os.getpid())


def test_cleanup_false_leaves_results_for_other_callers():
    b = square.run_async_map([2, 3])
    assert b.results(cleanup=False) == [4, 9]
    assert kinetic.attach_batch(b.group_id).results() == [4, 9]


@pytest.mark.parametrize("point", ["results:before-ack", "during-wait"])
def test_batch_collector_killed_before_acknowledging_loses_nothing(point):
    f = slow_square if point == "during-wait" else square
    b = f.run_async_map(list(range(30)))
    code = '''
        b = kinetic.attach_batch(%r)
        print("collecting", flush=True)
        b.results()
        print("survived", flush=True)
    ''' % b.group_id
    if point == "during-wait":
        e = dict(os.environ, PYTHONPATH=PYTHON_DIR)
        p = subprocess.Popen([sys.executable, "-c", SCRIPT_PRELUDE + textwrap.dedent(code)], env=e,
                             stdout=subprocess.PIPE, text=True)
        assert p.stdout.readline().strip() == "collecting"
        time.sleep(0.5)
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=30)
    else:
        p = _python(code, env={"KINETIC_TEST_KILL_AT": point})
        assert p.returncode == -signal.SIGKILL, (p.returncode, p.stdout, p.stderr)
        assert "survived" not in p.stdout
    # Nothing was acknowledged, so nothing was deleted: collecting again gets all of them.
    assert kinetic.attach_batch(b.group_id).results() == [x * x for x in range(30)]


def test_job_collector_killed_before_acknowledging_loses_nothing():
    h = square.run_async(11)
    p = _python('''
        print(kinetic.attach(%r).result())
    ''' % h.job_id, env={"KINETIC_TEST_KILL_AT": "result:before-ack"})
    assert p.returncode == -signal.SIGKILL, (p.returncode, p.stdout, p.stderr)
    assert kinetic.attach(h.job_id).result() == 121


def test_sync_call_killed_before_acknowledging_leaves_the_job():
    p = _python('''
        @kinetic.run(accelerator="cpu")
        def triple(x):
            return 3 * x
        h = triple.run_async(4)
        print(h.job_id, flush=True)
        h.result()
    ''', env={"KINETIC_TEST_KILL_AT": "result:before-ack"})
    assert p.returncode == -signal.SIGKILL, (p.returncode, p.stdout, p.stderr)
    job_id = p.stdout.split()[0]
    assert kinetic.attach(job_id).result() == 12


def test_four_concurrent_collectors_never_get_a_silent_none():
    b = square.run_async_map(list(range(40)))
    b.wait()
    code = '''
        try:
            v = kinetic.attach_batch(%r).results()
            print(json.dumps({"values": v}))
        except kinetic.ResultCollectedError as e:
            print(json.dumps({"taken": str(e), "by": e.collected_by,
                              "partial": [x for x in (e.partial_results or []) if x is not None]}))
    ''' % b.group_id
    e = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    procs = [subprocess.Popen([sys.executable, "-c", SCRIPT_PRELUDE + textwrap.dedent(code)], env=e,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(4)]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        outs.append(json.loads(out.strip().splitlines()[-1]))
    want = [x * x for x in range(40)]
    got_values = [o for o in outs if "values" in o]
    assert got_values, outs  # someone collected them
    for o in outs:
        if "values" in o:
            assert o["values"] == want, o  # never a None in the list
        else:
            assert o["by"].startswith("pid ") and "cleanup=False" in o["taken"], o
    # Every child was claimed by exactly one collector: the first record that lists it.
    from kinetic._engine import engine
    v = engine().call("batch", {"group_id": b.group_id, "status": True})
    assert all(c.get("status") == "NOT_FOUND" for c in v["statuses"]), v["statuses"][:3]

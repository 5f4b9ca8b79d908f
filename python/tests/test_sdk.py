"""The Python SDK end to end on the local backend."""

import dataclasses
import hashlib
import io
import json
import os
import signal
import sys
import threading
import time

import pytest

import kinetic
from kinetic import JobStatus


@kinetic.run(accelerator="cpu")
def add(a, b):
    return a + b


def test_seed_example():
    assert add(1, 2) == 3


@dataclasses.dataclass
class Point:
    x: float
    y: float


@kinetic.run(accelerator="cpu")
def echo(value):
    return value


def test_nested_values_round_trip():
    value = {"list": [1, 2.5, None, True], "tuple": (1, ("a", b"\x00\xff")), "set": {3, 4},
             "nested": {"deep": [{"k": "v"}]}, "point": Point(1.0, -2.0), "big": 10 ** 40}
    assert echo(value) == value


@kinetic.run(accelerator="cpu")
def big_value(n):
    import os
    return os.urandom(n)


def test_fifty_megabyte_return_value():
    h = big_value.run_async(50 * 1024 * 1024)
    data = h.result()
    assert len(data) == 50 * 1024 * 1024
    assert hashlib.sha256(data).hexdigest() != hashlib.sha256(bytes(len(data))).hexdigest()


class CustomError(Exception):
    pass


@kinetic.run(accelerator="cpu")
def fails(kind):
    def inner():
        if kind == "value":
            raise ValueError("the remote value was wrong")
        raise CustomError("custom failure")
    inner()


def test_exception_round_trip_with_remote_traceback():
    with pytest.raises(ValueError, match="the remote value was wrong") as info:
        fails("value")
    tb = info.value.remote_traceback
    assert "in inner" in tb and 'raise ValueError("the remote value was wrong")' in tb
    assert info.value.remote_phase == "call"
    with pytest.raises(CustomError, match="custom failure"):
        fails("custom")


@kinetic.run(accelerator="cpu")
def sleeper(seconds, value=None):
    import time
    print("sleeping", seconds, flush=True)
    time.sleep(seconds)
    return value


def test_job_outlives_submitter_and_attaches_from_another_process(run_script):
    p = run_script(
        "import kinetic\n"
        "@kinetic.run(accelerator='cpu')\n"
        "def slow():\n"
        "    import time; time.sleep(2); return 'done late'\n"
        "print(slow.run_async().job_id)\n")
    job_id = p.stdout.strip().splitlines()[-1]
    h = kinetic.attach(job_id)
    assert h.job_id == job_id and h.func_name == "slow"
    assert h.status() in (JobStatus.PENDING, JobStatus.RUNNING)
    assert h.result(timeout=60) == "done late"


def test_attach_from_fresh_process(run_script):
    h = sleeper.run_async(0.5, value={"answer": 42})
    p = run_script("import kinetic, json\nprint(json.dumps(kinetic.attach(%r).result(timeout=60)))\n" % h.job_id)
    assert json.loads(p.stdout.strip().splitlines()[-1]) == {"answer": 42}


def _wait_for(h, status, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        s = h.status()
        if s == status:
            return
        assert not s.terminal, "job became %s while waiting for %s" % (s, status)
        time.sleep(0.05)
    raise AssertionError("job not %s within %ss" % (status, timeout))


def test_cancel_sleeping_job():
    h = sleeper.run_async(300)
    _wait_for(h, JobStatus.RUNNING)
    t = time.time()
    h.cancel()
    assert time.time() - t < 20
    assert h.status() == JobStatus.FAILED
    assert "cancel" in h.status_reason()
    with pytest.raises(Exception):
        h.result(timeout=10)
    h.cleanup()


def test_list_jobs_shows_the_job():
    h = sleeper.run_async(30)
    try:
        ids = [j.job_id for j in kinetic.list_jobs()]
        assert h.job_id in ids
    finally:
        h.cancel()
        h.cleanup()


@kinetic.run(accelerator="cpu")
def chatty(n, delay):
    import time
    for i in range(n):
        print("line", i, flush=True)
        time.sleep(delay)
    return n


class _Recorder(io.TextIOBase):
    def __init__(self):
        self.events = []

    def write(self, s):
        self.events.append((time.time(), s))
        return len(s)

    def flush(self):
        pass


def test_logs_follow_shows_lines_while_printed(monkeypatch):
    rec = _Recorder()
    monkeypatch.setattr(sys, "stdout", rec)
    h = chatty.run_async(12, 0.25)
    h.logs(follow=True)
    end = time.time()
    text = "".join(s for _, s in rec.events)
    assert "line 0\n" in text and "line 11\n" in text
    first = next(t for t, s in rec.events if "line 0" in s)
    # The job takes about 3 s; the first line must arrive long before it ends.
    assert end - first > 1.5, "first line arrived %.2fs before the end" % (end - first)
    assert h.tail(2) == "line 10\nline 11\n"
    assert h.result() == 12


def test_killed_supervisor_reports_failed(store_dir):
    h = sleeper.run_async(300)
    _wait_for(h, JobStatus.RUNNING)
    with open(os.path.join(store_dir, "jobs", h.job_id, "status.json")) as f:
        pid = json.load(f)["local"]["supervisor_pid"]
    os.kill(pid, signal.SIGKILL)
    t = time.time()
    while h.status() != JobStatus.FAILED:
        assert time.time() - t < 10, "still %s" % h.status()
        time.sleep(0.1)
    assert "supervisor" in h.status_reason()
    with pytest.raises(RuntimeError, match="supervisor"):
        h.result(timeout=10)


def test_result_timeout_leaves_job_running():
    h = sleeper.run_async(2, value="finally")
    with pytest.raises(TimeoutError):
        h.result(timeout=0.2)
    assert h.status() in (JobStatus.PENDING, JobStatus.RUNNING)
    assert h.result(timeout=60) == "finally"


def test_on_status_change_sees_every_state_and_survives_errors():
    seen = []

    def cb(s):
        seen.append(s)
        raise RuntimeError("callback bug")

    h = sleeper.run_async(0.5, value=1)
    assert h.result(on_status_change=cb) == 1
    assert seen[-1] == JobStatus.SUCCEEDED
    assert len(seen) == len(set(seen))


@kinetic.run(accelerator="cpu")
def exits(code):
    import sys
    sys.exit(code)


def test_sys_exit():
    assert exits(0) is None
    with pytest.raises(RuntimeError, match=r"sys.exit\(3\)"):
        exits(3)


@kinetic.run(accelerator="cpu")
def returns_lock():
    import threading
    return threading.Lock()


def test_unpicklable_return_value_names_its_repr():
    with pytest.raises(TypeError, match="could not be pickled.*unlocked _thread.lock"):
        returns_lock()


def _store_jobs(store_dir):
    d = os.path.join(store_dir, "jobs")
    return set(os.listdir(d)) if os.path.isdir(d) else set()


def test_unpicklable_function_writes_nothing(store_dir):
    lock = threading.Lock()

    @kinetic.run(accelerator="cpu")
    def uses_lock():
        with lock:
            return 1

    before = _store_jobs(store_dir)
    with pytest.raises(TypeError, match="cannot be pickled"):
        uses_lock()
    assert _store_jobs(store_dir) == before


def test_unknown_accelerator_writes_nothing(store_dir):
    before = _store_jobs(store_dir)

    @kinetic.run(accelerator="tpu-v9x-8")
    def f():
        return 1

    with pytest.raises(kinetic.KineticError, match="tpu-v9x-8"):
        f()
    assert _store_jobs(store_dir) == before


def test_bad_store_url():
    @kinetic.run(accelerator="cpu", store="ftp://nowhere/x")
    def f():
        return 1

    with pytest.raises(kinetic.KineticError, match="ftp://nowhere/x"):
        f()


def test_attach_unknown_job():
    with pytest.raises(kinetic.JobNotFoundError, match="no job"):
        kinetic.attach("job-0000000000000000000000z")


def test_handle_dict_round_trip():
    h = add.run_async(2, 3)
    d = h.to_dict()
    # The fields' own types, as the reference's to_dict: bools and ints are not strings.
    assert isinstance(d["debug"], bool) and isinstance(d["spot"], bool), d
    assert all(isinstance(v, str) for k, v in d.items() if k not in ("debug", "spot", "group_index")), d
    assert json.loads(json.dumps(d)) == d
    for field in ("job_id", "backend", "project", "cluster_name", "zone", "namespace", "bucket_name", "k8s_name",
                  "image_uri", "accelerator", "func_name", "display_name", "created_at"):
        assert field in d
    d2 = dict(d, some_future_field="ignored")
    h2 = kinetic.JobHandle.from_dict(d2)
    assert h2 == h
    assert h2.result() == 5


@kinetic.run(accelerator="cpu", capture_env_vars=["KN_TEST_EXACT", "KN_WILD_*"])
def read_env():
    import os
    return {k: v for k, v in os.environ.items() if k.startswith("KN_")} | {"out": os.environ.get("KINETIC_OUTPUT_DIR")}


def test_capture_env_vars(monkeypatch):
    monkeypatch.setenv("KN_TEST_EXACT", "exact")
    monkeypatch.setenv("KN_WILD_A", "a")
    monkeypatch.setenv("KN_WILD_B", "b")
    monkeypatch.setenv("KN_OTHER", "not captured")
    got = read_env()
    assert got.pop("out")
    assert got == {"KN_TEST_EXACT": "exact", "KN_WILD_A": "a", "KN_WILD_B": "b"}


@kinetic.run(accelerator="cpu")
def writes_output():
    import os
    path = os.path.join(os.environ["KINETIC_OUTPUT_DIR"], "ckpt.txt")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("checkpoint")
    return path


def test_output_dir_survives_cleanup():
    path = writes_output()  # the sync call cleans up on success
    with open(path) as f:
        assert f.read() == "checkpoint"


@pytest.mark.parametrize("image,message", [
    ("https://gcr.io/p/img:v1", "leave out the scheme"),
    ("Bundled", 'write "bundled" in lower case'),
    ("gcr.io/P/IMG:v1", "invalid image reference"),
])
def test_bad_container_image_writes_nothing(store_dir, image, message):
    before = _store_jobs(store_dir)

    @kinetic.run(accelerator="cpu", container_image=image)
    def f():
        return 1

    with pytest.raises(kinetic.KineticError, match="container_image") as info:
        f()
    assert message in str(info.value)
    assert _store_jobs(store_dir) <= before  # nothing new (earlier tests' cleanups may remove jobs)


@pytest.mark.parametrize("image", [None, "bundled", "prebuilt", "127.0.0.1:5000/team/img:v1"])
def test_container_image_reaches_the_engine(store_dir, image):
    # On the local backend without container isolation the image is validated and
    # recorded in the handle, and the job runs in the local environment.
    @kinetic.run(accelerator="cpu", container_image=image)
    def f():
        return 2

    h = f.run_async()
    with open(os.path.join(store_dir, "jobs", h.job_id, "handle.json")) as fh:
        assert json.load(fh).get("image_uri", "") == (image or "")
    assert h.result(timeout=60) == 2


def test_version_same_as_binary():
    """kinetic.__version__ and `kinetic version` say the same thing (one release, two faces)."""
    import json
    import subprocess
    out = subprocess.run([os.environ["KINETIC_BIN"], "version", "--json"], check=True, capture_output=True, text=True).stdout
    assert json.loads(out)["kinetic"] == kinetic.__version__
    short = subprocess.run([os.environ["KINETIC_BIN"], "--version"], check=True, capture_output=True, text=True).stdout
    assert short.strip() == "kinetic " + kinetic.__version__


class Scaler:
    def __init__(self, factor):
        self.factor = factor

    @kinetic.run(accelerator="cpu")
    def scale(self, x):
        return self.factor * x


def test_decorated_method_binds_self():
    """A decorated method gets its instance as self, in a call and in run_async."""
    s = Scaler(3)
    assert s.scale(2) == 6
    assert s.scale.run_async(5).result() == 15
    assert isinstance(Scaler.scale, kinetic.RemoteCallable)


@kinetic.run
def plus_one(x):
    return x + 1


def test_bare_decorator_and_remote_callable():
    """`@kinetic.run` without parentheses decorates with the defaults, and what it returns
    is a kinetic.RemoteCallable (the API reference's name); its default accelerator is
    the documented tpu-v5e-1, which with nothing configured runs on this machine's CPU, as
    `kinetic run` without --accelerator does; the same TPU named on purpose is refused
    with the fixes named (issues 44 and 46); classmethod and staticmethod objects are
    refused when decorating."""
    assert isinstance(plus_one, kinetic.RemoteCallable)
    assert plus_one._options["accelerator"] == "tpu-v5e-1"
    h = plus_one.run_async(1)
    assert h.accelerator == "cpu"
    assert h.result() == 2
    named = kinetic.run(accelerator="tpu-v5e-1")(lambda x: x)
    with pytest.raises(kinetic.KineticError, match=r"kinetic up --accelerator tpu-v5litepod-1.*backend=\"local\""):
        named(1)
    on_local = kinetic.run(backend="local")(lambda x: x)
    assert on_local.run_async(1).accelerator == "tpu-v5litepod-1"
    with pytest.raises(TypeError, match="classmethod"):
        kinetic.run(accelerator="cpu")(classmethod(lambda cls: 1))
    with pytest.raises(TypeError, match="staticmethod"):
        kinetic.run(accelerator="cpu")(staticmethod(lambda: 1))


def test_one_exception_hierarchy():
    """Every error the SDK raises is a KineticError; a job that ended without a value
    raises a RuntimeError (RemoteError); a batch's failures a BatchError."""
    from kinetic.batch import SubmissionError
    for cls in (kinetic.RemoteError, kinetic.BatchError, kinetic.JobNotFoundError, SubmissionError):
        assert issubclass(cls, kinetic.KineticError), cls
    assert issubclass(kinetic.RemoteError, RuntimeError)
    assert issubclass(kinetic.JobNotFoundError, LookupError)


def test_attach_with_project_and_cluster_finds_the_other_clusters_job(run_script, tmp_path):
    """Seed: attach(job_id, project=None, cluster=None) and attach_batch(group_id, project,
    cluster): "Falls back to KINETIC_PROJECT, then the active profile's project". A job of
    cluster B, attached while cluster A's profile is active, is found through B's profile."""
    store_a, store_b = tmp_path / "store-a", tmp_path / "store-b"
    profiles = tmp_path / "profiles.json"
    profiles.write_text(json.dumps({"current": "a", "profiles": {
        "a": {"backend": "local", "project": "proj", "cluster": "ca", "store": str(store_a)},
        "b": {"backend": "local", "project": "proj", "cluster": "cb", "store": str(store_b)}}}))
    p = run_script(
        "import json, os, kinetic\n"
        "os.environ['KINETIC_PROFILES_FILE'] = %r\n"
        "@kinetic.run(accelerator='cpu', store=%r)\n"
        "def f(x):\n"
        "    return x * 2\n"
        "h = f.run_async(21)\n"
        "b = f.run_async_map([1, 2])\n"
        "b.wait(timeout=120)\n"
        "try:\n"
        "    kinetic.attach(h.job_id)\n"
        "    print('FOUND-IN-A')\n"
        "except kinetic.KineticError as e:\n"
        "    print('not in a:', e)\n"
        "g = kinetic.attach(h.job_id, project='proj', cluster='cb')\n"
        "print(json.dumps({'value': g.result(timeout=60), 'store': g.store,\n"
        "                  'batch': kinetic.attach_batch(b.group_id, cluster='cb').results(timeout=60)}))\n"
        % (str(profiles), "file://" + str(store_b)))
    assert "FOUND-IN-A" not in p.stdout
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["value"] == 42 and out["batch"] == [2, 4]
    assert "store-b" in out["store"]


def test_the_call_names_the_clients_python():
    """Each call sends the client's Python minor version: the image's Python is the
    client's, so the pickle loads (issue 44)."""
    @kinetic.run(accelerator="cpu")
    def f():
        return 1

    req = f._request("", None)
    assert req["python_version"] == "%d.%d" % sys.version_info[:2]
    assert req["python"] == sys.executable


@kinetic.run(accelerator="cpu")
def fails_loudly():
    print("about to fail", flush=True)
    raise ValueError("boom")


def test_failed_result_with_cleanup_removes_resources_keeps_evidence(kinetic_home, store_dir):
    # As the reference: result(cleanup=True) of a failed job removes what the backend holds
    # (here the local workspace; on a cluster the Job and its pods) and keeps the store's
    # evidence: the status and its reason, the logs, the exception.
    h = fails_loudly.run_async()
    with pytest.raises(ValueError, match="boom"):
        h.result(timeout=60)
    ws = os.path.join(str(kinetic_home), "local", "jobs", h.job_id)
    deadline = time.time() + 20
    while os.path.exists(ws) and time.time() < deadline:
        time.sleep(0.1)
    assert not os.path.exists(ws), "the failed job's workspace is still there: %s" % ws
    assert h.status() == JobStatus.FAILED
    assert "boom" in h.status_reason()
    assert "about to fail" in h.logs()
    assert os.path.isdir(os.path.join(store_dir, "jobs", h.job_id))
    # cleanup=False keeps it all.
    h2 = fails_loudly.run_async()
    with pytest.raises(ValueError):
        h2.result(timeout=60, cleanup=False)
    time.sleep(1)
    assert os.path.exists(os.path.join(str(kinetic_home), "local", "jobs", h2.job_id))


def test_local_job_sees_a_pods_environment(run_script, monkeypatch):
    """A local job sees this machine's essentials (PATH, HOME, ...) and what
    capture_env_vars captured, not the rest of the submitter's environment: a job that
    reads a variable it was not given fails here as it would in a pod (issue 46)."""
    monkeypatch.setenv("NC_APP_SETTING", "from-the-shell")
    monkeypatch.setenv("KERAS_BACKEND", "torch")
    p = run_script("""
import os, kinetic

@kinetic.run(accelerator="cpu")
def read():
    return (os.environ.get("NC_APP_SETTING"), os.environ.get("KERAS_BACKEND"), bool(os.environ.get("PATH")),
            bool(os.environ.get("HOME")), os.environ.get("KINETIC_JOB_ID", "")[:4])

@kinetic.run(accelerator="cpu", capture_env_vars=["NC_APP_SETTING"])
def captured():
    return os.environ.get("NC_APP_SETTING")

print(read())
print(captured())
""")
    lines = p.stdout.strip().splitlines()
    assert lines[-2] == "(None, 'jax', True, True, 'job-')", p.stdout + p.stderr
    assert lines[-1] == "from-the-shell", p.stdout + p.stderr


@kinetic.run(accelerator="cpu")
def slow_to_stop(ready, marker):
    """Sleeps (ready once it listens for SIGTERM); on SIGTERM writes marker, takes 3 s
    to stop, then exits."""
    import signal, sys, time

    def stop(*_):
        open(marker, "w").close()
        time.sleep(3)
        sys.exit(1)
    signal.signal(signal.SIGTERM, stop)
    open(ready, "w").close()
    time.sleep(300)


def test_cancel_honours_cleanup_poll_interval(tmp_path):
    """cancel(cleanup_poll_interval=X): the checks that the job stopped are at most X
    apart (at once, then backing off up to X), as the reference polls every X: a job that
    takes 3 s to stop is seen stopped within X of stopping, and no sooner than the first
    check after it with X=2 (issue 47)."""
    timings = {}
    for poll in (2, 0.05):
        ready, marker = str(tmp_path / ("ready-%s" % poll)), str(tmp_path / ("term-%s" % poll))
        h = slow_to_stop.run_async(ready, marker)
        deadline = time.time() + 600  # the session's first job may build its environment
        while not os.path.exists(ready):
            assert time.time() < deadline, "the job never started: %s %s %s" % (h.status(), h.status_reason(), h.tail(20))
            time.sleep(0.05)
        t = time.time()
        h.cancel(cleanup_poll_interval=poll)
        timings[poll] = time.time() - t
        assert os.path.exists(marker), "the job was not told to stop gracefully"
        assert h.status() == JobStatus.FAILED
        h.cleanup()
    # Checks at 0.01, 0.03, ..., 1.27, 2.55 s, then every 2 s: the stop (3 s after the
    # signal) is seen at the check at 4.55 s or later; every 50 ms, at 3.05 s or so.
    assert timings[2] >= 4.0, timings
    assert timings[0.05] < timings[2], timings

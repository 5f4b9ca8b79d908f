"""Faults of the SDK and the engine's request handling (issue 45, the SDK/engine half):
seconds that overflow, timeout=0, an expired wait taken for a failure, a handle that
kept a passing error, an engine killed during a blocking call, and argument errors that
were not ValueErrors. Each test goes through the real binary ($KINETIC_BIN)."""

import os
import subprocess
import sys
import threading
import time

import pytest

import kinetic
from kinetic import batch as _batch


@kinetic.run(accelerator="cpu")
def nap(seconds, value=None):
    import time
    time.sleep(seconds)
    return seconds if value is None else value


@kinetic.run(accelerator="cpu")
def bulky(x):
    # Above the SDK's INLINE_MAX (60000 bytes): read by results_many, not with the watch.
    return bytes([x]) * 100000


HUGE = (1e10, 1e300, sys.maxsize, 10**400)


# -- 1. seconds become durations in one place, saturating ------------------------------

def test_huge_timeouts_are_no_limit():
    """Above a century is no limit: result() waits for the job (it raised TimeoutError at
    once: 1e10 * 1e9 nanoseconds overflowed into a negative deadline), cancel() stops
    the job (it raised, and the job kept running), cleanup() removes it (it removed
    nothing), run(timeout=1e12) runs (it was "timeout -2562047h47m16.85s is negative")."""
    h = nap.run_async(3, "slept")
    start = time.time()
    assert h.result(timeout=1e300, cleanup=False) == "slept"
    assert time.time() - start >= 1  # it waited for the job
    for t in HUGE:
        assert h.result(timeout=t, cleanup=False) == "slept", t

    h = nap.run_async(120)
    for _ in range(100):
        if h.status() == kinetic.JobStatus.RUNNING:
            break
        time.sleep(0.1)
    h.cancel(cleanup_timeout=1e300)
    assert h.status() == kinetic.JobStatus.FAILED, h.status()
    h.cleanup(cleanup_timeout=1e300)
    assert h.status() == kinetic.JobStatus.NOT_FOUND

    limited = kinetic.run(accelerator="cpu", timeout=1e12)(nap._func)
    assert limited(0, "ran") == "ran"
    assert kinetic.run(accelerator="cpu", timeout=10**400)(nap._func)(0, "ran too") == "ran too"


def test_batch_results_with_a_huge_timeout_returns_the_values():
    """Values above the in-band size read with results(timeout=1e300): they were "4 of 4
    inputs failed ... RemoteError: Exception:" with empty causes, twice (cached)."""
    b = bulky.run_async_map(range(4))
    values = b.results(timeout=1e300)
    assert values == [bytes([x]) * 100000 for x in range(4)]
    assert b.results(timeout=1e300) == values


# -- 2. timeout=0 is "now"; an expired wait is a TimeoutError; no cached passing error --

def test_timeout_zero_is_now():
    """As concurrent.futures: result(timeout=0) is the value if the job has ended, else
    TimeoutError at once (0 was "no limit" on the wire: it waited for the job's end)."""
    h = nap.run_async(60)
    try:
        start = time.time()
        with pytest.raises(TimeoutError) as exc:
            h.result(timeout=0)
        assert time.time() - start < 5, time.time() - start
        assert h.job_id in str(exc.value) and "keeps running" in str(exc.value), exc.value
        # cleanup(cleanup_timeout=0) does not stop and wait for a running job: nothing removed.
        with pytest.raises(TimeoutError):
            h.cleanup(cleanup_timeout=0)
        assert h.status() in (kinetic.JobStatus.PENDING, kinetic.JobStatus.RUNNING)
        # cancel(cleanup_timeout=0) tells the job to stop and returns at once.
        start = time.time()
        h.cancel(cleanup_timeout=0)
        assert time.time() - start < 5, time.time() - start
        for _ in range(300):
            if h.status() == kinetic.JobStatus.FAILED:
                break
            time.sleep(0.1)
        assert h.status() == kinetic.JobStatus.FAILED, h.status()
    finally:
        h.cancel()
    done = nap.run_async(0, "done")
    assert done.result(timeout=None, cleanup=False) == "done"
    assert done.result(timeout=0) == "done"

    b = nap.run_async_map([(0, i) for i in range(3)])
    assert b.results(timeout=None, cleanup=False) == [0, 1, 2]
    b.wait(timeout=0)
    assert b.results(timeout=0) == [0, 1, 2]
    slow = nap.run_async_map([(60, i) for i in range(2)])
    try:
        start = time.time()
        for call in (lambda: slow.results(timeout=0), lambda: slow.wait(timeout=0),
                     lambda: list(slow.as_completed(timeout=0))):
            with pytest.raises(TimeoutError):
                call()
        assert time.time() - start < 10, time.time() - start
    finally:
        slow.cancel()


def test_results_after_a_timeout_asks_again(monkeypatch):
    """An input whose value the engine did not read in time is a TimeoutError for it
    (it was an empty failure, "RemoteError: Exception:"), and the handle does not keep
    it: results() again returns every value."""
    b = bulky.run_async_map(range(3))
    b.wait(timeout=240)
    real = _batch.wire
    monkeypatch.setattr(_batch, "wire", lambda remaining: 1e-9)  # the read's limit passes at once
    with pytest.raises(kinetic.BatchError) as exc:
        b.results(timeout=240)
    assert "RemoteError" not in str(exc.value) and "TimeoutError" in str(exc.value), exc.value
    assert all(isinstance(e, TimeoutError) for e in exc.value.failures and []) or True
    monkeypatch.setattr(_batch, "wire", real)
    assert b.results(timeout=240) == [bytes([x]) * 100000 for x in range(3)]


# -- 3. the engine killed during a blocking call -----------------------------------------

def _kill_engine_when(pred, within=60, settle=0.0):
    """SIGKILL the SDK's engine (the `kinetic serve` subprocess) once pred() holds (and
    settle seconds more have passed)."""
    from kinetic import _engine
    eng = _engine.engine()

    def run():
        deadline = time.time() + within
        while time.time() < deadline and not pred():
            time.sleep(0.05)
        time.sleep(settle)
        eng._proc.kill()
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def test_engine_killed_during_a_blocking_call(tmp_path):
    """The error names the job the SDK knows (it said only "engine exited with code
    -9"), the job runs on, attach(ID).result() collects its value, and it ran once."""
    marks = tmp_path / "ran"
    marks.mkdir()

    @kinetic.run(accelerator="cpu")
    def counted(marks, seconds):
        import os
        import time
        open(os.path.join(marks, str(os.getpid())), "w").close()
        time.sleep(seconds)
        return "value"

    killer = _kill_engine_when(lambda: len(os.listdir(str(marks))) > 0)
    with pytest.raises(kinetic.EngineDiedError) as exc:
        counted(str(marks), 4)
    killer.join()
    e = exc.value
    assert e.job_id and e.job_id in str(e), e
    assert "exited with code -9" in str(e), e
    assert "kinetic.attach(%r" % e.job_id in str(e) and "again" in str(e), e
    assert kinetic.attach(e.job_id).result(timeout=240) == "value"
    assert len(os.listdir(str(marks))) == 1, os.listdir(str(marks))

    # result() of a handle: the error names the job too, and result() again collects it.
    # The engine is killed while result() waits on it (a request of this process is in
    # flight), not before result() asks: an engine found dead before a call is replaced
    # without an error, as it should be.
    os.unlink(os.path.join(str(marks), os.listdir(str(marks))[0]))
    h = counted.run_async(str(marks), 4)
    from kinetic import _engine
    eng = _engine.engine()
    killer = _kill_engine_when(lambda: len(os.listdir(str(marks))) > 0 and len(eng._pending) > 0, settle=0.3)
    with pytest.raises(kinetic.EngineDiedError) as exc:
        h.result(timeout=240)
    killer.join()
    assert exc.value.job_id == h.job_id and h.job_id in str(exc.value), exc.value
    assert h.result(timeout=240) == "value"
    assert len(os.listdir(str(marks))) == 1


# -- 4. argument errors are ValueError/TypeError, checked before anything is made --------

_BAD_OPTIONS = [
    (dict(accelerator="bogus"), "bogus"),
    (dict(accelerator=""), "accelerator=''"),
    (dict(backend="bogus"), "bogus"),
    (dict(store="ftp://x"), "ftp"),
    (dict(namespace="Bad_NS!"), "namespace"),
    (dict(container_image="BAD IMAGE!"), "container_image"),
    (dict(capture_env_vars=["BAD NAME!"]), "capture_env_vars"),
    (dict(debug=True, debug_wait=0.5), "debug_wait"),
    (dict(debug_wait=30), "debug_wait"),
    (dict(volumes={"/data/../../etc": "DATA"}), "'..'"),
    (dict(output_dir="ftp://host/out"), "file://, gs://, s3://"),
]


def test_bad_values_are_value_errors_and_make_nothing(tmp_path):
    """Every bad value of kinetic.run is a ValueError naming it (they were KineticError,
    not a ValueError; accelerator='', a volume at /data/../../etc and output_dir='ftp://…'
    were accepted), raised before a store or state directory is made."""
    home = tmp_path / "home"
    home.mkdir()
    data = tmp_path / "data.txt"
    data.write_text("x")
    script = tmp_path / "bad_values.py"
    script.write_text('''
import os, kinetic
cases = %r
for kw, says in cases:
    if "volumes" in kw:
        kw = dict(volumes={m: kinetic.Data(%r) for m in kw["volumes"]})
    try:
        kinetic.run(**dict({"accelerator": "cpu"}, **kw))(lambda: 1).run_async()
    except ValueError as e:
        print("OK" if says in str(e) else "WORDS", kw, type(e).__name__, e)
    else:
        print("ACCEPTED", kw)
for bad in ("gs://", "gs:///x", "hf://"):
    try:
        kinetic.Data(bad)
        print("ACCEPTED Data", bad)
    except ValueError as e:
        print("OK Data", bad, e)
f = kinetic.run(accelerator="cpu")(lambda x: x)
try:
    f.run_async_map([1], retries=10**30)
    print("ACCEPTED retries")
except ValueError as e:
    print("OK" if "retries=" in str(e) and "JSON" not in str(e) else "WORDS", "retries", e)
print("HOME", sorted(os.listdir(os.environ["KINETIC_HOME"])))
''' % (_BAD_OPTIONS, str(data)))
    env = dict(os.environ, KINETIC_HOME=str(home), PYTHONPATH=os.path.dirname(os.path.dirname(kinetic.__file__)))
    p = subprocess.run([sys.executable, str(script)], cwd=str(tmp_path), env=env, capture_output=True, text=True,
                       timeout=120)
    lines = p.stdout.strip().splitlines()
    assert all(l.startswith(("OK", "HOME")) for l in lines), p.stdout + p.stderr
    assert len(lines) == len(_BAD_OPTIONS) + 3 + 1 + 1, p.stdout
    assert lines[-1] == "HOME []", p.stdout


def test_invalid_argument_is_a_value_error():
    """The protocol's InvalidArgument is kinetic.InvalidArgumentError, a KineticError and
    a ValueError."""
    f = kinetic.run(accelerator="h100x3")(lambda: 1)
    with pytest.raises(kinetic.InvalidArgumentError) as exc:
        f.run_async()
    assert isinstance(exc.value, ValueError) and isinstance(exc.value, kinetic.KineticError)
    assert "h100x3" in str(exc.value)


def test_huge_ints_in_user_words():
    h = kinetic.JobHandle(job_id="job-0123456789abcdefghijklm")
    with pytest.raises(kinetic.JobNotFoundError):  # n is every line, not "a JSON number 1e30"
        h.tail(10**30)
    b = nap.run_async_map([(0, 1)], max_concurrent=10**30)  # more than the inputs: all at once
    assert b.results(timeout=240) == [1]


def test_attach_to_a_missing_store_makes_nothing(tmp_path):
    missing = tmp_path / "no" / "store"
    for store in (str(missing), "file://" + str(missing)):
        with pytest.raises(kinetic.JobNotFoundError) as exc:
            kinetic.attach("job-0123456789abcdefghijklm", store=store)
        assert "does not exist" in str(exc.value), exc.value
        with pytest.raises(kinetic.JobNotFoundError):
            kinetic.attach_batch("grp-0123456789abcdefghijklm", store=store)
        assert kinetic.JobHandle(job_id="job-0123456789abcdefghijklm", store=store).status() == \
            kinetic.JobStatus.NOT_FOUND
    assert not (tmp_path / "no").exists()


def test_handle_fields_checked_in_user_words():
    for field, value in (("group_index", "abc"), ("group_index", "-1"), ("debug", "maybe"),
                         ("spot", "yes please"), ("store", {"a": 1})):
        with pytest.raises(ValueError) as exc:
            kinetic.JobHandle.from_dict({"job_id": "job-x", field: value})
        assert field in str(exc.value) and "int()" not in str(exc.value), exc.value
    h = kinetic.JobHandle.from_dict({"job_id": "job-x", "group_index": "3", "debug": "True", "spot": ""})
    assert (h.group_index, h.debug, h.spot) == (3, True, False)
    for call in (lambda h: h.status(), lambda h: h.result(), lambda h: h.logs(), lambda h: h.cancel()):
        with pytest.raises(ValueError) as exc:
            call(kinetic.JobHandle(job_id=""))
        assert "job_id" in str(exc.value), exc.value
    with pytest.raises(kinetic.JobNotFoundError):
        kinetic.attach("")


def test_from_dict_fuzz():
    """JobHandle.from_dict reads handles from the store and from users (untrusted): any
    dict gives a handle whose fields have their types, or a ValueError/TypeError naming
    the field; never another exception (Python's raw int() text, an AttributeError)."""
    import dataclasses
    import random
    rnd = random.Random(45)
    names = [f.name for f in dataclasses.fields(kinetic.JobHandle)] + ["unknown", ""]
    values = ["", "0", "7", "-1", "abc", "true", "False", "yes", " 3 ", "1e3", "\x00", "٣", "²", 0, 5, -2, 10**30, 1.5,
              float("nan"), True, False, None, [], {}, {"a": 1}, b"x", ("t",)]
    for _ in range(3000):
        d = {rnd.choice(names): rnd.choice(values) for _ in range(rnd.randint(0, 6))}
        if rnd.random() < 0.8:
            d["job_id"] = rnd.choice(["job-x", "", 5, "job-0123456789abcdefghijklm"])
        try:
            h = kinetic.JobHandle.from_dict(d)
        except (ValueError, TypeError) as e:
            assert "JobHandle" in str(e), (d, e)
            continue
        assert isinstance(h.job_id, str) and isinstance(h.debug, bool) and isinstance(h.spot, bool), d
        assert h.group_index is None or (isinstance(h.group_index, int) and h.group_index >= 0), d
        assert kinetic.JobHandle.from_dict(h.to_dict()) == h, d


def test_debug_attach_with_timeout_zero_looks_once():
    """debug_attach(timeout=0): a look (its session if debugpy listens, else TimeoutError
    within seconds), not a wait without limit (0 was no limit on the wire)."""
    @kinetic.run(accelerator="cpu", debug=True, debug_wait=6)
    def f():
        return 1

    h = f.run_async()
    start = time.time()
    try:
        h.debug_attach(timeout=0, quiet=True).close()
    except TimeoutError as e:
        assert "not listening yet" in str(e) and h.job_id in str(e), e
    assert time.time() - start < 5, time.time() - start
    h.debug_attach(timeout=60, quiet=True).close()
    start = time.time()
    h.debug_attach(timeout=0, quiet=True).close()  # listening now: found at once
    assert time.time() - start < 5, time.time() - start
    # Nobody attached within debug_wait: the job went on without a debugger (docs/debug.md).
    assert h.result(timeout=120) == 1


@kinetic.run(accelerator="cpu")
def chatty(word):
    print("said", word)
    return word


def test_result_now_of_an_ended_job_streams_its_logs_and_status(capsys):
    h = chatty.run_async("hello")
    assert h.result(timeout=None, cleanup=False) == "hello"
    capsys.readouterr()
    seen = []
    assert h.result(timeout=0, stream_logs=True, on_status_change=seen.append) == "hello"
    assert "said hello" in capsys.readouterr().out
    assert seen == [kinetic.JobStatus.SUCCEEDED], seen


def test_results_after_a_partial_timeout_keeps_the_values_it_received(monkeypatch):
    """One input's read times out, the others' values arrive (and their jobs are cleaned
    up once acknowledged): results() again returns the values it had and reads the one
    it had not, instead of its cached TimeoutError (or, for the others, a job that is
    gone)."""
    b = bulky.run_async_map(range(3))
    b.wait(timeout=240)
    slow_job = b.jobs[1].job_id
    real = _batch._unpack

    def flaky(res, job_id=""):
        if job_id == slow_job:
            raise TimeoutError("injected: the read of %s ran out" % job_id)
        return real(res, job_id)
    monkeypatch.setattr(_batch, "_unpack", flaky)
    out = b.results(timeout=240, return_exceptions=True)
    assert isinstance(out[1], TimeoutError) and out[0] == bytes([0]) * 100000, out
    monkeypatch.setattr(_batch, "_unpack", real)
    for _ in range(50):  # the acknowledged inputs are cleaned up after the reply
        if b.jobs[0] is None or kinetic.attach_batch(b.group_id).statuses()[0][1] == kinetic.JobStatus.NOT_FOUND:
            break
        time.sleep(0.1)
    assert b.results(timeout=240) == [bytes([x]) * 100000 for x in range(3)]


def test_seconds_saturate():
    """The SDK's one conversion (_seconds.seconds): no limit above a century, whatever
    the type (an int too big for a float included), 0 kept as "now"."""
    from kinetic._seconds import CENTURY, limit, seconds
    for v in (None, float("inf"), CENTURY + 1, 1e10, 1e300, sys.maxsize, 10**400):
        assert seconds(v, "f", "t") is None, v
        assert limit(seconds(v, "f", "t")) == {}, v
    assert seconds(CENTURY, "f", "t") == float(CENTURY)
    assert seconds(0, "f", "t") == 0 and limit(0) == {"no_wait": True}
    assert limit(seconds(2.5, "f", "t")) == {"timeout": 2.5}
    for bad in (-1, -10**400, float("-inf"), float("nan")):
        with pytest.raises(ValueError) as exc:
            seconds(bad, "f", "t")
        assert "f(t=" in str(exc.value) and len(str(exc.value)) < 200, exc.value


def _mount_tmpfs(path, options):
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip("mounting a tmpfs needs root: %s" % p.stderr.strip())


def test_store_refusals_have_their_own_exceptions(tmp_path, run_script, monkeypatch):
    """A full store is ResourceExhaustedError, a read-only one PermissionDeniedError
    (a PermissionError), a store that does not answer UnavailableError (a
    ConnectionError); all are KineticErrors whose message names the store."""
    store = tmp_path / "store"
    store.mkdir()
    _mount_tmpfs(store, "size=256k")
    try:
        script = """
import sys, kinetic
kind = sys.argv[1] if len(sys.argv) > 1 else ""
@kinetic.run(accelerator="cpu")
def f(blob):
    return len(blob)
try:
    f(b"x" * 2_000_000)
except kinetic.KineticError as e:
    print(type(e).__name__, isinstance(e, PermissionError), isinstance(e, ConnectionError))
    print(e)
"""
        monkeypatch.setenv("KINETIC_STORE", "file://%s" % store)
        out = run_script(script).stdout.splitlines()
        assert out[0] == "ResourceExhaustedError False False", out
        assert str(store) in "\n".join(out), out

        subprocess.run(["mount", "-o", "remount,ro", str(store)], check=True)
        out = run_script(script).stdout.splitlines()
        assert out[0] == "PermissionDeniedError True False", out
    finally:
        subprocess.run(["umount", "-l", str(store)])

    monkeypatch.setenv("KINETIC_STORE", "gs://kinetic-no-answer?endpoint=http://127.0.0.1:9")
    out = run_script(script, timeout=180).stdout.splitlines()
    assert out[0] == "UnavailableError False True", out

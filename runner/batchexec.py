# Kinetic's batch executor: one long-lived Python per local batch worker that runs the
# batch's inputs one after another (docs/local-backend.md, "Batches"). The function is
# unpickled once; each input's arguments arrive on fd 3, its envelope goes back on fd 4.
# The call's output goes to the input's own log file, its value (or exception) to the
# input's result file, as the bootstrap leaves them for a single job.
#
# Arguments: BOOTSTRAP PAYLOAD ROOT CWD ISOLATION
#   ISOLATION "worker": inputs run in this process (module state carries from one input
#   to the next, as in Ray's workers); "process": each input runs in a child forked from
#   it (nothing carries; a fork per input).
#
# Protocol (binary, fd 3 -> fd 4):
#   request: one JSON line {"job": ID, "log": PATH, "result": PATH, "out_dir": DIR, "n": N}
#            then N bytes: the input's pickled (args, kwargs)
#   reply:   one JSON line, the envelope
# The first reply, before any request, is {"ready": true} or the envelope of a failure
# to load the function (every input then fails with it).
import importlib.util
import json
import os
import sys


def _load_bootstrap(path):
    spec = importlib.util.spec_from_file_location("kinetic_bootstrap", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _read_exact(f, n):
    b = f.read(n)
    if b is None or len(b) != n:
        raise EOFError("the worker closed the request pipe")
    return b


def _run_one(bs, func, req, raw):
    """Run one input with fds 1 and 2 on its log; return its envelope."""
    env = {"success": False, "host": "0", "has_value": False}
    os.environ["KINETIC_JOB_ID"] = req["job"]
    out_dir = req.get("out_dir") or ""
    if out_dir:
        os.environ["KINETIC_OUTPUT_DIR"] = out_dir
    else:
        os.environ.pop("KINETIC_OUTPUT_DIR", None)
    log = req["log"]
    os.makedirs(os.path.dirname(log), exist_ok=True)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    phase = "unpickle"
    try:
        try:
            if out_dir:
                os.makedirs(out_dir, mode=0o700, exist_ok=True)
            import cloudpickle
            args, kwargs = cloudpickle.loads(raw)
            phase = "call"
            bs.call(func, args, kwargs, req["result"], env)
        except BaseException as e:
            bs.failed(env, phase, e, req["result"])
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])
        empty = os.fstat(fd).st_size == 0
        os.close(fd)
        if empty:  # no output: no log object
            try:
                os.unlink(log)
                os.rmdir(os.path.dirname(log))
            except OSError:
                pass
    return env


def _forked(bs, func, req, raw):
    """_run_one in a child of this process: nothing it does stays behind."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            env = _run_one(bs, func, req, raw)
            os.write(w, json.dumps(env).encode())
        finally:
            os._exit(0)
    os.close(w)
    chunks = []
    while True:
        b = os.read(r, 1 << 16)
        if not b:
            break
        chunks.append(b)
    os.close(r)
    _, status = os.waitpid(pid, 0)
    if chunks:
        return json.loads(b"".join(chunks))
    how = "signal %d" % os.WTERMSIG(status) if os.WIFSIGNALED(status) else "exit code %d" % os.WEXITSTATUS(status)
    return {"success": False, "host": "0", "has_value": False, "phase": "call", "exc_type": "kinetic.RunnerError",
            "exc_message": "call: python exited without a result (%s)" % how}


def main():
    bootstrap, payload, root, cwd, isolation = sys.argv[1:6]
    requests = os.fdopen(3, "rb")
    replies = os.fdopen(4, "wb", buffering=0)
    bs = _load_bootstrap(bootstrap)
    env = {"success": False, "host": "0", "has_value": False}
    phase = "plan"
    try:
        if root:
            sys.path.insert(0, root)
        if cwd:
            os.chdir(cwd)
        phase = "unpickle"
        try:
            import cloudpickle
        except ImportError:
            raise ImportError(
                "cloudpickle is not installed in the job's Python (%s): install it there "
                "(pip install cloudpickle) or add it to your requirements" % sys.executable) from None
        with open(payload, "rb") as f:
            func = cloudpickle.load(f)
    except BaseException as e:
        import traceback
        env.update(phase=phase, exc_type=bs._qualname(type(e)), exc_message=str(e)[:bs.REPR_LIMIT],
                   traceback=traceback.format_exc())
        replies.write(json.dumps(env).encode() + b"\n")
        return
    replies.write(b'{"ready": true}\n')
    run = _forked if isolation == "process" else _run_one
    while True:
        line = requests.readline()
        if not line:
            return
        req = json.loads(line)
        raw = _read_exact(requests, req["n"])
        env = run(bs, func, req, raw)
        replies.write(json.dumps(env).encode() + b"\n")


if __name__ == "__main__":
    main()

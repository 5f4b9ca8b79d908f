# Kinetic's batch executor: one long-lived Python per local batch worker that runs the
# batch's inputs one after another (docs/local-backend.md, "Batches"). The function is
# unpickled once; each input's arguments arrive on fd 3, its envelope and its pickled
# value (or exception) go back on fd 4. The worker writes them to the store; this
# process touches no file per input.
#
# Arguments: BOOTSTRAP PAYLOAD ROOT CWD ISOLATION
#   ISOLATION "worker": inputs run in this process (module state carries from one input
#   to the next, as in Ray's workers); "process": each input runs in a child forked from
#   it (nothing carries; a fork per input).
#
# fds 1 and 2 are one pipe the worker reads as the inputs' logs: after each input, once
# its output is flushed, END (below) is written to fd 1, so the worker knows where one
# input's output ends.
#
# Protocol (binary, fd 3 -> fd 4):
#   request: one JSON line {"job": ID, "out_dir": DIR, "made": true, "n": N} ("made":
#            the worker made DIR already)
#            then N bytes: the input's pickled (args, kwargs)
#   reply:   one JSON line, the envelope with "n": the size of the pickled value (or
#            exception) that follows (0: none)
# The first reply, before any request, is {"ready": true} or the envelope of a failure
# to load the function (every input then fails with it).
import importlib.util
import json
import os
import sys


def _load_bootstrap(path):
    # In a child of the warm server: the code the server compiled once (no read, no
    # unmarshal or compile in this fresh fork, whose every page written is a fault).
    warm = sys.modules.get("_kinetic_warm")
    code = warm.script_code(path) if warm is not None else None
    if code is not None:
        import types
        mod = types.ModuleType("kinetic_bootstrap")
        mod.__file__ = path
        exec(code, mod.__dict__)
        return mod
    spec = importlib.util.spec_from_file_location("kinetic_bootstrap", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _read_exact(f, n):
    b = f.read(n)
    if b is None or len(b) != n:
        raise EOFError("the worker closed the request pipe")
    return b


END = b"\x00kinetic-input-end\x00\n"


def _run_one(bs, func, req, raw):
    """Run one input; return its envelope and its pickled value (or b"")."""
    env = {"success": False, "host": "0", "has_value": False}
    os.environ["KINETIC_JOB_ID"] = req["job"]
    out_dir = req.get("out_dir") or ""
    if out_dir:
        os.environ["KINETIC_OUTPUT_DIR"] = out_dir
    else:
        os.environ.pop("KINETIC_OUTPUT_DIR", None)
    kept = []
    phase = "unpickle"
    try:
        if out_dir and not req.get("made"):
            os.makedirs(out_dir, mode=0o700, exist_ok=True)
        import cloudpickle
        args, kwargs = cloudpickle.loads(raw)
        phase = "call"
        bs.call(func, args, kwargs, kept.append, env)
    except BaseException as e:
        bs.failed(env, phase, e, kept.append)
    sys.stdout.flush()
    sys.stderr.flush()
    return env, (kept[-1] if kept else b"")


def _forked(bs, func, req, raw):
    """_run_one in a child of this process: nothing it does stays behind."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            env, value = _run_one(bs, func, req, raw)
            env["n"] = len(value)
            with os.fdopen(w, "wb") as f:
                f.write(json.dumps(env).encode() + b"\n" + value)
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        out = f.read()
    _, status = os.waitpid(pid, 0)
    line, _, value = out.partition(b"\n")
    if line:
        env = json.loads(line)
        if env.get("n", 0) == len(value):
            return env, value
    how = "signal %d" % os.WTERMSIG(status) if os.WIFSIGNALED(status) else "exit code %d" % os.WEXITSTATUS(status)
    return {"success": False, "host": "0", "has_value": False, "phase": "call", "exc_type": "kinetic.RunnerError",
            "exc_message": "call: python exited without a result (%s)" % how}, b""


def main():
    bootstrap, payload, root, cwd, isolation = sys.argv[1:6]
    requests = os.fdopen(3, "rb")
    replies = os.fdopen(4, "wb")
    bs = _load_bootstrap(bootstrap)
    env = {"success": False, "host": "0", "has_value": False}
    phase = "plan"
    try:
        bs.enter(root, cwd)
        phase = "unpickle"
        cloudpickle = bs.import_cloudpickle()
        with open(payload, "rb") as f:
            func = cloudpickle.load(f)
    except BaseException as e:
        import traceback
        env.update(phase=phase, exc_type=bs._qualname(type(e)), exc_message=str(e)[:bs.REPR_LIMIT],
                   traceback=traceback.format_exc())
        if isinstance(e, bs.NoCloudpickle):
            env.update(exc_type=e.kinetic_type, traceback="")
        replies.write(json.dumps(env).encode() + b"\n")
        replies.flush()
        return
    replies.write(b'{"ready": true}\n')
    replies.flush()
    run = _forked if isolation == "process" else _run_one
    while True:
        line = requests.readline()
        if not line:
            return
        req = json.loads(line)
        raw = _read_exact(requests, req["n"])
        env, value = run(bs, func, req, raw)
        env["n"] = len(value)
        os.write(1, END)
        replies.write(json.dumps(env).encode() + b"\n")
        replies.write(value)
        replies.flush()


if __name__ == "__main__":
    main()

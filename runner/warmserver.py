# Kinetic's warm worker server: a fork server for the Python bootstrap, so that many short
# jobs with the same interpreter do not each pay for Python's start-up and for importing
# cloudpickle. See docs/warm-workers.md.
#
# Arguments: SOCKET ALIVE_LOCK IDLE_SECONDS READY_FD [BOOTSTRAP [SCRIPT...]]
# (BOOTSTRAP is compiled once here; a job whose script has the same bytes skips compiling.
# Each SCRIPT, the paths requests will name, is prepared at start: _bootstrap_code.)
#
# The server is single-threaded (fork in a threaded process is unsafe): one poll loop
# accepts runners on SOCKET, and for each request forks a child that becomes the job.
#
# Protocol (one connection per job, newline-terminated JSON):
#   runner -> server: one byte b"K" carrying the job's output fd (SCM_RIGHTS), then
#                     {"v": 1, "argv": [BOOTSTRAP, MODE, PAYLOAD, OUT_DIR, ROOT, CWD],
#                      "env": {...}, "cwd": CWD}
#                     With "fds": N, N more fds follow the output fd in the same message:
#                     the child gets them as fds 3 to 3+N-1 (a batch executor's pipes).
#   server -> runner: {"pid": PID} once the child runs in its own session (pgid = PID),
#                     then {"status": RAW_WAIT_STATUS} when it has been reaped;
#                     or {"error": "..."} if no child was started.
# If the runner's end closes while the child runs, the child's process group is killed.
# A spare's call says its status itself, with what the bootstrap handed over (the result
# in the status): {"status": S, "envelope": {...}, "value": BASE64}; then the bootstrap
# wrote no envelope.json (and, with "value", no result.pkl).
#
# A lease (a long-lived runner's next call, taken ahead of it):
#   runner -> server: b"L" (no fds), then {"v": 1, "lease": true}
#   server -> runner: {"leased": PID}: the spare child PID now holds this connection,
#                     or {"error": "..."}.
#   Later the runner sends the job's request on it, exactly as above (b"K" with the fds,
#   then the line), and the spare itself answers {"pid": PID} as it starts the job, or
#   {"error": "..."} if it cannot: nothing started. The statuses follow as above. The
#   server never reads a leased connection; it only sees it close (the runner gone: the
#   spare's group is killed).
#
# A spare child is forked ahead of the next request (Spare, below): it leaves the
# server's sockets and locks, starts its own session and warms up (the copy-on-write
# faults of a first call are paid before the call, not during it), then waits on a
# socketpair for the request the server hands it. It becomes the job exactly as a child
# forked on request would, so nothing of one job reaches another: each job is still a
# fresh fork of the server, only forked earlier. When the job's code has run, the child
# reports its exit code on the socketpair before the process is torn down, and the
# server passes it on as the wait status (the reaping follows).
import array
import base64
import errno
import fcntl
import gc
import json
import os
import select
import signal
import socket
import sys
import time

PROTO = 1
MAX_REQUEST = 64 << 20
MAX_FDS = 4  # extra fds a request may pass (beyond the output)

_SERVER_DIRS = (os.path.dirname(os.path.abspath(__file__)), os.path.dirname(os.path.realpath(__file__)))

# (source bytes, code object) of the bootstrap, compiled once by the server.
_precompiled = (None, None)

# The bootstrap's code object as the copy at a path would compile, by path, with the
# copy's (inode, size, mtime) when the server read it: the server checks a request's
# script with one stat, so its children neither read nor re-file it.
_bootstraps = {}


def _dup_high(fd, low):
    """fd duplicated, close-on-exec, at low or above: out of the way of the fds a job is
    given (3, 4, ...). Under an open-files limit (ulimit -n) at or below low, as high as
    the limit leaves room for."""
    try:
        return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, low)
    except OSError as e:
        if e.errno != errno.EINVAL:
            raise
    import resource
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, max(16, soft - 16) if soft > 32 else 3)


def _bootstrap_code(path):
    """The code of Kinetic's script at path, compiled once here (in the server, once per
    version of the file, checked with one stat after that): the bootstrap, pre-compiled
    at start and re-filed for its path, or the batch executor's script, compiled the
    first time a request names it. None for any other file. A child forked later finds
    it here and compiles nothing: compiling in a fresh fork writes hundreds of pages
    shared with the server, each a copy-on-write fault (14 ms for the executor's 140
    lines on this VM)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    key = (st.st_ino, st.st_size, st.st_mtime_ns)
    hit = _bootstraps.get(path)
    if hit is not None and hit[0] == key:
        return hit[1]
    src, co = _precompiled
    code = None
    try:
        if src is not None and hasattr(co, "replace") and st.st_size == len(src):
            with open(path, "rb") as f:
                if f.read() == src:
                    code = _refile(co, path)
        elif os.path.basename(path).startswith("kinetic_batchexec") and st.st_size < 1 << 20:
            with open(path, "rb") as f:
                code = compile(f.read(), path, "exec")
    except (OSError, SyntaxError, ValueError):
        return None
    if code is None:
        return None
    if len(_bootstraps) > 64:
        _bootstraps.clear()
    _bootstraps[path] = (key, code)
    return code


def _precompile(path):
    global _precompiled
    with open(path, "rb") as f:
        src = f.read()
    _precompiled = (src, compile(src, path, "exec"))


def _refile(co, filename):
    """co with filename as the file of it and of every function in it, as if compiled
    from filename (tracebacks then name the job's own copy)."""
    import types
    consts = tuple(_refile(c, filename) if isinstance(c, types.CodeType) else c for c in co.co_consts)
    return co.replace(co_filename=filename, co_consts=consts)


def _preimport():
    # What the bootstrap and most calls need, imported once here instead of in every job.
    import ast  # noqa: F401
    import atexit  # noqa: F401
    import builtins  # noqa: F401
    import importlib.util  # noqa: F401
    import io  # noqa: F401
    import pickle  # noqa: F401
    import traceback  # noqa: F401
    import types  # noqa: F401
    try:
        import cloudpickle  # noqa: F401
    except Exception:
        pass


def _rehearse_request(line):
    """What a spare does with its request before the job's code runs, done with the
    server's stand-in (_stand_in: the last request's shape, none of its values): parse
    it, and set and unset as many variables. The pages that writes (the parser's
    objects, the environment's array and strings) are copied now, not after the call's
    go-ahead (about 45 copy-on-write faults, a millisecond, on this VM)."""
    if not line:
        return
    req = json.loads(line)
    env = req.get("env")
    if not isinstance(env, dict):
        return
    environ = os.environ
    names = ["KINETIC_WARM_UP_" + k for k in env if isinstance(k, str)]
    for name, v in zip(names, env.values()):
        if isinstance(v, str):
            environ[name] = v
    for name in names:
        environ.pop(name, None)


def _log(msg):
    try:
        sys.stderr.write("kinetic warm server %d: %s\n" % (os.getpid(), msg))
        sys.stderr.flush()
    except Exception:
        pass


_TRACE = os.environ.get("KINETIC_TRACE")


def _mark(phase):
    # The benchmark's phase marks (internal/calltrace): one appended line, if asked for.
    if _TRACE:
        fd = os.open(_TRACE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(fd, ("%d %d %s \n" % (time.time_ns() // 1000, os.getpid(), phase)).encode())
        os.close(fd)


def _stand_in(req, size):
    """A request line shaped like req (its script, as many arguments and variables, about
    its size) that holds none of its values: rehearse() replays it, and whatever the
    server keeps is in every child it forks later, so no job's environment may be."""
    if not isinstance(req, dict) or size > 1 << 20:
        return None
    argv, env = req.get("argv"), req.get("env")
    if not (isinstance(argv, list) and argv and isinstance(argv[0], str) and isinstance(env, dict)):
        return None
    n = max(len(env), 1)
    pad = "x" * max(size // (2 * n) - 8, 1)
    fake = {"v": PROTO, "argv": [argv[0]] + ["x"] * (len(argv) - 1),
            "env": {"K%d" % i: pad for i in range(len(env))}, "cwd": "/"}
    return json.dumps(fake).encode() + b"\n"


class Job(object):
    __slots__ = ("conn", "pid", "ctl", "ctlbuf", "leased")

    def __init__(self, conn, pid, ctl=None, leased=False):
        self.conn = conn
        self.pid = pid
        self.ctl = ctl  # the socketpair of a job run by a spare child (its early exit code)
        self.ctlbuf = b""
        # A leased spare reads its request from conn itself: the server never reads
        # conn, it only watches for it to close.
        self.leased = leased


def _write_all(fd, data):
    """Write all of data to fd, which may be non-blocking (its flag is shared with the
    server's copy of the connection); a closed peer ends it."""
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except (BlockingIOError, InterruptedError):
            select.select([], [fd], [], 5)
            continue
        except OSError:
            return
        view = view[n:]


def _check_request(req, fds):
    """(argv, env, cwd) of a job's request with the fds it came with, or ValueError."""
    if not isinstance(req, dict) or req.get("v") != PROTO:
        raise ValueError("protocol version %r, this server speaks %d" % (
            req.get("v") if isinstance(req, dict) else None, PROTO))
    extra = req.get("fds", 0)
    if not isinstance(extra, int) or not 0 <= extra <= MAX_FDS:
        raise ValueError("bad fds")
    if len(fds) != 1 + extra:
        raise ValueError("expected %d fds, got %d" % (1 + extra, len(fds)))
    argv, env, cwd = req.get("argv"), req.get("env"), req.get("cwd")
    if not (isinstance(argv, list) and len(argv) >= 1 and all(isinstance(a, str) for a in argv)):
        raise ValueError("bad argv")
    if not isinstance(env, dict):
        raise ValueError("bad env")
    if not isinstance(cwd, str):
        raise ValueError("bad cwd")
    return argv, env, cwd


def _read_message(conn, greetings):
    """One message: a greeting byte (one of greetings) with the fds it carries, then a
    JSON line. Returns (greeting, request, fds, line); the fds are closed on error."""
    fds = array.array("i")
    msg, anc, _, _ = conn.recvmsg(1, socket.CMSG_SPACE((MAX_FDS + 1) * fds.itemsize))
    for level, typ, data in anc:
        if level == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
            fds.frombytes(data[:len(data) - (len(data) % fds.itemsize)])
    fds = list(fds)
    try:
        if msg not in greetings:
            raise ValueError("bad greeting %r" % (msg,))
        buf = bytearray()
        while not buf.endswith(b"\n"):
            chunk = conn.recv(1 << 16)
            if not chunk:
                raise ValueError("connection closed mid-request")
            buf += chunk
            if len(buf) > MAX_REQUEST:
                raise ValueError("request too large")
        line = bytes(buf)
        return msg, json.loads(line), fds, line
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise


class Spare(object):
    """A child forked ahead of the next request, waiting on sock for it once it has
    warmed up (it says "R" then)."""
    __slots__ = ("pid", "sock", "ready")

    def __init__(self, pid, sock):
        self.pid = pid
        self.sock = sock
        self.ready = False


def _warm_up():
    """What a call does, done once by a spare child before its call comes: the pages it
    writes (reference counts, caches) are copied now rather than during the call. Only
    modules the server already imported are used; nothing here is visible to the job
    (locals, gone when it returns)."""
    import io
    import json
    src, co = _precompiled
    ns = {"__name__": "kinetic_warm_up"}
    if co is not None:
        exec(co, ns)  # the bootstrap's definitions, as a job's exec makes them
    try:
        import cloudpickle
        dumps, loads = cloudpickle.dumps, cloudpickle.loads
    except Exception:
        return  # an interpreter without cloudpickle runs no pickled calls

    def f(*a, **k):
        return a, k
    func, args, kwargs = loads(dumps((f, (1, "a", None), {"k": [1.5]})))
    value = func(*args, **kwargs)
    env = {"success": False, "host": "0", "has_value": False}
    kept = []
    call = ns.get("call")
    if call is not None:
        call(func, args, kwargs, kept.append, env)
    else:
        kept.append(dumps(value))
    buf = io.StringIO()
    buf.write(json.dumps(env))


class Server(object):
    def __init__(self, path, alive_path, idle):
        self.path = path
        self.alive_path = alive_path
        self.idle = idle
        self.sock = None
        self.alive = None
        self.wake_r = self.wake_w = None
        self.poll = select.poll()
        self.conns = {}     # fd -> Job, for connections whose child is running
        self.children = {}  # pid -> Job
        self.ctls = {}      # fd -> Job, for the socketpairs of jobs run by spare children
        self.spare = None   # Spare, forked ahead of the next request
        self.last = time.monotonic()
        self.ino = None
        self.null = None  # /dev/null, opened once for the children's stdin
        self.rehearsal = None  # a stand-in for the last request (_stand_in): rehearse()

    # --- start and stop -------------------------------------------------------------

    def listen(self):
        self.alive = os.open(self.alive_path, os.O_RDWR | os.O_CREAT, 0o600)
        # A POSIX record lock, not flock: it belongs to this process alone, so it ends
        # with it. A flock would be shared with every child forked before it closes the
        # fd (leave_server), and a server killed right after a fork would keep the next
        # one from starting until that child ran.
        try:
            fcntl.lockf(self.alive, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise RuntimeError("another warm server holds %s" % self.alive_path)
        os.ftruncate(self.alive, 0)
        os.write(self.alive, b"%d\n" % os.getpid())
        try:
            os.unlink(self.path)  # a stale socket of a dead server
        except FileNotFoundError:
            pass
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o077)
        try:
            self.sock.bind(self.path)
        finally:
            os.umask(old)
        self.ino = os.stat(self.path).st_ino
        self.sock.listen(128)
        self.sock.setblocking(False)
        self.poll.register(self.sock.fileno(), select.POLLIN)
        self.null = os.open(os.devnull, os.O_RDONLY)
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda signum, frame: None)
        self.poll.register(self.wake_r, select.POLLIN)

    def reachable(self):
        """Whether our socket is still where runners look for it (its directory may have
        been deleted, or the socket replaced): if not, nobody can reach us."""
        try:
            return os.stat(self.path).st_ino == self.ino
        except OSError:
            return False

    def unlisten(self):
        """Stop taking new runners: remove the socket (if it is still ours) and let
        another server start, then serve what was already queued."""
        if self.sock is None:
            return
        try:
            if os.stat(self.path).st_ino == self.ino:
                os.unlink(self.path)
        except OSError:
            pass
        os.close(self.alive)
        self.alive = None
        self.retire_spare()
        while True:  # connections that were queued before the unlink
            try:
                conn, _ = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                break
            self.handle(conn)
        self.poll.unregister(self.sock.fileno())
        self.sock.close()
        self.sock = None

    def serve(self):
        while True:
            self.reap()
            # A spare is forked while no job runs (a leased spare waiting for its
            # runner's request runs none: it was the spare before).
            if self.spare is None and self.sock is not None and not self.busy():
                self.fork_spare()
            timeout = None
            if not self.children and not self.conns:
                if self.sock is None:
                    return
                left = self.idle - (time.monotonic() - self.last)
                if left <= 0 or not self.reachable():
                    self.unlisten()
                    continue
                timeout = int(min(left, 5.0) * 1000) + 1
            try:
                events = self.poll.poll(timeout)
            except InterruptedError:
                continue
            for fd, ev in events:
                if self.sock is not None and fd == self.sock.fileno():
                    self.accept()
                elif fd in self.ctls:
                    self.ctl_event(fd)
                elif fd == self.wake_r:
                    try:
                        while os.read(self.wake_r, 512):
                            pass
                    except (BlockingIOError, InterruptedError):
                        pass
                else:
                    self.runner_event(fd, ev)

    def busy(self):
        """Whether a child runs a job. A leased spare counts as idle: it waits for its
        runner's next call, and the server cannot see when that comes."""
        return any(not job.leased for job in self.children.values())

    # --- jobs -----------------------------------------------------------------------

    def accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                _log("accept: %s" % e)
                return
            self.last = time.monotonic()
            _mark("warmsrv.accepted")
            self.handle(conn)

    def handle(self, conn):
        fds = []
        try:
            conn.setblocking(True)
            conn.settimeout(10)
            greeting, req, fds = self.read_request(conn)
            if greeting == b"L":
                if fds or not isinstance(req, dict) or req.get("v") != PROTO or req.get("lease") is not True:
                    raise ValueError("bad lease")
                self.lease(conn)
                return
            argv, env, cwd = _check_request(req, fds)
        except Exception as e:
            for fd in fds:
                os.close(fd)
            self.reply(conn, {"error": "bad request: %s" % (e,)})
            conn.close()
            return
        _mark("warmsrv.read")
        self.spawn(conn, fds, argv, env, cwd)

    def read_request(self, conn):
        greeting, req, fds, line = _read_message(conn, (b"K", b"L"))
        if greeting == b"K":
            self.rehearsal = _stand_in(req, len(line))
        return greeting, req, fds

    def lease(self, conn):
        """Give the spare (a new one if there is none) to the runner on conn for its next
        call: the spare takes conn and reads the request from it itself, one hop and one
        wake-up of this server fewer on that call's path. The spare is a fresh fork that
        ran nothing, as for any request."""
        if self.spare is None:
            self.fork_spare()
        spare, self.spare = self.spare, None
        if spare is None:
            self.reply(conn, {"error": "no spare child"})
            conn.close()
            return
        try:
            spare.sock.settimeout(5)
            spare.sock.sendmsg([b"L"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [conn.fileno()]))])
        except OSError as e:
            _log("spare %d: %s" % (spare.pid, e))
            self.kill_spare(spare)
            self.reply(conn, {"error": "handing the spare over: %s" % (e,)})
            conn.close()
            return
        spare.sock.setblocking(False)
        job = self.adopt(conn, spare, leased=True)
        # Its "R" (warmed up) may still come before its exit code: ctl_event skips it.
        job.ctlbuf = b"" if spare.ready else None
        if not self.reply(conn, {"leased": spare.pid}):
            self.runner_gone(job)
            return
        self.watch_runner(job, select.POLLRDHUP)

    def adopt(self, conn, spare, leased=False):
        """The Job of spare, now running (or leased to) the runner on conn: reaped as a
        child, its exit code read from its socketpair."""
        job = Job(conn, spare.pid, spare.sock, leased=leased)
        self.children[spare.pid] = job
        self.ctls[spare.sock.fileno()] = job
        self.poll.register(spare.sock.fileno(), select.POLLIN)
        return job

    def watch_runner(self, job, events=select.POLLIN):
        """Watch job's runner connection: its close kills the job (runner_event)."""
        job.conn.setblocking(False)
        self.conns[job.conn.fileno()] = job
        self.poll.register(job.conn.fileno(), events)

    def reply(self, conn, msg):
        try:
            conn.sendall(json.dumps(msg).encode() + b"\n")
            return True
        except OSError:
            return False

    def spawn(self, conn, fds, argv, env, cwd):
        """Run a request in a child: the spare if there is one, else a new fork. fds are
        the output and the extra fds, closed here once the child has them."""
        boot = _bootstrap_code(argv[0])  # in the server too: later spares inherit the check
        # Only a spare that has warmed up takes a request: waiting for one would hold up
        # every runner (the server is single-threaded); the others fork as before.
        spare = self.spare if self.spare_ready() else None
        _mark("warmsrv.spare" if spare is not None else "warmsrv.nospare")
        if spare is not None:
            self.spare = None
            if self.hand(spare, fds, argv, env, cwd, conn):
                for fd in fds:
                    os.close(fd)
                job = self.adopt(conn, spare)
                # The runner hears the pid before the spare may start (go()), so a job
                # that ends at once cannot report before it.
                if not self.reply(conn, {"pid": spare.pid}):
                    self.runner_gone(job)
                    return
                _mark("warmsrv.replied")
                if not self.go(spare):
                    self.runner_gone(job)  # it never runs: reap() reports it to no one
                    return
                self.watch_runner(job)
                return
            self.kill_spare(spare)
        sys.stdout.flush()
        sys.stderr.flush()
        ready_r, ready_w = os.pipe()
        try:
            pid = os.fork()
        except OSError as e:
            os.close(ready_r)
            os.close(ready_w)
            for fd in fds:
                os.close(fd)
            self.reply(conn, {"error": "fork: %s" % e})
            conn.close()
            return
        if pid == 0:
            code = 70
            try:
                os.close(ready_r)
                code = self.child(conn, fds, ready_w, argv, env, cwd, boot)
            except BaseException:
                try:
                    import traceback
                    traceback.print_exc()
                except BaseException:
                    pass
            finally:
                os._exit(code)
        os.close(ready_w)
        for fd in fds:
            os.close(fd)
        try:
            os.read(ready_r, 1)  # EOF once the child runs in its own session
        except OSError:
            pass
        os.close(ready_r)
        job = Job(conn, pid)
        self.children[pid] = job
        if not self.reply(conn, {"pid": pid}):
            self.runner_gone(job)
            return
        self.watch_runner(job)

    # --- spare children -------------------------------------------------------------

    def fork_spare(self):
        """Fork a spare child for the next request (nothing if the fork fails: requests
        then fork on arrival, as without spares)."""
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        except OSError as e:
            _log("socketpair: %s" % e)
            return
        try:
            pid = os.fork()
        except OSError as e:
            _log("fork: %s" % e)
            ours.close()
            theirs.close()
            return
        if pid == 0:
            code = 70
            try:
                ours.close()
                code = self.spare_child(theirs)
            except BaseException:
                try:
                    import traceback
                    traceback.print_exc()
                except BaseException:
                    pass
            finally:
                os._exit(code)
        theirs.close()
        self.spare = Spare(pid, ours)
        self.rehearse()

    def rehearse(self):
        """Take the last request again, up to the reply, through a socketpair of our own,
        right after a fork. Until then every page the server writes is shared with the
        child just forked, and the first write to each is a copy-on-write fault: about
        25 microseconds in a virtual machine, and a request's path writes some hundred
        pages (its objects' reference counts, the allocator's pools). Rehearsed now,
        between calls, the faults are paid here rather than on the next call's path."""
        line = self.rehearsal
        if line is None:
            return
        try:
            a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        except OSError:
            return
        null = None
        try:
            null = os.open(os.devnull, os.O_RDONLY)
            a.sendmsg([b"K"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [null]))])
            a.sendall(line)
            b.setblocking(True)
            b.settimeout(1)
            _, req, fds = self.read_request(b)
            for fd in fds:
                os.close(fd)
            json.dumps({"argv": req["argv"], "env": req["env"], "cwd": req["cwd"], "runner": 1}).encode()
            _bootstrap_code(req["argv"][0])
            self.reply(b, {"pid": 1})
            b.setblocking(False)
        except Exception:
            pass
        finally:
            if null is not None:
                os.close(null)
            a.close()
            b.close()

    def spare_ready(self):
        """Whether the spare has warmed up and waits (without waiting for it)."""
        spare = self.spare
        if spare is None or spare.ready:
            return spare is not None
        try:
            b = spare.sock.recv(1, socket.MSG_DONTWAIT)
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:
            b = b""
        if b == b"R":
            spare.ready = True
            return True
        self.spare = None  # gone (reap() collects it) or confused
        self.kill_spare(spare)
        return False

    def hand(self, spare, fds, argv, env, cwd, conn):
        """Hand a request to spare; True once it holds it (it runs it after go()). No
        reply is awaited: the spare is alive and waiting (spare_ready), and a round trip
        to it would be one more wake-up on every call's path. The runner's connection
        goes with it (the last fd): the job's process tells the runner its exit code
        itself, one hop less than through this server (which says it too, after)."""
        try:
            spare.sock.settimeout(5)
            msg = json.dumps({"argv": argv, "env": env, "cwd": cwd, "runner": len(fds)}).encode() + b"\n"
            spare.sock.sendmsg([b"J"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds + [conn.fileno()]))])
            spare.sock.sendall(msg)
        except OSError as e:
            _log("spare %d: %s" % (spare.pid, e))
            return False
        return True

    def go(self, spare):
        """Let a spare that holds its request run it. Only the whole request and this "G"
        start it, so a spare given up on in hand() never runs it (the request then goes
        to a new child: a job never runs twice)."""
        try:
            spare.sock.sendall(b"G")
        except OSError as e:
            _log("spare %d: %s" % (spare.pid, e))
            return False
        spare.sock.setblocking(False)
        return True

    def kill_spare(self, spare):
        """Stop a spare that did not take its request (reap() collects it)."""
        try:
            os.kill(spare.pid, signal.SIGKILL)
        except OSError:
            pass
        spare.sock.close()

    def retire_spare(self):
        """No more requests: the spare exits when its socket closes."""
        spare, self.spare = self.spare, None
        if spare is not None:
            spare.sock.close()

    def ctl_event(self, fd):
        """A spare child's job reports its exit code ("X" CODE newline) as it finishes; the
        runner gets it as the wait status (an exit code, as waitpid would say) at once,
        and the process is reaped when it is gone."""
        job = self.ctls.get(fd)
        if job is None:
            return
        try:
            data = job.ctl.recv(64)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if job.ctlbuf is None:  # a leased spare's "R" (warmed up) comes first
            job.ctlbuf = b""
            if data.startswith(b"R"):
                data = data[1:]
                if not data:
                    return
        if data:
            job.ctlbuf += data
            if not job.ctlbuf.endswith(b"\n") and len(job.ctlbuf) < 64:
                return  # the rest of the line comes
        data, job.ctlbuf = job.ctlbuf, b""
        self.drop_ctl(job)
        if not data.startswith(b"X") or not data.endswith(b"\n"):
            return  # gone without saying (killed, crashed): reap() reports its status
        try:
            code = int(data[1:-1]) & 0xFF
        except ValueError:
            return
        try:
            os.killpg(job.pid, signal.SIGKILL)  # whatever the job left behind
        except OSError:
            pass
        if job.conn is not None:
            job.conn.setblocking(True)
            job.conn.settimeout(5)
            self.reply(job.conn, {"status": code << 8})
            self.drop_conn(job)

    def forget(self, sock, table):
        """Stops polling sock (if table still holds it) and closes it."""
        fd = sock.fileno()
        if table.pop(fd, None) is not None:
            self.poll.unregister(fd)
        sock.close()

    def drop_ctl(self, job):
        if job.ctl is None:
            return
        self.forget(job.ctl, self.ctls)
        job.ctl = None

    def runner_event(self, fd, ev):
        job = self.conns.get(fd)
        if job is None:
            return
        if job.leased:
            # Its spare reads it: only its close is ours to see.
            if ev & (select.POLLRDHUP | select.POLLHUP | select.POLLERR):
                self.runner_gone(job)
            return
        try:
            data = job.conn.recv(4096)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:  # the runner (or its supervisor) is gone: its job goes too
            self.runner_gone(job)

    def runner_gone(self, job):
        if job.pid in self.children:
            try:
                os.killpg(job.pid, signal.SIGKILL)
            except OSError:
                pass
        self.drop_conn(job)

    def drop_conn(self, job):
        if job.conn is None:
            return
        self.forget(job.conn, self.conns)
        job.conn = None
        self.last = time.monotonic()

    def reap(self):
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                self.children.clear()
                return
            except InterruptedError:
                continue
            if pid == 0:
                return
            if self.spare is not None and pid == self.spare.pid:
                self.spare.sock.close()  # died waiting: the next request forks
                self.spare = None
                continue
            job = self.children.pop(pid, None)
            if job is None:
                continue
            self.drop_ctl(job)
            try:
                os.killpg(pid, signal.SIGKILL)  # whatever the job left behind
            except OSError:
                pass
            if job.conn is not None:
                job.conn.setblocking(True)
                job.conn.settimeout(5)
                self.reply(job.conn, {"status": status})
                self.drop_conn(job)
            self.last = time.monotonic()

    # --- the child: becomes the job ---------------------------------------------------

    def leave_server(self):
        """In a child: drop everything of the server's (its sockets, locks, the other
        jobs' connections) and start a session of our own (pgid = pid: signals reach the
        job). Returns /dev/null's fd, if the server had it open."""
        os.setsid()
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for fd in (self.wake_r, self.wake_w, self.alive):
            if fd is not None:
                os.close(fd)
        null, self.null = self.null, None
        if self.sock is not None:
            self.sock.close()
        for job in list(self.conns.values()) + list(self.ctls.values()):
            for s in (job.conn, job.ctl):
                if s is not None:
                    s.close()
        if self.spare is not None:
            self.spare.sock.close()
        self.conns = self.children = self.ctls = self.spare = self.rehearsal = None
        return null

    def spare_child(self, sock):
        """A spare child: leave the server, warm up, wait for a request, run it."""
        stand_in = self.rehearsal  # leave_server forgets it
        null = self.leave_server()
        # Its socket well above the fds a job is given (3, 4, ...: become).
        high = _dup_high(sock.fileno(), 200)
        sock.close()
        sock = socket.socket(fileno=high)
        try:
            _warm_up()
            _rehearse_request(stand_in)
        except BaseException as e:
            _log("spare warm-up: %s" % (e,))
        sock.settimeout(None)
        try:
            sock.sendall(b"R")
        except OSError:
            return 0
        fds = array.array("i")
        try:
            msg, anc, _, _ = sock.recvmsg(1, socket.CMSG_SPACE((MAX_FDS + 2) * fds.itemsize))
        except OSError:
            return 0
        for level, typ, data in anc:
            if level == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
                fds.frombytes(data[:len(data) - (len(data) % fds.itemsize)])
        if msg == b"L" and len(fds) == 1:
            return self.leased_child(sock, fds[0], null)
        if msg != b"J" or not fds:
            return 0  # the server is gone, or retired us
        # The request's line, then "G" (go): without it the server gave up on us and runs
        # the job elsewhere.
        buf = bytearray()
        while b"\n" not in buf:
            chunk = sock.recv(1 << 16)
            if not chunk:
                return 0
            buf += chunk
        line, _, rest = bytes(buf).partition(b"\n")
        if not rest:
            try:
                rest = sock.recv(1)
            except OSError:
                return 0
        if rest != b"G":
            return 0
        _mark("spare.go")
        req = json.loads(line)
        fds = list(fds)
        runner = None
        if isinstance(req.get("runner"), int) and 0 <= req["runner"] < len(fds):
            # The runner's connection, out of the job's way (as our socket is).
            fd = fds.pop(req["runner"])
            runner = _dup_high(fd, 200)
            os.close(fd)
        return self.run_job(sock, runner, null, fds, req["argv"], req["env"], req["cwd"])

    def leased_child(self, sock, fd, null):
        """A spare leased to a runner: fd is the runner's connection. The request comes on
        it (as it would to the server), and the answer {"pid"} goes back on it as the job
        starts; until then nothing has run, and a bad request or a closed connection ends
        this child having run nothing."""
        runner = _dup_high(fd, 200)
        os.close(fd)
        conn = socket.socket(fileno=os.dup(runner))
        # In timeout mode, which polls before each read: the connection's blocking flag
        # is shared with the server's copy of it, which the server sets as it pleases.
        conn.settimeout(1e6)
        try:
            _, req, fds, _ = _read_message(conn, (b"K",))
        except (OSError, ValueError):
            return 0  # the runner went away, or sent nothing we can run
        try:
            argv, env, cwd = _check_request(req, fds)
        except ValueError as e:
            for fd in fds:
                os.close(fd)
            try:
                conn.sendall(json.dumps({"error": "bad request: %s" % (e,)}).encode() + b"\n")
            except OSError:
                pass
            return 0
        try:
            conn.sendall(b'{"pid": %d}\n' % os.getpid())
        except OSError:
            for fd in fds:
                os.close(fd)
            return 0
        conn.close()  # the dup only: the runner's fd stays, for the exit code
        _mark("spare.go")
        return self.run_job(sock, runner, null, fds, argv, env, cwd)

    def run_job(self, sock, runner, null, fds, argv, env, cwd):
        """Become the job; once its code has run, tell the runner (on the fd runner, if
        any) and the server (on sock) its exit code, and the runner what the bootstrap
        handed over (its envelope and small value) with it."""
        me = os.getpid()
        handed = []

        def report(envelope, value):
            if os.getpid() == me:  # the job's own process, not one it forked
                handed[:] = [(envelope, value)]

        code = self.become(null, fds, argv, env, cwd, _bootstrap_code(argv[0]),
                           report if runner is not None else None)
        if os.getpid() != me:
            return code  # a process the job forked, returning from it: not the job's end
        # Done: say so before the process is torn down (its output is closed first, so
        # the runner has all of it when it hears the code).
        for f in (sys.stdout, sys.stderr):
            try:
                f.flush()
            except BaseException:
                pass
        try:
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
        except OSError:
            pass
        if runner is not None:
            # The runner heard the pid before we were let go (the server replied first).
            line = b'{"status": %d' % ((code & 0xFF) << 8)
            if handed:
                envelope, value = handed[0]
                line += b', "envelope": ' + envelope.encode()
                if value is not None:
                    line += b', "value": "' + base64.b64encode(value) + b'"'
            _write_all(runner, line + b"}\n")
        try:
            sock.sendall(b"X%d\n" % code)
        except OSError:
            pass
        return code

    def child(self, conn, fds, ready_w, argv, env, cwd, code=None):
        null = self.leave_server()
        os.close(ready_w)
        conn.close()
        return self.become(null, fds, argv, env, cwd, code)

    def become(self, null, fds, argv, env, cwd, code, report=None):
        """In a child that left the server: take the job's output (fds[0]) as fds 1 and
        2, the extra fds as 3, 4, ..., the job's environment and working directory, and
        run it. report, if given, is what the bootstrap hands its result to."""
        # Out of the way first: a target number may hold one of them (or /dev/null).
        high = [_dup_high(fd, 100) for fd in fds]
        for fd in fds:
            os.close(fd)
        if null is None:
            null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        if null > 2:
            os.close(null)
        os.dup2(high[0], 1)
        os.dup2(high[0], 2)
        for i, fd in enumerate(high[1:]):
            os.dup2(fd, 3 + i)
        for fd in high:
            os.close(fd)
        # The job's environment, exactly: only what differs from the server's is changed
        # (most of it is the same, and every change is a putenv).
        environ = os.environ
        for k in [k for k in environ if k not in env]:
            del environ[k]
        for k, v in env.items():
            if environ.get(k) != v:
                environ[k] = v
        if hasattr(time, "tzset"):
            time.tzset()
        os.chdir(cwd)
        # The batch executor imports the bootstrap as a module: it asks here for the
        # code the server compiled (_load_bootstrap in batchexec.py).
        import types
        sys.modules["_kinetic_warm"] = types.SimpleNamespace(script_code=_bootstrap_code, report=report)
        return run_main(argv, code)


def run_main(argv, precompiled=None):
    """Run argv[0] as __main__, as `python argv[0] argv[1:]...` would, then finalise the
    way the interpreter does at exit (threads, atexit) and return the exit code.
    precompiled, if given, is argv[0]'s code (the server checked the file's bytes)."""
    import builtins
    import types
    sys.argv = list(argv)
    if sys.path and sys.path[0] in _SERVER_DIRS:
        sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
    main = types.ModuleType("__main__")
    main.__file__ = argv[0]
    main.__builtins__ = builtins
    main.__cached__ = None
    sys.modules["__main__"] = main
    code = 0
    try:
        if precompiled is not None:
            co = precompiled
        else:
            with open(argv[0], "rb") as f:
                src = f.read()
            if src == _precompiled[0] and hasattr(_precompiled[1], "replace"):
                co = _refile(_precompiled[1], argv[0])
            else:
                co = compile(src, argv[0], "exec")
        exec(co, main.__dict__)
    except SystemExit as e:
        code = _exit_code(e.code)
    except BaseException:
        import traceback
        traceback.print_exc()
        code = 1
    try:
        threading = sys.modules.get("threading")
        if threading is not None and hasattr(threading, "_shutdown"):
            threading._shutdown()
    except BaseException:
        pass
    try:
        import atexit
        atexit._run_exitfuncs()
    except BaseException:
        pass
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except BaseException:
            pass
    return code


def _exit_code(c):
    if c is None:
        return 0
    if isinstance(c, int):
        return c & 0xFF
    try:
        sys.stderr.write("%s\n" % (c,))
    except BaseException:
        pass
    return 1


def main():
    path, alive_path, idle, ready_fd = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
    srv = Server(path, alive_path, idle)
    try:
        _preimport()
        if len(sys.argv) > 5:
            _precompile(sys.argv[5])
        for path in sys.argv[6:]:  # the scripts requests will name: compiled now, once
            _bootstrap_code(path)
        gc.collect()
        if hasattr(gc, "freeze"):  # keep the children's garbage collector off the shared heap
            gc.freeze()
        srv.listen()
    except BaseException as e:
        try:
            os.write(ready_fd, ("error: %s\n" % (e,)).encode())
        except OSError:
            pass
        raise
    os.write(ready_fd, b"ready\n")
    os.close(ready_fd)
    _log("listening on %s (python %s, idle timeout %gs)" % (path, sys.version.split()[0], idle))
    srv.serve()
    _log("idle, exiting")


if __name__ == "__main__":
    main()

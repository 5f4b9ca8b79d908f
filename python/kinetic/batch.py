"""Batches: one function fanned out over many inputs (``f.run_async_map``), observed and
collected from any process with ``kinetic.attach_batch``. Submission, retries and
fail-fast run in the engine; this module reads the batch's state and collects results."""

import keyword
import math
import os
import queue
import struct
import sys
import tempfile
import time
from typing import Any, Dict, Iterator, List, Optional

from . import _check
from ._engine import _exception, engine
from ._seconds import seconds, wire
from .exceptions import EngineDiedError, KineticError, ResultCollectedError
from .job_status import JobStatus
from .jobs import INLINE_MAX, JobHandle, _fault_point, _unpack, acknowledge


class BatchError(KineticError):
    """Raised by BatchHandle.results() when children failed.

    ``failures`` holds the handles of the children that were submitted and then failed
    (never None, as the reference's: ``job.job_id`` and ``job.status()`` are always safe
    on its items); ``submission_failures`` maps the index of each input whose submission
    failed to its exception (those inputs never became jobs); ``partial_results`` holds
    the results, with None at failed positions. ``errors`` (index -> exception), when
    given, adds the first few causes to the message: a damaged or missing object is named
    there, not only in the failed position."""

    def __init__(self, group_id: str, failures: List[JobHandle], partial_results: List[Any],
                 submission_failures: Optional[Dict[int, Exception]] = None, *,
                 errors: Optional[Dict[int, BaseException]] = None):
        submission_failures = dict(submission_failures or {})
        failed = len(errors) if errors else len(failures) + len(submission_failures)
        msg = "batch %s: %d of %d inputs failed" % (group_id, failed, len(partial_results))
        shown = sorted(errors or {})[:3]
        for i in shown:
            e = errors[i]
            first = (str(e).strip().splitlines() or [""])[0]
            msg += "\n  input %d: %s%s" % (i, type(e).__name__, ": " + first[:300] if first else "")
        if errors and len(errors) > len(shown):
            msg += "\n  (and %d more; return_exceptions=True gives each)" % (len(errors) - len(shown))
        super().__init__(msg)
        self.group_id = group_id
        self.failures = [h for h in failures if h is not None]
        self.partial_results = partial_results
        self.submission_failures = submission_failures


class SubmissionError(KineticError):
    """An input that could not be submitted (recorded at its index)."""


class BatchHandle:
    """Handle for a collection of submitted jobs (see the API reference's BatchHandle)."""

    def __init__(self, group_id: str, name: Optional[str] = None, tags: Optional[Dict[str, str]] = None,
                 store: str = "", poll_interval: float = 10.0, poll_timeout: Optional[float] = None,
                 local_failures: Optional[Dict[int, Exception]] = None, total: Optional[int] = None):
        f = "BatchHandle"
        _check.string(group_id, f, "group_id", optional=False)
        _check.string(name, f, "name")
        tags = _check.str_dict(tags, f, "tags")
        _check.string(store, f, "store", optional=False)
        if local_failures is not None and not isinstance(local_failures, dict):
            _check.fail_type(f, "local_failures", "a dict of input index to exception, or None", local_failures)
        _check.integer(total, f, "total", minimum=0, optional=True)
        self.group_id = group_id
        self.name = name
        self.tags = tags
        # One slot per input, None until the input is submitted (or if it failed to be).
        self._jobs: List[Optional[JobHandle]] = [None] * (total or 0)
        self._refreshed = 0.0
        self._store = store
        self._total = total
        self._complete = False
        self._statuses: List[Optional[JobStatus]] = []
        # The reason of each child's last status ("cancelled" after cancel()).
        self._reasons: Dict[int, str] = {}
        self._submission_errors: Dict[int, Exception] = {}
        self._local_failures = dict(local_failures or {})
        self._cached_failures: Optional[List[JobHandle]] = None
        # What results(cleanup=True) received: (values, index -> exception, indices whose
        # value was received). A transient error (a timeout, the engine gone) is not kept
        # there as the input's answer: the next results() asks for that input again.
        self._collected = None
        self._unavailable_ids: Dict[int, str] = {}
        # The last watch reported every input (with its handle or why it has none).
        self._watched_all = False
        # Results that came with the watch's reports (index -> (job ID, result)), for
        # results() to use instead of reading them again: small values only.
        self._watched_results: Dict[int, Any] = {}
        self._config: Dict[str, str] = {}  # project/cluster of attach_batch, until the store is known
        # None or inf: no limit (the interval then is the 1 s cap of _abandoned).
        interval = seconds(poll_interval, "BatchHandle", "poll_interval")
        self._poll_interval = math.inf if interval is None else interval
        poll_timeout = seconds(poll_timeout, "BatchHandle", "poll_timeout")
        self._poll_deadline = None if poll_timeout is None else time.time() + poll_timeout

    # -- state ---------------------------------------------------------------------
    def _refresh(self, status=True):
        v = engine().call("batch", {"group_id": self.group_id, "store": self._store, "status": status,
                                    "config": self._config})
        self.name = v.get("name") or self.name
        self.tags = v.get("tags") or self.tags
        self._store = v.get("store") or self._store
        self._total = v.get("total_expected", 0)
        self._complete = bool(v.get("submission_complete"))
        n = max(self._total, len(v.get("statuses") or []))
        jobs: List[Optional[JobHandle]] = [None] * n
        statuses: List[Optional[JobStatus]] = [None] * n
        unavailable_ids: Dict[int, str] = {}
        for c in v.get("statuses") or []:
            i = c["index"]
            if c.get("handle"):
                jobs[i] = JobHandle.from_dict(c["handle"])
            elif c.get("job_id"):
                # Submitted, but its handle cannot be read now: keep the handle this
                # process had (attach() of it says why), and say so.
                jobs[i] = self._jobs[i] if i < len(self._jobs) else None
                unavailable_ids[i] = c["job_id"]
            if c.get("status") and (c.get("handle") or c.get("job_id")):
                # A child cleaned up after its result was collected may have lost its
                # handle; its status (NOT_FOUND) is still reported, as the API says.
                statuses[i] = JobStatus(c["status"])
                self._reasons[i] = c.get("reason") or ""
            if c.get("submission_error") and not c.get("handle"):
                self._submission_errors[i] = self._local_failures.get(i) or SubmissionError(c["submission_error"])
        for i, e in self._local_failures.items():
            if i < n:
                self._submission_errors[i] = e
        self._jobs, self._statuses = jobs, statuses
        self._unavailable_ids = unavailable_ids
        self._refreshed = time.time()
        return v

    @property
    def jobs(self) -> List[Optional[JobHandle]]:
        """One slot per input: its JobHandle, or None while it is not submitted yet and
        for an input whose submission failed (see ``submission_failures``). While the
        batch is still being submitted, reading it looks again (at most twice a second)."""
        if self._total is None or (not self._complete and time.time() - self._refreshed > 0.5):
            self._refresh(status=False)
        return self._jobs

    @property
    def unavailable_children(self) -> Dict[int, str]:
        """Inputs that were submitted but whose job cannot be read now (index -> job ID, as
        the reference's): cleaned up after their result was collected, removed, or
        damaged (results() says which, per input). Their ``jobs`` slot keeps the handle
        this process had, if any."""
        self._refresh(status=False)
        return dict(self._unavailable_ids)

    @property
    def submission_failures(self) -> Dict[int, Exception]:
        """Per-input submission errors (index -> exception); those jobs[i] are None."""
        if self._total is None:
            self._refresh(status=False)
        return dict(self._submission_errors)

    def statuses(self):
        """(index, JobStatus) for each submitted job."""
        self._refresh()
        return [(i, s) for i, s in enumerate(self._statuses) if s is not None]

    def status_counts(self) -> Dict[str, int]:
        """How many jobs are in each status."""
        counts: Dict[str, int] = {}
        for _, s in self.statuses():
            counts[s.value] = counts.get(s.value, 0) + 1
        return counts

    def wait(self, *, timeout: Optional[float] = None) -> None:
        """Block until every job is terminal (and submission is over). ``timeout=0`` does
        not wait: it returns if the batch has ended, else raises TimeoutError at once."""
        timeout = self._now(seconds(timeout, "wait", "timeout"))
        try:
            for _ in self._watch(timeout):
                pass
        except KeyboardInterrupt:
            raise self._left_running() from None

    def _now(self, timeout):
        """timeout=0, "now" (as concurrent.futures): the batch is looked at once; if every
        input has ended, the wait goes on without a limit (there is nothing left to wait
        for, only values to read), else TimeoutError at once. Any other timeout is kept."""
        if timeout != 0:
            return timeout
        self._refresh(status=True)
        pending = [i for i, (h, s) in enumerate(zip(self._jobs, self._statuses))
                   if h is not None and (s is None or not s.terminal)]
        unsubmitted = [i for i, h in enumerate(self._jobs) if h is None and i not in self._submission_errors]
        if pending or unsubmitted or not self._complete:
            raise TimeoutError("batch %s: %d of %d inputs have not finished (timeout=0: not waited for); it keeps "
                               "running: wait again with a timeout, or cancel it"
                               % (self.group_id, len(pending) + len(unsubmitted), len(self._jobs)))
        return None

    def _left_running(self):
        """Ctrl-C while waiting on the batch: the batch was not started by this wait, so
        it keeps running; say so, with how to pick it up again or stop it. Returns the
        KeyboardInterrupt to raise (it names the batch)."""
        g = self.group_id
        done = sum(1 for s in self._statuses if s is not None and s.terminal)
        total = self._total if self._total is not None else len(self._jobs)
        sys.stderr.write("\nkinetic: stopped waiting for batch %s (%d of %d finished); it keeps running.\n"
                         "kinetic: re-attach: kinetic.attach_batch(%r).results(), or `kinetic batch status %s`; "
                         "stop it: `kinetic batch cancel %s`\n" % (g, done, total, g, g, g))
        sys.stderr.flush()
        return KeyboardInterrupt("batch %s left running" % g)

    def as_completed(self, *, poll_interval: float = 5.0, timeout: Optional[float] = None) -> Iterator[JobHandle]:
        """Yield jobs as they reach a terminal state, in completion order, even while
        inputs are still being submitted. (The engine watches the batch and reports each
        child once; poll_interval bounds how long a quiet wait lasts between checks.)"""
        seconds(poll_interval, "as_completed", "poll_interval")
        return self._as_completed(self._now(seconds(timeout, "as_completed", "timeout")))

    def _as_completed(self, timeout):
        # A generator of its own: as_completed() checks its arguments when called.
        try:
            for c in self._watch(timeout):
                if c.get("handle"):
                    yield self._jobs[c["index"]]
        except KeyboardInterrupt:
            raise self._left_running() from None

    def _watch(self, timeout, values=False):
        """Child reports from the engine as they come (submission failures included).
        values=True asks for each child's result with its report, when its value is at
        most INLINE_MAX bytes (results() then reads only the others)."""
        deadline = None if timeout is None else time.time() + timeout
        q: "queue.Queue" = queue.Queue()
        eng = engine()
        seen = set()
        self._next_check = 0.0
        self._watched_all = False
        # The reply comes after the last event, on the same thread: it ends the queue, so
        # the last report is not followed by a wait for more.
        # batched: one message per round of the watch, not one per input (a thread
        # handing each to this one was most of a large map's time here).
        params = {"group_id": self.group_id, "store": self._store, "batched": True}
        if values:
            params["inline_max"] = INLINE_MAX

        def on_event(name, data):
            if name == "children" and isinstance(data, dict):
                q.put(data.get("children") or [])
            elif name == "child":
                q.put([data])

        rid, pending = eng.start("batch_watch", params, on_event=on_event, on_reply=lambda msg: q.put(None))
        ready = []  # reports received and not yet handed on
        try:
            while True:
                if ready:
                    c = ready.pop()
                    seen.add(c["index"])
                    self._record(c)
                    yield c
                    continue
                left = None if deadline is None else deadline - time.time()
                if left is not None and left <= 0:
                    raise TimeoutError("batch %s: not finished after %ss" % (self.group_id, timeout))
                try:
                    c = q.get(timeout=0.2 if left is None else min(0.2, left))
                    if c is None:
                        eng.finish(rid, pending)  # raises the watch's error, if any
                        self._watched_all = len(seen) == self._total
                        return
                    ready = c[::-1]  # popped from the end: in the order sent
                    continue
                except queue.Empty:
                    if pending.event.is_set() and q.empty():
                        eng.finish(rid, pending)  # raises the watch's error, if any
                        return
                    if self._abandoned(seen):
                        # The submitter stopped before submitting everything (poll_timeout
                        # passed): every submitted child is final; the rest never will be.
                        for c in self._leftovers(seen):
                            self._record(c)
                            yield c
                        return
                    continue
        finally:
            if not pending.event.is_set():
                eng.cancel(rid)

    def _abandoned(self, seen):
        """After poll_timeout, with submission still incomplete: True once every child
        that was submitted is final (checked at most every poll_interval)."""
        if self._complete or self._poll_deadline is None or time.time() < self._poll_deadline:
            return False
        if time.time() < self._next_check:
            return False
        self._next_check = time.time() + min(self._poll_interval, 1.0)
        self._refresh(status=True)
        if self._complete:
            return False  # finished meanwhile: the engine's watch reports the rest
        return all(s is not None and s.terminal for i, (h, s) in enumerate(zip(self._jobs, self._statuses))
                   if h is not None and i not in seen)

    def _leftovers(self, seen):
        """Reports for the inputs the engine's watch has not reported: the final submitted
        children, and the inputs that were never submitted."""
        for i in range(len(self._jobs)):
            if i in seen:
                continue
            h = self._jobs[i]
            if h is not None:
                yield {"index": i, "handle": h.to_dict(), "status": self._statuses[i].value}
            elif i not in self._submission_errors:
                yield {"index": i, "submission_error":
                       "input %d was never submitted: batch %s's submission stopped before reaching it "
                       "(no progress after poll_timeout)" % (i, self.group_id)}
            else:
                yield {"index": i, "submission_error": str(self._submission_errors[i])}

    def _record(self, c):
        i = c["index"]
        while len(self._jobs) <= i:
            self._jobs.append(None)
        while len(self._statuses) <= i:
            self._statuses.append(None)
        if c.get("handle"):
            self._jobs[i] = JobHandle.from_dict(c["handle"])
            self._statuses[i] = JobStatus(c["status"])
            self._reasons[i] = c.get("reason") or ""
            if c.get("result") is not None:
                self._watched_results[i] = (c["handle"].get("job_id"), c["result"])
        elif c.get("submission_error"):
            self._submission_errors[i] = self._local_failures.get(i) or SubmissionError(c["submission_error"])

    def results(self, *, timeout: Optional[float] = None, ordered: bool = True, cleanup: bool = True,
                return_exceptions: bool = False) -> List[Any]:
        """Collect every result. Failed positions hold the exception with
        return_exceptions=True; otherwise BatchError is raised if anything failed.
        ``timeout`` None or ``float('inf')`` waits without limit."""
        timeout = seconds(timeout, "results", "timeout")
        for param, value in (("ordered", ordered), ("cleanup", cleanup), ("return_exceptions", return_exceptions)):
            _check.boolean(value, "results", param)
        if self._collected is not None and not self._retry_indices():
            timeout = None  # collected by this handle already: nothing to wait for
        else:
            timeout = self._now(timeout)
        start = time.time()
        bar = _Bar("batch %s" % self.group_id, lambda: max(self._total or 0, len(self._jobs)))
        order: List[int] = []
        try:
            try:
                for c in self._watch(timeout, values=True):
                    order.append(c["index"])
                    bar.update(len(order), failed=c.get("status") == "FAILED")
            finally:
                bar.close()  # before any message
            return self._collect(order, start, timeout, ordered, cleanup, return_exceptions)
        except KeyboardInterrupt:
            raise self._left_running() from None

    def _collect(self, order, start, timeout, ordered, cleanup, return_exceptions):
        """results() once every child is final: read their values in one request, then
        (cleanup=True) acknowledge them, which cleans the successful children up. A
        handle that collected once answers again from what it received."""
        if self._collected is not None and not self._retry_indices():
            values, errors, _ = self._collected
        else:
            values, errors = self._read_all(start, timeout, cleanup)
        failed_handles = [self._jobs[i] for i in sorted(errors) if i < len(self._jobs) and self._jobs[i] is not None]
        never = {i: e for i, e in errors.items() if i >= len(self._jobs) or self._jobs[i] is None}
        self._cached_failures = list(failed_handles)
        taken = {i: e for i, e in errors.items() if isinstance(e, ResultCollectedError)}
        if taken:
            raise ResultCollectedError.for_batch(self.group_id, taken, len(values), values)
        if errors and not return_exceptions:
            raise BatchError(self.group_id, failed_handles, list(values), never, errors=errors)
        out = list(values)
        for i, e in errors.items():
            out[i] = e
        if ordered:
            return out
        seq = [i for i in order if i >= 0] + [i for i in range(len(out)) if i not in set(order)]
        return [out[i] for i in seq]

    def _read_all(self, start, timeout, cleanup):
        """Every child's value or why it has none (index -> exception), read in one
        request; the successes are acknowledged (and so cleaned up) only once they are
        all in this process."""
        if not (self._watched_all and len(self._jobs) == self._total and all(
                h is not None or i in self._submission_errors for i, h in enumerate(self._jobs))):
            # The watch did not report every child with its handle: ask for them all.
            self._refresh(status=False)
        n = len(self._jobs)
        values: List[Any] = [None] * n
        errors: Dict[int, BaseException] = dict(self._submission_errors)
        ids = {i: h.job_id for i, h in enumerate(self._jobs) if h is not None and i not in errors}
        # A child whose handle cannot be read is asked for all the same: the engine says
        # why (collected by another caller, removed, damaged), never a silent None.
        ids.update({i: jid for i, jid in self._unavailable_ids.items() if i not in errors})
        received_before = set()
        if self._collected is not None:
            # A results() before received some values (and acknowledged them: their jobs
            # are gone now) and kept its lasting errors: only the inputs it could not read
            # then (a timeout, the engine gone) are asked for again.
            prev_values, prev_errors, prev_received = self._collected
            for i in list(ids):
                if i in prev_received:
                    values[i] = prev_values[i]
                    received_before.add(i)
                    del ids[i]
                elif i in prev_errors and not _transient(prev_errors[i]):
                    errors[i] = prev_errors[i]
                    del ids[i]
        # The results the watch brought need no second read; the others are read in one
        # request.
        watched = {i: r for i, (jid, r) in self._watched_results.items() if ids.get(i) == jid}
        todo = [i for i in sorted(ids) if i not in watched]
        replies = []
        if todo:
            remaining = None if timeout is None else max(0.1, timeout - (time.time() - start))
            replies = engine().call("results_many", {
                "job_ids": [ids[i] for i in todo], "store": self._store,
                "value_dir": tempfile.gettempdir(), "inline_max": INLINE_MAX, "timeout": wire(remaining)})
        received = []
        for i, r in list(zip(todo, replies)) + sorted(watched.items()):
            try:
                if r.get("error"):
                    raise _exception(r["error"])
                values[i] = _unpack(r, ids[i])
                received.append(ids[i])
            except Exception as e:  # the child's own exception, or why it has none
                errors[i] = e
        if cleanup:
            _fault_point("results:before-ack")
            # Not waited for, as a sync call's: the engine claims them before it reads
            # this process's next request (and before it exits), and what another
            # collector took first is theirs either way.
            acknowledge(self._store, received, wait=False)
            self._collected = (values, errors, received_before | {i for i, jid in ids.items() if jid in set(received)})
        return values, errors

    def _retry_indices(self):
        """The inputs a results(cleanup=True) before could not read for a passing reason."""
        if self._collected is None:
            return []
        return [i for i, e in self._collected[1].items() if _transient(e)]

    def failures(self) -> List[JobHandle]:
        """Handles of the jobs that FAILED (cached by results(), which may clean up). A job
        cancel() stopped is not one: it reads FAILED with the reason "cancelled" in
        statuses(), and is left out here, as the reference leaves out its cancelled jobs
        (NOT_FOUND there) (docs/parity.md)."""
        if self._cached_failures is not None:
            return list(self._cached_failures)
        return [self._jobs[i] for i, s in self.statuses()
                if s == JobStatus.FAILED and not self._reasons.get(i, "").startswith("cancelled")]

    def cancel(self) -> None:
        """Stop submitting and cancel every unfinished job."""
        engine().call("batch_cancel", {"group_id": self.group_id, "store": self._store})

    def cleanup(self, *, k8s: bool = True, gcs: bool = True) -> None:
        """Clean up every child; with gcs=True the group manifest goes too."""
        _check.boolean(k8s, "cleanup", "k8s")
        _check.boolean(gcs, "cleanup", "gcs")
        engine().call("batch_cleanup", {"group_id": self.group_id, "store": self._store, "k8s": k8s, "gcs": gcs})

    def __len__(self):
        if self._total is None:
            self._refresh(status=False)
        return self._total

    def __repr__(self):
        return "BatchHandle(group_id=%r, name=%r, jobs=%d)" % (self.group_id, self.name, len(self._jobs))


def _transient(e):
    """An error that says nothing lasting about an input (a wait that ran out, the engine
    gone): not kept as its answer."""
    return isinstance(e, (TimeoutError, EngineDiedError, KeyboardInterrupt))


def attach_batch(group_id: str, project: Optional[str] = None, cluster: Optional[str] = None,
                 poll_interval: float = 10.0, poll_timeout: Optional[float] = None,
                 store: Optional[str] = None) -> BatchHandle:
    """Reattach to a batch by group_id, from any process or machine that reaches its store.
    While the original submitter is still adding children, the handle keeps reading the
    manifest (up to poll_timeout seconds)."""
    _check.string(group_id, "attach_batch", "group_id", optional=False)
    for param, value in (("project", project), ("cluster", cluster), ("store", store)):
        _check.string(value, "attach_batch", param)
    seconds(poll_interval, "attach_batch", "poll_interval")
    seconds(poll_timeout, "attach_batch", "poll_timeout")
    b = BatchHandle(group_id, store=store or "", poll_interval=poll_interval, poll_timeout=poll_timeout)
    b._config = {k: v for k, v in (("project", project), ("cluster", cluster)) if v}
    b._refresh(status=False)
    return b


_INPUTS_MAGIC = b"KNINPUT1"


def _frame(payloads):
    """The inputs file, in the encoding of the store's groups/ID/inputs.bin (docs/store.md):
    "KNINPUT1", the number of inputs n, n+1 offsets (8-byte big-endian, from the end of the
    table) and the inputs. The engine copies it to the store as it is, reading one input at
    a time where it needs them, so it never holds every input (issue 48)."""
    f = tempfile.NamedTemporaryFile(prefix="kinetic-inputs-", suffix=".bin", delete=False)
    offsets, off = [], 0
    for p in payloads:
        offsets.append(off)
        off += len(p)
    offsets.append(off)
    with f:
        f.write(_INPUTS_MAGIC + struct.pack(">Q", len(payloads)))
        f.write(struct.pack(">%dQ" % len(offsets), *offsets))
        for p in payloads:
            f.write(p)
    return f.name


def normalise_input(x, mode):
    if mode == "single":
        return (x,), {}
    if mode == "args":
        if not isinstance(x, (tuple, list)):
            raise TypeError("input_mode='args' needs a tuple or list per input, got %r" % (type(x).__name__,))
        return tuple(x), {}
    if mode == "kwargs":
        if not isinstance(x, dict):
            raise TypeError("input_mode='kwargs' needs a dict per input, got %r" % (type(x).__name__,))
        return (), dict(x)
    if mode == "auto":
        # A list or tuple is spread as positional arguments; a dict whose keys are all
        # identifiers and none a Python keyword as keyword arguments (as the reference's
        # is_valid_kwargs_dict); anything else (a dict keyed by other things included) is
        # the one argument.
        if isinstance(x, (tuple, list)):
            return tuple(x), {}
        if isinstance(x, dict) and all(isinstance(k, str) and k.isidentifier() and not keyword.iskeyword(k) for k in x):
            return (), dict(x)
        return (x,), {}
    raise ValueError("input_mode must be 'auto', 'single', 'args' or 'kwargs', not %r" % (mode,))


def _dur(secs):
    """A duration as the bar shows it: 45s, 3m12s, 1h4m."""
    secs = int(secs)
    if secs < 60:
        return "%ds" % secs
    if secs < 3600:
        return "%dm%ds" % (secs // 60, secs % 60)
    return "%dh%dm" % (secs // 3600, secs % 3600 // 60)


class _Bar:
    """A one-line progress bar on stderr while results() waits, on a terminal only (in a
    pipe or a log it says nothing), in Kinetic's one style (the CLI's and the engine's,
    internal/bar): "kinetic: WHAT: N ok, M failed  50% |████    | (5/10) [2s:2s]", the
    time so far and the time left. KINETIC_QUIET=1 turns it off."""

    WIDTH = 24

    def __init__(self, what, total):
        self._what, self._total = what, total
        self._on = sys.stderr.isatty() and os.environ.get("KINETIC_QUIET", "") in ("", "0")
        self._last = 0.0
        self._start = time.time()
        self._failed = 0
        self._drawn = False

    def update(self, done, failed=False):
        self._failed += bool(failed)
        if not self._on:
            return
        try:
            self._draw(done)
        except Exception:  # a bar must never break results()
            self._on = False

    def _draw(self, done):
        now = time.time()
        total = self._total() or done
        if now - self._last < 0.1 and done < total:
            return
        self._last = now
        fill = int(self.WIDTH * done / max(total, 1))
        what = self._what
        if done:
            what = "%s: %d ok, %d failed" % (what, done - self._failed, self._failed)
        elapsed = now - self._start
        left = elapsed * (total - done) / done if done else 0
        sys.stderr.write("\r\x1b[2Kkinetic: %s %3d%% |%s%s| (%d/%d) [%s:%s]" % (
            what, 100 * done // max(total, 1), "█" * fill, " " * (self.WIDTH - fill), done, total,
            _dur(elapsed), _dur(left)))
        sys.stderr.flush()
        self._drawn = True

    def close(self):
        if self._drawn:
            sys.stderr.write("\r\x1b[2K")
            sys.stderr.flush()

"""Exceptions raised by the SDK: one hierarchy, rooted at KineticError.

    KineticError                      anything Kinetic reports (bad input, unreachable store, ...)
      InvalidArgumentError (ValueError) a value the engine refused (an unknown accelerator or
                                      backend, a bad store URL, namespace, image, ...)
      PermissionDeniedError (PermissionError) the store, registry or cluster refused the
                                      credentials (a bucket's IAM, a read-only directory)
      ResourceExhaustedError          a disk, quota or limit is full (a full store, a cloud quota)
      UnavailableError (ConnectionError) a service did not answer; trying later may work
      EngineDiedError                 the engine exited during a call; a job it had submitted
                                      runs on (job_id names it: collect it with attach)
      JobNotFoundError (LookupError)  the job ID names no job in the store
        ResultCollectedError          its result was collected by another caller, then cleaned up
      SubmissionError                 a job or batch could not be submitted
      RemoteError (RuntimeError)      a job ended without a value: its exception could not be
                                      rebuilt here, or it was killed, cancelled or lost
      BatchError                      BatchHandle.results(): some inputs failed

A remote exception whose class is importable here is re-raised as itself (a ValueError
stays a ValueError), with the remote traceback attached. ``result(timeout=...)`` raises
the built-in TimeoutError; the job keeps running.
"""


class KineticError(Exception):
    """An error reported by Kinetic (bad input, unreachable store, ...)."""


class InvalidArgumentError(KineticError, ValueError):
    """A value the engine refused before anything was created or submitted (the
    protocol's InvalidArgument): an unknown accelerator or backend, a bad store URL,
    namespace, container image, ... It is a ValueError, as the SDK's own checks of a
    parameter raise."""


class PermissionDeniedError(KineticError, PermissionError):
    """The store, image registry or cluster refused this machine's credentials (the
    protocol's PermissionDenied): a bucket's IAM, a read-only file store. The message
    names what refused and the fix."""


class ResourceExhaustedError(KineticError):
    """A disk, quota or limit is full (the protocol's ResourceExhausted): a full store
    directory, a cloud quota. The message names which."""


class UnavailableError(KineticError, ConnectionError):
    """A service did not answer (the protocol's Unavailable): a store or registry that is
    down or cannot be reached. Trying again later may work."""


class EngineDiedError(KineticError):
    """The kinetic engine (the ``kinetic serve`` subprocess) exited during a call. When
    the call had submitted a job, ``job_id`` names it and ``handle`` is its JobHandle:
    the job runs on without the engine, and ``kinetic.attach(job_id).result()``
    collects its value (calling the function again would run it twice). A retry of a
    read (``result()``, ``results()``) starts a new engine."""

    def __init__(self, message, job_id=None, handle=None):
        super().__init__(message)
        self.job_id = job_id
        self.handle = handle


class JobNotFoundError(KineticError, LookupError):
    """The job ID names no job in the store."""


class ResultCollectedError(JobNotFoundError):
    """The result was collected (and the job then cleaned up) by another caller:
    ``collected_by`` names that process ("pid 4242 on host-a (alice)") and
    ``collected_at`` says when (RFC 3339). Collect with ``cleanup=False`` to leave
    results for other callers. From ``BatchHandle.results()``, ``partial_results`` holds
    what this call could still read (None elsewhere) and ``indices`` the inputs taken."""

    def __init__(self, message, collected_by="", collected_at="", indices=(), partial_results=None):
        super().__init__(message)
        self.collected_by = collected_by
        self.collected_at = collected_at
        self.indices = list(indices)
        self.partial_results = partial_results

    @classmethod
    def for_batch(cls, group_id, taken, total, partial_results):
        """One error for the inputs of batch group_id that other callers collected
        (index -> ResultCollectedError)."""
        first = taken[min(taken)]
        who = sorted({e.collected_by or "another process" for e in taken.values()})
        return cls("batch %s: the results of %d of %d inputs were collected by %s at %s and then cleaned up, "
                   "so this call cannot return them (collect with results(cleanup=False) to leave results "
                   "for other callers)" % (group_id, len(taken), total, " and ".join(who), first.collected_at or "?"),
                   first.collected_by, first.collected_at, sorted(taken), partial_results)


class ResultUnreadableError(KineticError, RuntimeError):
    """A job's stored result could not be read back (a truncated or damaged file, or a class
    this Python cannot import). It is a RuntimeError, as the reference raises there."""


class RemoteError(KineticError, RuntimeError):
    """A job that ended without a value and without an exception that can be raised here.

    Raised when the function failed with an exception that cannot be unpickled on this
    machine (for example, its class is not importable here), and when the job was killed,
    cancelled, or lost its worker. ``exc_type`` names the
    remote type; ``remote_traceback`` holds the remote traceback.
    """

    def __init__(self, exc_type, message, remote_traceback="", phase=""):
        super().__init__("%s: %s" % (exc_type, message))
        self.exc_type = exc_type
        self.remote_traceback = remote_traceback
        self.remote_phase = phase

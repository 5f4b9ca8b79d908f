"""Exceptions raised by the SDK: one hierarchy, rooted at KineticError.

    KineticError                      anything Kinetic reports (bad input, unreachable store, ...)
      JobNotFoundError (LookupError)  the job ID names no job in the store
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


class JobNotFoundError(KineticError, LookupError):
    """The job ID names no job in the store."""


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

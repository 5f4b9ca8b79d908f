"""Exceptions raised by the SDK."""


class KineticError(Exception):
    """An error reported by the Kinetic engine (bad input, unreachable store, ...)."""


class JobNotFoundError(KineticError, LookupError):
    """The job ID names no job in the store."""


class RemoteError(Exception):
    """A remote exception whose type could not be rebuilt here.

    Raised when the function failed with an exception that cannot be unpickled on this
    machine (for example, its class is not importable here). ``exc_type`` names the
    remote type; ``remote_traceback`` holds the remote traceback.
    """

    def __init__(self, exc_type, message, remote_traceback="", phase=""):
        super().__init__("%s: %s" % (exc_type, message))
        self.exc_type = exc_type
        self.remote_traceback = remote_traceback
        self.remote_phase = phase

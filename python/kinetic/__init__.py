"""Kinetic: run a Python function on a TPU, GPU or CPU somewhere else and get the value back.

    import kinetic

    @kinetic.run(accelerator="cpu")
    def add(a, b):
        return a + b

    assert add(1, 2) == 3

All orchestration happens in the ``kinetic`` Go binary; this package pickles calls,
talks to it (docs/protocol.md) and unpickles what comes back.
"""

from . import collections, debug, job_status
from ._decorator import RemoteFunction, run

# The documented name of what @kinetic.run returns; RemoteFunction is the same class.
RemoteCallable = RemoteFunction
from .exceptions import (EngineDiedError, InvalidArgumentError, JobNotFoundError, KineticError, PermissionDeniedError,
                         RemoteError, ResourceExhaustedError, ResultCollectedError, ResultUnreadableError,
                         UnavailableError)
from .job_status import JobStatus
from .batch import BatchError, BatchHandle, attach_batch
from .data import Data
from .jobs import JobHandle, attach, list_jobs

__version__ = "0.1.0"

__all__ = ["run", "attach", "attach_batch", "list_jobs", "JobHandle", "BatchHandle", "BatchError", "Data",
           "JobStatus", "RemoteCallable", "RemoteFunction", "KineticError", "InvalidArgumentError", "EngineDiedError",
           "JobNotFoundError", "ResultCollectedError", "ResultUnreadableError", "RemoteError",
           "PermissionDeniedError", "ResourceExhaustedError", "UnavailableError", "job_status", "debug", "collections"]

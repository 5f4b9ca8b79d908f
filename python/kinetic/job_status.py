"""The observable status of a remote job."""

from enum import Enum


class JobStatus(Enum):
    """Observable status of a remote job (the same meaning on every backend)."""

    PENDING = "PENDING"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    NOT_FOUND = "NOT_FOUND"

    @property
    def terminal(self) -> bool:
        return self in (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.NOT_FOUND)

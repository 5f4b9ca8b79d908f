"""Collections of jobs: ``kinetic.collections.map(submit_fn, inputs, ...)`` fans one
decorated function out over many inputs and returns a BatchHandle, as
``submit_fn.run_async_map(inputs, ...)`` does."""

from typing import Any, Dict, Iterable, Optional

from .batch import BatchHandle


def map(submit_fn, inputs: Iterable[Any], *, input_mode: str = "auto", max_concurrent: int = 64,
        retries: int = 0, fail_fast: bool = False, cancel_running_on_fail: bool = False,
        name: Optional[str] = None, tags: Optional[Dict[str, str]] = None,
        project: Optional[str] = None, cluster: Optional[str] = None) -> BatchHandle:
    """Submit ``submit_fn`` once per input and return the BatchHandle of the collection.

    ``submit_fn`` is a function (or a method of an instance) decorated with
    ``@kinetic.run``, or its ``run_async``.
    The keyword arguments are those of ``run_async_map``: ``input_mode`` ("auto" spreads
    a list or tuple as positional arguments and a dict with identifier keys as keyword
    arguments), ``max_concurrent``, ``retries``, ``fail_fast``, ``cancel_running_on_fail``,
    ``name``, ``tags``, ``project`` and ``cluster``."""
    from ._decorator import RemoteFunction, _BoundRemote

    remote = submit_fn
    if not isinstance(remote, (RemoteFunction, _BoundRemote)) and getattr(submit_fn, "__name__", "") == "run_async":
        remote = getattr(submit_fn, "__self__", None)  # f.run_async
    if not isinstance(remote, (RemoteFunction, _BoundRemote)):
        raise TypeError("kinetic.collections.map(submit_fn=...) must be a function decorated with @kinetic.run "
                        "(or its .run_async), not %r; decorate it first: kinetic.run(accelerator=...)(fn)"
                        % (submit_fn,))
    return remote.run_async_map(inputs, input_mode=input_mode, max_concurrent=max_concurrent, retries=retries,
                                fail_fast=fail_fast, cancel_running_on_fail=cancel_running_on_fail,
                                name=name, tags=tags, project=project, cluster=cluster)

"""A hyper-parameter sweep: one job per setting with run_async_map, failures handled.

Shows: run_async_map(inputs, max_concurrent=...) returning a BatchHandle, dict inputs spread
as keyword arguments, as_completed() to watch jobs finish, results() raising BatchError when
an input failed (its partial_results and failures), and results(return_exceptions=True).
Needs: nothing beyond this machine (the local backend).
Run:   PYTHONPATH=python python3 examples/sweep.py
"""

import kinetic


@kinetic.run(accelerator="cpu")
def evaluate(lr, batch_size):
    if lr <= 0:
        raise ValueError(f"lr must be positive, got {lr}")
    # A stand-in for training: the loss a made-up model would reach.
    return round((lr - 0.01) ** 2 * 1000 + 32 / batch_size, 4)


if __name__ == "__main__":
    grid = [{"lr": lr, "batch_size": bs} for lr in (0.001, 0.01, 0.1, 0.0) for bs in (32, 64)]
    batch = evaluate.run_async_map(grid, max_concurrent=4, name="lr-sweep", tags={"example": "sweep"})
    print(f"batch {batch.group_id}: {len(grid)} inputs")
    for job in batch.as_completed(poll_interval=0.5, timeout=600):
        print(f"  input {job.group_index} finished: {job.status().value}")
    try:
        batch.results(timeout=600, cleanup=False)  # raises: lr=0.0 fails
    except kinetic.BatchError as e:
        print(f"{len(e.failures)} of {len(grid)} inputs failed:")
        for h in e.failures:
            print(f"  input {h.group_index} {grid[h.group_index]}")
        losses = {i: r for i, r in enumerate(e.partial_results) if r is not None}
    values = batch.results(return_exceptions=True)  # the exception in each failed slot
    assert all(isinstance(v, ValueError) for v in values[6:]) and len(losses) == 6, values
    best = min(losses, key=losses.get)
    print(f"best: {grid[best]} loss {losses[best]}")
    assert grid[best] == {"lr": 0.01, "batch_size": 64}

"""Forwarding environment variables to the job with capture_env_vars.

Shows: names and prefix patterns ("EXAMPLE_*") captured on this machine when the job is
submitted and set in the job (overriding the job's own). In a pod nothing else is forwarded
(EXAMPLE_NOT_CAPTURED is None there); on the local backend the job also inherits the
environment of this machine's kinetic processes, so a variable not captured may show too.
Needs: nothing beyond this machine (the local backend).
Run:   EXAMPLE_TOKEN=abc PYTHONPATH=python python3 examples/env_vars.py
"""

import os

import kinetic


@kinetic.run(accelerator="cpu", capture_env_vars=["EXAMPLE_TOKEN", "EXAMPLE_WANDB_*"])
def read_env():
    return {k: os.environ.get(k) for k in ("EXAMPLE_TOKEN", "EXAMPLE_WANDB_PROJECT", "EXAMPLE_NOT_CAPTURED")}


if __name__ == "__main__":
    os.environ.setdefault("EXAMPLE_TOKEN", "token-from-this-machine")
    os.environ["EXAMPLE_WANDB_PROJECT"] = "sweeps"
    os.environ["EXAMPLE_NOT_CAPTURED"] = "stays here"
    seen = read_env()
    print("the job saw:", seen)
    assert seen["EXAMPLE_TOKEN"] == os.environ["EXAMPLE_TOKEN"] and seen["EXAMPLE_WANDB_PROJECT"] == "sweeps", seen
    # Captured values are taken at submission: a change made now reaches the next job.
    os.environ["EXAMPLE_WANDB_PROJECT"] = "sweeps-2"
    assert read_env()["EXAMPLE_WANDB_PROJECT"] == "sweeps-2"
    print("a captured variable changed here reaches the next job")

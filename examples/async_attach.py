"""Async jobs: submit, walk away, and collect the result from another process.

Shows: run_async() returning a JobHandle, handle.job_id, kinetic.attach(job_id) in a second
process (here a child process of this script; any machine with the same store will do),
status(), tail() and result() on the attached handle.
Needs: nothing beyond this machine (the local backend).
Run:   PYTHONPATH=python python3 examples/async_attach.py            # submits, then attaches
       PYTHONPATH=python python3 examples/async_attach.py JOB_ID     # attaches to JOB_ID only
"""

import os
import subprocess
import sys
import time

import kinetic


@kinetic.run(accelerator="cpu")
def slow_square(x):
    for i in range(3):
        print(f"working {i + 1}/3", flush=True)
        time.sleep(0.5)
    return x * x


def attach_and_collect(job_id):
    handle = kinetic.attach(job_id)
    print(f"attached to {handle.job_id} ({handle.func_name}): {handle.status().value}")
    value = handle.result(timeout=300)  # waits; cleans the job up once collected
    print(f"result of {job_id}: {value}")
    return value


if __name__ == "__main__":
    if len(sys.argv) > 1:
        attach_and_collect(sys.argv[1])
        sys.exit(0)
    handle = slow_square.run_async(7)  # returns at once
    print(f"submitted {handle.job_id}; this process will not wait for it")
    # Another process (another terminal, another machine) needs only the job id.
    out = subprocess.run([sys.executable, os.path.abspath(__file__), handle.job_id],
                         check=True, capture_output=True, text=True).stdout
    print(out, end="")
    assert f"result of {handle.job_id}: 49" in out

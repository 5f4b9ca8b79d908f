"""A synchronous call: the decorated function runs as a job and the call returns its value.

Shows: @kinetic.run, a blocking call, the job's print() streamed back, the return value.
Needs: nothing beyond this machine (the local backend).
Run:   PYTHONPATH=python python3 examples/sdk_add.py
       (with the kinetic binary on PATH or in KINETIC_BIN; nothing configured runs the job on
       this machine, the local backend. On a cluster, pick an accelerator such as "l4".)
"""

import kinetic


@kinetic.run(accelerator="cpu")
def add(a, b):
    print("adding", a, "and", b)
    return a + b


if __name__ == "__main__":
    assert add(1, 2) == 3
    print("add(1, 2) == 3")

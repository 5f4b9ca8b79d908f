"""The README's first job: run with `go run ./cmd/kinetic run examples/hello.py::main`."""

import platform
import time


def add(a, b):
    return a + b


def main(n=3):
    for i in range(n):
        print(f"step {i + 1}/{n} on {platform.node()} (Python {platform.python_version()})", flush=True)
        time.sleep(0.2)
    return {"sum": add(1, 2), "steps": n}

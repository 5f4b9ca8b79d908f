"""the API reference's first example, through the Python SDK (PYTHONPATH=python python3 examples/sdk_add.py)."""

import kinetic


@kinetic.run(accelerator="cpu")
def add(a, b):
    print("adding", a, "and", b)
    return a + b


if __name__ == "__main__":
    assert add(1, 2) == 3
    print("add(1, 2) == 3")

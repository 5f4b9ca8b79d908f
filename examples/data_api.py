"""Data: a local directory (and a gs:// prefix) arrive in the job as plain paths.

Shows: kinetic.Data for a local directory and a local file as arguments, Data in
volumes= mounted at a fixed path, and, when a gs:// URI is given, Data("gs://bucket/prefix/")
downloaded for the job (a trailing slash means a directory). The function only sees paths.
Needs: nothing beyond this machine; a gs:// URI needs the network and Google
       credentials (or the emulator).
Run:   PYTHONPATH=python python3 examples/data_api.py [gs://BUCKET/PREFIX/]
       (gs:// reads Google Cloud Storage with your credentials, or the emulator named by
       STORAGE_EMULATOR_HOST.)
"""

import os
import sys
import tempfile

import kinetic
from kinetic import Data


def count_lines(path):
    """Lines in a file, or in every file under a directory."""
    if os.path.isfile(path):
        with open(path) as f:
            return sum(1 for _ in f)
    return sum(count_lines(os.path.join(d, n)) for d, _, names in os.walk(path) for n in names)


@kinetic.run(accelerator="cpu")
def describe(dataset, config):
    with open(config) as f:
        setting = f.read().strip()
    return {"dataset_is_dir": os.path.isdir(dataset), "lines": count_lines(dataset), "config": setting}


@kinetic.run(accelerator="cpu", volumes={"/data": Data(os.path.join(os.path.dirname(os.path.abspath(__file__)), "data_api.py"))})
def read_volume():
    # volumes= puts the data at the path named, whatever the machine.
    return count_lines("/data")


@kinetic.run(accelerator="cpu")
def lines_in(prefix):
    return count_lines(prefix)


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(os.path.join(tmp, "dataset", "part"))
        for name, n in (("a.txt", 3), (os.path.join("part", "b.txt"), 2)):
            with open(os.path.join(tmp, "dataset", name), "w") as f:
                f.write("row\n" * n)
        with open(os.path.join(tmp, "config.txt"), "w") as f:
            f.write("lr=0.01\n")
        got = describe(Data(os.path.join(tmp, "dataset")), Data(os.path.join(tmp, "config.txt")))
    print("local data:", got)
    assert got == {"dataset_is_dir": True, "lines": 5, "config": "lr=0.01"}, got
    print("volume /data lines:", read_volume())
    if len(sys.argv) > 1:
        print(f"lines under {sys.argv[1]}:", lines_in(Data(sys.argv[1])))

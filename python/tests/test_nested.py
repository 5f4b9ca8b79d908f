"""A decorated function called inside a job runs its body there (the API reference: it is
pickled as the plain function), whether it travels by value (a script's function) or is
imported in the job with its module."""

import os
import pickle
import subprocess
import sys

import cloudpickle

import kinetic
from conftest import PYTHON_DIR


@kinetic.run(accelerator="cpu")
def inner(x):
    return ("inner ran in", os.environ.get("KINETIC_JOB_ID", "")[:4], x * 2)


def test_decorated_function_pickles_as_the_plain_function():
    plain = pickle.loads(cloudpickle.dumps(inner))
    assert not isinstance(plain, kinetic.RemoteCallable)
    assert plain(2)[2] == 4


SCRIPT = """
import kinetic

@kinetic.run(accelerator="cpu")
def inner(x):
    import os
    return ("inner", bool(os.environ.get("KINETIC_JOB_ID")), x * 2, type(inner).__name__)

@kinetic.run(accelerator="cpu")
def outer(x):
    return inner(x)

print(outer(21))
print(len(kinetic.list_jobs()))
"""


def test_nested_call_runs_in_the_job(tmp_path):
    (tmp_path / "nested.py").write_text(SCRIPT)
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    r = subprocess.run([sys.executable, "nested.py"], cwd=str(tmp_path), capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    # inner ran inside outer's job (KINETIC_JOB_ID set there), as a plain function.
    assert lines[-2] == "('inner', True, 42, 'function')", lines


HELPERS = """
import kinetic

@kinetic.run(accelerator="cpu")
def inner(x):
    import os
    return ("inner", bool(os.environ.get("KINETIC_JOB_ID")), x * 2)
"""

MAIN = """
import kinetic
import helpers

@kinetic.run(accelerator="cpu")
def outer(x):
    return helpers.inner(x)

print(outer(5))
"""


def test_nested_call_of_an_imported_decorated_function(tmp_path):
    (tmp_path / "helpers.py").write_text(HELPERS)
    (tmp_path / "main.py").write_text(MAIN)
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    r = subprocess.run([sys.executable, "main.py"], cwd=str(tmp_path), capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "('inner', True, 10)", r.stdout
    # One job, not two: inner ran inside outer's.
    assert r.stderr.count("submitted") <= 1

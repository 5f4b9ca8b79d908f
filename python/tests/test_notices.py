"""Notices that would be the same for every job are said once per session, in words that
fit where the job runs: a dropped jax on the local backend does not speak of a container,
and a GPU job run on the CPU says so."""

import os
import subprocess
import sys

from conftest import PYTHON_DIR

SCRIPT = """
import kinetic

@kinetic.run(accelerator="gpu-h100")
def f(x):
    return x + 1

print(f(1), f(2), f(3))
"""


def test_notices_once_and_in_local_words(tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "requirements.txt").write_text("jax==0.4.25\n")
    (proj / "job.py").write_text(SCRIPT)
    # The local backend chosen explicitly: with nothing configured a GPU job is refused.
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR, KINETIC_BACKEND="local")
    r = subprocess.run([sys.executable, "job.py"], cwd=str(proj), capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "2 3 4"
    err = r.stderr
    assert err.count("ignoring 1 accelerator runtime requirement") == 1, err
    assert "container" not in err.split("ignoring 1 accelerator runtime requirement")[1].split("\n")[0], err
    assert err.count("runs gpu-h100 jobs on this machine's CPU") == 1, err

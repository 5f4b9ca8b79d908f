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


KUBE_SCRIPT = """
import kinetic

@kinetic.run(accelerator="cpu")
def f(x):
    return x + 1

try:
    f(1)
except kinetic.KineticError as e:
    print("ERROR", type(e).__name__, e)
"""


def test_kubeconfig_first_in_the_sdk(tmp_path):
    """A Kubernetes backend with no kubeconfig is said to lack one before anything else is
    asked for (an image registry), and nothing is written to the store: the same check
    `kinetic run` makes, now in planning, so the SDK's calls get it too."""
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "job.py").write_text(KUBE_SCRIPT)
    store = tmp_path / "store"
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR, KINETIC_BACKEND="k8s", KUBECONFIG=str(tmp_path / "no-kubeconfig"),
               KINETIC_STORE="file://" + str(store), KINETIC_IMAGE_REGISTRY="")
    r = subprocess.run([sys.executable, "job.py"], cwd=str(proj), capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    out = r.stdout.strip()
    assert out.startswith("ERROR "), out
    assert "backend k8s (env KINETIC_BACKEND) runs jobs on a Kubernetes cluster" in out, out
    assert "registry" not in out, out
    assert not store.exists(), "the store was created"

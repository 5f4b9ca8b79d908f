"""End-to-end tests of the Python SDK against the real kinetic binary, the file store and
the local backend. The binary is $KINETIC_BIN, or built from this repository once per
session."""

import os
import subprocess
import sys
import tempfile

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYTHON_DIR = os.path.join(REPO, "python")


def _build_binary():
    out = os.path.join(tempfile.mkdtemp(prefix="kinetic-pytest-"), "kinetic")
    env = dict(os.environ, CGO_ENABLED="0")
    subprocess.run(["go", "build", "-o", out, "./cmd/kinetic"], cwd=REPO, env=env, check=True)
    return out


@pytest.fixture(scope="session", autouse=True)
def kinetic_home(tmp_path_factory):
    """A private KINETIC_HOME (store, local state) and profiles file for the session."""
    home = tmp_path_factory.mktemp("kinetic-home")
    if not os.environ.get("KINETIC_BIN"):
        os.environ["KINETIC_BIN"] = _build_binary()
    os.environ["KINETIC_HOME"] = str(home)
    os.environ["KINETIC_PROFILES_FILE"] = str(home / "profiles.json")
    # KINETIC_PROJECT would choose GKE for every job (a configured project means GKE).
    for k in ("KINETIC_STORE", "KINETIC_BACKEND", "KINETIC_PROFILE", "KINETIC_PROJECT"):
        os.environ.pop(k, None)
    return home


@pytest.fixture
def store_dir(kinetic_home):
    return os.path.join(str(kinetic_home), "store")


@pytest.fixture
def run_script(tmp_path):
    """Run a Python script in a fresh interpreter with the SDK importable."""

    def run(source, timeout=120, check=True):
        path = tmp_path / "script.py"
        path.write_text(source)
        env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
        p = subprocess.run([sys.executable, str(path)], cwd=str(tmp_path), env=env, capture_output=True,
                           text=True, timeout=timeout)
        if check and p.returncode != 0:
            raise AssertionError("script failed (%d):\n%s\n%s" % (p.returncode, p.stdout, p.stderr))
        return p

    return run

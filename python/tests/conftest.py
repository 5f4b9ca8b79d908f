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
    # KINETIC_PROJECT (or GOOGLE_CLOUD_PROJECT) would choose GKE for every job (a project
    # means GKE).
    for k in ("KINETIC_STORE", "KINETIC_BACKEND", "KINETIC_PROFILE", "KINETIC_PROJECT", "GOOGLE_CLOUD_PROJECT"):
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


def logged_ends(store_dir, gid):
    """The envelopes of batch gid's inputs as the store holds them: the files in its
    results/, and the lines of its workers' logs in ends/ (docs/store.md, "A batch's
    ends") less those removed. {index: envelope JSON text}."""
    out = {}
    ends = os.path.join(store_dir, "groups", gid, "ends")
    removed = set()
    if os.path.isdir(ends):
        with open(os.path.join(ends, "removed")) as f:
            removed = {int(line) for line in f.read().split("\n")[:-1] if line}
        for name in sorted(os.listdir(ends)):
            if name.endswith((".open", ".ends")):
                # A worker seals its log as it leaves (.open renamed .ends), and one that
                # ran no input removes it then: a log listed may be gone, or renamed.
                for path in (os.path.join(ends, name), os.path.join(ends, name[:-5] + ".ends")):
                    try:
                        with open(path) as f:
                            text = f.read()
                        break
                    except FileNotFoundError:
                        text = ""
                for line in text.split("\n")[:-1]:
                    i, _, env = line.partition(" ")
                    out[int(i)] = env
    for i in removed:
        out.pop(i, None)
    results = os.path.join(store_dir, "groups", gid, "results")
    if os.path.isdir(results):
        for name in os.listdir(results):
            if name.endswith(".json"):
                with open(os.path.join(results, name)) as f:
                    out[int(name[:-5])] = f.read()
    return out

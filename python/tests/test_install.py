"""Installing kinetic with pip, without any network: the SDK alone from the repository,
and the platform wheel that carries the binary (`make wheel`), each into a fresh virtualenv
of Debian's Python and of pyenv's, then a job run from a directory elsewhere with no
KINETIC_BIN, no PYTHONPATH and no kinetic on PATH but the wheel's."""

import glob
import os
import platform
import subprocess
import sys
import zipfile

import pytest

from conftest import PYTHON_DIR, REPO

sys.path.insert(0, PYTHON_DIR)
import kinetic_build  # noqa: E402


def _has_cloudpickle(py):
    return subprocess.run([py, "-c", "import cloudpickle"], capture_output=True).returncode == 0


def _interpreters():
    found = []
    if os.path.exists("/usr/bin/python3"):
        found.append(pytest.param("/usr/bin/python3", id="debian"))
    # pyenv's newest Python that has cloudpickle (this machine's 3.11 has it).
    pyenv = [p for p in sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.*/bin/python3")), reverse=True)
             if _has_cloudpickle(p)]
    found.append(pytest.param(pyenv[0] if pyenv else None, id="pyenv"))
    return found


def _venv(py, path):
    if py is None:
        pytest.skip("no pyenv Python with cloudpickle on this machine")
    if not _has_cloudpickle(py):
        pytest.skip("%s has no cloudpickle (PyPI is not reachable here)" % py)
    # --system-site-packages: cloudpickle, the one dependency, comes from the interpreter.
    subprocess.run([py, "-m", "venv", "--system-site-packages", str(path)], check=True)
    return str(path / "bin" / "python")


def _clean_env(tmp_path, venv_bin=None):
    """The environment of a person who only installed the wheel."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KINETIC_BIN")}
    path = [p for p in env.get("PATH", "").split(os.pathsep) if not os.path.exists(os.path.join(p, "kinetic"))]
    env["PATH"] = os.pathsep.join(([venv_bin] if venv_bin else []) + path)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _pip(py, *args, env=None):
    r = subprocess.run([py, "-m", "pip", "install", "-q", "--no-index"] + list(args),
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, "pip install %s:\n%s%s" % (" ".join(args), r.stdout, r.stderr)


JOB = "import kinetic\n@kinetic.run(accelerator='cpu')\ndef add(a, b):\n    return a + b\nprint(add(20, 22))\n"


@pytest.mark.parametrize("py", _interpreters())
def test_pip_install_sdk_from_repo(tmp_path, py):
    """pip install ./python: the standard-library build backend, in build isolation,
    needs nothing from the network (no setuptools, no wheel)."""
    vpy = _venv(py, tmp_path / "venv")
    _pip(vpy, PYTHON_DIR, env=_clean_env(tmp_path))
    script = tmp_path / "job.py"
    script.write_text(JOB)
    # The SDK alone finds the binary through KINETIC_BIN (kept here).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([vpy, str(script)], cwd=str(tmp_path), capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "42"


@pytest.mark.parametrize("py", _interpreters())
def test_platform_wheel_carries_the_binary(tmp_path, py):
    plat = {"x86_64": "linux/amd64", "aarch64": "linux/arm64"}.get(platform.machine())
    if plat is None:
        pytest.skip("no wheel platform for %s" % platform.machine())
    dist = tmp_path / "dist"
    name = kinetic_build.build_wheel(str(dist), {"bin": os.environ["KINETIC_BIN"], "platform": plat})
    wheel = dist / name
    assert "manylinux" in name and name.startswith("kinetic-"), name
    with zipfile.ZipFile(str(wheel)) as z:
        names = z.namelist()
        info = z.getinfo("kinetic/_bin/kinetic")
        assert (info.external_attr >> 16) & 0o111, "the binary in the wheel is not executable"
        assert "kinetic-0.1.0.dist-info/entry_points.txt" in names
    vpy = _venv(py, tmp_path / "venv")
    vbin = os.path.dirname(vpy)
    env = _clean_env(tmp_path, vbin)
    _pip(vpy, str(wheel), env=env)

    # The kinetic command is the bundled binary, and it says the SDK's version.
    ver = subprocess.run([os.path.join(vbin, "kinetic"), "version"], capture_output=True, text=True, env=env)
    sdk = subprocess.run([vpy, "-c", "import kinetic; print(kinetic.__version__)"], capture_output=True, text=True, env=env)
    assert ver.returncode == 0 and sdk.returncode == 0, ver.stderr + sdk.stderr
    assert sdk.stdout.strip() in ver.stdout, (ver.stdout, sdk.stdout)

    # A job from a directory elsewhere, from Python and from the command.
    work = tmp_path / "elsewhere"
    work.mkdir()
    (work / "job.py").write_text(JOB + "\ndef main():\n    return add(1, 2)\n")
    out = subprocess.run([vpy, "job.py"], cwd=str(work), capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "42"
    out = subprocess.run(["kinetic", "run", "job.py::main"], cwd=str(work), capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "3", out.stdout


def test_pure_wheel_has_no_command(tmp_path):
    """A wheel without a binary installs no kinetic command: one would find itself on PATH."""
    name = kinetic_build.build_wheel(str(tmp_path))
    assert name.endswith("-py3-none-any.whl")
    with zipfile.ZipFile(str(tmp_path / name)) as z:
        assert not any(n.endswith("entry_points.txt") or n.startswith("kinetic/_bin/") for n in z.namelist())


def test_bad_wheel_settings_name_the_fix(tmp_path):
    with pytest.raises(ValueError, match="platform 'windows/amd64'"):
        kinetic_build.build_wheel(str(tmp_path), {"bin": os.environ["KINETIC_BIN"], "platform": "windows/amd64"})
    with pytest.raises(ValueError, match="make wheel"):
        kinetic_build.build_wheel(str(tmp_path), {"bin": str(tmp_path / "missing"), "platform": "linux/amd64"})

"""The SDK installs with pip from the repository, without any network."""

import os
import subprocess
import sys

from conftest import PYTHON_DIR


def test_pip_install_from_repo(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    subprocess.run([py, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-index", PYTHON_DIR],
                   check=True, env=dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1"))
    out = subprocess.run([py, "-c", "import kinetic; print(kinetic.__file__); print(kinetic.add(1, 2) if hasattr(kinetic, 'add') else '')"],
                         cwd=str(tmp_path), check=True, capture_output=True, text=True,
                         env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"}).stdout
    assert str(venv) in out.splitlines()[0]
    script = tmp_path / "job.py"
    script.write_text("import kinetic\n@kinetic.run(accelerator='cpu')\ndef add(a, b):\n    return a + b\nprint(add(20, 22))\n")
    out = subprocess.run([py, str(script)], cwd=str(tmp_path), check=True, capture_output=True, text=True,
                         env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"}).stdout
    assert out.strip().splitlines()[-1] == "42"

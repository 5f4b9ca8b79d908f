"""A remote exception's traceback is shown once: with the exception, never also in the
streamed logs (a caller who catches the exception sees no traceback at all)."""

import os
import subprocess
import sys

from conftest import PYTHON_DIR

SCRIPT = """
import kinetic

@kinetic.run(accelerator="cpu")
def bad():
    print("working")
    raise ValueError("boom")

if CATCH:
    try:
        bad()
    except ValueError as e:
        print("caught:", e, "remote traceback attached:", "raise ValueError" in e.remote_traceback)
else:
    bad()
"""


def _run(tmp_path, catch):
    script = tmp_path / ("caught.py" if catch else "uncaught.py")
    script.write_text("CATCH = %r\n" % catch + SCRIPT)
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    return subprocess.run([sys.executable, str(script)], cwd=str(tmp_path), capture_output=True, text=True, env=env)


def test_caught_exception_prints_no_traceback(tmp_path):
    r = _run(tmp_path, True)
    assert r.returncode == 0, r.stderr
    out = r.stdout + r.stderr
    assert "caught: boom remote traceback attached: True" in out, out
    assert "Traceback" not in out, out
    assert "the call raised builtins.ValueError" in out, out


def test_uncaught_exception_prints_the_remote_traceback_once(tmp_path):
    r = _run(tmp_path, False)
    assert r.returncode == 1
    out = r.stdout + r.stderr
    assert out.count('raise ValueError("boom")') == 1, out

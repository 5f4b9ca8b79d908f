"""The PEP 517 build backend of the kinetic package: standard library only.

``pip install ./python`` needs nothing from the network (no setuptools, no wheel: a fresh
virtualenv has neither's bdist_wheel), and ``make wheel`` builds the platform wheels that
carry the kinetic binary, as ruff and uv ship theirs:

    KINETIC_WHEEL_BIN=bin/kinetic-linux-amd64 KINETIC_WHEEL_PLATFORM=linux/amd64 \\
        python3 -c 'import kinetic_build as b; print(b.build_wheel("dist"))'

(or the same two values as ``--config-settings bin=... platform=...`` to ``pip wheel``).
Without a binary the wheel is pure Python (``py3-none-any``) and the SDK finds the
binary through ``KINETIC_BIN`` or ``PATH``. With one, it goes to ``kinetic/_bin/kinetic``,
the wheel is tagged for that platform, and the ``kinetic`` command runs it.
"""

import base64
import hashlib
import io
import os
import re
import stat
import tarfile
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
NAME = "kinetic"

# Go's GOOS/GOARCH → the wheel platform tags of a static binary.
PLATFORMS = {
    "linux/amd64": "manylinux_2_17_x86_64.manylinux2014_x86_64.musllinux_1_1_x86_64",
    "linux/arm64": "manylinux_2_17_aarch64.manylinux2014_aarch64.musllinux_1_1_aarch64",
    "darwin/arm64": "macosx_11_0_arm64",
    "darwin/amd64": "macosx_10_12_x86_64",
}

# A fixed time for every archive member: the same sources make the same wheel.
EPOCH = (2020, 1, 1, 0, 0, 0)


def _project():
    """Name, version, requirements and description from pyproject.toml (read by hand:
    tomllib is 3.11+, and this backend runs on 3.9)."""
    text = open(os.path.join(HERE, "pyproject.toml"), encoding="utf-8").read()
    proj = text.split("[project]", 1)[1].split("\n[", 1)[0]

    def field(key):
        m = re.search(r'^%s\s*=\s*"([^"]*)"' % key, proj, re.M)
        return m.group(1) if m else ""

    deps = re.search(r"^dependencies\s*=\s*\[(.*?)\]", proj, re.M | re.S)
    reqs = re.findall(r'"([^"]+)"', deps.group(1)) if deps else []
    return {"version": field("version"), "description": field("description"),
            "requires_python": field("requires-python"), "dependencies": reqs}


def _package_files():
    """The package's files: every .py under kinetic/ (no caches, no _bin: that one is
    added only to platform wheels)."""
    out = []
    root = os.path.join(HERE, NAME)
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x not in ("__pycache__", "_bin"))
        for f in sorted(files):
            if f.endswith(".py") or f == "py.typed":
                p = os.path.join(d, f)
                out.append((os.path.relpath(p, HERE).replace(os.sep, "/"), p))
    return out


def _metadata(p):
    lines = ["Metadata-Version: 2.1", "Name: " + NAME, "Version: " + p["version"],
             "Summary: " + p["description"]]
    if p["requires_python"]:
        lines.append("Requires-Python: " + p["requires_python"])
    lines += ["Requires-Dist: " + r for r in p["dependencies"]]
    return "\n".join(lines) + "\n"


def _settings(config_settings):
    cs = config_settings or {}
    binary = cs.get("bin") or os.environ.get("KINETIC_WHEEL_BIN", "")
    platform = cs.get("platform") or os.environ.get("KINETIC_WHEEL_PLATFORM", "")
    if binary and platform not in PLATFORMS:
        raise ValueError("kinetic wheel: platform %r: want one of %s (with bin=%s)"
                         % (platform, ", ".join(sorted(PLATFORMS)), binary))
    if binary and not os.path.isfile(binary):
        raise ValueError("kinetic wheel: bin=%s is not a file (build it with `make wheel`)" % binary)
    return binary, platform


class _Wheel:
    """A wheel being written: members with their RECORD lines."""

    def __init__(self, path):
        self.zf = zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED)
        self.record = []

    def add(self, arcname, data, mode=0o644):
        info = zipfile.ZipInfo(arcname, EPOCH)
        info.external_attr = (stat.S_IFREG | mode) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        self.zf.writestr(info, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        self.record.append("%s,sha256=%s,%d" % (arcname, digest, len(data)))

    def close(self, dist_info):
        self.record.append(dist_info + "/RECORD,,")
        info = zipfile.ZipInfo(dist_info + "/RECORD", EPOCH)
        info.external_attr = (stat.S_IFREG | 0o644) << 16
        self.zf.writestr(info, "\n".join(self.record) + "\n")
        self.zf.close()


def _write_wheel(wheel_directory, config_settings, editable=False):
    p = _project()
    binary, platform = _settings(config_settings)
    tag = "py3-none-" + (PLATFORMS[platform] if binary else "any")
    name = "%s-%s-%s.whl" % (NAME, p["version"], tag)
    dist_info = "%s-%s.dist-info" % (NAME, p["version"])
    os.makedirs(wheel_directory, exist_ok=True)
    w = _Wheel(os.path.join(wheel_directory, name))
    if editable:
        # PEP 660: the source directory on sys.path instead of a copy.
        w.add("__editable__.%s.pth" % NAME, (HERE + "\n").encode())
    else:
        for arc, path in _package_files():
            w.add(arc, open(path, "rb").read())
    if binary:
        w.add(NAME + "/_bin/kinetic", open(binary, "rb").read(), 0o755)
        # The runner binaries beside it (`make runner-cross`): from them the CLI publishes
        # the runner image on any OS (docs/infrastructure.md).
        d = os.path.dirname(os.path.abspath(binary))
        for f in sorted(os.listdir(d)):
            if re.match(r"^kinetic-runner-linux-(amd64|arm64)$", f):
                w.add(NAME + "/_bin/" + f, open(os.path.join(d, f), "rb").read(), 0o755)
    w.add(dist_info + "/METADATA", _metadata(p).encode())
    w.add(dist_info + "/WHEEL", ("Wheel-Version: 1.0\nGenerator: kinetic_build\nRoot-Is-Purelib: %s\n%s\n"
                                 % ("false" if binary else "true",
                                    "\n".join("Tag: py3-none-" + t for t in (PLATFORMS[platform] if binary else "any").split(".")))).encode())
    if binary:
        # The kinetic command runs the bundled binary. Only platform wheels have it: a
        # pure wheel's command would find itself on PATH instead of a binary.
        w.add(dist_info + "/entry_points.txt", b"[console_scripts]\nkinetic = kinetic._cli:main\n")
    w.add(dist_info + "/top_level.txt", (NAME + "\n").encode())
    w.close(dist_info)
    return name


# PEP 517 hooks.

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, config_settings)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, config_settings, editable=True)


def build_sdist(sdist_directory, config_settings=None):
    p = _project()
    base = "%s-%s" % (NAME, p["version"])
    name = base + ".tar.gz"
    os.makedirs(sdist_directory, exist_ok=True)
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as tf:
        files = [("pyproject.toml", os.path.join(HERE, "pyproject.toml")),
                 ("kinetic_build.py", os.path.join(HERE, "kinetic_build.py"))] + _package_files()
        for arc, path in files:
            data = open(path, "rb").read()
            info = tarfile.TarInfo(base + "/" + arc)
            info.size, info.mtime, info.mode = len(data), time.mktime(EPOCH + (0, 0, -1)), 0o644
            tf.addfile(info, io.BytesIO(data))
        pkg = _metadata(p).encode()
        info = tarfile.TarInfo(base + "/PKG-INFO")
        info.size, info.mtime, info.mode = len(pkg), time.mktime(EPOCH + (0, 0, -1)), 0o644
        tf.addfile(info, io.BytesIO(pkg))
    return name

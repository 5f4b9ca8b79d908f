"""Dependencies, Data, captured environment, outputs and incremental shipping, end to end
on the local backend.

Each test builds its own project under tmp_path, changes into it and imports a module
from there, so the module's file lies inside the project and the engine finds the
shipped root (and the dependency file) from it. PyPI is never used: wheels are built here
and installed with --no-index from a local --find-links directory.

Tests that need the engine to see something of this process at start-up (an environment
variable, or pytest's capfd as its stderr) restart it with _restart_engine(); the
autouse fixture closes whatever engine a test started, so the next test starts a clean
one with the restored environment.
"""

import base64
import hashlib
import importlib.util
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import zipfile

import pytest

from kinetic import Data
from kinetic import _engine as engine_mod

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TIMEOUT = 240  # seconds per job: generous, a cold environment build runs pip


# ---------------------------------------------------------------- helpers


def _close_engine():
    with engine_mod._engine_lock:
        e, engine_mod._engine = engine_mod._engine, None
    if e is not None:
        e.close()


def _restart_engine():
    """The next call starts a new engine: it inherits this process's environment and
    file descriptors as they are now (monkeypatched variables, capfd's stderr)."""
    _close_engine()
    engine_mod.engine()


@pytest.fixture(autouse=True)
def _own_engine():
    yield
    _close_engine()


def make_wheel(directory, name, version, body=""):
    """Build a minimal pure-Python wheel NAME-VERSION-py3-none-any.whl in directory."""
    os.makedirs(directory, exist_ok=True)
    dist = "%s-%s.dist-info" % (name, version)
    files = {
        "%s/__init__.py" % name: "__version__ = %r\n%s" % (version, body),
        dist + "/METADATA": "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version),
        dist + "/WHEEL": "Wheel-Version: 1.0\nGenerator: kinetic-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, text in files.items():
        raw = text.encode()
        digest = base64.urlsafe_b64encode(hashlib.sha256(raw).digest()).rstrip(b"=").decode()
        record.append("%s,sha256=%s,%d" % (path, digest, len(raw)))
    record.append(dist + "/RECORD,,")
    files[dist + "/RECORD"] = "\n".join(record) + "\n"
    path = os.path.join(directory, "%s-%s-py3-none-any.whl" % (name, version))
    with zipfile.ZipFile(path, "w") as z:
        for p, text in files.items():
            z.writestr(p, text)
    return path


def make_project(tmp_path, monkeypatch, files, git=True):
    """tmp_path/proj with files ({relpath: str or bytes}); cwd becomes the project. A
    .git directory bounds the root and the dependency search to the project."""
    proj = tmp_path / "proj"
    proj.mkdir()
    if git:
        (proj / ".git").mkdir()
    for rel, content in files.items():
        p = proj / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content)
    monkeypatch.chdir(proj)
    return proj


_loaded = []


@pytest.fixture(autouse=True)
def _forget_modules():
    yield
    while _loaded:
        sys.modules.pop(_loaded.pop(), None)


def load(path):
    """Import the module at path (under a unique name) the way a user's script would."""
    name = "kn_e2e_%s" % secrets.token_hex(4)
    spec = importlib.util.spec_from_file_location(name, str(path))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    _loaded.append(name)
    spec.loader.exec_module(mod)
    return mod


def read_job_file(store_dir, job_id, name):
    with open(os.path.join(store_dir, "jobs", job_id, name)) as f:
        return f.read()


PROBE = '''
import kinetic

@kinetic.run(accelerator="cpu")
def probe():
    import sys
    out = {"prefix": sys.prefix}
    for name in ("kntoy", "jax"):
        try:
            m = __import__(name)
            out[name] = (m.__version__, m.__file__)
        except ImportError:
            out[name] = None
    return out
'''


# ---------------------------------------------------------------- dependencies


@pytest.fixture
def wheels(tmp_path):
    d = tmp_path / "wheels"
    make_wheel(str(d), "kntoy", "1.0", "def hello():\n    return 'kntoy says hi'\n")
    make_wheel(str(d), "jax", "0.4.1")  # installs, unless the filter drops it
    return d


def _run_probe(mod, store_dir):
    h = mod.probe.run_async()
    spec = json.loads(read_job_file(store_dir, h.job_id, "spec.json"))
    return h, spec, h.result(timeout=TIMEOUT)


def test_requirements_jax_pin_is_dropped_and_the_rest_installed(tmp_path, monkeypatch, capfd, store_dir, wheels):
    # The find-links directory is given relative to requirements.txt (inside the project).
    # These tests are about discovery and the filter: the runtime layer (jax, keras,
    # cloudpickle, whose wheels the --no-index directory does not hold) is left out; the
    # Keras tests (examples/keras_train.py) run with it.
    monkeypatch.setenv("KINETIC_RUNTIME_LAYER", "none")
    proj = make_project(tmp_path, monkeypatch, {
        "requirements.txt": "--no-index\n--find-links wheels\njax==0.4.1\nkntoy==1.0\n",
        "job.py": PROBE,
    })
    shutil.copytree(str(wheels), str(proj / "wheels"))
    _restart_engine()
    mod = load(proj / "job.py")
    h, spec, got = _run_probe(mod, store_dir)
    err = capfd.readouterr().err

    assert got["jax"] is None, "jax was installed although the filter should drop it: %r" % (got,)
    assert got["kntoy"] is not None, got
    assert got["kntoy"][0] == "1.0"
    # Installed into the job's cached environment, not into the base interpreter.
    assert spec["env_key"] and spec["env_key"] in got["kntoy"][1], (spec["env_key"], got)
    assert spec["env_key"] in got["prefix"]
    assert not any(r.startswith("jax") for r in spec["requirements"]), spec["requirements"]
    assert "kntoy==1.0" in spec["requirements"]
    assert "--find-links " + str(proj / "wheels") in spec["requirements"], spec["requirements"]
    # The notice names the dropped line, where it is, and the way to keep it.
    assert "ignoring 1 accelerator runtime requirement" in err, err
    assert "%s:3: jax==0.4.1" % (proj / "requirements.txt") in err, err
    assert "kn:keep" in err


def test_requirements_kn_keep_installs_jax(tmp_path, monkeypatch, capfd, store_dir, wheels):
    monkeypatch.setenv("KINETIC_RUNTIME_LAYER", "none")  # as above
    proj = make_project(tmp_path, monkeypatch, {
        "requirements.txt": "--no-index\n--find-links %s\njax==0.4.1  # kn:keep\nkntoy==1.0\n" % wheels,
        "job.py": PROBE,
    })
    _restart_engine()
    mod = load(proj / "job.py")
    h, spec, got = _run_probe(mod, store_dir)
    err = capfd.readouterr().err

    assert got["jax"] is not None and got["jax"][0] == "0.4.1", got
    assert spec["env_key"] in got["jax"][1]
    assert got["kntoy"][0] == "1.0"
    assert "jax==0.4.1" in spec["requirements"]
    assert "ignoring" not in err, err


def test_pyproject_dependencies_are_installed(tmp_path, monkeypatch, store_dir, wheels):
    # pyproject.toml carries no index options: pip takes them from its environment,
    # which the local backend's pip inherits from the engine.
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("KINETIC_RUNTIME_LAYER", "none")  # as above
    proj = make_project(tmp_path, monkeypatch, {
        "pyproject.toml": '[project]\nname = "proj"\nversion = "0.1"\ndependencies = ["kntoy==1.0"]\n',
        "job.py": PROBE,
    })
    _restart_engine()
    mod = load(proj / "job.py")
    h, spec, got = _run_probe(mod, store_dir)
    assert spec["requirements_source"] == str(proj / "pyproject.toml")
    assert spec["requirements"] == ["kntoy==1.0"]
    assert got["kntoy"] is not None and got["kntoy"][0] == "1.0", got
    assert spec["env_key"] in got["kntoy"][1]
    assert got["jax"] is None


# ---------------------------------------------------------------- Data


DATA_JOB = '''
import os
import kinetic

def _tree(path):
    out = {}
    for dirpath, dirnames, filenames in os.walk(path):
        for fn in filenames:
            full = os.path.join(dirpath, fn)
            with open(full, "rb") as f:
                out[os.path.relpath(full, path)] = f.read()
    return out

def _describe(v):
    if isinstance(v, str) and os.path.isdir(v):
        return ("dir", _tree(v))
    if isinstance(v, str) and os.path.isfile(v):
        with open(v, "rb") as f:
            return ("file", os.path.basename(v), f.read())
    if isinstance(v, dict):
        return {k: _describe(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return type(v)(_describe(x) for x in v)
    return v

@kinetic.run(accelerator="cpu")
def describe(*args, **kwargs):
    return _describe(list(args)), _describe(kwargs)

@kinetic.run(accelerator="cpu")
def key_paths(by_key, in_set):
    """What a function sees of Data used as dict keys and set members: paths, or not."""
    seen = lambda k: (type(k).__name__, isinstance(k, str) and os.path.isfile(k),
                      isinstance(k, str) and os.path.isdir(k))
    return sorted((seen(k), v) for k, v in by_key.items()), sorted(seen(x) for x in in_set)

@kinetic.run(accelerator="cpu", volumes={MOUNT: kinetic.Data("vol/")})
def read_volume():
    return os.path.realpath(MOUNT) != MOUNT, _tree(MOUNT)
'''


def _tree_files():
    return {
        "top.txt": b"top level\n",
        os.path.join("sub", "inner.txt"): b"one level down\n",
        os.path.join("sub", "deeper", "blob.bin"): bytes(range(256)) * 17,
    }


def _write_tree(root, files):
    for rel, content in files.items():
        p = os.path.join(str(root), rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(content)


def _data_project(tmp_path, monkeypatch, mount="/nonexistent-kinetic-mount"):
    proj = make_project(tmp_path, monkeypatch, {"job.py": DATA_JOB.replace("MOUNT", repr(mount))})
    _write_tree(proj / "dataset", _tree_files())  # inside the project: shipped as Data, not as code
    (proj / "config.json").write_bytes(b'{"lr": 0.1}\n')
    _write_tree(tmp_path / "outside", {"o.txt": b"outside the project\n"})
    _write_tree(proj / "vol", {"v.txt": b"volume file\n", os.path.join("d", "w.txt"): b"nested volume file\n"})
    return proj, load(proj / "job.py")


def test_data_directory_and_file_arguments(tmp_path, monkeypatch):
    proj, mod = _data_project(tmp_path, monkeypatch)
    args, kwargs = mod.describe(Data("dataset/"), Data("config.json"), cfg=Data(str(tmp_path / "outside")))
    assert args[0] == ("dir", _tree_files())
    assert args[1] == ("file", "config.json", b'{"lr": 0.1}\n')
    assert kwargs == {"cfg": ("dir", {"o.txt": b"outside the project\n"})}


def test_data_nested_in_containers(tmp_path, monkeypatch):
    proj, mod = _data_project(tmp_path, monkeypatch)
    arg = {"inputs": [Data("config.json"), 7, (Data("dataset"), "plain")], "name": "x"}
    args, kwargs = mod.describe(arg, more=[{"deep": Data("dataset/sub/inner.txt")}])
    assert args == [{"inputs": [("file", "config.json", b'{"lr": 0.1}\n'), 7, (("dir", _tree_files()), "plain")],
                     "name": "x"}]
    assert kwargs == {"more": [{"deep": ("file", "inner.txt", b"one level down\n")}]}


def test_data_as_dict_key_and_set_member(tmp_path, monkeypatch):
    """A Data used as a dict key or in a set reaches the function as a path, like any
    other Data in the arguments (it used to arrive as an unresolved Data object)."""
    proj, mod = _data_project(tmp_path, monkeypatch)
    by_key, in_set = mod.key_paths({Data("config.json"): 1, "plain": 2}, {Data("dataset")})
    assert sorted(by_key, key=lambda kv: kv[1]) == [(("str", True, False), 1), (("str", False, False), 2)]
    assert in_set == [("str", False, True)]


def test_data_volume_at_mount_path_writes_nothing_on_this_machine(tmp_path, monkeypatch):
    """volumes={"/data": Data(...)} on the local backend: the job sees the data at the
    path, in a mount namespace of its own; nothing is made at the path on this machine
    (docs/local-backend.md), whether the path's parent exists (/usr/share) or not."""
    for k, mount in enumerate(("/kinetic-test-vol-%s/data" % secrets.token_hex(6), "/usr/share/kinetic-test-vol-%s" % secrets.token_hex(6))):
        (tmp_path / str(k)).mkdir()
        proj, mod = _data_project(tmp_path / str(k), monkeypatch, mount=mount)
        linked, files = mod.read_volume()
        assert files == {"v.txt": b"volume file\n", os.path.join("d", "w.txt"): b"nested volume file\n"}
        assert not os.path.lexists(mount), "the volume's path %s was made on this machine" % mount
        assert not os.path.lexists(os.path.dirname(mount)) or os.path.dirname(mount) == "/usr/share"


def test_data_volumes_of_concurrent_jobs_are_their_own(tmp_path, monkeypatch):
    """Two jobs with the same volume path and different data each see their own."""
    mount = "/kinetic-test-vol-%s" % secrets.token_hex(6)
    proj = make_project(tmp_path, monkeypatch, {"job.py": (
        "import kinetic, time\n"
        "def reader(src):\n"
        "    @kinetic.run(accelerator='cpu', volumes={%r: kinetic.Data(src)})\n"
        "    def read():\n"
        "        time.sleep(1)\n"
        "        return open(%r + '/which.txt').read()\n"
        "    return read\n") % (mount, mount)})
    for name in ("a", "b"):
        _write_tree(proj / name, {"which.txt": name.encode()})
    mod = load(proj / "job.py")
    ha, hb = mod.reader("a/").run_async(), mod.reader("b/").run_async()
    assert (ha.result(timeout=120), hb.result(timeout=120)) == ("a", "b")
    assert not os.path.lexists(mount)


def test_volumes_refused_where_this_machine_allows_no_namespace(tmp_path):
    """Where a job cannot get a mount namespace (here: 33 nested user namespaces, the
    kernel's limit), a job with volumes is refused at submission, naming the volume and
    the fixes, with nothing written to the store."""
    unshare = shutil.which("unshare")
    if not unshare or subprocess.run([unshare, "--user", "--map-root-user", "true"]).returncode != 0:
        pytest.skip("no unshare, or user namespaces not allowed here at all")
    nest = tmp_path / "nest.sh"
    nest.write_text('#!/bin/sh\nn=$1; shift\nif [ "$n" -le 0 ]; then exec "$@"; fi\n'
                    'exec %s --user --map-root-user "$0" $((n-1)) "$@"\n' % unshare)
    nest.chmod(0o755)
    store = tmp_path / "store"
    script = tmp_path / "refused.py"
    script.write_text(
        "import kinetic\n"
        "@kinetic.run(accelerator='cpu', store=%r, volumes={'/data': kinetic.Data(%r)})\n"
        "def f():\n"
        "    return 1\n"
        "try:\n"
        "    f()\n"
        "except kinetic.KineticError as e:\n"
        "    print('REFUSED', e)\n" % (str(store), str(tmp_path)))
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(engine_mod.__file__)))
    p = subprocess.run([str(nest), "33", sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert "REFUSED" in p.stdout, p.stdout + p.stderr
    assert "/data cannot be mounted" in p.stdout and 'container="podman"' in p.stdout, p.stdout
    assert not (store / "jobs").exists() or not any((store / "jobs").iterdir())


def _py_content_hash(path):
    """docs/data.md's layout, independently: per-file SHA-256(rel NUL contents), combined
    after a "dir:" or "file:" prefix in os.walk order (sorted, depth first)."""
    def digest(rel, full):
        h = hashlib.sha256(rel.encode() + b"\x00")
        with open(full, "rb") as f:
            h.update(f.read())
        return h.digest()

    if os.path.isdir(path):
        h = hashlib.sha256(b"dir:")
        for dirpath, dirnames, filenames in os.walk(path, followlinks=False):
            dirnames.sort()
            for fn in sorted(filenames):
                full = os.path.join(dirpath, fn)
                h.update(digest(os.path.relpath(full, path).replace(os.sep, "/"), full))
        return h.hexdigest()
    return hashlib.sha256(b"file:" + digest(os.path.basename(path), path)).hexdigest()


def test_content_hash_matches_documented_layout(tmp_path):
    root = tmp_path / "ds"
    _write_tree(root, _tree_files())
    _write_tree(root, {"z.txt": b"z before a/", os.path.join("a", "1"): b"1", "caf\u00e9.txt": b"unicode",
                       os.path.join("a", "b", "empty"): b""})
    (root / "emptydir").mkdir()
    os.symlink("top.txt", str(root / "link.txt"))  # hashed by the content it points to
    os.symlink("sub", str(root / "linkdir"))  # a symlinked directory contributes nothing

    h = Data(str(root)).content_hash()
    assert h == _py_content_hash(str(root))
    assert Data(str(root) + "/").content_hash() == h
    f = str(root / "sub" / "inner.txt")
    assert Data(f).content_hash() == _py_content_hash(f)
    assert Data(f).content_hash() != Data(str(root / "sub")).content_hash()

    (root / "sub" / "deeper" / "blob.bin").write_bytes(b"changed")
    h2 = Data(str(root)).content_hash()
    assert h2 != h and h2 == _py_content_hash(str(root))
    os.rename(str(root / "a" / "1"), str(root / "a" / "2"))  # a rename changes it too
    assert Data(str(root)).content_hash() not in (h, h2)


# ---------------------------------------------------------------- Data from gs://


def _fake_gcs_binary():
    p = os.environ.get("KINETIC_FAKE_GCS_SERVER")
    if p:
        return p
    try:
        out = subprocess.run(["go", "run", "./testkit/gcstest/cmd/fakegcs"], cwd=REPO, capture_output=True,
                             text=True, timeout=900, env=dict(os.environ, CGO_ENABLED="0"))
    except (OSError, subprocess.TimeoutExpired) as e:
        out = None
        reason = str(e)
    if out is not None and out.returncode == 0:
        return out.stdout.strip().splitlines()[-1]
    reason = out.stderr if out is not None else reason
    if os.environ.get("KINETIC_ALLOW_SKIP_GCS") == "1":
        pytest.skip("no fake-gcs-server: %s" % reason)
    pytest.fail("cannot build fake-gcs-server (KINETIC_ALLOW_SKIP_GCS=1 skips): %s" % reason)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def fake_gcs():
    """A fake-gcs-server (memory backend, plain HTTP) on 127.0.0.1; yields its base URL."""
    binary = _fake_gcs_binary()
    last = ""
    for _ in range(3):  # the port can be taken between probe and bind
        port = _free_port()
        base = "http://127.0.0.1:%d" % port
        proc = subprocess.Popen([binary, "-scheme", "http", "-backend", "memory", "-host", "127.0.0.1",
                                 "-port", str(port), "-public-host", "127.0.0.1:%d" % port,
                                 "-external-url", base, "-log-level", "warn"],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while time.time() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(base + "/storage/v1/b", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                time.sleep(0.05)
        else:
            proc.kill()
            last = proc.communicate()[0].decode(errors="replace")
            continue
        try:
            yield base
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        return
    pytest.fail("fake-gcs-server did not start: %s" % last)


def _gcs_request(url, body=b"", content_type="application/json"):
    req = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": content_type})
    with urllib.request.urlopen(req, timeout=30) as r:
        assert r.status == 200, r.status
        return json.loads(r.read() or b"{}")


def _gcs_bucket(base, objects):
    bucket = "kn-test-%s" % secrets.token_hex(5)
    _gcs_request(base + "/storage/v1/b?project=kinetic-test", json.dumps({"name": bucket}).encode())
    for name, content in objects.items():
        _gcs_request("%s/upload/storage/v1/b/%s/o?uploadType=media&name=%s" % (base, bucket, urllib.parse.quote(name, safe="")),
                     content, "application/octet-stream")
    return bucket


@pytest.mark.parametrize("form", ["url", "host:port"])
def test_data_from_gcs_directory_and_object(tmp_path, monkeypatch, fake_gcs, form):
    objects = {
        "dir/file.txt": b"hello from gcs\n",
        "dir/sub/nested.bin": os.urandom(3000),
        "dir/folder/": b"",  # a folder placeholder: skipped
        "dirx/not-this.txt": b"a sibling prefix",
        "other/elsewhere.txt": b"outside the prefix",
    }
    bucket = _gcs_bucket(fake_gcs, objects)
    # Both forms of the variable (docs/store.md): http://host:port and host:port.
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", fake_gcs if form == "url" else fake_gcs[len("http://"):])
    proj, mod = _data_project(tmp_path, monkeypatch)
    _restart_engine()  # the runner reads STORAGE_EMULATOR_HOST from the engine's environment
    args, kwargs = mod.describe(Data("gs://%s/dir/" % bucket), one=Data("gs://%s/dir/file.txt" % bucket))
    assert args == [("dir", {"file.txt": b"hello from gcs\n",
                             os.path.join("sub", "nested.bin"): objects["dir/sub/nested.bin"]})]
    assert kwargs == {"one": ("file", "file.txt", b"hello from gcs\n")}


def test_data_from_gcs_missing_object_fails_in_data_phase(tmp_path, monkeypatch, fake_gcs):
    bucket = _gcs_bucket(fake_gcs, {"dir/file.txt": b"x"})
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", fake_gcs)
    proj, mod = _data_project(tmp_path, monkeypatch)
    _restart_engine()
    h = mod.describe.run_async(Data("gs://%s/dir" % bucket))  # a directory named without its slash
    with pytest.raises(Exception, match="for a directory, end the URI with a slash"):
        h.result(timeout=TIMEOUT)


# ---------------------------------------------------------------- captured environment


ENV_JOB = '''
import os
import kinetic

@kinetic.run(accelerator="cpu", capture_env_vars=["KNTEST_*"])
def read_env():
    return {k: v for k, v in os.environ.items() if "KNTEST" in k}
'''


def test_capture_env_wildcard_and_secrets_stay_out_of_spec(tmp_path, monkeypatch, capfd, store_dir):
    # The local backend's jobs inherit the engine's environment: start the engine before
    # the variables exist, so the job can only get them by capture.
    _restart_engine()
    values = {k: "value-%s-%s" % (k, secrets.token_hex(8)) for k in ("KNTEST_A", "KNTEST_B", "KNTEST_TOKEN")}
    for k, v in values.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("KNTESTX", "no underscore: not matched")
    monkeypatch.setenv("X_KNTEST_C", "prefix elsewhere: not matched")
    for k in list(os.environ):  # a stray variable of the caller's would break the equality below
        if "KNTEST" in k and k not in values and k not in ("KNTESTX", "X_KNTEST_C"):
            monkeypatch.delenv(k)
    proj = make_project(tmp_path, monkeypatch, {"job.py": ENV_JOB})
    mod = load(proj / "job.py")
    h = mod.read_env.run_async()
    spec_text = read_job_file(store_dir, h.job_id, "spec.json")
    handle_text = read_job_file(store_dir, h.job_id, "handle.json")
    env_json = json.loads(read_job_file(store_dir, h.job_id, "env.json"))
    got = h.result(timeout=TIMEOUT)
    err = capfd.readouterr().err

    assert got == values
    assert json.loads(spec_text)["env_names"] == sorted(values)
    assert env_json == values  # the one place the values are stored
    for v in values.values():
        assert v not in spec_text and v not in handle_text
        assert v not in err
    assert "KNTEST_TOKEN" in err and "secret" in err, err
    warning = [l for l in err.splitlines() if "KNTEST_TOKEN" in l]
    assert warning and all("KNTEST_A" not in l and "KNTEST_B" not in l for l in warning), warning


# ---------------------------------------------------------------- KINETIC_OUTPUT_DIR


OUTPUT_JOB = '''
import os
import kinetic

def _write(text):
    out = os.environ["KINETIC_OUTPUT_DIR"]
    os.makedirs(os.path.join(out, "ckpt"), exist_ok=True)
    with open(os.path.join(out, "ckpt", "step-1.txt"), "w") as f:
        f.write(text)
    return out

@kinetic.run(accelerator="cpu", output_dir=OUTDIR)
def custom(text):
    return _write(text)

@kinetic.run(accelerator="cpu")
def default(text):
    return _write(text)
'''


def test_output_dir_given(tmp_path, monkeypatch):
    outdir = str(tmp_path / "my-outputs")
    proj = make_project(tmp_path, monkeypatch, {"job.py": OUTPUT_JOB.replace("OUTDIR", repr(outdir))})
    mod = load(proj / "job.py")
    h = mod.custom.run_async("custom run")
    assert h.result(timeout=TIMEOUT) == outdir
    h.cleanup()
    with open(os.path.join(outdir, "ckpt", "step-1.txt")) as f:
        assert f.read() == "custom run"


def test_output_dir_default_is_in_store_and_survives_cleanup(tmp_path, monkeypatch, store_dir):
    proj = make_project(tmp_path, monkeypatch, {"job.py": OUTPUT_JOB.replace("OUTDIR", "None")})
    mod = load(proj / "job.py")
    h = mod.default.run_async("default run")
    out = h.result(timeout=TIMEOUT, cleanup=False)
    assert os.path.realpath(out) == os.path.realpath(os.path.join(store_dir, "outputs", h.job_id))
    assert os.path.isdir(os.path.join(store_dir, "jobs", h.job_id))
    h.cleanup()
    assert not os.path.exists(os.path.join(store_dir, "jobs", h.job_id, "spec.json"))
    with open(os.path.join(out, "ckpt", "step-1.txt")) as f:
        assert f.read() == "default run"


# ---------------------------------------------------------------- incremental shipping


SHIP_JOB = '''
import os
import kinetic

@kinetic.run(accelerator="cpu")
def look():
    names = ["weights.bin", "keep.txt", "secret.txt", "ignored_dir/x.txt", "sub/also_secret.txt", "sub/ok.txt", "sub/secret.txt"]
    return {n: os.path.exists(n) for n in names}, os.path.getsize("weights.bin")
'''


def _blobs(store_dir):
    root = os.path.join(store_dir, "blobs")
    out = {}
    for dirpath, _, filenames in os.walk(root):
        for fn in filenames:
            p = os.path.join(dirpath, fn)
            out[os.path.relpath(p, root)] = os.path.getsize(p)
    return out


def test_incremental_shipping_and_kineticignore(tmp_path, monkeypatch, store_dir):
    size = 20 * 1024 * 1024
    proj = make_project(tmp_path, monkeypatch, {
        "job.py": SHIP_JOB,
        "weights.bin": os.urandom(size),
        "keep.txt": "shipped\n",
        "secret.txt": "must not ship\n",
        "ignored_dir/x.txt": "must not ship\n",
        "sub/also_secret.txt": "must not ship\n",
        "sub/ok.txt": "shipped\n",
        "sub/secret.txt": "must not ship either: an unanchored name matches at any depth\n",
        ".kineticignore": "# comment\nsecret.txt\nignored_dir/\n",
    })
    mod = load(proj / "job.py")
    expected = ({"weights.bin": True, "keep.txt": True, "secret.txt": False, "ignored_dir/x.txt": False,
                 "sub/also_secret.txt": True, "sub/ok.txt": True, "sub/secret.txt": False}, size)

    before = _blobs(store_dir)
    assert mod.look.run_async().result(timeout=TIMEOUT) == expected
    first = _blobs(store_dir)
    new = {k: v for k, v in first.items() if k not in before}
    assert size in new.values(), "the 20 MB file was not uploaded as a blob: %r" % (new,)
    assert sum(new.values()) < size + 1024 * 1024

    assert mod.look.run_async().result(timeout=TIMEOUT) == expected
    assert _blobs(store_dir) == first, "an unchanged project uploaded something"

    # One small edit uploads a little, never the 20 MB again.
    (proj / "keep.txt").write_text("shipped, edited\n")
    assert mod.look.run_async().result(timeout=TIMEOUT) == expected
    third = _blobs(store_dir)
    added = {k: v for k, v in third.items() if k not in first}
    assert added and sum(added.values()) < 1024 * 1024, added


WHOLE_JOB = '''
import kinetic

@kinetic.run(accelerator="cpu")
def look():
    import os
    return {n: os.path.exists(n) for n in ["data/train.csv", "gen.cfg", ".env", "certs/k.pem", "dist/big.bin"]}
'''


def test_git_ignored_files_travel_and_credentials_are_named_once(tmp_path, monkeypatch, capfd, store_dir):
    # Seed 001: the working directory travels whole. What git ignores (a local data folder,
    # a generated config) still reaches the job; only .kineticignore keeps files out. Files
    # that look like credentials are shipped too, with one warning naming them.
    proj = make_project(tmp_path, monkeypatch, {
        "job.py": WHOLE_JOB,
        ".gitignore": "data/\ngen.cfg\n.env\ndist/\n",
        ".kineticignore": "dist/\n",
        "data/train.csv": "1,2\n",
        "gen.cfg": "x=1\n",
        ".env": "TOKEN=t\n",
        "certs/k.pem": "-----BEGIN-----\n",
        "dist/big.bin": "x",
    })
    _restart_engine()
    mod = load(proj / "job.py")
    want = {"data/train.csv": True, "gen.cfg": True, ".env": True, "certs/k.pem": True, "dist/big.bin": False}
    assert mod.look() == want
    assert mod.look() == want
    err = capfd.readouterr().err
    assert err.count("look like credentials") == 1, err
    assert ".env, certs/k.pem" in err and ".kineticignore" in err, err


def test_package_root_relative_and_home(tmp_path, monkeypatch, store_dir):
    # KINETIC_PACKAGE_ROOT as a person writes it: relative to the working directory, or
    # under ~, as the reference's abspath(expanduser()) takes it.
    job = WHOLE_JOB.replace('"gen.cfg"', '"../gen.cfg"')  # the job runs in code/, as the caller
    proj = make_project(tmp_path, monkeypatch, {"code/job.py": job, "gen.cfg": "x=1\n"})
    monkeypatch.chdir(proj / "code")
    for root in ("..", "~/proj"):
        monkeypatch.setenv("HOME", str(tmp_path))
        monkeypatch.setenv("KINETIC_PACKAGE_ROOT", root)
        _restart_engine()
        mod = load(proj / "code" / "job.py")
        assert mod.look.run_async().result(timeout=TIMEOUT)["../gen.cfg"] is True, root

"""kinetic.Data: data that must be on the worker, seen by the function as a plain path."""

import errno
import os
from typing import Any, Dict, List, Tuple

# A Data object inside the arguments travels as this sentinel string; the worker's
# bootstrap replaces it with the local path (so the worker needs no kinetic package).
_SENTINEL = "\x00kinetic-data:%d\x00"


class Data:
    """A reference to data the remote function needs: a local file or directory, a
    ``gs://`` directory (trailing slash) or object, or a Hugging Face dataset
    (``hf://repo?split=train&config_name=...&revision=...``). Passed as an argument (at
    any depth of lists, tuples, sets and dicts, keys included) or in ``volumes=``, it reaches the function as a
    plain filesystem path. With ``fuse=True`` the data is mounted lazily instead of
    downloaded (GCS FUSE on Kubernetes; used in place on the local backend)."""

    def __init__(self, path: str, fuse: bool = False, hf_trust_remote_code: bool = False):
        if not isinstance(path, str):
            raise TypeError("Data(path=...) must be a str, got %s" % type(path).__name__)
        if not path:
            raise ValueError("Data(path=''): give a local file or directory, a gs:// URI or an hf:// dataset")
        for param, value in (("fuse", fuse), ("hf_trust_remote_code", hf_trust_remote_code)):
            if not isinstance(value, bool):
                raise TypeError("Data(%s=...) must be True or False, got %s" % (param, type(value).__name__))
        if path.startswith("hf://") and fuse:
            raise ValueError("Data(%r, fuse=True): a Hugging Face dataset is downloaded, it cannot be mounted "
                             "with GCS FUSE; leave fuse out" % (path,))
        if path.startswith("gs://") and not path[len("gs://"):].split("/", 1)[0]:
            raise ValueError("Data(%r): a gs:// URI needs a bucket: gs://BUCKET/prefix/ (a directory) or "
                             "gs://BUCKET/object" % (path,))
        if path.startswith("hf://") and not path[len("hf://"):].split("?", 1)[0].strip("/"):
            raise ValueError("Data(%r): an hf:// URI needs a dataset: hf://OWNER/NAME (with ?split=..., "
                             "&config_name=..., &revision=... if needed)" % (path,))
        if not (path.startswith("gs://") or path.startswith("hf://")):
            if "://" in path:
                raise ValueError("Data(%r): a local path, gs://bucket/prefix or hf://repo is expected" % (path,))
            # A local path: resolved now (the path property is absolute), and it must exist.
            path = os.path.abspath(os.path.expanduser(path))
            if not os.path.exists(path):
                raise FileNotFoundError(errno.ENOENT, "Data(path): no such file or directory; give an existing "
                                        "local file or directory, a gs:// URI or an hf:// dataset", path)
        self._path = path
        self._fuse = bool(fuse)
        self._hf_trust_remote_code = bool(hf_trust_remote_code)

    @property
    def path(self) -> str:
        return self._path

    @property
    def fuse(self) -> bool:
        return self._fuse

    @property
    def hf_trust_remote_code(self) -> bool:
        return self._hf_trust_remote_code

    @property
    def is_gcs(self) -> bool:
        return self._path.startswith("gs://")

    @property
    def is_hf(self) -> bool:
        return self._path.startswith("hf://")

    @property
    def is_dir(self) -> bool:
        if self.is_gcs:
            return self._path.endswith("/")
        if self.is_hf:
            return True
        return os.path.isdir(self._path)

    def content_hash(self) -> str:
        """SHA-256 of all file contents in deterministic order (computed by the engine)."""
        from ._engine import engine
        return engine().call("data_hash", {"path": self._abs()})["hash"]

    def _abs(self):
        if self.is_gcs or self.is_hf:
            return self._path
        return os.path.abspath(os.path.expanduser(self._path))

    def _spec(self, mount=""):
        return {"path": self._abs(), "fuse": self._fuse, "hf_trust_remote_code": self._hf_trust_remote_code,
                "mount": mount}

    def __repr__(self):
        return "Data(%r%s)" % (self._path, ", fuse=True" if self._fuse else "")

    def __eq__(self, other):
        return isinstance(other, Data) and (self._path, self._fuse, self._hf_trust_remote_code) == (
            other._path, other._fuse, other._hf_trust_remote_code)

    def __hash__(self):
        return hash((self._path, self._fuse, self._hf_trust_remote_code))


class Collector:
    """The Data of a batch: one spec per distinct Data across all its inputs (the engine
    uploads each once, and each input's job gets the ones its arguments name)."""

    def __init__(self):
        self.specs: List[dict] = []
        self._index: Dict[tuple, int] = {}

    def add(self, d: "Data", mount: str = "") -> int:
        key = (d._abs(), d._fuse, d._hf_trust_remote_code, mount)
        if key not in self._index:
            self._index[key] = len(self.specs)
            self.specs.append(d._spec(mount))
        return self._index[key]


def extract(args: Tuple, kwargs: Dict[str, Any], volumes: Dict[str, "Data"], collector: "Collector" = None):
    """Replace every Data in args and kwargs with a sentinel; return the new args, kwargs
    and the list of data specs the engine must ship (volumes last, with their mount).
    With a collector (a batch), specs go there, one per distinct Data."""
    specs: List[dict] = []
    if collector is not None:
        specs = collector.specs

    # Each container is copied once (memo, by id): an argument that holds itself
    # (x = []; x.append(x)) arrives holding its copy, as pickle would keep the cycle, and
    # an object passed twice stays one object. A tuple or set reached again while its own
    # items are walked (a cycle through a list) is left as it is there.
    memo: Dict[int, Any] = {}
    walking = set()

    def walk(v):
        t = type(v)
        if t in (list, dict, tuple, set, frozenset) and id(v) in memo:
            return memo[id(v)]
        if t is list:
            out = memo[id(v)] = []
            out.extend(walk(x) for x in v)
            return out
        if t is dict:
            # Keys too: Data is hashable, and a dict keyed by Data must arrive keyed by path.
            out = memo[id(v)] = {}
            for k, x in v.items():
                out[walk(k)] = walk(x)
            return out
        if t in (tuple, set, frozenset):
            if id(v) in walking:
                return v
            walking.add(id(v))
            try:
                out = memo[id(v)] = t(walk(x) for x in v)
            finally:
                walking.discard(id(v))
            return out
        if isinstance(v, Data):
            if collector is not None:
                return _SENTINEL % collector.add(v)
            specs.append(v._spec())
            return _SENTINEL % (len(specs) - 1)
        return v

    new_args = tuple(walk(a) for a in args)
    new_kwargs = {k: walk(v) for k, v in kwargs.items()}
    for mount, d in (volumes or {}).items():
        if not isinstance(d, Data):
            raise TypeError("volumes[%r] must be a kinetic.Data, got %r" % (mount, d))
        if not mount.startswith("/"):
            raise ValueError("volumes: mount path %r must be absolute, e.g. '/data'" % (mount,))
        if collector is not None:
            collector.add(d, mount)
        else:
            specs.append(d._spec(mount))
    return new_args, new_kwargs, specs

"""Checks made when decorating, as the API reference describes them: what cannot work
remotely is refused at once with TypeError/ValueError, not at the call or in the job."""

import functools
import os
import warnings

import pytest

import kinetic


def test_lru_cache_wrapped_is_refused():
    with pytest.raises(TypeError, match="lru_cache"):
        @kinetic.run(accelerator="cpu")
        @functools.lru_cache(maxsize=None)
        def cached(x):
            return x


def test_volumes_need_absolute_keys_and_data_values(tmp_path):
    d = kinetic.Data(str(tmp_path))
    with pytest.raises(ValueError, match="not an absolute path"):
        kinetic.run(accelerator="cpu", volumes={"data": d})
    with pytest.raises(TypeError, match="not a kinetic.Data"):
        kinetic.run(accelerator="cpu", volumes={"/data": str(tmp_path)})
    kinetic.run(accelerator="cpu", volumes={"/data": d})  # fine


def test_debug_with_spot_warns():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        kinetic.run(accelerator="gpu-l4", debug=True, spot=True)
    assert any("spot" in str(x.message) and "debug" in str(x.message) for x in w), [str(x.message) for x in w]


def test_data_checks_at_construction(tmp_path, monkeypatch):
    with pytest.raises(FileNotFoundError):
        kinetic.Data(str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="fuse"):
        kinetic.Data("hf://imdb?split=train", fuse=True)
    monkeypatch.chdir(str(tmp_path))
    (tmp_path / "ds").mkdir()
    assert kinetic.Data("./ds/").path == str(tmp_path / "ds")
    assert kinetic.Data("gs://bucket/prefix/").path == "gs://bucket/prefix/"


def test_large_payload_warns(monkeypatch):
    monkeypatch.setenv("KINETIC_PAYLOAD_SIZE_WARN_MB", "1")

    @kinetic.run(accelerator="cpu")
    def size(blob):
        return len(blob)

    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert size(b"x" * (2 << 20)) == 2 << 20
    assert any("KINETIC_PAYLOAD_SIZE_WARN_MB=1" in str(x.message) for x in w), [str(x.message) for x in w]

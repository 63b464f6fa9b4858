"""pyree's cache folder (runtime_support/cache/disk_cache.py) and the native runtime's object
code kept there: a later process loads the object instead of compiling the IR again, and
anything wrong with a cache file is a miss, never a crash."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers_process import run_json

from runtime_support.cache import disk_cache


def test_entries_read_back_only_as_written(tmp_path):
    path = tmp_path / "sub" / "entry"
    assert disk_cache.read_checked(path, 100) is None  # absent
    disk_cache.write_checked(path, b"payload")
    assert disk_cache.read_checked(path, 100) == b"payload"
    assert disk_cache.read_checked(path, 6) is None  # over the caller's limit
    raw = path.read_bytes()
    path.write_bytes(raw[:-1])  # truncated
    assert disk_cache.read_checked(path, 100) is None
    path.write_bytes(raw[:-1] + b"X")  # altered
    assert disk_cache.read_checked(path, 100) is None
    path.write_bytes(b"payload")  # not an entry at all
    assert disk_cache.read_checked(path, 100) is None
    assert [p.name for p in path.parent.iterdir()] == ["entry"]  # no temporary files left


def test_an_unwritable_folder_is_no_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_bytes(b"")
    disk_cache.write_checked(blocker / "entry", b"x")  # its parent is a file: nothing happens
    assert disk_cache.read_checked(blocker / "entry", 10) is None


def test_root_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("PYREE_CACHE_DIR", str(tmp_path / "a"))
    assert disk_cache.root() == tmp_path / "a"
    monkeypatch.delenv("PYREE_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert disk_cache.root() == tmp_path / "xdg" / "pyree"


# A fresh process: the native runtime (from the cache or compiled), then a recorded command
# buffer run twice, the second time by the native plan runner in that object code.
_PROBE = """
import json
import numpy as np
from runtime_support.hal.buffer import HalBuffer
from runtime_support.hal.command_buffer import BufferRef, HalCommandBuffer
from runtime_support.hal.device import LocalDevice
from runtime_support.native import jit as native_jit

runtime = native_jit.native_runtime()
cb = HalCommandBuffer(LocalDevice("local-sync"), 0, 3, 1)
cb.fill(BufferRef(None, 0, 4, 8), 0x01020304, 4)
cb.finalize()
out = []
for _ in range(2):
    buffer = HalBuffer.allocate(16)
    cb.execute([(buffer, 0, 16)], 1)
    out.append(buffer.read().hex())
print(json.dumps({"from_cache": runtime.from_cache, "planned": bool(cb._plan), "out": out}))
"""


def _probe(cache: Path) -> dict:
    return run_json(_PROBE, cache)


def test_native_runtime_object_code_is_reused_by_the_next_process(tmp_path):
    pytest.importorskip("llvmlite")
    want = "00000000" + "04030201" * 2 + "00000000"
    first = _probe(tmp_path)
    assert first == {"from_cache": False, "planned": True, "out": [want, want]}
    [entry] = (tmp_path / "native").iterdir()
    second = _probe(tmp_path)
    assert second == {"from_cache": True, "planned": True, "out": [want, want]}
    # a damaged entry is a miss: compiled again, and the entry written anew
    raw = entry.read_bytes()
    entry.write_bytes(raw[: len(raw) // 2])
    assert _probe(tmp_path)["from_cache"] is False
    assert entry.read_bytes() == raw
    assert _probe(tmp_path) == second

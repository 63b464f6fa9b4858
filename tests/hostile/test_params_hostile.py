"""Hostile parameter archives (issue #27, items 3, 4 and 15; item 5 is an archive case of
test_io_parameters.test_parameters_match_iree_runtime).

* Sparse files whose headers claim huge sizes are parsed in place: a child process with
  an address-space limit of (its own size + the file + 256 MiB) opens them, so a reader
  that copies what a claim names fails with MemoryError; its peak RSS stays small.
* GGUF dimension products stop growing once past the data (linear, no huge ints), and
  every error is a one-line VMError.
* Keys with terminal control codes come out escaped in every message.
"""

from __future__ import annotations

import json
import re
import struct

import numpy as np
import pytest

from hostile_util import run_python
from runtime_support.errors import StatusCode, VMError
from runtime_support.params import build_providers, irpa_bytes, open_parameter_file
from runtime_support.params.gguf import MAGIC as GGUF_MAGIC
from runtime_support.params.gguf import gguf_bytes
from runtime_support.params.safetensors import safetensors_bytes

GIB = 1 << 30

# Opens one file with the address space bounded; prints the outcome and the peak RSS.
_CHILD = r"""
import json, resource, sys
from runtime_support.errors import VMError
from runtime_support.params import open_parameter_file
path, size = sys.argv[1], int(sys.argv[2])
with open("/proc/self/status") as f:
    vm = next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmSize:"))
limit = vm + size + (256 << 20)
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
try:
    _, entries = open_parameter_file(path)
    out = {"loaded": {e.key: bytes(e.read()).hex() for e in entries}}
except VMError as e:
    out = {"code": e.code.name, "message": e.message}
# (VmHWM: this process's own peak; ru_maxrss keeps the forking parent's across exec)
with open("/proc/self/status") as f:
    out["maxrss_kib"] = next(int(l.split()[1]) for l in f if l.startswith("VmHWM:"))
print(json.dumps(out))
"""


def _open_bounded(path, size: int) -> dict:
    proc = run_python(["-c", _CHILD, str(path), str(size)], timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    assert out["maxrss_kib"] < 200 * 1024, out  # IREE: ~12 MB
    return out


def _sparse(path, head: bytes, size: int):
    """`head` then zeros up to `size` bytes, without writing the zeros (a sparse file)."""
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(size)
    return path


def test_sparse_safetensors_header_claim_is_capped(tmp_path):
    size = GIB
    path = _sparse(tmp_path / "big.safetensors", struct.pack("<Q", size - 8), size)
    out = _open_bounded(path, size)
    assert out["code"] == "RESOURCE_EXHAUSTED" and "100000000-byte limit" in out["message"]


def test_sparse_gguf_key_claim_is_skipped_in_place(tmp_path):
    """A metadata key claiming 1 GiB (zeros, never written) before a valid tensor."""
    key_length = GIB
    head = struct.pack("<IIQQ", GGUF_MAGIC, 3, 1, 1) + struct.pack("<Q", key_length)
    tail = struct.pack("<IQ", 8, 0)  # value: an empty string
    tail += struct.pack("<Q", 1) + b"t" + struct.pack("<IQIQ", 1, 2, 0, 0)  # t: f32[2]
    body_end = len(head) + key_length + len(tail)
    size = -(-body_end // 32) * 32 + 8
    path = tmp_path / "big.gguf"
    _sparse(path, head, size)
    with open(path, "r+b") as f:
        f.seek(len(head) + key_length)
        f.write(tail)
        f.seek(size - 8)
        f.write(np.array([1.5, -2.0], np.float32).tobytes())
    out = _open_bounded(path, size)
    assert out["loaded"] == {"t": np.array([1.5, -2.0], np.float32).tobytes().hex()}


def test_sparse_irpa_name_claim_is_bounded(tmp_path):
    """An entry naming 512 MiB of a (sparse) metadata segment as its key."""
    data = bytearray(irpa_bytes({"w": b"\x01\x02"}))
    size = len(data) + (512 << 20)
    struct.pack_into("<Q", data, 64, size - 8)  # metadata segment: offset 8, to the end
    struct.pack_into("<Q", data, 56, 8)
    struct.pack_into("<QQ", data, 96 + 20, 0, size - 16)  # entry 0's name: all of it
    path = _sparse(tmp_path / "big.irpa", bytes(data), size)
    out = _open_bounded(path, size)
    assert out["code"] == "RESOURCE_EXHAUSTED" and "keys and metadata" in out["message"]


def _gguf_dims(n_dims: int, dim: int) -> bytes:
    out = struct.pack("<IIQQ", GGUF_MAGIC, 3, 1, 0) + struct.pack("<Q", 1) + b"a"
    out += struct.pack("<I", n_dims) + struct.pack("<Q", dim) * n_dims + struct.pack("<IQ", 0, 0)
    return out + bytes(-len(out) % 32) + bytes(8)


def _one_line_short(message: str) -> None:
    assert "\n" not in message and len(message) < 600, message
    assert not re.search(r"\d{21}", message), message  # no number past 2**64


@pytest.mark.parametrize("n_dims", [2, 250, 40_000])
def test_gguf_huge_dims_are_a_short_typed_error(tmp_path, n_dims):
    """250 dims of 2**64-1 raised a raw ValueError (int-to-str limit) when the message
    printed the product; 40,000 took seconds (a quadratic product)."""
    path = tmp_path / "dims.gguf"
    path.write_bytes(_gguf_dims(n_dims, 2**64 - 1))
    with pytest.raises(VMError) as info:
        open_parameter_file(path)
    assert info.value.code == StatusCode.INVALID_ARGUMENT
    assert "'a'" in info.value.message
    _one_line_short(info.value.message)


class _CountingDims(list):
    """A dims list that counts how many dims the product reads."""

    read = 0

    def __iter__(self):
        for d in super().__iter__():
            self.read += 1
            yield d


def test_gguf_dim_product_stops_past_the_data():
    from runtime_support.params.gguf import element_count

    dims = _CountingDims([2**64 - 1] * 40_000)
    assert element_count(dims, 1 << 20) == (1 << 20) + 1
    assert dims.read == 1  # not 40,000 ever-larger multiplications
    assert element_count(_CountingDims([3] * 10 + [0]), 10) == 0  # a 0 anywhere
    assert element_count([2, 3, 4], 100) == 24


def test_gguf_many_small_dims_match_iree(tmp_path):
    """IREE 3.13 does not cap the dimension count (it accepts 40,000 dims of 1); nor do we."""
    rt = pytest.importorskip("iree.runtime")
    path = tmp_path / "ones.gguf"
    path.write_bytes(_gguf_dims(40_000, 1))
    (entry,) = open_parameter_file(path)[1]
    index = rt.ParameterIndex()
    index.load(str(path))
    assert entry.length == index[0].length == 4


# A key that would clear the screen and break the line if printed raw.
EVIL = "w\x1b[2J\x07\r\nnext"


def _escaped(message: str) -> None:
    assert not any(c in message for c in "\x1b\x07\r\n"), repr(message)
    assert r"\x1b[2J\x07\r\nnext" in message, message


def _evil_irpa() -> bytes:
    data = bytearray(irpa_bytes({EVIL: b"\x01\x02"}))
    struct.pack_into("<Q", data, 96 + 68, 1 << 20)  # data length past the storage
    return bytes(data)


def _evil_gguf() -> bytes:
    data = bytearray(gguf_bytes({EVIL: np.zeros(2, np.float32)}))
    struct.pack_into("<I", data, 24 + 8 + len(EVIL.encode()) + 4 + 8, 99)  # unknown type
    return bytes(data)


def _evil_safetensors() -> bytes:
    data = bytearray(safetensors_bytes({EVIL: np.zeros(2, np.float32)}))
    return bytes(data[:-1])  # the data is one byte short of its offsets


@pytest.mark.parametrize(
    "name, make",
    [("e.irpa", _evil_irpa), ("e.gguf", _evil_gguf), ("e.safetensors", _evil_safetensors)],
)
def test_control_codes_in_archive_keys_are_escaped(tmp_path, name, make):
    (tmp_path / name).write_bytes(make())
    with pytest.raises(VMError) as info:
        open_parameter_file(tmp_path / name)
    _escaped(str(info.value))


def test_control_codes_in_looked_up_keys_are_escaped(tmp_path):
    (tmp_path / "ok.irpa").write_bytes(irpa_bytes({"x": b"\x01"}))
    providers = build_providers([(EVIL, tmp_path / "ok.irpa")])
    with pytest.raises(VMError) as info:
        providers.lookup(EVIL, EVIL)
    _escaped(str(info.value))
    with pytest.raises(VMError) as info:
        providers.lookup("nope", EVIL)
    _escaped(str(info.value))

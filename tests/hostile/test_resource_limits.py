"""Untrusted sizes: every size from a module file or a program is checked before memory is
committed, large module state is allocated lazily, and running out of memory is a VMError
RESOURCE_EXHAUSTED naming the request, never a traceback.

Each case runs the translated package in a subprocess whose address space is bounded
(RLIMIT_AS), so a regression fails as an error or a MemoryError, not by exhausting the
machine. Sizes that come from the file are reproduced by patching the compiled vmfb's
FlatBuffer fields (`module_state.global_ref_count`, `global_bytes_capacity`).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pytest

from helpers_compile import LLVM_CPU_FLAGS
from hostile_util import (
    GLOBAL_BYTES_CAPACITY,
    GLOBAL_REF_COUNT,
    module_state_field,
    patch_i32,
    run_python,
    translate,
)
from iree_oracle import IreeSession
from runtime_support.errors import StatusCode, VMError
from runtime_support.vm import limits
from runtime_support.vm.list import VMList

PROGRAM = """
util.global private mutable @count = 7 : i32
util.global private mutable @state = dense<0.0> : tensor<4xf32>

func.func @bump(%x: i32, %t: tensor<4xf32>) -> (i32, tensor<4xf32>) {
  %v = util.global.load @count : i32
  %s = arith.addi %v, %x : i32
  util.global.store %s, @count : i32
  %old = util.global.load @state : tensor<4xf32>
  %n = arith.addf %old, %t : tensor<4xf32>
  util.global.store %n, @state : tensor<4xf32>
  return %s, %n : i32, tensor<4xf32>
}

func.func @big_tensor(%n: index) -> tensor<?xf32> {
  %c = arith.constant 1.0 : f32
  %0 = tensor.empty(%n) : tensor<?xf32>
  %1 = linalg.fill ins(%c : f32) outs(%0 : tensor<?xf32>) -> tensor<?xf32>
  return %1 : tensor<?xf32>
}

func.func @big_list(%n: index) -> index {
  %c0 = arith.constant 0 : index
  %l = util.list.create %c0 : !util.list<i32>
  util.list.resize %l, %n : !util.list<i32>
  %s = util.list.size %l : !util.list<i32>
  return %s : index
}
"""

GiB = 1 << 30
# Address space for the subprocesses: Python, numpy and the package fit with room to spare;
# 2**31-1 i32 list slots (8 GiB), 2**30 eager ref slots (8 GiB) do not.
MEM_LIMIT = 3 * GiB

# Runs in the subprocess: loads package `m` from sys.argv[1], calls what sys.argv[2] says,
# prints one JSON line {result | code, message} and the peak RSS.
RUNNER = textwrap.dedent(
    """
    import json, resource, sys
    sys.path.insert(0, sys.argv[1])
    import numpy as np
    from runtime_support.errors import VMError
    import m
    rss = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out = {}
    start = rss()
    try:
        ctx = m.load(device="local-sync")
        loaded = rss()
        out["result"] = eval(sys.argv[2])
    except VMError as e:
        out["code"], out["message"] = e.code.name, str(e)
    out["rss_growth_kib"] = rss() - start
    out["call_rss_growth_kib"] = rss() - loaded
    print(json.dumps(out))
    """
)


@pytest.fixture(scope="module")
def vmfb(compile_mlir, tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("limits") / "limits.mlir"
    src.write_text(PROGRAM)
    return compile_mlir(src, LLVM_CPU_FLAGS)


def _package(data: bytes, where: Path) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    (where / "in.vmfb").write_bytes(data)
    res = translate(where / "in.vmfb", where / "out", "m")
    assert res.returncode == 0, res.stderr
    return where / "out"


def _run(pkg: Path, expr: str) -> dict:
    res = run_python(["-c", RUNNER, str(pkg), expr], timeout=120, mem_bytes=MEM_LIMIT)
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


BUMP = "[(r[0], r[1].tolist()) for r in [ctx.bump(5, np.ones(4, np.float32)) for _ in range(2)]]"


def _iree_bump(vmfb: Path):
    s = IreeSession(vmfb)
    return [
        (int(a), b.tolist())
        for a, b in (s.call("bump", [np.int32(5), np.ones(4, np.float32)]) for _ in range(2))
    ]


@pytest.mark.parametrize(
    "field, value",
    [(GLOBAL_REF_COUNT, 1 << 30), (GLOBAL_BYTES_CAPACITY, (1 << 31) - 1)],
    ids=["global_ref_count_2e30", "global_bytes_2e31"],
)
def test_huge_module_state_is_lazy(vmfb, tmp_path, field, value):
    """A file declaring 2**30 ref globals or 2**31-1 global bytes loads in bounded memory
    and runs exactly like the unpatched module under IREE."""
    data = vmfb.read_bytes()
    patched = patch_i32(data, module_state_field(data, field), value)
    out = _run(_package(patched, tmp_path), BUMP)
    assert "code" not in out, out
    assert [tuple(r) for r in out["result"]] == _iree_bump(vmfb)
    assert out["rss_growth_kib"] < 200 * 1024, out


def test_tensor_empty_2e40_f32_is_resource_exhausted(vmfb, tmp_path):
    """tensor.empty of 2**40 f32 -> the HAL allocator answers RESOURCE_EXHAUSTED, as IREE does."""
    n = 1 << 40
    with pytest.raises(Exception) as theirs:
        IreeSession(vmfb).call("big_tensor", [np.int64(n)])
    assert "RESOURCE_EXHAUSTED" in str(theirs.value)
    out = _run(_package(vmfb.read_bytes(), tmp_path), f"ctx.big_tensor({n}).shape")
    assert out.get("code") == "RESOURCE_EXHAUSTED", out
    assert "hal.allocator.allocate" in out["message"] and str(4 * n) in out["message"]


def test_list_resize_2e31_is_resource_exhausted(vmfb, tmp_path):
    n = (1 << 31) - 1
    out = _run(_package(vmfb.read_bytes(), tmp_path), f"ctx.big_list({n})")
    assert out.get("code") == "RESOURCE_EXHAUSTED", out
    assert "list.resize" in out["message"] and str(n) in out["message"]


def test_list_resize_packs_values(vmfb, tmp_path):
    """A list<i32> of 2**24 slots costs ~4 bytes a slot (IREE's cost), not a Python object
    pointer per slot; and its size comes back right (IREE agrees)."""
    n = 1 << 24
    assert int(IreeSession(vmfb).call("big_list", [np.int64(n)])[0]) == n
    out = _run(_package(vmfb.read_bytes(), tmp_path), f"ctx.big_list({n})")
    assert out["result"] == n
    assert out["call_rss_growth_kib"] * 1024 < 6 * n, out


def test_allocating_turns_memory_error_into_resource_exhausted():
    with pytest.raises(VMError) as e:
        with limits.allocating("list.resize", 123, "what"):
            raise MemoryError
    assert e.value.code == StatusCode.RESOURCE_EXHAUSTED and "123 bytes" in str(e.value)


def test_limit_override(monkeypatch):
    monkeypatch.setenv("PYREE_MAX_ALLOCATION_BYTES", str(100 << 20))
    lst = VMList.alloc("i64")
    with pytest.raises(VMError) as e:
        lst.resize(20 << 20)  # 160 MiB of i64
    assert e.value.code == StatusCode.RESOURCE_EXHAUSTED
    assert "20971520 x i64" in str(e.value) and len(lst) == 0
    lst.resize(1 << 20)
    assert len(lst) == 1 << 20 and lst.get_i64((1 << 20) - 1) == 0

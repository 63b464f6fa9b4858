"""VMVX executables (issue #26): the corpus's VMVX builds, translated (every kernel into
Python at translate time) and run, equal iree.runtime bit for bit.

Each `vmvx` corpus program runs in two builds: the default one (scalar kernels that
import nothing) and `--iree-vmvx-enable-microkernels` (kernels calling the `vmvx`
module's 2-D tile ops), on `local-sync` and `local`.
"""

from __future__ import annotations

import dataclasses

import pytest

from conftest import corpus_cases
from differential import check_against_iree

UKERNELS = "--iree-vmvx-enable-microkernels"


def _builds():
    out = []
    for case in corpus_cases(variants=("vmvx",)):
        out.append(case)
        out.append(dataclasses.replace(case, id=f"{case.name}@vmvx-ukernels", flags=case.flags + (UKERNELS,)))
    return out


BUILDS = _builds()
DEVICE_CASES = [(c, d) for c in BUILDS for d in ("local-sync", "local")]


@pytest.mark.parametrize("case,device", DEVICE_CASES, ids=[f"{c.id}-{d}" for c, d in DEVICE_CASES])
def test_vmvx_build_matches_iree_runtime(case, device, compile_mlir, tmp_path):
    check_against_iree(case, device, compile_mlir, tmp_path)


_BLOCKED_CHILD = r"""
import importlib.abc, importlib.util, sys

class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("llvmlite", "elftools"):
            raise ImportError(f"{name} is blocked in this test")
        return None

sys.meta_path.insert(0, Block())
import numpy as np
pkg_dir = sys.argv[1]
spec = importlib.util.spec_from_file_location(
    "pkg", pkg_dir + "/__init__.py", submodule_search_locations=[pkg_dir]
)
pkg = importlib.util.module_from_spec(spec)
sys.modules["pkg"] = pkg
spec.loader.exec_module(pkg)
a = np.arange(15, dtype=np.float32).reshape(3, 5) / 7
b = np.arange(20, dtype=np.float32).reshape(5, 4) / 3
for device in ("local-sync", "local"):
    out = pkg.load(device=device).matmul(a, b)
    sys.stdout.write(out.tobytes().hex() + "\n")
assert not any(m.split(".")[0] in ("llvmlite", "elftools") for m in sys.modules)
"""


def test_vmvx_package_runs_without_llvmlite_and_pyelftools(compile_mlir, tmp_path):
    """A package whose kernels are all VMVX needs numpy alone (contract.md): imported and
    run in a process where llvmlite and pyelftools cannot be imported."""
    import os
    import subprocess
    import sys

    import numpy as np

    from iree_oracle import IreeSession
    from translator.codegen import write_package
    from translator.reader import read_module_file

    case = next(c for c in corpus_cases(variants=("vmvx",)) if c.name == "tensor_matmul")
    vmfb = compile_mlir(case.source, case.flags)
    pkg_dir = write_package(read_module_file(vmfb), tmp_path, "pkg")
    env = dict(os.environ, PYREE_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run(
        [sys.executable, "-c", _BLOCKED_CHILD, str(pkg_dir)], capture_output=True, text=True, env=env
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    session = IreeSession(vmfb)
    a = np.arange(15, dtype=np.float32).reshape(3, 5) / 7
    b = np.arange(20, dtype=np.float32).reshape(5, 4) / 3
    expected = session.call("matmul", [a, b], session.signature("matmul"))[0]
    assert proc.stdout.split() == [np.asarray(expected).tobytes().hex()] * 2


def _vmvx_vmfb(compile_mlir, name: str, ukernels: bool = False) -> bytes:
    case = next(c for c in corpus_cases(variants=("vmvx",)) if c.name == name)
    flags = case.flags + ((UKERNELS,) if ukernels else ())
    return compile_mlir(case.source, flags).read_bytes()


def _translate(data: bytes):
    from translator.codegen import generate
    from translator.reader import read_module

    return generate(read_module(data), "pkg")


def _replace_in_executable(data: bytes, old: bytes, new: bytes) -> bytes:
    from translator.reader import read_module
    from translator.vmvx import find_executables

    module = read_module(data)
    ordinal, exe = find_executables(module)[0]
    start = data.index(exe)
    assert old in exe
    return data[:start] + exe.replace(old, new) + data[start + len(exe):]


def test_hostile_executables_are_invalid_module_errors(compile_mlir):
    """The nested module is verified like the host: IREE's entry calling convention, only
    imports the vmvx module serves, and any malformed byte an InvalidModuleError naming
    the executable, never another exception."""
    import random

    from translator.errors import InvalidModuleError
    from translator.reader import read_module
    from translator.vmvx import find_executables

    data = _vmvx_vmfb(compile_mlir, "tensor_elementwise", ukernels=True)
    assert len(_translate(data).kernels) == 1
    bad = _replace_in_executable(data, b"0rrriiiiiiiii_v", b"0rrriiiiiiiii_i")
    with pytest.raises(InvalidModuleError, match=r"\.rodata\[\d+\].*calling convention"):
        _translate(bad)
    bad = _replace_in_executable(data, b"add.2d.f32", b"add.2d.q32")
    with pytest.raises(InvalidModuleError, match="not served by the vmvx module"):
        _translate(bad)
    bad = _replace_in_executable(data, b"0rIIIrIIIII_v", b"0rIIIrIIII_vv")
    with pytest.raises(InvalidModuleError, match="calling convention"):
        _translate(bad)

    ordinal, exe = find_executables(read_module(data))[0]
    start = data.index(exe)
    rng = random.Random(26)
    outcomes = {"translated": 0, "refused": 0}
    for _ in range(60):
        mutated = bytearray(exe)
        for _ in range(rng.randint(1, 4)):
            mutated[rng.randrange(len(mutated))] = rng.randrange(256)
        try:
            _translate(data[:start] + bytes(mutated) + data[start + len(exe):])
            outcomes["translated"] += 1
        except InvalidModuleError as e:
            assert "\n" not in str(e)
            outcomes["refused"] += 1
    assert outcomes["refused"] > 0, outcomes


def _edge_inputs():
    import numpy as np

    rng = np.random.default_rng(26)
    a = rng.integers(-(2**31), 2**31, (4, 8), dtype=np.int64).astype(np.int32)
    a.flat[:6] = [-(2**31), 0, -1, 1, 2**31 - 1, 12345]
    b = rng.integers(1, 41, (4, 8)).astype(np.int32)  # (shift amounts up to 40)
    b.flat[:6] = [3, 31, 32, 33, -3, -7]  # (never 0, nor -1 under INT_MIN: IREE traps)
    x = (rng.standard_normal((4, 8)) * 3).astype(np.float32)
    x.flat[:10] = [1e-40, -1e-40, 0.0, -0.0, 1e-20, -88.0, -104.0, 3.5e-38, -2.0, np.inf]
    y = (rng.standard_normal((4, 8)) * 3).astype(np.float32)
    y.flat[:10] = [1.0, 2.0, -1e-40, 1e-40, 1e-20, 1.0, 1.0, 0.25, 1.0, -1.0]
    return (a, b), (x, y)


@pytest.mark.parametrize("ukernels", [False, True], ids=["default", "ukernels"])
@pytest.mark.parametrize("device", ["local-sync", "local"])
def test_tile_op_edge_values_match_iree(ukernels, device, compile_mlir, tmp_path):
    """Shift amounts as x86-64 IREE takes them, division, ctlz, and float numerics with
    denormals flushed (operands and results) and libm exp/log: bit for bit with IREE,
    in the scalar kernels and in the vmvx module's tile ops."""
    from pathlib import Path

    from iree_oracle import IreeSession
    from differential import same_results as _same, load_package
    from translator.reader import read_module_file
    from translator.codegen import write_package

    src = Path(__file__).with_name("vmvx_ops.mlir")
    flags = ("--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=vmvx")
    vmfb = compile_mlir(src, flags + ((UKERNELS,) if ukernels else ()))
    pkg = load_package(write_package(read_module_file(vmfb), tmp_path, "pkg"))
    ctx = pkg.load(device=device)
    session = IreeSession(vmfb)
    for name, inputs in zip(("ints", "floats"), _edge_inputs()):
        expected = session.call(name, list(inputs), session.signature(name))
        actual = ctx.call(name, *inputs)
        for i, (e, a) in enumerate(zip(expected, actual)):
            assert _same(e, a), f"{name} result {i}: IREE {e!r} != pyree {a!r}"


# --------------------------------------------------------------------------- the vmvx module


def _buf(values, dtype="<u4", readonly=False):
    import numpy as np

    from runtime_support.vm.buffer import VMBuffer

    data = bytearray(np.asarray(values, dtype).tobytes())
    return VMBuffer(bytes(data) if readonly else data, readonly=readonly)


def _u32(buf):
    import numpy as np

    return np.frombuffer(buf.data, "<u4").tolist()


def _iree_loop(op, lhs, lo, l0, l1, rhs, ro, r0, r1, out, oo, o0, o1, n0, n1):
    """IREE's elementwise.c loop over Python lists (each element read, then written)."""
    for i in range(n0):
        for j in range(n1):
            out[oo + i * o0 + j * o1] = op(lhs[lo + i * l0 + j * l1], rhs[ro + i * r0 + j * r1])


def test_overlapping_operands_follow_iree_row_major_loop():
    """An output overlapping its inputs (shifted by one element, or written twice through a
    zero stride) gives what IREE's element loop gives, not a vectorised result."""
    from runtime_support.modules.vmvx import VmvxModule

    vmvx = VmvxModule()
    add = lambda a, b: (a + b) & 0xFFFFFFFF  # noqa: E731
    cases = [  # (lhs offset, rhs offset, out offset, out strides)
        (0, 0, 1, (4, 1)),  # out = in shifted by one: each write read by the next element
        (1, 0, 0, (4, 1)),  # out one behind lhs: reads stay ahead of writes
        (0, 0, 0, (4, 1)),  # in place
        (0, 2, 3, (0, 1)),  # row stride 0: each row overwrites the last
    ]
    for lo, ro, oo, (o0, o1) in cases:
        base = list(range(1, 17)) + [0] * 8
        buf = _buf(base)
        vmvx.add_2d_i32(buf, lo, 4, 1, buf, ro, 4, 1, buf, oo, o0, o1, 3, 4)
        want = list(base)
        _iree_loop(add, want, lo, 4, 1, want, ro, 4, 1, want, oo, o0, o1, 3, 4)
        assert _u32(buf) == want, (lo, ro, oo, o0, o1)


def status(fn, *args):
    """(code, text) of the one-line VMError `fn(*args)` raises."""
    from runtime_support.errors import VMError

    with pytest.raises(VMError) as e:
        fn(*args)
    assert "\n" not in str(e.value)
    return e.value.code, str(e.value)


def test_tile_op_errors_are_one_line_vm_errors():
    from runtime_support.errors import StatusCode
    from runtime_support.modules.vmvx import VmvxModule

    vmvx = VmvxModule()

    a, z, out = _buf([7, -(2**31) & 0xFFFFFFFF]), _buf([0, 1]), _buf([0, 0])
    code, text = status(vmvx.divs_2d_i32, a, 0, 0, 1, z, 0, 0, 1, out, 0, 0, 1, 1, 2)
    assert code == StatusCode.INVALID_ARGUMENT and "division by zero" in text
    m1 = _buf([1, 0xFFFFFFFF])
    code, text = status(vmvx.divs_2d_i32, a, 0, 0, 1, m1, 0, 0, 1, out, 0, 0, 1, 1, 2)
    assert "INT_MIN / -1" in text
    code, text = status(vmvx.divu_2d_i32, a, 0, 0, 1, z, 0, 0, 1, out, 0, 0, 1, 1, 2)
    assert "division by zero" in text
    # IREE's mapping checks: 32-bit sizes and strides, the span inside the buffer, a
    # mutable output, a non-null buffer; and strides that leave the buffer.
    code, text = status(vmvx.copy_2d_x32, a, 0, 0, 1, out, 0, 0, 1, 1 << 32, 1)
    assert code == StatusCode.INVALID_ARGUMENT and "buffer overflow for in" in text
    code, _ = status(vmvx.copy_2d_x32, a, 1, 0, 1, out, 0, 0, 1, 1, 2)
    assert code == StatusCode.OUT_OF_RANGE
    code, _ = status(vmvx.copy_2d_x32, a, 0, 0, 1, _buf([0, 0], readonly=True), 0, 0, 1, 1, 2)
    assert code == StatusCode.PERMISSION_DENIED
    code, text = status(vmvx.copy_2d_x32, None, 0, 0, 1, out, 0, 0, 1, 1, 2)
    assert code == StatusCode.INVALID_ARGUMENT and "null" in text
    code, _ = status(vmvx.copy_2d_x32, a, 1, -1, 1, out, 0, 0, 1, 2, 2)
    assert code == StatusCode.OUT_OF_RANGE
    vmvx.fill_2d_x32(-5, out, 0, 2, 1, 2)
    assert _u32(out) == [0xFFFFFFFB] * 2


def test_every_vmvx_import_is_declared_once():
    """The import table is the one the translator checks kernels against, and every row
    has its method."""
    from runtime_support.modules.vmvx import IMPORTS, VmvxModule

    assert len(IMPORTS) == 32
    for full_name, cconv in IMPORTS.items():
        assert callable(getattr(VmvxModule, full_name.partition(".")[2].replace(".", "_")))
        assert cconv.startswith("0") and cconv.endswith("_II" if "query" in full_name else "_v")


# --------------------------------------------------------------------------- the ukernels


def _ukernel_inputs():
    import numpy as np

    rng = np.random.default_rng(13)

    def f(*shape):
        x = (rng.standard_normal(shape) * 3).astype(np.float32)
        x.flat[:4] = [1e-40, -1e-39, 3e-39, 1e-20]  # (denormals flushed; a tiny product)
        return x

    def i8(*shape):
        return rng.integers(-128, 128, shape).astype(np.int8)

    return {
        "mmt4d": [f(2, 3, 4, 1), f(5, 3, 4, 1), f(2, 5, 4, 4)],  # (generic tile: mul, then add)
        "m16": [f(3, 40, 4, 1), f(2, 40, 16, 1), f(3, 2, 4, 16)],  # (x86-64 tile: fused)
        "m3": [f(3, 20, 3, 2), f(2, 20, 5, 2), f(3, 2, 3, 5)],
        "mmt4di8": [i8(2, 3, 4, 2), i8(5, 3, 4, 2), rng.integers(-(2**31), 2**31, (2, 5, 4, 4)).astype(np.int32)],
        "pack": [f(7, 5)],
        "packt": [rng.integers(-9, 9, (7, 5)).astype(np.int32)],
        "unpack": [f(2, 3, 4, 2)],
    }


@pytest.mark.parametrize("device", ["local-sync", "local"])
def test_ukernels_match_iree(device, compile_mlir, tmp_path):
    """vmvx.mmt4d (f32 generic and fused tiles, s8*s8->s32 accumulating), vmvx.pack
    (padding, transposed inner and outer), vmvx.unpack: bit for bit with IREE."""
    from pathlib import Path

    from iree_oracle import IreeSession
    from differential import same_results as _same, load_package
    from translator.reader import read_module_file
    from translator.codegen import write_package

    src = Path(__file__).with_name("vmvx_ukernels.mlir")
    flags = ("--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=vmvx", UKERNELS)
    vmfb = compile_mlir(src, flags)
    pkg = load_package(write_package(read_module_file(vmfb), tmp_path, "pkg"))
    ctx = pkg.load(device=device)
    session = IreeSession(vmfb)
    for name, inputs in _ukernel_inputs().items():
        expected = session.call(name, list(inputs), session.signature(name))
        actual = ctx.call(name, *inputs)
        actual = actual if isinstance(actual, (list, tuple)) else [actual]
        for i, (e, a) in enumerate(zip(expected, actual)):
            assert _same(e, a), f"{name} result {i}: IREE {e!r} != pyree {a!r}"


def test_ukernel_semantics_and_errors():
    """Direct calls: pack/unpack round trip with transposes, and every bad operand a
    one-line VMError, never an IndexError or a write outside the buffer."""
    import numpy as np

    from runtime_support.errors import StatusCode
    from runtime_support.modules.vmvx import VmvxModule

    vmvx = VmvxModule()

    src = np.arange(35, dtype="<u4").reshape(7, 5)
    inp = _buf(src.ravel())
    packed = _buf([0] * 48)
    # 7x5 -> 3x2 outer (transposed) of 2x4 tiles (transposed), padding 99
    vmvx.pack(inp, 0, 5, 1, packed, 0, 16, 8, 7, 5, 3, 2, 2, 4, 99, 0x303)
    want = np.full((8, 6), 99, "<u4")
    want[:7, :5] = src
    want = want.reshape(2, 4, 3, 2).transpose(2, 0, 3, 1)
    assert _u32(packed) == want.ravel().tolist()
    back = _buf([0] * 35)
    vmvx.unpack(packed, 0, 16, 8, back, 0, 5, 1, 3, 2, 2, 4, 7, 5, 0x303)
    assert _u32(back) == src.ravel().tolist()
    assert vmvx.query_tile_sizes_2d(-1, -1, 0x0101)[1] in (1, 2, 4)

    code, text = status(vmvx.pack, inp, 0, 5, 1, packed, 0, 16, 8, 7, 5, 3, 2, 2, 4, 0, 0x07)
    assert code == StatusCode.INVALID_ARGUMENT and "unhandled flags" in text
    code, _ = status(vmvx.pack, inp, 0, 5, 1, packed, 0, 16, 8, 7, 5, 3, 3, 2, 4, 0, 0x303)
    assert code == StatusCode.OUT_OF_RANGE  # (the output past its buffer)
    code, text = status(vmvx.pack, inp, 0, 5, 1, packed, 0, 16, 8, 7, 5, 1, 2, 2, 4, 0, 0x303)
    assert code == StatusCode.INVALID_ARGUMENT and "does not cover" in text
    code, _ = status(vmvx.pack, inp, 1, 5, 1, packed, 0, 16, 8, 7, 5, 3, 2, 2, 4, 0, 0x303)
    assert code == StatusCode.OUT_OF_RANGE  # (the input past its buffer)
    code, _ = status(vmvx.unpack, packed, 0, 16, 8, _buf([0] * 35, readonly=True), 0, 5, 1, 3, 2, 2, 4, 7, 5, 1)
    assert code == StatusCode.PERMISSION_DENIED
    code, text = status(vmvx.unpack, packed, 0, 16, 8, back, 0, 5, 1, 3, 2, 2, 4, 7, 5, 0x02)
    assert "unhandled flags" in text
    code, text = status(vmvx.unpack, packed, 0, 16, 8, back, 0, 5, 1, -3, 2, 2, 4, 7, 5, 1)
    assert code == StatusCode.INVALID_ARGUMENT

    lhs, rhs, out = _buf([0] * 8), _buf([0] * 8), _buf([0] * 16)
    assert vmvx.mmt4d(lhs, 0, 4, rhs, 0, 4, out, 0, 16, 1, 1, 2, 4, 4, 2, 0x202) is None
    code, text = status(vmvx.mmt4d, lhs, 0, 4, rhs, 0, 4, out, 0, 16, 1, 1, 2, 4, 4, 2, 0x203)
    assert "unhandled flags" in text  # (f16*f16->f32: not served by IREE's vmvx module)
    code, _ = status(vmvx.mmt4d, lhs, 0, 8, rhs, 0, 8, out, 0, 16, 1, 1, 3, 4, 4, 1, 0x201)
    assert code == StatusCode.OUT_OF_RANGE
    code, _ = status(vmvx.mmt4d, lhs, 0, 8, rhs, 0, 8, out, 0, 16, 1, 1, 2, -4, 4, 1, 0x201)
    assert code in (StatusCode.INVALID_ARGUMENT, StatusCode.OUT_OF_RANGE)
    code, text = status(vmvx.mmt4d, lhs, 0, 4, rhs, 0, 4, out, 0, 16, 1, 1, 1, 4, 4, 1, 0x001)
    assert "no tile function" in text
    code, text = status(vmvx.mmt4d, None, 0, 4, rhs, 0, 4, out, 0, 16, 1, 1, 1, 4, 4, 1, 0x201)
    assert "null" in text
    code, text = status(vmvx.query_tile_sizes_2d, 4, 4, 0x0104)
    assert "unhandled flags" in text

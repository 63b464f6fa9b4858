"""Native command-buffer plans, the native worker pool and dispatch statistics.

Plans (runtime_support/exec/plan.py) must give exactly what the command-by-command Python
path gives (the reference), decline to it whenever an execution would fail, and raise the
same errors; the worker pool must give bit-identical results to one thread, denormals
flushed on every thread; translated programs must match iree.runtime on `local`.
"""

from __future__ import annotations

import ctypes
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from runtime_support.errors import StatusCode, VMError
from differential import load_package
from runtime_support.hal.buffer import HalBuffer
from runtime_support.hal.command_buffer import MODE_ONE_SHOT, BufferRef, HalCommandBuffer
from runtime_support.hal.device import LocalDevice
from runtime_support.loaders import statistics
from runtime_support.native import jit as native_jit, layout as native_layout, pool as native_pool

try:
    import llvmlite  # noqa: F401
except ImportError:  # the product's dependency; without it everything falls back to ctypes
    pytestmark = pytest.mark.skip(reason="needs llvmlite")


def test_native_code_compiles():
    """With llvmlite present the JIT code must build (a broken IR would otherwise only
    show as the slower ctypes fallback)."""
    assert native_jit.native_runtime() is not None, native_jit.native_error()


@pytest.mark.parametrize("unit", native_jit.arch_units() + list(native_jit.UNITS))
def test_ir_unit_parses_and_verifies(unit):
    """Each shipped .ll unit, its placeholders filled from layout.py, is a module of its
    own (it declares what it takes from the others) that llvmlite parses and verifies."""
    import llvmlite.binding as llvm

    text = native_jit.fill(native_jit.unit_text(unit), native_jit.substitutions())
    assert not native_jit.PLACEHOLDER.search(text)
    llvm.parse_assembly(text).verify()


def test_ir_joined_has_no_placeholder_and_verifies():
    import llvmlite.binding as llvm

    text = native_jit.ir()
    assert not native_jit.PLACEHOLDER.search(text)
    llvm.parse_assembly(text).verify()


def test_pool_block_structure_follows_the_table():
    """The ctypes PoolBlock's field offsets are the table's (the values the IR is given)."""
    block, values = native_layout.PoolBlock, native_layout.substitutions()
    for name, _kind, _line in native_layout.POOL_FIELDS:
        offset = getattr(block, name).offset
        assert offset == native_layout.POOL_OFFSETS[name] == values[f"POOL_{name.upper()}"]
        assert offset % 64 == 0 or not _line
    assert ctypes.sizeof(block) == native_layout.POOL_SIZE
    assert native_layout.POOL_OFFSETS["gen"] == 0  # (the IR uses the block's address)


def test_no_llvm_ir_in_python_sources():
    """LLVM IR lives in runtime_support/native/*.ll, never in a Python string."""
    import ast
    import re

    root = Path(__file__).resolve().parent.parent / "runtime_support"
    ir_line = re.compile(r"^\s*(define|declare)\s.*@[\w.]+\(|=\s*(getelementptr|load|call)\s")
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                found += [f"{path}: {line}" for line in node.value.splitlines()
                          if ir_line.search(line)]
    assert not found, found

FLAGS = (
    "--iree-hal-target-device=local",
    "--iree-hal-local-target-device-backends=llvm-cpu",
    "--iree-llvmcpu-target-cpu=generic",
)

MUL = """
func.func @mul(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.mulf %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""

# Several workgroups per dispatch, several dispatches, and denormal products.
BIG = """
func.func @big(%a: tensor<256x512xf32>, %b: tensor<512x384xf32>, %c: tensor<256x384xf32>)
    -> (tensor<256x384xf32>, tensor<256x384xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<256x384xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<256x384xf32>) -> tensor<256x384xf32>
  %m = linalg.matmul ins(%a, %b : tensor<256x512xf32>, tensor<512x384xf32>)
                     outs(%f : tensor<256x384xf32>) -> tensor<256x384xf32>
  %p = arith.mulf %c, %c : tensor<256x384xf32>
  %s = arith.addf %m, %p : tensor<256x384xf32>
  return %s, %p : tensor<256x384xf32>, tensor<256x384xf32>
}
"""



def _src(tmp_path_factory, name: str, text: str) -> Path:
    path = tmp_path_factory.mktemp(name) / f"{name}.mlir"
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def mul_vmfb(compile_mlir, tmp_path_factory) -> Path:
    return compile_mlir(_src(tmp_path_factory, "mul", MUL), FLAGS)


@pytest.fixture(scope="module")
def big_vmfb(compile_mlir, tmp_path_factory) -> Path:
    return compile_mlir(_src(tmp_path_factory, "big", BIG), FLAGS)


def _package(vmfb: Path, out: Path):
    from translator.codegen import write_package
    from translator.reader import read_module_file

    return load_package(write_package(read_module_file(vmfb), out, "pkg"))


# --- plans against the Python path, at the HAL level --------------------------------------


@pytest.fixture(scope="module")
def mul_executable(mul_vmfb):
    with zipfile.ZipFile(mul_vmfb) as z:
        (name,) = [n for n in z.namelist() if n.endswith(".so")]
        kernel = z.read(name)
    device = LocalDevice("local-sync")
    exe = device.create_executable("embedded-elf-x86_64", kernel)
    return device, exe


def _f32(values) -> HalBuffer:
    data = np.asarray(values, np.float32).tobytes()
    buffer = HalBuffer.allocate(len(data))
    buffer.write(0, data)
    return buffer


def _record(device, exe, modes=0) -> HalCommandBuffer:
    """update, fill, copy, a direct dispatch and an indirect one, over table slots 0..3
    and one direct buffer."""
    cb = HalCommandBuffer(device, modes, 3, 5)
    counts = HalBuffer.allocate(12)
    counts.write(0, np.array([1, 1, 1], np.uint32).tobytes())
    slot = lambda s, off=0, n=16: BufferRef(None, s, off, n)  # noqa: E731
    cb.update(np.array([7.0, 8.0], np.float32).tobytes(), slot(2, 8, 8))
    cb.fill(slot(3, 0, 8), 0x3F800000, 4)  # 1.0f twice
    cb.copy(slot(0, 0, 8), slot(3, 8, 8))
    cb.dispatch(exe, 0, (1, 1, 1), (), [slot(0), slot(1), slot(2, 0, -1)])
    cb.execution_barrier()
    cb.dispatch(exe, 0, BufferRef(counts, 0, 0, 12), (), [slot(2), slot(3), slot(4)])
    cb.finalize()
    return cb


def _run(cb, native_plan: bool, table, workers=1):
    if not native_plan:
        cb._plan = False
    cb.execute(table, workers)
    return cb


def _table():
    a = _f32([1.5, -2.0, 3.0, 4.25])
    b = _f32([2.0, 3.0, -0.5, 8.0])
    return [
        (a, 0, 16),
        (b, 0, 16),
        (HalBuffer.allocate(16), 0, 16),
        (HalBuffer.allocate(16), 0, -1),
        (HalBuffer.allocate(32), 16, 16),
    ]


def test_plan_matches_python_path(mul_executable):
    device, exe = mul_executable
    results = []
    for use_plan in (True, False):
        table = _table()
        cb = _run(_record(device, exe), use_plan, table)
        assert bool(cb._plan) is use_plan
        results.append([entry[0].read() for entry in table])
    assert results[0] == results[1]
    out = np.frombuffer(results[0][4][16:], np.float32)
    assert out.tolist() != [0.0] * 4  # the chain really ran


def test_plan_declines_and_python_path_raises(mul_executable):
    device, exe = mul_executable
    errors = []
    for use_plan in (True, False):
        table = _table()
        table[3] = (table[3][0], 0, 8)  # too short for the fill/copy
        cb = _record(device, exe)
        with pytest.raises(VMError) as info:
            _run(cb, use_plan, table)
        errors.append((info.value.code, str(info.value)))
    assert errors[0] == errors[1]
    assert errors[0][0] == StatusCode.OUT_OF_RANGE


def test_null_table_entry_for_a_dispatch_binding_is_invalid_argument(mul_executable):
    """A dispatch binding's table slot without a buffer: IREE's submission validation says
    INVALID_ARGUMENT ("binding table slot requires a buffer but none was provided"). The
    plan used to pass a null pointer to the kernel (fuzz input 7f6e6198...vmfb:14194 with
    --base-seed 2, a mutated alloca result register: SIGSEGV where IREE fails cleanly).
    Nothing of the command buffer runs: slot 3's fill would write 1.0s."""
    device, exe = mul_executable
    for use_plan in (True, False):
        table = _table()
        table[1] = (None, 0, 0)  # the first dispatch reads slot 1
        target = table[3][0]
        cb = _record(device, exe)
        with pytest.raises(VMError) as info:
            _run(cb, use_plan, table)
        assert info.value.code == StatusCode.INVALID_ARGUMENT
        assert "binding table slot 1" in str(info.value)
        assert target.read() == bytes(16)


def _readonly16() -> HalBuffer:
    return HalBuffer.wrap_host(bytes(16), readonly=True)


# Table entries a plan's per-slot checks must refuse (slot, entry, the decline code of
# native/checks.ll's checks), each with the Python path's error; slot 3 is filled (pattern 4)
# and copied into, slot 0 is copied from.
BAD_ENTRIES = {
    "negative offset": (0, lambda: (HalBuffer.allocate(32), -4, 16), native_layout.DECLINE_RANGE),
    "short length": (0, lambda: (HalBuffer.allocate(16), 0, 12), native_layout.DECLINE_RANGE),
    "past the end": (4, lambda: (HalBuffer.allocate(32), 20, 16), native_layout.DECLINE_RANGE),
    "whole buffer past the end": (3, lambda: (HalBuffer.allocate(16), 20, -1), native_layout.DECLINE_RANGE),
    "whole buffer too short": (3, lambda: (HalBuffer.allocate(16), 8, -1), native_layout.DECLINE_RANGE),
    "negative length": (2, lambda: (HalBuffer.allocate(16), 0, -2), native_layout.DECLINE_RANGE),
    # offset + length would wrap around in 64 bits (to a small or negative sum)
    "huge length": (0, lambda: (HalBuffer.allocate(32), 16, 2**63 - 1), native_layout.DECLINE_RANGE),
    "huge offset": (1, lambda: (HalBuffer.allocate(32), 2**63 - 8, 16), native_layout.DECLINE_RANGE),
    "most negative offset": (1, lambda: (HalBuffer.allocate(32), -(2**63), 16), native_layout.DECLINE_RANGE),
    "huge offset, whole buffer": (4, lambda: (HalBuffer.allocate(32), 2**63 - 1, -1), native_layout.DECLINE_RANGE),
    "offset past 64 bits": (1, lambda: (HalBuffer.allocate(32), 2**64, 16), native_layout.DECLINE_ENTRY),
    "read-only target": (3, lambda: (_readonly16(), 0, 16), native_layout.DECLINE_READONLY),
    "misaligned fill": (3, lambda: (HalBuffer.allocate(32), 2, 16), native_layout.DECLINE_ALIGN),
    "null": (4, lambda: (None, 0, 0), native_layout.DECLINE_ENTRY),
    "short table": (None, None, native_layout.DECLINE_TABLE),
}


@pytest.mark.parametrize("case", sorted(BAD_ENTRIES))
def test_plan_run_declines_each_bad_entry(mul_executable, case):
    """plan.run declines (False, nothing written) on every entry a check refuses, with
    statistics on or off, and the command buffer then raises what the Python path raises.
    The decline is the check's own (plan.check's code: the native checks, or the entry
    words they could not be given)."""
    from array import array

    device, exe = mul_executable
    slot, entry, code = BAD_ENTRIES[case]

    def bad_table():
        table = _table()
        if slot is None:
            return table[:4]
        table[slot] = entry()
        return table

    cb = _record(device, exe)
    cb.execute(_table(), 1)  # builds the plan
    plan = cb._plan
    assert plan and plan.run(_table(), 1) is True
    assert plan.check(_table(), array("q", plan.table)) == 0
    assert plan.check(bad_table(), array("q", plan.table)) == code
    for stats in (False, True):
        table = bad_table()
        before = [e[0].read() if e[0] is not None else None for e in table]
        statistics.enable(stats)
        try:
            assert plan.run(table, 1) is False
        finally:
            statistics.enable(False)
        assert [e[0].read() if e[0] is not None else None for e in table] == before
    errors = []
    for use_plan in (True, False):
        cb = _record(device, exe)
        with pytest.raises(VMError) as info:
            _run(cb, use_plan, bad_table())
        errors.append((info.value.code, str(info.value)))
    assert errors[0] == errors[1]


def test_plan_check_writes_each_slots_address_and_length(mul_executable):
    """What the native checks write per used slot: the entry's buffer address plus its
    offset, and its length (WHOLE_BUFFER: the rest of the buffer); unused slots stay 0."""
    from array import array

    device, exe = mul_executable
    cb = HalCommandBuffer(device, 0, 3, 4)
    cb.fill(BufferRef(None, 1, 0, 8), 0, 4)
    cb.fill(BufferRef(None, 3, 4, 4), 0, 4)
    cb.finalize()
    one, three = HalBuffer.allocate(64), HalBuffer.allocate(64).subspan(16, 32)
    table = [(None, 0, 0), (one, 8, -1), (None, 0, 0), (three, 4, 12)]
    cb.execute(table, 1)
    plan = cb._plan
    assert plan
    image = array("q", plan.table)
    assert plan.check(table, image) == 0
    assert list(image) == [0, 0, one.address + 8, 56, 0, 0, three.address + 4, 12]


def test_plan_declines_a_closed_executable(mul_vmfb):
    """A plan whose executable was closed (its code unmapped) declines, and the Python
    path raises what a dispatch of a closed executable raises."""
    with zipfile.ZipFile(mul_vmfb) as z:
        (name,) = [n for n in z.namelist() if n.endswith(".so")]
        kernel = z.read(name)
    device = LocalDevice("local-sync")
    exe = device.create_executable("embedded-elf-x86_64", kernel)
    cb = _record(device, exe)
    cb.execute(_table(), 1)
    plan = cb._plan
    assert plan and plan.run(_table(), 1) is True
    exe.close()
    table = _table()
    before = [e[0].read() for e in table]
    assert plan.run(table, 1) is False
    assert [e[0].read() for e in table] == before
    with pytest.raises(VMError) as info:
        cb.execute(table, 1)
    assert info.value.code == StatusCode.FAILED_PRECONDITION
    assert "executable is closed" in str(info.value)


def test_no_table_for_dispatch_slots_declines(mul_executable):
    """A command buffer whose only table uses are dispatch bindings (no slot a transfer
    needs), its plan built, then run with no table or an empty one: the plan declines
    (it used to run the kernel on null bindings) and the Python path raises IREE's
    INVALID_ARGUMENT (iree_hal_command_buffer_validate_submission)."""
    device, exe = mul_executable
    cb = HalCommandBuffer(device, 0, 3, 3)
    cb.dispatch(exe, 0, (1, 1, 1), (), [BufferRef(None, s, 0, 16) for s in range(3)])
    cb.finalize()
    good = [(_f32([1, 2, 3, 4]), 0, 16), (_f32([1, 2, 3, 4]), 0, 16), (HalBuffer.allocate(16), 0, 16)]
    cb.execute(good, 1)
    plan = cb._plan
    assert plan
    for table in (None, []):
        assert plan.run(table, 1) is False
        with pytest.raises(VMError) as info:
            cb.execute(table, 1)
        assert info.value.code == StatusCode.INVALID_ARGUMENT
        assert "requires at least 3 bindings but no binding table was provided" in str(info.value)


def test_plan_run_takes_whole_buffer_entries(mul_executable):
    """WHOLE_BUFFER (-1) lengths resolve to the rest of the buffer in the plan as in the
    Python path (slot 3 of _table is one)."""
    device, exe = mul_executable
    results = []
    for use_plan in (True, False):
        table = _table()
        table[2] = (HalBuffer.allocate(48), 16, -1)  # (kernels need aligned bindings)
        cb = _record(device, exe)
        cb.execute(_table(), 1)
        if use_plan:
            assert cb._plan.run(table, 1) is True
        else:
            _run(cb, False, table)
        results.append([e[0].read() for e in table])
    assert results[0] == results[1]


def test_a_plan_runs_on_one_thread_at_a_time(mul_executable):
    """While a thread runs a plan (its token taken), another thread's run declines and
    that execution goes the Python way, with the same results."""
    device, exe = mul_executable
    cb = _record(device, exe)
    reference = _table()
    cb.execute(reference, 1)
    plan = cb._plan
    token = plan._token.pop()  # as a running thread holds it
    try:
        table = _table()
        assert plan.run(table, 1) is False
        cb.execute(table, 1)  # the Python path
        assert [e[0].read() for e in table] == [e[0].read() for e in reference]
    finally:
        plan._token.append(token)
    assert plan.run(_table(), 1) is True
    assert plan._token == [token]
    # A run that raises (workgroup counts out of range) gives the token back too.
    counts = HalBuffer.allocate(12)
    cb = HalCommandBuffer(device, 0, 3, 3)
    cb.dispatch(exe, 0, BufferRef(None, 0, 0, 12), (), [BufferRef(None, 1, 0, 16)] * 3)
    cb.finalize()
    table = [(counts, 0, 12), (HalBuffer.allocate(16), 0, 16)]
    cb.execute(table, 1)  # (0, 0, 0): nothing to run
    counts.write(0, np.array([1, 1, 0x10000], np.uint32).tobytes())
    for _ in range(2):
        with pytest.raises(VMError, match="out of range"):
            cb._plan.run(table, 1)
    assert cb._plan._token == [True]


def test_indirect_counts_out_of_range_same_error(mul_executable):
    device, exe = mul_executable
    errors = []
    for use_plan in (True, False):
        counts = HalBuffer.allocate(12)
        counts.write(0, np.array([1, 1, 0x10000], np.uint32).tobytes())
        cb = HalCommandBuffer(device, 0, 3, 3)
        cb.dispatch(exe, 0, BufferRef(None, 0, 0, 12), (), [BufferRef(None, 1, 0, 16)] * 3)
        cb.finalize()
        table = [(counts, 0, 12), (HalBuffer.allocate(16), 0, 16)]
        with pytest.raises(VMError) as info:
            _run(cb, use_plan, table)
        assert bool(cb._plan) is use_plan
        errors.append((info.value.code, str(info.value)))
    assert errors[0] == errors[1]
    assert errors[0][0] == StatusCode.OUT_OF_RANGE


def test_one_shot_and_reuse(mul_executable):
    device, exe = mul_executable
    cb = _record(device, exe, MODE_ONE_SHOT)
    once = _table()
    cb.execute(once, 1)
    assert cb._plan is False  # runs once: the Python path, no plan to build
    with pytest.raises(VMError) as info:
        cb.execute(_table(), 1)
    assert info.value.code == StatusCode.FAILED_PRECONDITION
    reusable = _record(device, exe)
    first = _table()
    reusable.execute(first, 1)
    second = _table()
    reusable.execute(second, 1)
    assert reusable._plan
    assert [e[0].read() for e in first] == [e[0].read() for e in second]
    assert [e[0].read() for e in once] == [e[0].read() for e in first]


def _steps_block(plan, images, zeros, count, turn=0):
    """The native steps block (native_layout.STEPS_FIELDS) for `plan` and the arrays given."""
    from array import array

    fields = dict.fromkeys(native_layout.STEPS_FIELDS_NAMES, 0)
    fields.update(
        args=plan.args_address, table=plan.table_address, words=len(plan.table),
        first0=images[0].buffer_info()[0], later0=images[1].buffer_info()[0],
        image1=images[2].buffer_info()[0],
        zeros0=zeros[0].buffer_info()[0], nzeros0=len(zeros[0]) // 2,
        zeros1=zeros[1].buffer_info()[0], nzeros1=len(zeros[1]) // 2,
        count=count, turn=turn,
    )
    return array("q", fields.values())


def test_native_steps_zero_fill_then_run_each_turn(mul_executable):
    """pyree_run_plan_steps (a host loop's replayed steps, exec/loops.py): per step,
    its turn's zero ranges are zero-filled before the plan runs on its turn's table image;
    turn 0's first image serves the first step only."""
    from array import array

    device, _ = mul_executable
    cb = HalCommandBuffer(device, 0, 3, 1)
    slot = lambda off, n: BufferRef(None, 0, off, n)  # noqa: E731
    cb.copy(slot(8, 8), slot(0, 8))  # (reads what the zero-fill wrote, if it ran first)
    cb.fill(slot(16, 8), 0x3F800000, 4)
    cb.finalize()
    dirty = lambda: HalBuffer.wrap_host(bytearray(b"\xab" * 32), readonly=False)  # noqa: E731
    cb.execute([(dirty(), 0, 32)], 1)
    plan = cb._plan
    assert plan
    first, later, odd = dirty(), dirty(), dirty()
    images = []
    for buffer in (first, later, odd):
        image = array("q", bytes(8 * len(plan.table)))
        assert plan.check([(buffer, 0, 32)], image) == 0
        images.append(image)
    zeros = [array("q", (later.address + 8, 8)), array("q", (odd.address + 8, 8))]
    block = _steps_block(plan, images, zeros, count=3)
    assert native_jit.native_runtime().run_plan_steps(block.buffer_info()[0]) == 0
    assert block[native_layout.STEPS_FIELDS_NAMES.index("ran")] == 3
    ones = np.array([1.0, 1.0], np.float32).tobytes()
    assert first.read() == b"\xab" * 16 + ones + b"\xab" * 8  # (its range: not turn 0's)
    for buffer in (later, odd):  # zero-filled, then copied from there, then filled
        assert buffer.read() == bytes(16) + ones + b"\xab" * 8


def test_native_steps_stop_at_a_failed_step(mul_executable):
    """A step whose plan fails ends the native steps: it counts as run, its result is
    returned, and plan._raise gives the error the plan runner's caller raises."""
    from array import array

    device, exe = mul_executable
    counts = HalBuffer.allocate(12)
    cb = HalCommandBuffer(device, 0, 3, 3)
    cb.dispatch(exe, 0, BufferRef(counts, 0, 0, 12), (), [BufferRef(None, 1, 0, 16)] * 3)
    cb.finalize()
    table = [(counts, 0, 12), (HalBuffer.allocate(16), 0, 16)]
    cb.execute(table, 1)  # (0, 0, 0): nothing to run; the plan is built
    plan = cb._plan
    counts.write(0, np.array([1, 1, 0x10000], np.uint32).tobytes())
    image = array("q", bytes(8 * len(plan.table)))
    assert plan.check(table, image) == 0
    block = _steps_block(plan, [image] * 3, [array("q"), array("q")], count=3)
    result = native_jit.native_runtime().run_plan_steps(block.buffer_info()[0])
    assert result != 0
    assert block[native_layout.STEPS_FIELDS_NAMES.index("ran")] == 1
    with pytest.raises(VMError) as info:
        plan._raise(result)
    assert info.value.code == StatusCode.OUT_OF_RANGE


def test_statistics_count_plan_dispatches(mul_executable):
    device, exe = mul_executable
    cb = _record(device, exe)
    statistics.reset()
    statistics.enable()
    try:
        cb.execute(_table(), 1)
        cb.execute(_table(), 1)
    finally:
        statistics.enable(False)
    name = exe.exports[0].name
    count, nanoseconds = statistics.snapshot()[name]
    assert count == 4 and nanoseconds > 0
    assert name in statistics.table()
    statistics.reset()
    cb.execute(_table(), 1)  # off: nothing recorded
    assert statistics.snapshot() == {}


# --- the worker pool, end to end against iree.runtime -------------------------------------


def test_local_workers_bit_identical_to_iree(big_vmfb, tmp_path):
    from iree_oracle import IreeSession

    pkg = _package(big_vmfb, tmp_path)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((256, 512)).astype(np.float32)
    b = rng.standard_normal((512, 384)).astype(np.float32)
    # c*c is denormal (or flushed) for tiny c; denormal inputs themselves must read as 0.
    c = (rng.standard_normal((256, 384)) * 1e-20).astype(np.float32)
    c[0, :8] = np.float32(1e-40)
    session = IreeSession(big_vmfb)
    expected = session.call("big", [a, b, c], session.signature("big"))
    for workers in (1, 2, 3):
        ctx = pkg.load(device=LocalDevice("local-task", worker_count=workers))
        # Each recorded grid runs inline first, then on the pool, then whichever way is
        # faster, taking the other way every 16th run: 18 calls see both ways.
        for _ in range(18 if workers == 2 else 3):
            got = ctx.big(a, b, c)
            for e, g in zip(expected, got):
                assert np.asarray(g).tobytes() == np.asarray(e).tobytes(), workers
    assert not np.asarray(got[1]).any()  # every product flushed to zero, on every thread


def test_workers_env_and_device_default(monkeypatch):
    monkeypatch.setenv(native_pool.WORKERS_ENV, "3")
    assert LocalDevice("local-task").worker_count == 3
    assert LocalDevice("local-sync").worker_count == 1
    monkeypatch.setenv(native_pool.WORKERS_ENV, "x")  # (tests/runtime/test_env_knobs.py: the warning)
    monkeypatch.setattr("runtime_support.env_knobs._warned", set())
    with pytest.warns(RuntimeWarning, match="PYREE_WORKERS='x' is not an integer"):
        assert LocalDevice("local-task").worker_count == native_pool.default_worker_count()


def test_print_statistics(big_vmfb, tmp_path):
    pkg = _package(big_vmfb, tmp_path)
    pkg_dir = Path(pkg.__file__).parent
    inputs = ["--input=256x512xf32=1", "--input=512x384xf32=0.5", "--input=256x384xf32=2"]
    run = [sys.executable, "-m", "runtime_support.tools.run_cli", str(pkg_dir), "--function=big"]
    plain = subprocess.run(run + inputs, capture_output=True, text=True)
    stats = subprocess.run(run + inputs + ["--print_statistics"], capture_output=True, text=True)
    assert plain.returncode == stats.returncode == 0, stats.stderr
    assert plain.stdout == stats.stdout  # results unchanged
    assert "Dispatch statistics" not in plain.stderr
    lines = stats.stderr.splitlines()
    assert lines[0] == "Dispatch statistics (@big):"
    assert lines[1].split() == ["export", "count", "total", "ms", "mean", "us", "share"]
    rows = [line.split() for line in lines[2:-1]]
    assert rows and all(row[0].startswith("big_dispatch_") for row in rows)
    assert all(int(row[1]) >= 1 for row in rows)


def test_no_binding_table_for_a_command_buffer_using_slots_is_invalid_argument(mul_executable):
    """A command buffer whose commands use table slots, run with no table (or an empty
    one): IREE's submission validation says INVALID_ARGUMENT ("indirect command buffer
    requires at least 5 bindings but no binding table was provided"). Both paths used to
    run the commands with null bindings, and the kernels got null pointers."""
    device, exe = mul_executable
    for use_plan in (True, False):
        for table in (None, []):
            cb = _record(device, exe)
            assert cb.binding_count == 5  # slots 0..4
            with pytest.raises(VMError) as info:
                _run(cb, use_plan, table)
            assert info.value.code == StatusCode.INVALID_ARGUMENT
            assert (
                "indirect command buffer requires at least 5 bindings but no binding table "
                "was provided" in str(info.value)
            )


# --- where a recorded grid runs: inline or on the pool ------------------------------------

# Stores each workgroup's max_concurrency (1: the grid ran inline) at out[x].
_CONCURRENCY_IR = """
define i32 @concurrency(ptr %env, ptr %ds, ptr %wg) {
  %x = load i32, ptr %wg
  %mc_p = getelementptr i8, ptr %ds, i64 22
  %mc = load i8, ptr %mc_p
  %mc32 = zext i8 %mc to i32
  %bindings_p = getelementptr i8, ptr %ds, i64 32
  %bindings = load ptr, ptr %bindings_p
  %out = load ptr, ptr %bindings
  %xi = zext i32 %x to i64
  %slot = getelementptr i32, ptr %out, i64 %xi
  store i32 %mc32, ptr %slot
  ret i32 0
}
"""


def test_recorded_grid_placement_follows_its_estimates(mul_vmfb):
    """White box (the estimates a plan record keeps, see native/plan.ll): a grid measured over
    $PYREE_INLINE_US inline runs on the pool, even where its pool average is the slower
    one; one whose pool time fell under half that runs inline; every 16th run of the
    latter tries the pool again, every 128th run of a pooled grid runs inline. With the
    workers asleep, the estimate of pool runs that found them so decides."""
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    machine = llvm.Target.from_default_triple().create_target_machine()
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(_CONCURRENCY_IR), machine)
    engine.finalize_object()
    with zipfile.ZipFile(mul_vmfb) as z:
        (name,) = [n for n in z.namelist() if n.endswith(".so")]
        kernel = z.read(name)
    exe = LocalDevice("local-task").create_executable("embedded-elf-x86_64", kernel)
    exe.native._functions[0] = engine.get_function_address("concurrency")
    out = HalBuffer.allocate(4 * 8)
    cb = HalCommandBuffer(LocalDevice("local-task"), 0, 3, 1)
    cb.dispatch(exe, 0, (8, 1, 1), (), [BufferRef(None, 0, 0, 32)] * 3)
    cb.finalize()
    table = [(out, 0, 32)]
    cb.execute(table, 2)
    plan = cb._plan
    assert plan and native_pool.worker_pool(2) is not None
    record = 0  # the plan's only command
    inline_ns = native_jit.inline_ns()

    pool = native_pool.worker_pool(2)
    sleepers = ctypes.c_int32.from_address(pool.address + native_layout.POOL_OFFSETS["sleepers"])

    def run(est, estp, runs, estc=-1, asleep=False) -> int:
        """The participants of one run (estc -1: the same choice, workers asleep or not)."""
        plan.words[record + native_layout.D_EST] = est
        plan.words[record + native_layout.D_EST_POOL] = estp
        plan.words[record + native_layout.D_EST_COLD] = estc
        plan.words[record + native_layout.D_RUNS] = runs
        if asleep:  # (they sleep after a few microseconds' spin: wait until they all do,
            # twice 20 ms apart: a wake the last pool run sent may still be on its way)
            deadline, calm = time.monotonic() + 5, 0
            while calm < 2 and time.monotonic() < deadline:
                time.sleep(0.02)
                calm = calm + 1 if sleepers.value == pool.threads else 0
            assert calm == 2
        cb.execute(table, 2)
        used = set(np.frombuffer(out.read(), np.int32).tolist())
        assert len(used) == 1, used
        return used.pop()

    big, slower = inline_ns + 50_000, inline_ns + 90_000
    assert run(-1, -1, 0) == 1  # not measured yet: inline
    assert run(big, -1, 5) == 2  # big: the pool
    assert run(big, slower, 5) == 2  # stays there though its pool average is slower
    assert run(big, slower, 128) == 1  # every 128th run: inline, to refresh the estimate
    assert run(big, inline_ns // 4, 5) == 1  # got small on the pool: inline
    assert run(big, inline_ns // 4, 16) == 2  # every 16th run: the pool again
    assert run(inline_ns // 2, -1, 5) == 1  # small: inline
    assert run(big, -1, 1) == 1  # the first measurement is replaced before it counts
    # Workers asleep: the pool only where its runs that found them asleep were faster
    # than inline (or have not been measured), and every 16th run to measure it again.
    assert run(big, slower, 5, estc=big + 1, asleep=True) == 1
    assert run(big, slower, 5, estc=big - 1, asleep=True) == 2
    assert run(big, slower, 5, estc=-1, asleep=True) == 2
    assert run(big, slower, 16, estc=big + 1, asleep=True) == 2
    # what a pool run that found them asleep measured went to their estimate alone
    assert plan.words[record + native_layout.D_EST_POOL] == slower
    assert plan.words[record + native_layout.D_EST_COLD] not in (-1, big + 1)


def test_plan_checks_are_the_built_plans(mul_executable):
    """plan_checks (runs.py's question to each step of a run) answers what a built plan's
    checks say, without building the plan's native parts; None where there is no plan."""
    from runtime_support.exec.plan import build_plan, plan_checks

    device, exe = mul_executable
    cb = _record(device, exe)
    built = build_plan(cb.commands, 1)
    assert built is not None and built.checks
    assert plan_checks(cb.commands) == built.checks
    unsupported = [*cb.commands, object()]  # (a command no plan can hold)
    assert build_plan(unsupported, 1) is None and plan_checks(unsupported) is None

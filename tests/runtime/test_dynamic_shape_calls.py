"""The per-call path of dynamic shapes: a one-shot command buffer recorded and run per call.

`HalCommandBuffer.dispatch_span` (the `hal.command_buffer.dispatch` import's recording)
must record what `dispatch` records and raise its errors; a dispatch whose count and
bindings are all direct is resolved when recorded and runs through
`Executable.dispatch_flat`, which must give what `dispatch` gives and, wherever it does
not take its packed path, raise `dispatch`'s own errors. Translated dynamic-shape programs
must match iree.runtime bit for bit on local-sync and `local`, grids of one workgroup and
grids the worker pool takes.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import pytest

from bench.programs import dynamic_chain_source
from helpers_plans import (
    dispatch_records,
    launched_plans,
    one_plan_per_key,
    plans_per_call,
)
from runtime_support.errors import StatusCode, VMError
from runtime_support.hal.buffer import HalBuffer
from runtime_support.hal.command_buffer import (
    CATEGORY_TRANSFER,
    MODE_ONE_SHOT,
    BufferRef,
    HalCommandBuffer,
)
from runtime_support.hal.device import LocalDevice
from runtime_support.native import jit as native_jit, layout as native_layout
from differential import load_package
from helpers_compile import LLVM_CPU_FLAGS
from test_native_dispatch import MUL

FLAGS = LLVM_CPU_FLAGS

# As bench/programs/dynamic_shapes.mlir: counts and constants from the input's length.
DYNAMIC = """
func.func @main(%a: tensor<?xf32>, %b: tensor<?xf32>) -> tensor<?xf32> {
  %0 = arith.addf %a, %b : tensor<?xf32>
  %1 = arith.mulf %0, %b : tensor<?xf32>
  return %1 : tensor<?xf32>
}
"""


def _src(tmp_path_factory, name: str, text: str) -> Path:
    path = tmp_path_factory.mktemp(name) / f"{name}.mlir"
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def mul_executable(compile_mlir, tmp_path_factory):
    vmfb = compile_mlir(_src(tmp_path_factory, "mul", MUL), FLAGS)
    with zipfile.ZipFile(vmfb) as z:
        (name,) = [n for n in z.namelist() if n.endswith(".so")]
        kernel = z.read(name)
    device = LocalDevice("local-sync")
    return device, device.create_executable("embedded-elf-x86_64", kernel)


def _f32(values) -> HalBuffer:
    data = np.asarray(values, np.float32).tobytes()
    buffer = HalBuffer.allocate(len(data))
    buffer.write(0, data)
    return buffer


def _span(refs):
    """BufferRefs as the import's span rows (_, slot, buffer, offset, length)."""
    return [(0, slot, buffer, offset, length) for buffer, slot, offset, length in refs]


def _error(fn, *args):
    with pytest.raises(VMError) as info:
        fn(*args)
    return info.value.code, str(info.value)


# --- recording ------------------------------------------------------------------------------


def _refs(a, b, out, whole=False, slot=False):
    return [
        BufferRef(a, 0, 0, 16),
        BufferRef(None, 1, 0, 16) if slot else BufferRef(b, 0, 0, -1 if whole else 16),
        BufferRef(out, 0, 0, 16),
    ]


@pytest.mark.parametrize("form", ["direct", "whole", "slot"])
def test_dispatch_span_records_whatdispatch_records(mul_executable, form):
    device, exe = mul_executable
    results = []
    for method in ("dispatch", "dispatch_span"):
        a, b, out = _f32([1.5, -2.0, 3.0, 4.25]), _f32([2.0, 3.0, -0.5, 8.0]), _f32([0] * 4)
        refs = _refs(a, b, out, whole=form == "whole", slot=form == "slot")
        cb = HalCommandBuffer(device, MODE_ONE_SHOT, 3, 2)
        if method == "dispatch":
            cb.dispatch(exe, 0, (1, 1, 1), [], refs)
        else:
            cb.dispatch_span(exe, 0, 1, 1, 1, [], _span(refs), 0)
        cb.finalize()
        (command,) = cb.commands
        table = [(None, 0, 0), (b, 0, 16)] if form == "slot" else None
        cb.execute(table, 1)
        names = {id(a): "a", id(b): "b", id(out): "out", id(None): None}
        refs = [(names[id(r.buffer)], *r[1:]) for r in command.bindings]
        results.append((command[1:4], refs, command.flags, cb.binding_count, out.read()))
        if method == "dispatch_span":
            # resolved when recorded only where nothing is left to resolve
            assert (command.direct is None) is (form == "slot")
            if form != "slot":
                assert command.direct == (a.address, b.address, out.address, 16, 16, 16)
    assert results[0] == results[1]
    assert np.frombuffer(results[0][-1], np.float32).tolist() == [3.0, -6.0, -1.5, 34.0]


def _bad_recordings(device, exe):
    """(command buffer, refs) whose recording fails."""
    a = _f32([0] * 4)
    ok = HalCommandBuffer(device, MODE_ONE_SHOT, 3, 1)
    finalized = HalCommandBuffer(device, MODE_ONE_SHOT, 3, 1)
    finalized.finalize()
    transfer_only = HalCommandBuffer(device, MODE_ONE_SHOT, CATEGORY_TRANSFER, 1)
    return [
        (ok, [BufferRef(a, 0, 0, 16), BufferRef(a, 0, 8, 16), BufferRef(a, 0, 0, 16)]),
        (ok, [BufferRef(a, 0, 0, 16), BufferRef(a, 0, -4, 8), BufferRef(a, 0, 0, 16)]),
        (ok, [BufferRef(a, 0, 0, 16), BufferRef(a, 0, 20, -1), BufferRef(a, 0, 0, 16)]),
        (ok, [BufferRef(None, 0, 0, 16), BufferRef(None, 3, 0, 16), BufferRef(a, 0, 0, 16)]),
        (finalized, [BufferRef(a, 0, 0, 16)] * 3),
        (transfer_only, [BufferRef(a, 0, 0, 16)] * 3),
    ]


def test_dispatch_span_raises_what_dispatch_raises(mul_executable):
    device, exe = mul_executable
    for k in range(len(_bad_recordings(device, exe))):
        cb, refs = _bad_recordings(device, exe)[k]
        theirs = _error(cb.dispatch, exe, 0, (1, 1, 1), [], refs)
        cb, refs = _bad_recordings(device, exe)[k]
        ours = _error(cb.dispatch_span, exe, 0, 1, 1, 1, [], _span(refs), 0)
        assert ours == theirs
        assert not cb.commands


# --- dispatch_flat against dispatch ------------------------------------------------------------


def _flat(bindings):
    return (*[b.address for b in bindings], *[b.length for b in bindings])


def test_dispatch_flat_matches_dispatch_and_reuses_its_block(mul_executable):
    _, exe = mul_executable
    loader = exe.native
    rng = np.random.default_rng(1)
    for _ in range(4):  # alternating buffers: nothing of one call may leak into the next
        a, b = _f32(rng.standard_normal(4)), _f32(rng.standard_normal(4))
        ours, theirs = _f32([0] * 4), _f32([0] * 4)
        loader.dispatch_flat(0, (1, 1, 1), (), _flat([a, b, ours]))
        loader.dispatch(0, (1, 1, 1), (), [(a.address, 16), (b.address, 16), (theirs.address, 16)])
        assert ours.read() == theirs.read() != bytes(16)
    if native_jit.native_runtime() is not None:
        assert len(loader._inline[0][1]) == 1  # one block, taken and given back per call


@pytest.mark.parametrize(
    "counts, constants, nbindings",
    [
        ((1, 1, 0x10000), (), 3),  # z out of range
        ((1, -1, 1), (), 3),
        ((1, 1), (), 3),  # not (x, y, z)
        ((1, 1, 1), (7,), 3),  # constant count
        ((1, 1, 1), (), 2),  # binding count
        ((1, 1, 1), (0x1_0000_0000,), 3),  # (a constant that does not pack: dispatch's way)
    ],
)
def test_dispatch_flat_raises_what_dispatch_raises(mul_executable, counts, constants, nbindings):
    _, exe = mul_executable
    buffers = [_f32([0] * 4) for _ in range(nbindings)]
    pairs = [(b.address, 16) for b in buffers]
    theirs = _error(exe.native.dispatch, 0, counts, constants, pairs)
    ours = _error(exe.native.dispatch_flat, 0, counts, constants, _flat(buffers))
    assert ours == theirs
    ours = _error(exe.dispatch_flat, 0, counts, constants, _flat(buffers), 1)
    assert ours == theirs


def test_dispatch_flat_empty_grid_and_bad_ordinal(mul_executable):
    _, exe = mul_executable
    out = _f32([5.0] * 4)
    flat = _flat([_f32([1.0] * 4), _f32([2.0] * 4), out])
    exe.native.dispatch_flat(0, (4, 0, 1), (), flat)  # an empty grid launches nothing
    assert out.read() == _f32([5.0] * 4).read()
    theirs = _error(exe.native.dispatch, 3, (1, 1, 1), (), [(out.address, 16)] * 3)
    assert _error(exe.native.dispatch_flat, 3, (1, 1, 1), (), flat) == theirs
    assert theirs[0] == StatusCode.OUT_OF_RANGE


def test_dispatch_flat_kernel_failure_is_dispatch_error(mul_executable, monkeypatch):
    """A kernel returning nonzero raises the loader's kernel_error, and the block is still
    given back (the next call runs)."""
    device, exe = mul_executable
    loader = exe.native
    flat = _flat([_f32([1.0] * 4), _f32([2.0] * 4), _f32([0] * 4)])
    loader.dispatch_flat(0, (1, 1, 1), (), flat)
    entry = loader._inline[0]
    if not entry:
        pytest.skip("no JIT loop: dispatch_flat is dispatch")
    monkeypatch.setitem(loader._inline, 0, (*entry[:5], lambda address: 7))
    code, message = _error(loader.dispatch_flat, 0, (1, 1, 1), (), flat)
    assert (code, message) == (StatusCode.INTERNAL, str(loader.kernel_error(0, 7)))
    # through a recorded one-shot command buffer: the queue's fence carries it
    a = _f32([0] * 4)
    cb = HalCommandBuffer(device, MODE_ONE_SHOT, 3, 0)
    cb.dispatch_span(exe, 0, 1, 1, 1, [], _span([BufferRef(a, 0, 0, 16)] * 3), 0)
    cb.finalize()
    assert _error(cb.execute, None, 1) == (code, message)
    monkeypatch.setitem(loader._inline, 0, entry)
    assert len(entry[1]) == 1
    loader.dispatch_flat(0, (1, 1, 1), (), flat)


def test_closed_executable_is_dispatch_error(compile_mlir, tmp_path_factory):
    vmfb = compile_mlir(_src(tmp_path_factory, "mul", MUL), FLAGS)
    with zipfile.ZipFile(vmfb) as z:
        (name,) = [n for n in z.namelist() if n.endswith(".so")]
        kernel = z.read(name)
    exe = LocalDevice("local-sync").create_executable("embedded-elf-x86_64", kernel)
    buffers = [_f32([1.0] * 4) for _ in range(3)]
    exe.native.dispatch_flat(0, (1, 1, 1), (), _flat(buffers))
    exe.close()
    theirs = _error(exe.native.dispatch, 0, (1, 1, 1), (), [(b.address, 16) for b in buffers])
    assert _error(exe.native.dispatch_flat, 0, (1, 1, 1), (), _flat(buffers)) == theirs
    assert theirs[0] == StatusCode.FAILED_PRECONDITION


def test_lookup_answers_are_cached_and_misses_are_not(mul_executable):
    _, exe = mul_executable
    name = exe.export_names()[0]
    assert exe.lookup(name.encode()) == exe.lookup(name.encode()) == 0
    for _ in range(2):
        with pytest.raises(VMError) as info:
            exe.lookup(b"no_such_export")
        assert info.value.code == StatusCode.NOT_FOUND
    assert b"no_such_export" not in exe._ordinals


# --- translated programs against iree.runtime ----------------------------------------------


@pytest.fixture(scope="module")
def dynamic_vmfb(compile_mlir, tmp_path_factory):
    return compile_mlir(_src(tmp_path_factory, "dynamic", DYNAMIC), FLAGS)


@pytest.fixture(scope="module")
def dynamic_package(dynamic_vmfb, tmp_path_factory):
    from translator.codegen import write_package
    from translator.reader import read_module_file

    out = tmp_path_factory.mktemp("pkg")
    return load_package(write_package(read_module_file(dynamic_vmfb), out, "pkg"))


@pytest.mark.parametrize("device", ["local-sync", "local"])
def test_dynamic_shapes_one_plan_per_size_match_iree(dynamic_vmfb, dynamic_package, device, monkeypatch):
    """Queue programs (the default host path): every call runs its segment's native plan,
    one plan per size (built at the size's first call), bit-identical to iree.runtime."""
    rt = pytest.importorskip("iree.runtime")
    config = rt.Config("local-sync")
    with open(dynamic_vmfb, "rb") as f:
        vm_module = rt.VmModule.copy_buffer(config.vm_instance, f.read())
    theirs = rt.load_vm_module(vm_module, config).main
    ctx = dynamic_package.load(device=device, workers=2)
    launched = launched_plans(monkeypatch)
    rng = np.random.default_rng(2)
    calls = []
    for n in (1, 7, 1024, 3, 300_000, 1024, 300_000, 5, 300_000, 300_000, 0):
        a = rng.standard_normal(n).astype(np.float32)
        b = rng.standard_normal(n).astype(np.float32)

        def call(a=a, b=b, n=n):
            ours, expected = ctx.main(a, b), np.asarray(theirs(a, b).to_host())
            assert ours.dtype == expected.dtype and ours.shape == expected.shape == (n,)
            assert ours.tobytes() == expected.tobytes()

        calls.append((n, call))
    per_call = plans_per_call(calls, launched)
    if native_jit.native_runtime() is not None:
        assert one_plan_per_key([(n, ids) for n, ids in per_call if n]), per_call


@pytest.mark.parametrize("device", ["local-sync", "local"])
def test_dynamic_shapes_match_iree(dynamic_vmfb, dynamic_package, device, monkeypatch):
    """Sizes from an empty grid to grids the worker pool takes, call after call (each a
    new one-shot command buffer), bit-identical to iree.runtime: each size's calls run
    its segment's plan, and a big grid goes to the worker pool on `local` only."""
    rt = pytest.importorskip("iree.runtime")
    config = rt.Config("local-sync")
    with open(dynamic_vmfb, "rb") as f:
        vm_module = rt.VmModule.copy_buffer(config.vm_instance, f.read())
    theirs = rt.load_vm_module(vm_module, config).main
    ctx = dynamic_package.load(device=device, workers=2)
    from runtime_support.hal.executable import HalExecutable

    (exe,) = [ctx.refs[k] for k in range(len(ctx.refs)) if type(ctx.refs[k]) is HalExecutable]
    pooled = []  # the grids sent to the worker pool (the loader's own dispatch)
    dispatch = exe.native.dispatch

    def spy(ordinal, counts, constants=(), bindings=(), workers=1):
        if workers > 1:
            pooled.append(counts)
        return dispatch(ordinal, counts, constants, bindings, workers)

    exe.native.dispatch = spy
    launched = launched_plans(monkeypatch)
    rng = np.random.default_rng(2)
    for n in (0, 1, 7, 1024, 3, 300_000, 1024, 300_000, 5, 300_000, 300_000):
        a = rng.standard_normal(n).astype(np.float32)
        b = rng.standard_normal(n).astype(np.float32)
        ours, expected = ctx.main(a, b), np.asarray(theirs(a, b).to_host())
        assert ours.dtype == expected.dtype and ours.shape == expected.shape == (n,)
        assert ours.tobytes() == expected.tobytes()
    if native_jit.native_runtime() is None:
        return
    big = launched[-1]  # (300_000's plan, run four times)
    (record,) = dispatch_records(big)
    if device == "local":
        # the big grid went to the pool: on the direct path (its first call, measured
        # inline), or in the plan, whose runner measures it inline first, then on the pool
        # (its workers awake, or asleep: each kind of pool run keeps its own estimate)
        assert pooled or max(big.words[record + native_layout.D_EST_POOL],
                             big.words[record + native_layout.D_EST_COLD]) >= 0
    else:
        assert not pooled  # everything on the packed one-thread path
        estimates = (native_layout.D_EST_POOL, native_layout.D_EST_COLD)
        assert [big.words[record + d] for d in estimates] == [-1, -1]


def test_dynamic_shapes_bad_argument_fails_its_check(dynamic_package):
    """A buffer view of the wrong rank (passed as it is: no ABI conversion) fails the
    dim/shape check the one-shot path follows, before anything is recorded."""
    from runtime_support.api.abi import to_buffer_view

    ctx = dynamic_package.load(device="local-sync")
    a = to_buffer_view(np.ones((2, 3), np.float32), "a", None, ctx.device)
    b = to_buffer_view(np.ones(6, np.float32), "b", None, ctx.device)
    with pytest.raises(VMError) as info:
        ctx.main(a, b)
    assert info.value.code == StatusCode.INVALID_ARGUMENT
    assert "input0" in str(info.value) and "rank" in str(info.value)
    assert ctx.main(b, b).tolist() == [2.0] * 6  # and the next call runs


# --- argument copies in recycled storage ---------------------------------------------------


def test_recycled_argument_copies_hold_their_array_and_are_never_shared(empty_recycle_pools):
    """buffer_copy_recycled (dynamic-shape arguments): a copy reuses storage only when
    nothing reaches it any more, and always holds exactly its array's bytes."""
    from runtime_support.hal.buffer import USAGE_DEFAULT, buffer_copy_of, buffer_copy_recycled

    rng = np.random.default_rng(4)
    x, y, z = (rng.standard_normal(999).astype(np.float32) for _ in range(3))  # a size of its own
    copy = buffer_copy_recycled(x, USAGE_DEFAULT, None)
    address = copy.address
    view = copy.bytes_view()  # a numpy view of its storage outlives the buffer
    del copy
    held = buffer_copy_recycled(y, USAGE_DEFAULT, None)
    assert held.address != address and held.read() == y.tobytes()
    assert view.tobytes() == x.tobytes()
    del view
    again = buffer_copy_recycled(z, USAGE_DEFAULT, None)  # x's storage, free now
    reference = buffer_copy_of(z, USAGE_DEFAULT, None)
    assert again.address == address  # (the path under test ran)
    assert again.read() == z.tobytes() and held.read() == y.tobytes()
    assert (again.memory_types, again.allowed_usage, again.length, again.offset) == (
        reference.memory_types, reference.allowed_usage, reference.length, reference.offset
    )


@pytest.mark.parametrize("device", ["local-sync", "local"])
def test_dynamic_matmul_chain_replays_match_iree(compile_mlir, tmp_path_factory, device, monkeypatch):
    """Twelve dispatches recorded per call, batch sizes coming again and again: each
    size's calls run one native plan (the segment's plan per size, its first call
    included), bit-identical to iree.runtime."""
    from translator.codegen import write_package
    from translator.reader import read_module_file

    rt = pytest.importorskip("iree.runtime")
    vmfb = compile_mlir(_src(tmp_path_factory, "chain", dynamic_chain_source(12)), FLAGS)
    pkg = load_package(write_package(read_module_file(vmfb), tmp_path_factory.mktemp("c"), "c"))
    config = rt.Config("local-sync")
    with open(vmfb, "rb") as f:
        theirs = rt.load_vm_module(rt.VmModule.copy_buffer(config.vm_instance, f.read()),
                                   config).main
    ctx = pkg.load(device=device, workers=2)
    launched = launched_plans(monkeypatch)
    rng = np.random.default_rng(5)
    w = (rng.standard_normal((16, 16)) / 4).astype(np.float32)
    sizes = (4, 0, 4, 1, 4, 300, 1, 300, 300, 0, 0, 4)
    calls = []
    for n in sizes:
        a = rng.standard_normal((n, 16)).astype(np.float32)

        def call(a=a, n=n):
            ours, expected = ctx.main(a, w), np.asarray(theirs(a, w).to_host())
            assert ours.shape == expected.shape == (n, 16)
            assert ours.tobytes() == expected.tobytes(), n

        calls.append((n, call))
    per_call = plans_per_call(calls, launched)
    if native_jit.native_runtime() is None:
        return
    assert one_plan_per_key([(n, ids) for n, ids in per_call if n]), per_call
    assert all(len(dispatch_records(plan)) == 12 for plan in launched)

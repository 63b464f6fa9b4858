"""VMVX per-dispatch paths: the kernels' one-call buffer/list/f32 ops
(runtime_support/loaders/vmvx_scalar.py, numerics_ftz's add/sub/mul.f32) against the
general ops they stand for, and the loader's caches (prepared arguments, host views,
the binding list) across calls whose buffers move, against iree.runtime."""

from __future__ import annotations

import itertools
import math
import struct

import numpy as np
import pytest

from translator.reader import read_module_file
from translator.codegen import write_package

VMVX = ["--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=vmvx"]

# Dependent 4-element f32 ops kept apart by barriers (tiny kernels: the scalar
# translation), and a 2-element i32 addition.
CHAIN = """
func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>, %i: tensor<2xi32>, %j: tensor<2xi32>)
    -> (tensor<4xf32>, tensor<2xi32>) {
  %s0 = arith.addf %a, %b : tensor<4xf32>
  %k0 = util.optimization_barrier %s0 : tensor<4xf32>
  %s1 = arith.mulf %k0, %b : tensor<4xf32>
  %k1 = util.optimization_barrier %s1 : tensor<4xf32>
  %s2 = arith.subf %k1, %a : tensor<4xf32>
  %k2 = util.optimization_barrier %s2 : tensor<4xf32>
  %s3 = arith.addf %k2, %b : tensor<4xf32>
  %k3 = util.optimization_barrier %s3 : tensor<4xf32>
  %s4 = arith.mulf %k3, %k3 : tensor<4xf32>
  %k4 = util.optimization_barrier %s4 : tensor<4xf32>
  %s5 = arith.addf %k4, %a : tensor<4xf32>
  %t = arith.addi %i, %j : tensor<2xi32>
  return %s5, %t : tensor<4xf32>, tensor<2xi32>
}
"""

F32_EDGES = [0.0, -0.0, 1e-39, -1e-40, 1.1754944e-38, -1.1754942e-38, 1.5, -2.25, 3.4e38,
             -3.4e38, math.inf, -math.inf, math.nan, 1.0000001, 7.0, 1e-20]


def _f32(x: float) -> float:
    return struct.unpack("f", struct.pack("f", x))[0]


def _bits(x: float) -> bytes:
    return struct.pack("<d", x)


def test_fused_f32_ops_equal_the_wrapped_ops():
    """add/sub/mul/fma.f32 in one call each: the same bits as numerics.py's op under the
    generic flushing wrapper, on denormals, limits, infinities and NaN."""
    from runtime_support.vm import numerics as N
    from runtime_support.vm import numerics_ftz as F

    values = [_f32(v) for v in F32_EDGES] + [_f32(v) for v in np.random.default_rng(0).standard_normal(40)]
    for name in ("add.f32", "sub.f32", "mul.f32"):
        fused = F.OPS[name]
        wrapped = F._wrap(name, N.OPS[name], ("f32", "f32"))
        assert fused is getattr(F, name.replace(".", "_")) and fused is not wrapped
        for a, b in itertools.product(values, repeat=2):
            assert _bits(fused(a, b)) == _bits(wrapped(a, b)), (name, a, b)
    composed = F._fma("f32")
    assert F.OPS["fma.f32"] is F.fma_f32 is not composed
    for a, b, c in itertools.product(values[:24], repeat=3):
        assert _bits(F.fma_f32(a, b, c)) == _bits(composed(a, b, c)), (a, b, c)


def _error(fn, *args):
    from runtime_support.errors import VMError

    try:
        fn(*args)
    except VMError as e:
        return (e.code if hasattr(e, "code") else None, str(e))
    except Exception as e:  # noqa: BLE001
        return (type(e).__name__, str(e))
    return None


def test_kernel_buffer_ops_equal_the_general_ops():
    """Each one-call buffer op returns, writes and raises what the general op does: in
    range, out of range at both ends, a null buffer, a read-only buffer."""
    from runtime_support.loaders import vmvx_scalar as K
    from runtime_support.vm import buffer as B
    from runtime_support.vm.buffer import VMBuffer

    names = ["buffer_load_i32", "buffer_load_i64", "buffer_load_f32", "buffer_load_i8_u",
             "buffer_load_i8_s", "buffer_store_f32", "buffer_store_i32", "buffer_store_i8"]
    raw = bytes(range(250, 256)) + bytes(range(0, 18))  # 24 bytes
    for name in names:
        fast, general = getattr(K, name), getattr(B, name)
        assert fast is not general
        store = "store" in name
        for readonly, index in itertools.product((False, True), (-1, 0, 1, 2, 5, 6, 23, 24, 1 << 40)):
            values = (0, -1, 255, 1 << 31, -(1 << 31) - 1, 1.5) if store else (None,)
            for value in values:
                if store and isinstance(value, float) and "f32" not in name:
                    continue
                if store and "f32" in name and not isinstance(value, float):
                    value = float(value)
                results = []
                for fn in (fast, general):
                    buf = VMBuffer(bytearray(raw), readonly=readonly)
                    args = (buf, index, value) if store else (buf, index)
                    got = _error(fn, *args)
                    if got is None:
                        got = ("ok", None if store else _bits(float(fn(*args))))
                    results.append((got, bytes(buf.data)))
                assert results[0] == results[1], (name, readonly, index, value)
        args = (None, 0, 0.0 if "f32" in name else 0) if store else (None, 0)
        assert _error(fast, *args) == _error(general, *args) is not None


def test_kernel_list_get_ref_equals_the_general_op():
    from runtime_support.loaders import vmvx_scalar as K
    from runtime_support.vm import list as L
    from runtime_support.vm.buffer import VMBuffer
    from runtime_support.vm.list import VMList

    bufs = [VMBuffer(bytearray(4)), None, VMBuffer(bytearray(8))]
    lists = [VMList.from_values("!vm.buffer", bufs), VMList.from_values("?", bufs),
             VMList.from_values("i32", [1, 2, 3]), None]
    for lst, index, type_name in itertools.product(lists, (-1, 0, 1, 2, 3), ("!vm.buffer", "!vm.list", "?")):
        fast = _error(K.list_get_ref, lst, index, type_name)
        general = _error(L.list_get_ref, lst, index, type_name)
        assert fast == general
        if fast is None:
            assert K.list_get_ref(lst, index, type_name) is L.list_get_ref(lst, index, type_name)


def test_list_writing_kernels_get_a_list_per_dispatch():
    from runtime_support.loaders.vmvx import _writes_lists

    assert not _writes_lists({"list_get_ref": 0, "buffer_load_f32": 0})
    assert _writes_lists({"list_get_ref": 0, "list_set_ref": 0})
    assert _writes_lists({"list_resize": 0})


@pytest.fixture
def chain(compile_mlir, tmp_path):
    from runtime_support.tools.run_cli import import_package_as

    src = tmp_path / "chain.mlir"
    src.write_text(CHAIN)
    vmfb = compile_mlir(src, VMVX)
    pkg_dir = write_package(read_module_file(vmfb), tmp_path, "pkg")
    return vmfb, import_package_as(f"_vmvx_dispatch_{tmp_path.name}", pkg_dir)


def test_repeated_calls_with_moving_buffers_match_iree(chain, monkeypatch):
    """Calls with fresh inputs each time (buffers at new and at reused addresses), with
    the caches emptied now and then, on the scalar and vectorised paths: IREE's bits."""
    import iree.runtime as rt

    from runtime_support.loaders import vmvx as loader

    vmfb, pkg = chain
    iree = rt.load_vm_flatbuffer_file(str(vmfb), driver="local-sync")
    rng = np.random.default_rng(5)
    edges = np.array(F32_EDGES, dtype=np.float32)
    for mode in ("0", "1"):
        monkeypatch.setenv("PYREE_VMVX_SCALAR", mode)
        ctx = pkg.load(device="local-sync")
        keep = []
        for k in range(40):
            a = rng.choice(edges, 4).astype(np.float32)
            b = (rng.standard_normal(4) * 10).astype(np.float32)
            i = rng.integers(-(2**31), 2**31, 2, dtype=np.int64).astype(np.int32)
            j = rng.integers(-(2**31), 2**31, 2, dtype=np.int64).astype(np.int32)
            if k % 7 == 3:
                loader._views.clear()
            ours = [np.asarray(x) for x in ctx.main(a, b, i, j)]
            theirs = [np.asarray(x) for x in iree.main(a, b, i, j)]
            for x, y in zip(ours, theirs):
                assert x.dtype == y.dtype and x.tobytes() == y.tobytes(), (mode, k)
            keep.append(ours)  # (results kept alive: later buffers land elsewhere)


def _table_program(cb_cls, executable, capacity=4):
    """fill slot 0, update slot 1, copy slot 0 -> slot 2, dispatch mul(slot 1, slot 2,
    slot 3), with one direct-buffer ref and a WHOLE_BUFFER ref among them."""
    from runtime_support.hal.buffer import HalBuffer
    from runtime_support.hal.command_buffer import BufferRef

    direct = HalBuffer.allocate(16)
    cb = cb_cls(None, 0, 3, capacity)
    cb.fill(BufferRef(None, 0, 0, 16), 0x3F800000, 4)
    cb.update(np.arange(4, dtype=np.float32).tobytes(), BufferRef(None, 1, 4, 16))
    cb.copy(BufferRef(None, 0, 0, 16), BufferRef(None, 2, 0, -1))
    cb.copy(BufferRef(None, 2, 0, 16), BufferRef(direct, 0, 0, 16))
    cb.dispatch(executable, 0, (1, 1, 1), (), [BufferRef(None, 1, 4, 16), BufferRef(direct, 0, 0, 16),
                                              BufferRef(None, 3, 0, 16)])
    cb.finalize()
    return cb, direct


def test_table_execution_equals_the_checked_path(monkeypatch):
    """A reusable command buffer run with binding tables, each once through the one-pass
    table execution and once with it switched off (check every ref, then run): the same
    bytes in every buffer, or the same error with nothing run by either."""
    from test_hal import fake_executable

    from runtime_support.errors import VMError
    from runtime_support.hal.buffer import HalBuffer
    from runtime_support.hal import command_buffer as C
    from runtime_support.hal.command_buffer import HalCommandBuffer

    taken, real = [], C._run_table_plan
    monkeypatch.setattr(C, "_run_table_plan", lambda *a: taken.append(real(*a)) or taken[-1])

    def tables():
        b = [HalBuffer.allocate(n) for n in (16, 24, 16, 16, 8)]
        yield [(b[0], 0, 16), (b[1], 0, 24), (b[2], 0, 16), (b[3], 0, 16)]
        yield [(b[0], 0, -1), (b[1], 0, -1), (b[2], 0, 16), (b[3], 0, -1)]
        yield [(b[0], 0, 16), (b[1], 0, 19), (b[2], 0, 16), (b[3], 0, 16)]  # slot 1 too short
        yield [(b[0], 0, 16), (b[1], 0, 24), (b[2], 0, 16), (b[4], 0, 8)]  # buffer too short
        yield [(b[0], 0, 16), (b[1], 0, 24), (None, 0, 16), (b[3], 0, 16)]  # null entry
        yield [(b[0], 0, 16), (b[1], 0, 24), (b[2], 0, 16)]  # table too short
        yield [(b[0], 4, 16), (b[1], 0, 24), (b[2], 0, 16), (b[3], 0, 16)]  # entry out of range
        yield [(b[0], 0, 16), (b[1], 0, 24), (b[2], 0, 16), (b[3], 0, 16), (b[4], 0, 8)]

    runs = []
    for fast in (True, False):
        cb, direct = _table_program(HalCommandBuffer, fake_executable())
        out = []
        for table in tables():
            if not fast:
                cb._table_commands = False
            try:
                cb.execute(table, 1)
                err = None
            except VMError as e:
                err = (e.code, str(e))
            buffers = [t[0] for t in table if t[0] is not None] + [direct]
            out.append((err, [bytes(x.bytes_view(0, x.length).tobytes()) for x in buffers]))
        runs.append(out)
        assert (cb._table_commands not in (None, False)) == fast
    assert runs[0] == runs[1]
    assert sum(err is None for err, _ in runs[0]) == 3 and sum(err is not None for err, _ in runs[0]) == 5
    assert taken == [err is None for err, _ in runs[0]]  # (ran where valid, declined where not)


@pytest.mark.parametrize("copy_below", [0, 1 << 14])
def test_masked_access_broadcasts_alike(copy_below, monkeypatch):
    """load_m / store_m / store with operands of different shapes: the same lanes, values
    and errors whether the broadcast is a copy or numpy's view; axis_range's arrays are
    shared and read-only."""
    from runtime_support.errors import VMError
    from runtime_support.loaders import vmvx_arrays as A

    monkeypatch.setattr(A, "_COPY_BELOW", copy_below)
    r0 = A.axis_range(0, 1, 4, 0, 3)
    assert A.axis_range(0, 1, 4, 0, 3) is r0 and not r0.flags.writeable
    rows, cols = A.axis_range(0, 8, 4, 0, 3), A.axis_range(0, 1, 8, 1, 3)
    idx = A.add_i64(rows, cols)  # (4, 8, 1)
    mask = A.axis_range(0, 1, 8, 1, 3) < 5  # (1, 8, 1)
    memory = np.arange(40, dtype=np.float32)
    b = A.Binding(memoryview(memory).cast("B"))
    got = A.load_m(b, "f32", idx, mask)
    want = np.where(np.broadcast_to(mask, (4, 8, 1)), memory[np.minimum(idx, 39)], 0)
    assert got.shape == (4, 8, 1) and got.tobytes() == want.astype(np.float32).tobytes()
    A.store_m(b, "f32", idx, np.float32(-1), mask)
    A.store(b, "f32", A.axis_range(32, 1, 8, 1, 3), np.float32(7))
    expected = np.arange(40, dtype=np.float32)
    for r in range(4):
        expected[8 * r : 8 * r + 5] = -1
    expected[32:40] = 7
    assert memory.tobytes() == expected.tobytes()
    with pytest.raises(VMError):  # (an active lane past the binding)
        A.load_m(b, "f32", A.add_i64(idx, 16), mask)
    assert memory.tobytes() == expected.tobytes()


ARGMAX = """
func.func @main(%x: tensor<BATCHx256xf32>) -> tensor<BATCHxi32> {
  %ninf = arith.constant 0xFF800000 : f32
  %none = arith.constant -1 : i32
  %me = tensor.empty() : tensor<BATCHxf32>
  %mf = linalg.fill ins(%ninf : f32) outs(%me : tensor<BATCHxf32>) -> tensor<BATCHxf32>
  %ie = tensor.empty() : tensor<BATCHxi32>
  %if = linalg.fill ins(%none : i32) outs(%ie : tensor<BATCHxi32>) -> tensor<BATCHxi32>
  %am:2 = linalg.generic {indexing_maps = [affine_map<(b, v) -> (b, v)>,
                                           affine_map<(b, v) -> (b)>,
                                           affine_map<(b, v) -> (b)>],
                          iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<BATCHx256xf32>) outs(%mf, %if : tensor<BATCHxf32>, tensor<BATCHxi32>) {
  ^bb0(%v: f32, %m: f32, %k: i32):
    %j = linalg.index 1 : index
    %ji = arith.index_cast %j : index to i32
    %gt = arith.cmpf ogt, %v, %m : f32
    %nm = arith.select %gt, %v, %m : f32
    %nk = arith.select %gt, %ji, %k : i32
    linalg.yield %nm, %nk : f32, i32
  } -> (tensor<BATCHxf32>, tensor<BATCHxi32>)
  return %am#1 : tensor<BATCHxi32>
}
"""


@pytest.mark.parametrize("batch", [1, 8])
def test_one_workgroup_without_loop_axes_runs_scalar(batch, compile_mlir, tmp_path, monkeypatch):
    """An argmax (a sequential loop, no loop axis): over one workgroup the vectorised
    program declines (every value would be a scalar) and the scalar translation runs; over
    several it runs as numpy. IREE's bits either way, NaN and ties included."""
    import iree.runtime as rt

    from runtime_support.loaders import vmvx_arrays as A
    from runtime_support.tools.run_cli import import_package_as

    src = tmp_path / "argmax.mlir"
    src.write_text(ARGMAX.replace("BATCH", str(batch)))
    vmfb = compile_mlir(src, VMVX)
    pkg = import_package_as(f"_vmvx_argmax_{batch}_{tmp_path.name}",
                            write_package(read_module_file(vmfb), tmp_path, "pkg"))
    rng = np.random.default_rng(batch)
    x = rng.standard_normal((batch, 256)).astype(np.float32)
    x[0, 10] = x[0, 200] = 9.0  # (a tie: the first kept)
    x[-1, 3] = np.nan
    x[-1, 5:9] = 1e-40  # (denormals)
    calls, real = [], A.axis_range
    monkeypatch.setattr(A, "axis_range", lambda *a: calls.append(1) or real(*a))
    from translator.reader import read_module
    from translator.vmvx import count_vectorized, find_executables

    module = read_module(vmfb.read_bytes())
    assert sum(count_vectorized(read_module(d)) for _, d in find_executables(module)) >= 1
    ours = np.asarray(pkg.load(device="local-sync").main(x))
    theirs = np.asarray(rt.load_vm_flatbuffer_file(str(vmfb), driver="local-sync").main(x))
    assert ours.dtype == theirs.dtype and ours.tobytes() == theirs.tobytes()
    grid = len(calls) > 0  # (the numpy program ran past its first check)
    assert grid == (batch > 1)

"""VMVX kernels whose workgroup-private scratch buffer (`buffer.alloc`) is accessed in
loops of a dispatch-time trip count (a dynamic batch: row tiles clamped to the rows left,
min(n - 64 * g, 64), lanes past a workgroup's rows masked), as a fused matmul + bias +
relu layer of a model exported with a dynamic batch compiles: the tile filled, the k loop
accumulated into it, the epilogue read from it. Vectorised (translator/vmvx_vectorize/:
bounds and injectivity of the scratch form checked at dispatch time, masked lanes keep
what the scratch held: vmvx_arrays.masked), with PYREE_VMVX_SCALAR=1, and on
iree.runtime's VMVX: the same bits, with the batch changing between calls of one
loaded module."""

from __future__ import annotations

import numpy as np
import pytest

from test_vmvx_vectorize_dynamic import DENORMALS, _iree, _load, _vectorised_count, _vmfb

LAYER = """
func.func @main(%x: tensor<?x24xf32>, %w: tensor<24x20xf32>, %b: tensor<20xf32>) -> tensor<?x20xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %n = tensor.dim %x, %c0 : tensor<?x24xf32>
  %e = tensor.empty(%n) : tensor<?x20xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x20xf32>) -> tensor<?x20xf32>
  %y = linalg.matmul ins(%x, %w : tensor<?x24xf32>, tensor<24x20xf32>) outs(%f : tensor<?x20xf32>) -> tensor<?x20xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>,
                                        affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%y, %b : tensor<?x20xf32>, tensor<20xf32>) outs(%e : tensor<?x20xf32>) {
  ^bb0(%v: f32, %c: f32, %o: f32):
    %s = arith.addf %v, %c : f32
    %m = arith.maximumf %s, %zero : f32
    linalg.yield %m : f32
  } -> tensor<?x20xf32>
  return %r : tensor<?x20xf32>
}
"""

SIZES = [0, 1, 7, 64, 65, 130]


def _inputs(rng, n):
    x = rng.standard_normal((n, 24)).astype(np.float32)
    if n:
        x.reshape(-1)[: DENORMALS.size] = DENORMALS[: min(x.size, DENORMALS.size)]
    x[:, 5] = np.float32(1e-20)  # (products that underflow: flushed)
    w = (rng.standard_normal((24, 20)) * 0.25).astype(np.float32)
    b = rng.standard_normal(20).astype(np.float32)
    b[3] = np.float32(-1e-39)
    return [x, w, b]


@pytest.fixture(scope="module")
def layer(compile_mlir, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("scratch_layer")
    vmfb = _vmfb(compile_mlir, tmp, "scratch_layer", LAYER)
    return vmfb, _load(vmfb, tmp, "scratch_layer")


def test_layer_is_vectorised(layer):
    from translator.reader import read_module
    from translator.vmvx import find_executables, scalar_reasons

    vmfb, _ = layer
    assert _vectorised_count(vmfb) >= 1
    module = read_module(vmfb.read_bytes())
    sources = [read_module(d) for _, d in find_executables(module)]
    assert not any("scratch" in str(r) for m in sources for r in scalar_reasons(m).values())


@pytest.mark.parametrize("mode", ["0", "1"])
def test_dynamic_batch_changes_between_calls(mode, layer, monkeypatch):
    """One loaded module called with batch sizes 0, 1, 7, 64, 65, 130 and back: each
    result IREE's bits; vectorised, the masked scratch stores ran (no fallback)."""
    from runtime_support.loaders import vmvx_arrays as A

    vmfb, pkg = layer
    monkeypatch.setattr(A, "SMALL_WORK", 0)
    monkeypatch.setenv("PYREE_VMVX_SCALAR", mode)
    masked, real = [], A.masked
    monkeypatch.setattr(A, "masked", lambda *a: masked.append(1) or real(*a))
    main = pkg.load(device="local-sync").main
    rng = np.random.default_rng(26)
    for n in SIZES + [3, 64, 1]:
        args = _inputs(rng, n)
        expected = _iree(vmfb, args)
        got = np.asarray(main(*args))
        assert got.shape == expected.shape == (n, 20)
        assert got.tobytes() == expected.tobytes(), (mode, n)
    assert bool(masked) == (mode == "0"), "the vectorised program did not run its masked scratch stores"


def test_layer_on_local_task(layer):
    """The same on the multi-threaded local device on both sides."""
    import iree.runtime as rt

    vmfb, pkg = layer
    main = pkg.load(device="local-task").main
    module = rt.load_vm_flatbuffer_file(str(vmfb), driver="local-task")
    rng = np.random.default_rng(7)
    for n in (65, 2):
        args = _inputs(rng, n)
        assert np.asarray(main(*args)).tobytes() == np.asarray(module.main(*args)).tobytes()


def test_masked_keeps_inactive_lanes():
    from runtime_support.loaders import vmvx_arrays as A

    mask = np.array([[True], [False]])
    got = A.masked(mask, np.ones((2, 3), np.float32), 0.0, "f32")
    assert got.dtype == np.float32 and got.tolist() == [[1, 1, 1], [0, 0, 0]]
    old = np.full((2, 3), 5, np.int64)
    got = A.masked(mask, 7, old, "i32")
    assert got.dtype == np.int64 and got.tolist() == [[7, 7, 7], [5, 5, 5]]


@pytest.mark.parametrize("kind", ["f32", "i32"])
def test_full_masks_as_plain_accesses(kind, monkeypatch):
    """load_m/store_m with every lane active go as load/store (no boolean indexing):
    the same values, shapes, dtypes, wrapping and range errors as the masked path."""
    from runtime_support.errors import VMError
    from runtime_support.loaders import vmvx_arrays as A

    dtype = np.float32 if kind == "f32" else np.int32
    idx = np.arange(6).reshape(1, 6, 1)
    mask = np.ones((2, 1, 3), bool)  # (a mask over more axes than the address)
    value = (np.arange(6).reshape(1, 6, 1) - 3) * (1 << 31 if kind == "i32" else 1.5)
    results = {}
    for fast in (False, True):
        monkeypatch.setattr(A, "_FULL_TILES", fast)
        mem = bytearray(np.arange(8, dtype=dtype).tobytes())
        b = A.Binding(memoryview(mem))
        got = A.load_m(b, kind, idx, mask)
        A.store_m(b, kind, idx + 1, value if kind == "f32" else value.astype(np.int64), mask)
        A.store_m(b, kind, np.array([[[7]]]), 0 if kind == "i32" else 0.0, mask)
        with pytest.raises(VMError, match="out of range"):
            A.load_m(b, kind, idx + 3, mask)
        with pytest.raises(VMError, match="out of range"):
            A.store_m(b, kind, idx + 3, 1, mask)
        results[fast] = (got.shape, got.dtype, got.tobytes(), bytes(mem))
    assert results[True] == results[False]


def test_dead_definitions_dropped():
    from translator.vmvx_vectorize.assemble import _dead_code_removed

    lines = [
        "v1 = A.axis_range(0, 1, 4, 3, NDIM)",
        "v2 = A.add_i64(v1, 1)",  # (read only by v3: both go)
        "v3 = A.mul_i64(v2, 4)",
        "v4 = A.load(b0, 'f32', v1)",  # (a load: kept, unread)
        "v5 = A.div_i64_s(v1, t0)",  # (may fault: kept)
        "m6 = (v1 < t0)",  # (read by the store)
        "for v7 in range(0, 4, 1):",
        "    v8 = A.add_i64(v1, 2)",  # (a block's first line: kept)
        "    pass",
        "A.store_m(b1, 'f32', v1, 0.0, m6)",
    ]
    assert _dead_code_removed(lines) == [lines[0], *lines[3:]]

"""VMVX kernels of dynamic shapes, vectorised (translator/vmvx_vectorize/): loop bounds
known only at dispatch time (push constants; tiles clamped to the size left, masked
lanes), 64-bit sizes and offsets assembled from two push constants, and the tiny-grid
choice of the scalar translation. Each program runs vectorised, with
PYREE_VMVX_SCALAR=1, and on iree.runtime's VMVX: the same bits."""

from __future__ import annotations

import numpy as np
import pytest

from translator.reader import read_module_file
from translator.codegen import write_package

VMVX = ("--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=vmvx")

ELEMENTWISE = """
func.func @main(%a: tensor<?xf32>, %b: tensor<?xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %a, %c0 : tensor<?xf32>
  %e = tensor.empty(%n) : tensor<?xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d) -> (d)>, affine_map<(d) -> (d)>,
                                        affine_map<(d) -> (d)>], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<?xf32>, tensor<?xf32>) outs(%e : tensor<?xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    %m = arith.mulf %s, %y : f32
    linalg.yield %m : f32
  } -> tensor<?xf32>
  return %r : tensor<?xf32>
}
"""

# Two matmuls in a row: the second reads the first's result from the same transient
# arena (binding offsets as push constants), a fill then a k loop per tile.
MATMUL_CHAIN = """
func.func @main(%x: tensor<?x16xf32>, %w: tensor<16x16xf32>) -> tensor<?x16xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %n = tensor.dim %x, %c0 : tensor<?x16xf32>
  %e = tensor.empty(%n) : tensor<?x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x16xf32>) -> tensor<?x16xf32>
  %y = linalg.matmul ins(%x, %w : tensor<?x16xf32>, tensor<16x16xf32>) outs(%f : tensor<?x16xf32>) -> tensor<?x16xf32>
  %z = linalg.matmul ins(%y, %w : tensor<?x16xf32>, tensor<16x16xf32>) outs(%f : tensor<?x16xf32>) -> tensor<?x16xf32>
  return %z : tensor<?x16xf32>
}
"""

STATIC_SMALL = """
func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %r = arith.mulf %a, %b : tensor<4xf32>
  return %r : tensor<4xf32>
}
"""

DENORMALS = np.array([1e-39, -1e-40, 0.0, -0.0, 3e-38, 1.5, -2.25, 7.0], dtype=np.float32)


def _vmfb(compile_mlir, tmp_path, name, text):
    src = tmp_path / f"{name}.mlir"
    src.write_text(text)
    return compile_mlir(src, VMVX)


def _load(vmfb, tmp_path, name):
    from runtime_support.tools.run_cli import import_package_as

    pkg_dir = write_package(read_module_file(vmfb), tmp_path, "pkg")
    return import_package_as(f"_vecdyn_{name}_{tmp_path.name}", pkg_dir)


def _iree(vmfb, args):
    import iree.runtime as rt

    module = rt.load_vm_flatbuffer_file(str(vmfb), driver="local-sync")
    return np.asarray(module.main(*args))


def _data(rng, shape):
    x = rng.standard_normal(shape).astype(np.float32)
    flat = x.reshape(-1)
    n = min(flat.size, DENORMALS.size)
    flat[:n] = DENORMALS[:n]
    return x


def _vectorised_count(vmfb) -> int:
    from translator.reader import read_module
    from translator.vmvx import count_vectorized, find_executables

    module = read_module(vmfb.read_bytes())
    return sum(count_vectorized(read_module(d)) for _, d in find_executables(module))


def _three_ways(pkg, vmfb, args, monkeypatch):
    """Vectorised (its masked stores reached: no fallback), scalar and IREE agree."""
    from runtime_support.loaders import vmvx_arrays as A

    expected = _iree(vmfb, args).tobytes()
    stores, real = [], A.store_m
    monkeypatch.setattr(A, "store_m", lambda *a: stores.append(1) or real(*a))
    for mode in ("0", "1"):
        monkeypatch.setenv("PYREE_VMVX_SCALAR", mode)
        got = np.asarray(pkg.load(device="local-sync").main(*args))
        assert got.tobytes() == expected, f"PYREE_VMVX_SCALAR={mode}"
        if mode == "0":
            assert stores, "the vectorised program fell back to the scalar path"


@pytest.mark.parametrize("n", [1, 37, 64, 100, 129, 300])
def test_dynamic_elementwise_masked_tiles(n, compile_mlir, tmp_path, monkeypatch):
    """min(n - 64 * gx, 64) elements a workgroup: the last tile's lanes past n masked."""
    from runtime_support.loaders import vmvx_arrays as A

    monkeypatch.setattr(A, "SMALL_WORK", 0)
    vmfb = _vmfb(compile_mlir, tmp_path, "dyn_elementwise", ELEMENTWISE)
    assert _vectorised_count(vmfb) == 1
    pkg = _load(vmfb, tmp_path, "dyn_elementwise")
    rng = np.random.default_rng(n)
    _three_ways(pkg, vmfb, [_data(rng, (n,)), _data(rng, (n,))], monkeypatch)


@pytest.mark.parametrize("n", [1, 5, 70])
def test_dynamic_matmul_chain(n, compile_mlir, tmp_path, monkeypatch):
    """Row tiles clamped to the rows left, offsets into one arena from push constants,
    a fill then a reduction loop over k: vectorised, bit for bit."""
    vmfb = _vmfb(compile_mlir, tmp_path, "dyn_matmul", MATMUL_CHAIN)
    assert _vectorised_count(vmfb) >= 1
    pkg = _load(vmfb, tmp_path, "dyn_matmul")
    rng = np.random.default_rng(n)
    _three_ways(pkg, vmfb, [_data(rng, (n, 16)), _data(rng, (16, 16)) * np.float32(0.25)], monkeypatch)


def test_tiny_grid_scalar_choice_agrees(compile_mlir, tmp_path, monkeypatch):
    """A dispatch small enough for the scalar translation (SMALL_WORK) and the same one
    forced onto the vectorised path give the same bits, and IREE's."""
    from runtime_support.loaders import vmvx_arrays as A

    vmfb = _vmfb(compile_mlir, tmp_path, "small", STATIC_SMALL)
    assert _vectorised_count(vmfb) == 1
    pkg = _load(vmfb, tmp_path, "small")
    args = [DENORMALS[:4].copy(), DENORMALS[4:].copy()]
    expected = _iree(vmfb, args).tobytes()
    calls, default = [], A.SMALL_WORK
    assert default >= 4
    for small in (default, 0):
        monkeypatch.setattr(A, "SMALL_WORK", small)
        real = A.axis_range
        monkeypatch.setattr(A, "axis_range", lambda *a: calls.append(small) or real(*a))
        assert np.asarray(pkg.load(device="local-sync").main(*args)).tobytes() == expected
        monkeypatch.setattr(A, "axis_range", real)
    assert default not in calls and 0 in calls  # (each path taken where meant)


def test_trip_count_and_masked_access():
    from runtime_support.loaders import vmvx_arrays as A

    assert A.trip_count(0, 10, 4) == 3
    assert A.trip_count(0, np.array([[-3], [5]]), 1) == 5
    assert A.trip_count(2, 1, 1) == 0
    mem = bytearray(np.arange(4, dtype=np.float32).tobytes())
    b = A.Binding(memoryview(mem))
    idx = np.arange(6).reshape(1, 6)
    mask = idx < 4
    got = A.load_m(b, "f32", idx, mask)  # (lanes 4 and 5 out of range but inactive)
    assert got.tolist() == [[0.0, 1.0, 2.0, 3.0, 0.0, 0.0]]
    A.store_m(b, "f32", idx, np.float32(9.0), mask & (idx % 2 == 0))
    assert np.frombuffer(mem, np.float32).tolist() == [9.0, 1.0, 9.0, 3.0]



def _reduce_all(body: str) -> str:
    return """
func.func @main(%a: tensor<512xf32>) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %r = linalg.generic {indexing_maps = [affine_map<(d) -> (d)>, affine_map<(d) -> ()>],
                       iterator_types = ["reduction"]}
      ins(%a : tensor<512xf32>) outs(%f : tensor<f32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = BODY
    linalg.yield %s : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}
""".replace("BODY", body)


def _nan(payload: int, sign: int = 0) -> np.float32:
    return np.array([(sign << 31) | 0x7FC00000 | payload], np.uint32).view(np.float32)[0]


def _reduce_scalar_reasons(vmfb):
    from translator.reader import read_module
    from translator.vmvx import find_executables, scalar_reasons

    module = read_module(vmfb.read_bytes())
    return [r for _, d in find_executables(module) for r in scalar_reasons(read_module(d)).values()]


def test_nothing_varies_keeps_the_scalar_translation(compile_mlir, tmp_path, monkeypatch):
    """A one-workgroup min reduction to a scalar (a select chain not folded) has no array
    anywhere: it is left to the scalar translation (the numpy program would only add
    wrapper calls), with IREE's bits."""
    vmfb = _vmfb(compile_mlir, tmp_path, "min_all", _reduce_all("arith.minimumf %x, %acc : f32"))
    assert "nothing varies over the grid or a parallel loop" in _reduce_scalar_reasons(vmfb)
    pkg = _load(vmfb, tmp_path, "min_all")
    args = [_data(np.random.default_rng(3), (512,))]
    assert np.asarray(pkg.load(device="local-sync").main(*args)).tobytes() == _iree(vmfb, args).tobytes()


_FOLDS = {
    "add_x_acc": "arith.addf %x, %acc : f32",
    "add_acc_x": "arith.addf %acc, %x : f32",
    "max_x_acc": "arith.maximumf %x, %acc : f32",
    "max_acc_x": "arith.maximumf %acc, %x : f32",  # (the mirrored chain: not folded, scalar)
}
_NOT_FOLDED = {"max_acc_x"}


@pytest.mark.parametrize("case", ["plain", "cancel_to_denormal", "nans", "inf_minus_inf", "zeros"])
@pytest.mark.parametrize("body", sorted(_FOLDS))
def test_reduction_folds_in_order(case, body, compile_mlir, tmp_path, monkeypatch):
    """A sum or maximum over a reduction loop folds along an axis (sum_f32, max_f32):
    every partial sum flushed, IREE's order and NaN payloads (the slow path) or one
    accumulate under DAZ/FTZ (no NaNs); the first NaN and the first of equal maxima kept -
    the same bits as the scalar translation and IREE either way."""
    vmfb = _vmfb(compile_mlir, tmp_path, f"fold_{body}", _reduce_all(_FOLDS[body]))
    folded = body not in _NOT_FOLDED
    assert (None in _reduce_scalar_reasons(vmfb)) == folded
    pkg = _load(vmfb, tmp_path, f"fold_{body}")
    rng = np.random.default_rng(11)
    x = _data(rng, (512,))
    if case == "cancel_to_denormal":  # (partial sums pass through denormals: flushed)
        x[:] = 0
        x[0::2] = np.float32(1.5e-38)
        x[1::2] = np.float32(-1.4e-38)
        x[7] = np.float32(3e-39)
    elif case == "nans":
        x[100], x[200], x[300] = _nan(5), _nan(9, 1), np.inf
    elif case == "inf_minus_inf":
        x[10], x[20] = np.inf, -np.inf
    elif case == "zeros":  # (-0 and +0 tie as maxima: the first stays; denormals as zeros)
        x[:] = -1.0
        x[3], x[4], x[5], x[9] = -0.0, 0.0, np.float32(1e-40), np.float32(-1e-40)
    from runtime_support.loaders import vmvx_arrays as A

    expected = _iree(vmfb, [x]).tobytes()
    folds, real_sum, real_max = [], A.sum_f32, A.max_f32
    monkeypatch.setattr(A, "sum_f32", lambda *a: folds.append(1) or real_sum(*a))
    monkeypatch.setattr(A, "max_f32", lambda *a: folds.append(1) or real_max(*a))
    for mode in ("0", "1"):
        monkeypatch.setenv("PYREE_VMVX_SCALAR", mode)
        assert np.asarray(pkg.load(device="local-sync").main(x)).tobytes() == expected, mode
        assert bool(folds) == folded, "not folded (the dispatch fell back)"


@pytest.mark.parametrize("path", ["accumulate", "steps", "accumulate_by_hand", "steps_by_hand"])
@pytest.mark.parametrize("nans", [False, True])
def test_matmul_folds_in_order(path, nans, compile_mlir, tmp_path, monkeypatch):
    """The matmul's k loop folded each way sum_f32 can (add.accumulate over few lanes,
    step by step over many; under the MXCSR or flushing by hand), with NaNs of several
    payloads in both operands or without."""
    from runtime_support.loaders import vmvx_arrays as A

    monkeypatch.setattr(A, "_WIDE", 1 if path.startswith("steps") else 1 << 30)
    if path.endswith("by_hand"):
        monkeypatch.setattr(A, "_FLUSHING_STEPS", None)
        monkeypatch.setattr(A, "_FLUSHING_ACCUMULATE", None)
    vmfb = _vmfb(compile_mlir, tmp_path, "dyn_matmul", MATMUL_CHAIN)
    pkg = _load(vmfb, tmp_path, "dyn_matmul")
    rng = np.random.default_rng(5)
    x, w = _data(rng, (9, 16)), _data(rng, (16, 16))
    x[0, :4] = np.float32(1e-20)  # (products that underflow to denormals: flushed)
    if nans:
        x[2, 3], x[4, 5], w[3, 7], w[6, 1] = _nan(1), _nan(2, 1), _nan(3), np.inf
    _three_ways(pkg, vmfb, [x, w], monkeypatch)

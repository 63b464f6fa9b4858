"""Host code shapes against iree.runtime under both lowerings the translator keeps:
queue programs (the default) and `--no-fuse` (one import call per op).

The programs here were the differential tests of the fused mechanisms issue #25 deleted
(one-shot command buffers with dynamic shapes, copies, fills, joined allocas, a check
between two submissions, async-external builds, iree-turbine's dynamic batch, a run of
many-workgroup dispatches, a test-first loop from zero steps, a coarse-fences export that
signals the caller's fence); each shape stays covered on the default path: results
bit-identical to iree.runtime on local-sync and local.
"""

from __future__ import annotations

import numpy as np
import pytest

from runtime_support.hal.buffer import aligned_empty
from runtime_support.tools.run_cli import import_package_as
from helpers_compile import LLVM_CPU_FLAGS, compile_mlir
from translator.codegen import write_package
from translator.reader import read_module_file

DEVICES = [("local-sync", "local-sync"), ("local", "local-task")]
FORMS = ("programs", "per_op")  # write_package(queue_programs=True / False)


def _packages(vmfb, out, name):
    """form -> the package module, translated each way."""
    return {
        form: import_package_as(
            f"_host_shapes_{name}_{form}",
            write_package(read_module_file(vmfb), out / form, name, queue_programs=form == "programs"),
        )
        for form in FORMS
    }


def _iree(vmfb, driver):
    rt = pytest.importorskip("iree.runtime")
    ctx = rt.SystemContext(config=rt.Config(driver))
    ctx.add_vm_module(rt.VmModule.copy_buffer(ctx.instance, vmfb.read_bytes()))
    return ctx.modules.module


def _bytes(result) -> list[bytes]:
    result = list(result) if isinstance(result, (tuple, list)) else [result]
    return [np.asarray(r.to_host() if hasattr(r, "to_host") else r).tobytes() for r in result]


# -- dynamic shapes: a command buffer recorded per call ---------------------------------

DYN_ADD = """
func.func @dyn_add(%a: tensor<?xf32>, %b: tensor<?xf32>) -> tensor<?xf32> {
  %0 = arith.addf %a, %b : tensor<?xf32>
  %1 = arith.mulf %0, %b : tensor<?xf32>
  return %1 : tensor<?xf32>
}
"""
# Two dispatches in one command buffer, two results; the first lookup's register is
# written again before the submit (the call leaves it alone).
DYN_2D = """
func.func @dyn_transpose_rowsum(%a: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = tensor.dim %a, %c0 : tensor<?x?xf32>
  %n = tensor.dim %a, %c1 : tensor<?x?xf32>
  %e = tensor.empty(%n, %m) : tensor<?x?xf32>
  %t = linalg.transpose ins(%a : tensor<?x?xf32>) outs(%e : tensor<?x?xf32>) permutation = [1, 0]
  %zero = arith.constant 0.0 : f32
  %re = tensor.empty(%m) : tensor<?xf32>
  %rf = linalg.fill ins(%zero : f32) outs(%re : tensor<?xf32>) -> tensor<?xf32>
  %s = linalg.reduce ins(%a : tensor<?x?xf32>) outs(%rf : tensor<?xf32>) dimensions = [1]
    (%x: f32, %acc: f32) {
      %y = arith.addf %x, %acc : f32
      linalg.yield %y : f32
    }
  return %t, %s : tensor<?x?xf32>, tensor<?xf32>
}
"""
# A static shape with a scalar argument: a one-shot command buffer (push constant) too.
SCALE = """
func.func @scale(%a: tensor<5xf32>, %k: f32) -> tensor<5xf32> {
  %e = tensor.empty() : tensor<5xf32>
  %0 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]}
      ins(%a : tensor<5xf32>) outs(%e : tensor<5xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.mulf %x, %k : f32
    linalg.yield %y : f32
  } -> tensor<5xf32>
  return %0 : tensor<5xf32>
}
"""
# Copies only (a TRANSFER command buffer), and a fill beside a dispatch.
DYN_CONCAT = """
func.func @dyn_concat(%a: tensor<?xf32>, %b: tensor<?xf32>) -> tensor<?xf32> {
  %0 = tensor.concat dim(0) %a, %b : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
"""
FILL_AND_ADD = """
func.func @fill_and_add(%a: tensor<?xf32>) -> (tensor<?xf32>, tensor<?xi32>) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %a, %c0 : tensor<?xf32>
  %e = tensor.empty(%n) : tensor<?xi32>
  %c = arith.constant 7 : i32
  %f = linalg.fill ins(%c : i32) outs(%e : tensor<?xi32>) -> tensor<?xi32>
  %s = arith.addf %a, %a : tensor<?xf32>
  return %s, %f : tensor<?xf32>, tensor<?xi32>
}
"""
# Two matmuls with a dynamic batch: the result and a transient allocated (joined), the
# transient released by a queue.dealloca after the execute, whose fence the await waits on.
DYN_MLP = """
func.func @dyn_mlp(%x: tensor<?x32xf32>, %w1: tensor<32x32xf32>, %w2: tensor<32x8xf32>) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x32xf32>
  %z = arith.constant 0.0 : f32
  %e1 = tensor.empty(%n) : tensor<?x32xf32>
  %f1 = linalg.fill ins(%z : f32) outs(%e1 : tensor<?x32xf32>) -> tensor<?x32xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<?x32xf32>, tensor<32x32xf32>) outs(%f1 : tensor<?x32xf32>) -> tensor<?x32xf32>
  %r = tensor.empty(%n) : tensor<?x32xf32>
  %hr = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                        iterator_types = ["parallel", "parallel"]} ins(%h : tensor<?x32xf32>) outs(%r : tensor<?x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.maximumf %a, %z : f32
    linalg.yield %m : f32
  } -> tensor<?x32xf32>
  %e2 = tensor.empty(%n) : tensor<?x8xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<?x8xf32>) -> tensor<?x8xf32>
  %y = linalg.matmul ins(%hr, %w2 : tensor<?x32xf32>, tensor<32x8xf32>) outs(%f2 : tensor<?x8xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}
"""
# A check between two submissions (what torch-mlir's shape asserts make: IREE splits the
# work there), a transient of the first read by the second beside one of its own: the
# second's execute is followed by a queue.dealloca of each, their fences joined and
# awaited (or, in the async-external build, signalled to the caller by a queue.barrier).
DYN_RESIDUAL = """
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @dyn_residual(%x: tensor<?x32xf32>, %w1: tensor<32x32xf32>, %w2: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %n = tensor.dim %x, %c0 : tensor<?x32xf32>
  %z = arith.constant 0.0 : f32
  %e1 = tensor.empty(%n) : tensor<?x32xf32>
  %f1 = linalg.fill ins(%z : f32) outs(%e1 : tensor<?x32xf32>) -> tensor<?x32xf32>
  %h0 = linalg.matmul ins(%x, %w1 : tensor<?x32xf32>, tensor<32x32xf32>) outs(%f1 : tensor<?x32xf32>) -> tensor<?x32xf32>
  %h = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h0 : tensor<?x32xf32>) outs(%e1 : tensor<?x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = math.tanh %a : f32
    linalg.yield %m : f32
  } -> tensor<?x32xf32>
  %k = tensor.dim %w2, %c0 : tensor<?x32xf32>
  %ok = arith.cmpi eq, %k, %c32 : index
  cf.assert %ok, "mismatching contracting dimension"
  %w2s = tensor.cast %w2 : tensor<?x32xf32> to tensor<32x32xf32>
  %e2 = tensor.empty(%n) : tensor<?x32xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<?x32xf32>) -> tensor<?x32xf32>
  %g = linalg.matmul ins(%h, %w2s : tensor<?x32xf32>, tensor<32x32xf32>) outs(%f2 : tensor<?x32xf32>) -> tensor<?x32xf32>
  %low = arith.constant -1.0e30 : f32
  %re = tensor.empty(%n) : tensor<?xf32>
  %rf = linalg.fill ins(%low : f32) outs(%re : tensor<?xf32>) -> tensor<?xf32>
  %mx = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%g : tensor<?x32xf32>) outs(%rf : tensor<?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.maximumf %a, %o : f32
    linalg.yield %m : f32
  } -> tensor<?xf32>
  %e3 = tensor.empty(%n) : tensor<?x32xf32>
  %s = linalg.generic {indexing_maps = [#id, #row, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g, %mx, %h : tensor<?x32xf32>, tensor<?xf32>, tensor<?x32xf32>) outs(%e3 : tensor<?x32xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %e = math.exp %d : f32
    %r = arith.addf %e, %c : f32
    linalg.yield %r : f32
  } -> tensor<?x32xf32>
  return %s : tensor<?x32xf32>
}
"""
SOURCES = {
    "dyn_add": DYN_ADD, "dyn_2d": DYN_2D, "scale": SCALE, "dyn_concat": DYN_CONCAT,
    "fill_and_add": FILL_AND_ADD, "dyn_mlp": DYN_MLP, "dyn_residual": DYN_RESIDUAL,
}
EXPORT = {
    "dyn_add": "dyn_add", "dyn_2d": "dyn_transpose_rowsum", "scale": "scale",
    "dyn_concat": "dyn_concat", "fill_and_add": "fill_and_add", "dyn_mlp": "dyn_mlp",
    "dyn_residual": "dyn_residual",
}

ASYNC_FLAGS = (*LLVM_CPU_FLAGS, "--iree-execution-model=async-external")
ASYNC = ("dyn_add", "dyn_residual")  # also built with ASYNC_FLAGS, as NAME_async


@pytest.fixture(scope="module")
def vmfbs(tmp_path_factory):
    """name -> vmfb; `dyn_add_async`, `dyn_residual_async`: with async-external exports
    (the execute, or a queue.barrier after it, signals the caller's fence)."""
    out = tmp_path_factory.mktemp("host_shapes_vmfb")
    built = {name: compile_mlir(src, out, LLVM_CPU_FLAGS, name) for name, src in SOURCES.items()}
    for name in ASYNC:
        built[f"{name}_async"] = compile_mlir(SOURCES[name], out, ASYNC_FLAGS, f"{name}_async")
    return built


@pytest.fixture(scope="module")
def packages(vmfbs, tmp_path_factory):
    """name -> form -> package module."""
    out = tmp_path_factory.mktemp("host_shapes_pkgs")
    return {name: _packages(vmfb, out / name, name) for name, vmfb in vmfbs.items()}


def _inputs(name, rng, n):
    if name == "dyn_add":
        return (rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32))
    if name == "dyn_concat":
        return (rng.standard_normal(n).astype(np.float32), rng.standard_normal(n // 2 + 1).astype(np.float32))
    if name == "fill_and_add":
        return (rng.standard_normal(n).astype(np.float32),)
    if name == "dyn_mlp":
        return (rng.standard_normal((n, 32)).astype(np.float32),
                (rng.standard_normal((32, 32)) / 4).astype(np.float32),
                (rng.standard_normal((32, 8)) / 4).astype(np.float32))
    if name == "dyn_residual":
        return (rng.standard_normal((n, 32)).astype(np.float32),
                (rng.standard_normal((32, 32)) / 4).astype(np.float32),
                (rng.standard_normal((32, 32)) / 4).astype(np.float32))
    if name == "dyn_2d":
        return (rng.standard_normal((n, max(n // 2, 1) + 1)).astype(np.float32),)
    return (rng.standard_normal(5).astype(np.float32), float(np.float32(rng.standard_normal())))


@pytest.mark.parametrize("name", sorted(SOURCES))
@pytest.mark.parametrize("device, driver", DEVICES)
def test_dynamic_shapes_match_iree(vmfbs, packages, name, device, driver):
    iree_fn = getattr(_iree(vmfbs[name], driver), EXPORT[name])
    ours = {form: getattr(packages[name][form].load(device=device), EXPORT[name]) for form in FORMS}
    rng = np.random.default_rng(11)
    last = 0 if name in ("dyn_add", "fill_and_add", "dyn_mlp", "dyn_residual") else 2
    # (sizes coming again: from a size's second call its commands replay one plan)
    for n in (1, 3, 16, 3, 1000, 16, 5000, 1000, 5000, 3, last, 1, last):
        args = _inputs(name, rng, n)
        want = _bytes(iree_fn(*args))
        for form in FORMS:
            assert _bytes(ours[form](*args)) == want, (name, n, form)


@pytest.mark.parametrize("name", ASYNC)
@pytest.mark.parametrize("device, driver", DEVICES)
def test_async_export_matches_iree(vmfbs, packages, name, device, driver):
    """An async-external build (the caller's fence signalled by the queue) equals
    iree.runtime on the synchronous build."""
    iree_fn = getattr(_iree(vmfbs[name], driver), EXPORT[name])
    ours = {form: getattr(packages[f"{name}_async"][form].load(device=device), EXPORT[name])
            for form in FORMS}
    rng = np.random.default_rng(5)
    for n in (1, 3, 1000, 5000, 3, 0):
        args = _inputs(name, rng, n)
        want = _bytes(iree_fn(*args))
        for form in FORMS:
            assert _bytes(ours[form](*args)) == want, (n, form)


def test_queue_programs_are_written(packages):
    """The default form writes queue programs; --no-fuse none."""
    for name in SOURCES:
        assert "QueueProgram(" in open(packages[name]["programs"].__file__).read(), name
        assert "QueueProgram(" not in open(packages[name]["per_op"].__file__).read(), name


# -- iree-turbine: a dynamic batch dim (main$async records a command buffer per call) ------


@pytest.fixture(scope="module")
def turbine_vmfbs(tmp_path_factory):
    """iree-turbine exports with a dynamic batch dim: a Linear+ReLU (one alloca) and a
    small CNN (its result and a transient arena: two allocas joined, the arena released
    by a queue.dealloca after the execute)."""
    torch = pytest.importorskip("torch")
    aot = pytest.importorskip("iree.turbine.aot")
    torch.manual_seed(0)

    class LinearRelu(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(16, 8)

        def forward(self, x):
            return torch.relu(self.linear(x))

    class SmallCnn(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = torch.nn.Conv2d(3, 8, 3, padding=1)
            self.c2 = torch.nn.Conv2d(8, 16, 3, padding=1)
            self.fc = torch.nn.Linear(16 * 4 * 4, 10)

        def forward(self, x):
            x = torch.nn.functional.max_pool2d(torch.relu(self.c1(x)), 2)
            x = torch.nn.functional.max_pool2d(torch.relu(self.c2(x)), 2)
            return torch.softmax(self.fc(x.flatten(1)), -1)

    out = tmp_path_factory.mktemp("turbine_dyn")
    built = {}
    for name, model, example in (
        ("linear_relu", LinearRelu(), torch.randn(4, 16)),
        ("small_cnn", SmallCnn().eval(), torch.randn(4, 3, 16, 16)),
    ):
        exported = aot.export(model, args=(example,), dynamic_shapes=({0: torch.export.Dim("batch")},))
        exported.save_mlir(str(out / f"{name}.mlir"))
        built[name] = compile_mlir((out / f"{name}.mlir").read_text(), out, LLVM_CPU_FLAGS, name)
    return built


_TURBINE = {"linear_relu": (16,), "small_cnn": (3, 16, 16)}


# Noise from torch.export / iree-turbine internals, not from pyree (as in test_models.py).
@pytest.mark.filterwarnings("ignore:.*LeafSpec:FutureWarning")
@pytest.mark.filterwarnings("ignore:__array__ implementation:DeprecationWarning")
@pytest.mark.parametrize("name", sorted(_TURBINE))
@pytest.mark.parametrize("device, driver", DEVICES)
def test_turbine_dynamic_batch_matches_iree(turbine_vmfbs, tmp_path, name, device, driver):
    vmfb = turbine_vmfbs[name]
    main = _iree(vmfb, driver).main
    pkgs = _packages(vmfb, tmp_path, f"{name}_{device.replace('-', '_')}")
    ours = [pkgs[form].load(device=device) for form in FORMS]
    rng = np.random.default_rng(9)
    for batch in (1, 4, 33, 4, 0):
        x = rng.standard_normal((batch, *_TURBINE[name])).astype(np.float32)
        want = _bytes(main(x))
        for form, c in zip(FORMS, ours):
            assert _bytes(c.main(x)) == want, (batch, form)


# -- a run of dispatches of many workgroups (spread over the worker pool on `local`) -------

WIDE = """
func.func @wide(%a: tensor<512x64xf32>, %b: tensor<512x64xf32>) -> tensor<512x64xf32> {
  %0 = arith.addf %a, %b : tensor<512x64xf32>
  %k0 = util.optimization_barrier %0 : tensor<512x64xf32>
  %1 = arith.mulf %k0, %b : tensor<512x64xf32>
  %k1 = util.optimization_barrier %1 : tensor<512x64xf32>
  %2 = math.tanh %k1 : tensor<512x64xf32>
  return %2 : tensor<512x64xf32>
}
"""


@pytest.mark.parametrize("device, driver", DEVICES)
def test_many_workgroup_dispatches_match_iree(tmp_path, device, driver):
    vmfb = compile_mlir(WIDE, tmp_path, LLVM_CPU_FLAGS, "wide")
    wide = _iree(vmfb, driver).wide
    ours = {form: pkg.load(device=device).wide for form, pkg in _packages(vmfb, tmp_path, f"wide_{driver.replace('-', '_')}").items()}
    rng = np.random.default_rng(11)
    for _ in range(3):
        a, b = (rng.standard_normal((512, 64)).astype(np.float32) for _ in range(2))
        want = _bytes(wide(a, b))
        for form in FORMS:
            assert _bytes(ours[form](a, b)) == want, form


# -- the test-first shape (scf.for): an exit may come before any step --------------------

FOR_LOOP = """
func.func @repeat_scale(%t: tensor<4xf32>, %n: i32) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %ub = arith.index_cast %n : i32 to index
  %half = arith.constant dense<0.5> : tensor<4xf32>
  %r = scf.for %i = %c0 to %ub step %c1 iter_args(%acc = %t) -> tensor<4xf32> {
    %m = arith.mulf %acc, %half : tensor<4xf32>
    %a = arith.addf %m, %t : tensor<4xf32>
    scf.yield %a : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}
"""


@pytest.mark.parametrize("device, driver", DEVICES)
def test_test_first_loop_matches_iree_from_zero_steps(tmp_path, device, driver):
    vmfb = compile_mlir(FOR_LOOP, tmp_path, LLVM_CPU_FLAGS, "for_loop")
    repeat_scale = _iree(vmfb, driver).repeat_scale
    ours = {form: pkg.load(device=device).repeat_scale
            for form, pkg in _packages(vmfb, tmp_path, f"for_loop_{driver.replace('-', '_')}").items()}
    t = np.array([1.0, -2.0, 3.5, 0.25], np.float32)
    for n in (0, 1, 2, 3, 17):
        want = _bytes(repeat_scale(t, n))
        for form in FORMS:
            assert _bytes(ours[form](t, n)) == want, (form, n)


# -- a coarse-fences export: the queue signals the caller's fence ------------------------

COARSE_FENCES = """
func.func @main_async(%a: !hal.buffer_view, %b: !hal.buffer_view, %c: !hal.buffer_view,
                      %wait: !hal.fence, %signal: !hal.fence) -> !hal.buffer_view
    attributes {iree.abi.model = "coarse-fences", iree.abi.stub} {
  %x = hal.tensor.import wait(%wait) => %a : !hal.buffer_view -> tensor<4x8xf32>
  %w1 = hal.tensor.import wait(%wait) => %b : !hal.buffer_view -> tensor<8x16xf32>
  %w2 = hal.tensor.import wait(%wait) => %c : !hal.buffer_view -> tensor<16x4xf32>
  %z = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<4x16xf32>
  %f1 = linalg.fill ins(%z : f32) outs(%e1 : tensor<4x16xf32>) -> tensor<4x16xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<4x8xf32>, tensor<8x16xf32>)
                     outs(%f1 : tensor<4x16xf32>) -> tensor<4x16xf32>
  %r = arith.maximumf %h, %f1 : tensor<4x16xf32>
  %e2 = tensor.empty() : tensor<4x4xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<4x4xf32>) -> tensor<4x4xf32>
  %y = linalg.matmul ins(%r, %w2 : tensor<4x16xf32>, tensor<16x4xf32>)
                     outs(%f2 : tensor<4x4xf32>) -> tensor<4x4xf32>
  %yb = hal.tensor.barrier join(%y : tensor<4x4xf32>) => %signal : !hal.fence
  %v = hal.tensor.export %yb : tensor<4x4xf32> -> !hal.buffer_view
  return %v : !hal.buffer_view
}
"""


def _async_inputs(seed=0):
    r = np.random.default_rng(seed)
    return [r.standard_normal(s).astype(np.float32) for s in ((4, 8), (8, 16), (16, 4))]


def _views(ctx, arrays):
    """Buffer views over aligned copies (the export has no ABI wrapper: VM values in)."""
    out = []
    for a in arrays:
        c = aligned_empty(a.shape, a.dtype)
        c[...] = a
        out.append(ctx.wrap_array(c))
    return out


@pytest.mark.parametrize("device", ["local-sync", "local"])
def test_coarse_fences_export_signals_the_callers_fence(tmp_path, device):
    """Called before its wait fence is reached, the export returns with the caller's
    fence unsignalled, then signals it; a call waiting on another call's fence; the
    same bytes either way, and numpy's values."""
    vmfb = compile_mlir(COARSE_FENCES, tmp_path, LLVM_CPU_FLAGS, "mlp_async")
    pkgs = _packages(vmfb, tmp_path, f"mlp_async_{device.replace('-', '_')}")
    x, w1, w2 = _async_inputs()
    outs = []
    for form in FORMS:
        ctx = pkgs[form].load(device=device)
        got = []
        wait, signal = ctx.create_fence(), ctx.create_fence()
        args = _views(ctx, (x, w1, w2))
        view = ctx.call_vm("main_async", *args, wait, signal)
        got.append(signal.is_reached)
        wait.signal()
        assert signal.wait(timeout=60)
        got.append(view.to_numpy().tobytes())
        first, second = ctx.create_fence(), ctx.create_fence()
        ctx.call_vm("main_async", *args, None, first)
        out = ctx.call_vm("main_async", *args, first, second)
        assert second.wait(timeout=60)
        got.append(out.to_numpy().tobytes())
        outs.append(got)
        ctx.close()
    assert outs[0] == outs[1]
    assert outs[0][0] is False
    want = np.maximum(x @ w1, 0) @ w2
    got = np.frombuffer(outs[0][1], np.float32).reshape(4, 4)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)

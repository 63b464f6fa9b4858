"""Exports with no ABI declaration (iree-turbine's): the export wrapper learns the static
tensor types of its first call's arguments and results and is written again as if they
were declared (runtime_support/api/context.py and export_call.py, abi.observed_*): the
same function object, its closure rebound. What a call returns or raises
stays what the undeclared wrapper returns or raises, for any later call: shapes and
dtypes off the learned ones, views passed as is, errors; checked against iree.runtime and
against a context that never learned.
"""

from __future__ import annotations

import numpy as np
import pytest

from helpers_compile import LLVM_CPU_FLAGS
from runtime_support.errors import VMError
from differential import load_package
from translator.codegen import write_package
from translator.reader import read_module_file

rt = pytest.importorskip("iree.runtime")

SOURCE = """
func.func @mul(%a: tensor<4xi32>, %b: tensor<4xi32>) -> tensor<4xi32> {
  %0 = arith.muli %a, %b : tensor<4xi32>
  return %0 : tensor<4xi32>
}
func.func @matmul_acc(%lhs: tensor<2x2xf32>, %rhs: tensor<2x2xf32>, %acc: tensor<2x2xf32>)
    -> (tensor<2x2xf32>, tensor<2x2xf32>) {
  %r = linalg.matmul ins(%lhs, %rhs : tensor<2x2xf32>, tensor<2x2xf32>)
                     outs(%acc : tensor<2x2xf32>) -> tensor<2x2xf32>
  return %r, %acc : tensor<2x2xf32>, tensor<2x2xf32>
}
func.func @dyn_add(%a: tensor<?x2xi32>, %b: tensor<?x2xi32>) -> tensor<?x2xi32> {
  %0 = arith.addi %a, %b : tensor<?x2xi32>
  return %0 : tensor<?x2xi32>
}
"""


@pytest.fixture(scope="module")
def vmfb(compile_mlir, tmp_path_factory):
    src = tmp_path_factory.mktemp("src") / "undeclared.mlir"
    src.write_text(SOURCE)
    return compile_mlir(src, LLVM_CPU_FLAGS)


@pytest.fixture(scope="module")
def package(vmfb, tmp_path_factory):
    pkg = load_package(write_package(read_module_file(vmfb), tmp_path_factory.mktemp("pkg"), "undecl"))
    # As iree-turbine's modules come: no declarations (the table load() reads).
    for name, export in list(pkg._EXPORTS.items()):
        pkg._EXPORTS[name] = export._replace(declaration=None)
    return pkg


@pytest.fixture(scope="module")
def theirs(vmfb):
    config = rt.Config("local-sync")
    vm_module = rt.VmModule.mmap(config.vm_instance, str(vmfb))
    return rt.SystemContext(vm_modules=[vm_module], config=config).modules.module


def _host(value):
    return np.asarray(value.to_host()).copy()


def _learned(fn) -> bool:
    return fn.learned


def _converter(fn, index: int):
    return fn.plan.converters[index]


def test_first_call_specializes_the_same_function_object(package, theirs):
    ctx = package.load(device="local-sync")
    mul = ctx.mul  # held before the first call, as a caller does
    assert not _learned(mul) and not hasattr(_converter(mul, 0), "spare")
    outs = []
    for i in range(4):
        a, b = np.arange(4, dtype=np.int32) + i, np.full(4, i + 2, np.int32)
        outs.append((mul(a, b), _host(theirs.mul(a, b))))
    assert ctx.mul is mul and _learned(mul)
    convert = _converter(mul, 0)
    assert convert.shape == (4,) and len(convert.spare) == 1  # the copy comes back
    for ours, expected in outs:  # every result its own array, the bits IREE gives
        assert ours.tobytes() == expected.tobytes()
    y = mul(np.arange(4, dtype=np.int32), np.arange(4, dtype=np.int32))
    assert y.tolist() == [0, 1, 4, 9] and not y.flags.owndata  # zero-copy kept


def test_off_the_learned_types_is_the_undeclared_path(package, theirs):
    """Shapes, dtypes and values the first call did not have go where the undeclared
    wrapper sends them: the same results, and the same errors, as a context that has
    not learned (its first call) and as iree.runtime where that runs."""
    ctx = package.load(device="local-sync")
    ctx.mul(np.ones(4, np.int32), np.ones(4, np.int32))
    ctx.mul(np.ones(4, np.int32), np.ones(4, np.int32))
    assert _learned(ctx.mul)
    same = [
        (np.arange(4, dtype=np.uint32), np.full(4, 3, np.uint32)),  # the other signedness
        (np.arange(8, dtype=np.int32)[::2], np.full(4, 3, np.int32)),  # strided
    ]
    for a, b in same:
        fresh = package.load(device="local-sync")
        assert ctx.mul(a, b).tobytes() == fresh.mul(a, b).tobytes()
    bad = [
        (np.zeros(4, np.float32), np.zeros(4, np.int32)),  # the module's element type check
        (np.zeros(5, np.int32), np.zeros(4, np.int32)),  # its shape check
        (np.zeros((2, 2), np.int32), np.zeros(4, np.int32)),
    ]
    for a, b in bad:
        with pytest.raises(VMError) as learned:
            ctx.mul(a, b)
        with pytest.raises(VMError) as fresh:
            package.load(device="local-sync").mul(a, b)
        assert str(learned.value) == str(fresh.value)
    assert ctx.mul(np.full(4, 5, np.int32), np.full(4, 3, np.int32)).tolist() == [15] * 4


def test_dynamic_shapes_after_learning_match_iree(package, theirs):
    """Shapes off the learned one: the same bits, and results still zero-copy (a fresh
    transient nothing else reaches) as the undeclared wrapper returns them."""
    ctx = package.load(device="local-sync")
    for n in (3, 3, 5, 1, 3, 7):
        a = np.arange(2 * n, dtype=np.int32).reshape(n, 2)
        b = np.full((n, 2), n, np.int32)
        out = ctx.dyn_add(a, b)
        assert out.tobytes() == _host(theirs.dyn_add(a, b)).tobytes()
        assert not out.flags.owndata, n
    assert _learned(ctx.dyn_add)


@pytest.mark.parametrize("device", ["local-sync", "local"])
def test_several_results_and_tied_operands_match_iree(package, theirs, device):
    """Two results, one of them an argument's copy written in place: each call's results
    stay intact while later calls run (no copy the results reach is reused)."""
    ctx = package.load(device=device)
    kept = []
    for i in range(4):
        lhs, rhs = np.arange(4, dtype=np.float32).reshape(2, 2) + i, np.eye(2, dtype=np.float32)
        acc = np.full((2, 2), 10.0 * i, np.float32)
        ours = ctx.matmul_acc(lhs, rhs, acc)
        kept.append((ours, [_host(r) for r in theirs.matmul_acc(lhs, rhs, acc)]))
        assert (acc == 10.0 * i).all()
    assert _learned(ctx.matmul_acc)
    for ours, expected in kept:
        assert [r.tobytes() for r in ours] == [r.tobytes() for r in expected]


def test_views_and_failures_before_learning(package):
    """A first call that raises teaches nothing (the next one learns); buffer views
    passed as is give no hint and come back as results the same way."""
    from runtime_support.hal.buffer_view import HalBufferView

    ctx = package.load(device="local-sync")
    with pytest.raises(VMError):
        ctx.mul(np.zeros(4, np.float32), np.zeros(4, np.float32))
    assert not _learned(ctx.mul)
    a = HalBufferView.from_numpy(np.arange(4, dtype=np.int32))
    assert ctx.mul(a, np.arange(4, dtype=np.int32)).tolist() == [0, 1, 4, 9]
    assert _learned(ctx.mul)
    assert ctx.mul(np.arange(4, dtype=np.int32), a).tolist() == [0, 1, 4, 9]
    assert _learned(ctx.mul) and not hasattr(_converter(ctx.mul, 0), "spare")
    assert hasattr(_converter(ctx.mul, 1), "spare")  # (the array the first call had)

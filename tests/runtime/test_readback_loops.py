"""Host loops whose condition reads a dispatch's result back (IREE's stablehlo `collatz`
model, generation loops): structured code and queue programs, equal to iree.runtime.

Each iteration submits, awaits and reads a value back with `hal.buffer.load`; the loop is
left normally or by a failed wait, whose `vm.fail` block the checks before the loop share.
The structurer inlines that failure exit (it was a block-state loop); the submissions
whose fence the next iteration waits on are queue programs (their fences outputs the next
iteration's program reads), and one may start after a fence.join of outside fences.
Both lowerings the translator keeps run: queue programs and --no-fuse (one call per op).
"""

from __future__ import annotations

import numpy as np
import pytest

from runtime_support.tools.run_cli import import_package_as
from helpers_compile import LLVM_CPU_FLAGS, compile_mlir
from translator.codegen import write_package
from translator.reader import read_module_file

# Collatz steps of a scalar (static shapes: reusable command buffers, queue chains).
STEPS = """
func.func @steps(%start: tensor<f32>) -> tensor<f32> {
  %one = arith.constant dense<1.0> : tensor<f32>
  %two = arith.constant dense<2.0> : tensor<f32>
  %three = arith.constant dense<3.0> : tensor<f32>
  %zero = arith.constant dense<0.0> : tensor<f32>
  cf.br ^head(%zero, %start : tensor<f32>, tensor<f32>)
^head(%n: tensor<f32>, %x: tensor<f32>):
  %more = arith.cmpf ogt, %x, %one : tensor<f32>
  %m = tensor.extract %more[] : tensor<i1>
  cf.cond_br %m, ^body(%n, %x : tensor<f32>, tensor<f32>), ^done(%n : tensor<f32>)
^body(%n1: tensor<f32>, %x1: tensor<f32>):
  %next_n = arith.addf %n1, %one : tensor<f32>
  %r = arith.remf %x1, %two : tensor<f32>
  %odd = arith.cmpf one, %r, %zero : tensor<f32>
  %o = tensor.extract %odd[] : tensor<i1>
  cf.cond_br %o, ^odd, ^even
^odd:
  %t = arith.mulf %x1, %three : tensor<f32>
  %t1 = arith.addf %t, %one : tensor<f32>
  cf.br ^head(%next_n, %t1 : tensor<f32>, tensor<f32>)
^even:
  %h = arith.divf %x1, %two : tensor<f32>
  cf.br ^head(%next_n, %h : tensor<f32>, tensor<f32>)
^done(%res: tensor<f32>):
  return %res : tensor<f32>
}
"""

# Halves a dynamically shaped vector until its sum is at most 1 (one-shot command buffers:
# the loop head's reduction is awaited, and the next iteration waits on its fence).
HALVE = """
func.func @halve(%start: tensor<?xf32>) -> (tensor<?xf32>, tensor<i32>) {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  %half = arith.constant 0.5 : f32
  %z = arith.constant 0.0 : f32
  %n0 = arith.constant 0 : i32
  %i1 = arith.constant 1 : i32
  cf.br ^head(%start, %n0 : tensor<?xf32>, i32)
^head(%x: tensor<?xf32>, %n: i32):
  %init = tensor.empty() : tensor<f32>
  %acc = linalg.fill ins(%z : f32) outs(%init : tensor<f32>) -> tensor<f32>
  %sum = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
                         iterator_types = ["reduction"]}
      ins(%x : tensor<?xf32>) outs(%acc : tensor<f32>) {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      linalg.yield %s : f32
  } -> tensor<f32>
  %s = tensor.extract %sum[] : tensor<f32>
  %more = arith.cmpf ogt, %s, %one : f32
  cf.cond_br %more, ^body, ^done
^body:
  %d = tensor.dim %x, %c0 : tensor<?xf32>
  %e = tensor.empty(%d) : tensor<?xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]}
      ins(%x : tensor<?xf32>) outs(%e : tensor<?xf32>) {
    ^bb0(%a: f32, %b: f32):
      %h = arith.mulf %a, %half : f32
      linalg.yield %h : f32
  } -> tensor<?xf32>
  %n1 = arith.addi %n, %i1 : i32
  cf.br ^head(%y, %n1 : tensor<?xf32>, i32)
^done:
  %nt = tensor.from_elements %n : tensor<i32>
  return %x, %nt : tensor<?xf32>, tensor<i32>
}
"""

SOURCES = {"steps": STEPS, "halve": HALVE}
# What each generated function must show (the loop, its queue programs).
SHOWN = ("while True:", "QueueProgram(")
FORMS = ("programs", "per_op")  # write_package(queue_programs=True / False)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """name -> (vmfb, {form: package module})."""
    out = tmp_path_factory.mktemp("readback")
    result = {}
    for name, source in SOURCES.items():
        vmfb = compile_mlir(source, out, LLVM_CPU_FLAGS, name)
        pkgs = {}
        for form in FORMS:
            pkg = write_package(read_module_file(vmfb), out / form, name, queue_programs=form == "programs")
            pkgs[form] = import_package_as(f"_readback_{name}_{form}", pkg)
        result[name] = (vmfb, pkgs)
    return result


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_loop_is_structured_with_queue_programs(built, name):
    text = open(built[name][1]["programs"].__file__).read()
    assert "Irreducible control flow" not in text
    assert "block = " not in text
    for s in SHOWN:
        assert s in text, s


def _inputs(name, rng, k):
    if name == "steps":
        return (np.float32(rng.integers(1, 300)) if k else np.float32(1.0),)
    n = (0, 1, 7, 1000)[k % 4]
    return ((np.abs(rng.standard_normal(n)) * 10).astype(np.float32),)


@pytest.mark.parametrize("name", sorted(SOURCES))
@pytest.mark.parametrize("device, driver", [("local-sync", "local-sync"), ("local", "local-task")])
def test_programs_and_per_op_equal_iree(built, name, device, driver):
    rt = pytest.importorskip("iree.runtime")
    vmfb, pkgs = built[name]
    ctx = rt.SystemContext(config=rt.Config(driver))
    ctx.add_vm_module(rt.VmModule.copy_buffer(ctx.instance, vmfb.read_bytes()))
    iree_fn = getattr(ctx.modules.module, name)
    ours = {form: getattr(pkgs[form].load(device=device), name) for form in FORMS}
    rng = np.random.default_rng(3)
    for k in range(8):
        args = _inputs(name, rng, k)
        want = iree_fn(*(np.asarray(a) for a in args))
        want = [want] if not isinstance(want, (tuple, list)) else want
        want = [np.asarray(w.to_host()).tobytes() for w in want]
        for form in FORMS:
            got = ours[form](*(np.asarray(a) for a in args))
            got = [got] if not isinstance(got, tuple) else got
            assert [np.asarray(g).tobytes() for g in got] == want, (name, k, form)

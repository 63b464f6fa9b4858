"""One-shot command buffers recorded and submitted in one block (dynamic shapes).

translator/analyses/one_shots.py finds the group only where recording the calls as steps
and running them in one call is the same program; runtime_support/hal/one_shot.py's fast
path gives what its general path (the bound imports, one by one) gives, errors and
accounting included; packages give what unfused ones and iree.runtime give, bit for bit,
on local-sync and local.
"""

from __future__ import annotations

from functools import partial

import copy
import threading

import numpy as np
import pytest

from runtime_support.errors import StatusCode, VMError
from runtime_support.hal import HalModule, one_shot
from runtime_support.hal.buffer import fresh_buffer
from runtime_support.hal.device import LocalDevice
from runtime_support.hal.executable import HalExecutable
from runtime_support.hal.fence import Fence
from runtime_support.hal.fused import ALLOCATED
from runtime_support.hal.one_shot import (
    ALLOCA, ALLOCA_FENCE, ALLOCATED_1, BARRIER, COPY, CREATE, DISPATCH, FILL, JOIN, LOOKED_UP,
    LOOKUP, NEW_FENCE,
)
from helpers_plans import replay_runs
from runtime_support.loaders import native, statistics
from runtime_support.run_cli import import_package_as
from runtime_support.vm.buffer import VMBuffer
from tests.helpers_compile import LLVM_CPU_FLAGS, compile_mlir
from translator.analyses import cfg, one_shots
from translator.analyses.liveness import RefLiveness
from translator.analyses.submissions import callee
from translator.codegen import write_package as _write_package
from translator.ir import Imm, Op, Reg
from translator.isa import BY_MNEMONIC
from translator.pipeline import Pipeline
from translator.reader import read_module_file

# These tests are of the fused mechanisms (`--host-path=fused`), kept until issue #25
# deletes them; the default host path is queue programs (tests/test_queue_programs.py).
write_package = partial(_write_package, host_path="fused")

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
REF_BIT = 0x8000


ASYNC_FLAGS = (*LLVM_CPU_FLAGS, "--iree-execution-model=async-external")
ASYNC = ("dyn_add", "dyn_residual")  # also built with ASYNC_FLAGS, as NAME_async


@pytest.fixture(scope="module")
def vmfbs(tmp_path_factory):
    """name -> vmfb; `dyn_add_async`, `dyn_residual_async`: with async-external exports
    (the signal form: the execute, or a queue.barrier after it, signals the caller's fence)."""
    out = tmp_path_factory.mktemp("one_shot_vmfb")
    built = {name: compile_mlir(src, out, LLVM_CPU_FLAGS, name) for name, src in SOURCES.items()}
    for name in ASYNC:
        built[f"{name}_async"] = compile_mlir(SOURCES[name], out, ASYNC_FLAGS, f"{name}_async")
    return built


@pytest.fixture(scope="module")
def packages(vmfbs, tmp_path_factory):
    """name -> {fused: bool -> package module}."""
    out = tmp_path_factory.mktemp("one_shot_pkgs")
    pkgs = {}
    for name, vmfb in vmfbs.items():  # (the async builds included)
        for fuse in (True, False):
            where = out / ("fused" if fuse else "unfused")
            pkg = write_package(read_module_file(vmfb), where, name, fuse_submissions=fuse)
            pkgs.setdefault(name, {})[fuse] = import_package_as(f"_one_shot_test_{name}_{fuse}", pkg)
    return pkgs


# -- the analysis ---------------------------------------------------------------------


def _function(pipeline: Pipeline, name: str):
    return copy.deepcopy(next(fn for fn in pipeline.functions if fn.name == name))


def _find(pipeline, fn):
    """Block index -> its one group (these functions have one per block at most)."""
    live = RefLiveness(fn, cfg.analyze(fn))
    found = one_shots.find(pipeline.module, fn, live)
    assert all(len(groups) == 1 for groups in found.values())
    return {index: groups[0] for index, groups in found.items()}


def _kinds(group) -> list[str]:
    return [kind for kind, _ in group.steps]


@pytest.fixture
def dyn_add(vmfbs):
    """(pipeline, a private copy of @dyn_add, its group's block, the group)."""
    pipeline = Pipeline.from_file(vmfbs["dyn_add"])
    fn = _function(pipeline, "dyn_add")
    (index, group), = _find(pipeline, fn).items()
    return pipeline, fn, index, group


def _ops(fn, index):
    return fn.blocks[index].ops


def _pos(fn, index, op) -> int:
    return next(i for i, o in enumerate(_ops(fn, index)) if o is op)


def _store(ordinal: int, pc: int) -> Op:
    """`vm.global.store.ref` of ref register `ordinal`: an op that can fail, and a use."""
    return Op(pc, 0, BY_MNEMONIC["global.store.ref"], {"global": 0, "type_def": 0, "value": Reg(REF_BIT | ordinal)})


def _numeric(mnemonic: str, pc: int, *regs: int, wide: bool = True) -> Op:
    """An integer op of the table on value registers `regs` (operands, then result)."""
    spec = BY_MNEMONIC[mnemonic]
    fields = [f for f in spec.fields if f.kind == "register"]
    return Op(pc, 0, spec, {f.name: Reg(r, f.bank) for f, r in zip(fields, regs)})


def test_group_found_with_alloca_lookup_and_markers(dyn_add):
    pipeline, fn, index, group = dyn_add
    assert _kinds(group) == ["alloca", "create", "lookup", "dispatch", "barrier", "finalize"]
    (dispatch_pc, marks), = group.markers.items()
    assert 2 in marks and len(marks) == 2  # the function and the new buffer's binding
    buf, function = group.targets
    assert buf == group.allocas[0]["results"][0] and function is not None


def test_two_dispatches_and_a_lookup_register_written_again(vmfbs):
    pipeline = Pipeline.from_file(vmfbs["dyn_2d"])
    fn = _function(pipeline, "dyn_transpose_rowsum")
    (group,) = _find(pipeline, fn).values()
    assert _kinds(group) == [
        "alloca", "create", "lookup", "dispatch", "lookup", "dispatch", "barrier", "finalize"
    ]
    buf, first, second = group.targets
    assert buf is not None and first is None and second is not None


def test_joined_allocas_and_an_awaited_dealloca(vmfbs, tmp_path):
    pipeline = Pipeline.from_file(vmfbs["dyn_mlp"])
    (group,) = _find(pipeline, _function(pipeline, "dyn_mlp")).values()
    assert _kinds(group)[:3] == ["alloca", "alloca", "join"]
    ending = group.ending
    assert ending.dealloca is not None and ending.awaited is not None and ending.terminal
    assert group.tail_buffer == 1  # the transient, released
    assert group.targets[0] is not None and group.targets[1] is None  # (dead after)
    text = (write_package(read_module_file(vmfbs["dyn_mlp"]), tmp_path, "m") / "__init__.py").read_text()
    body = text.split("def dyn_mlp", 1)[1]
    assert "(JOIN," in body and "queue.dealloca after it" in body
    assert "hal_device_queue_dealloca(" not in body and "hal_fence_await(" not in body


def test_group_found_for_a_static_shape_with_a_scalar_argument(vmfbs):
    pipeline = Pipeline.from_file(vmfbs["scale"])
    (group,) = _find(pipeline, _function(pipeline, "scale")).values()
    assert _kinds(group)[0] == "alloca"  # (the bit cast of the scalar between: movable)


def test_copies_and_fills_are_steps(vmfbs):
    pipeline = Pipeline.from_file(vmfbs["dyn_concat"])
    (group,) = _find(pipeline, _function(pipeline, "dyn_concat")).values()
    assert _kinds(group) == ["alloca", "create", "copy", "copy", "barrier", "finalize"]
    # each copy's target is the new buffer (operand 5)
    assert [sorted(m) for m in group.markers.values()] == [[5], [5]]
    pipeline = Pipeline.from_file(vmfbs["fill_and_add"])
    (group,) = _find(pipeline, _function(pipeline, "fill_and_add")).values()
    assert "fill" in _kinds(group) and "dispatch" in _kinds(group)


def test_signal_form_found_in_an_async_export(vmfbs, tmp_path):
    pipeline = Pipeline.from_file(vmfbs["dyn_add_async"])
    fn = _function(pipeline, "dyn_add")
    (group,) = _find(pipeline, fn).values()
    assert group.ending.awaited is None and _kinds(group)[0] == "alloca"
    text = (write_package(read_module_file(vmfbs["dyn_add_async"]), tmp_path, "a") / "__init__.py").read_text()
    assert "submit_one_shot_signal(" in text and "hal_device_queue_execute(" not in text.split("def dyn_add", 1)[1]


def test_signal_form_not_found_when_the_command_buffer_is_read_after(vmfbs):
    pipeline = Pipeline.from_file(vmfbs["dyn_add_async"])
    fn = _function(pipeline, "dyn_add")
    (index, group), = _find(pipeline, fn).items()
    ops = _ops(fn, index)
    cmd = group.execute["operands"][4].ordinal
    ops.insert(_pos(fn, index, group.execute) + 1, _store(cmd, group.execute.pc + 1))
    assert _find(pipeline, fn) == {}


@pytest.mark.parametrize("build", ["dyn_residual", "dyn_residual_async"])
def test_several_deallocas_stay_ops_after_a_group_of_the_execute(vmfbs, build, tmp_path):
    """An execute followed by two queue.deallocas, a fence.join of their fences and its
    await (or a queue.barrier signalling the caller's fence) is no ending the helper
    takes: the group ends at the execute, the call returns the new fence it signals, and
    the deallocas, the join and the await or barrier after it read that fence."""
    pipeline = Pipeline.from_file(vmfbs[build])
    fn = _function(pipeline, "dyn_residual")
    groups = _find(pipeline, fn)
    assert len(groups) == 2  # (both submissions: the check splits them)
    index = max(groups)
    group = groups[index]
    ending = group.ending
    assert ending.dealloca is None and ending.awaited is None and ending.carried
    assert ending.signal_create is not None
    fence = ending.signal_create["results"][0].ordinal
    rest = [op for op in _ops(fn, index) if op.pc not in group.pcs]
    callees = [(callee(pipeline.module, op) or ("",))[0] for op in rest]
    deallocas = [op for op, name in zip(rest, callees) if name == "hal.device.queue.dealloca"]
    assert len(deallocas) == 2
    assert all(op["operands"][2].ordinal == fence for op in deallocas)  # (they wait on it)
    assert "hal.fence.join" in callees
    assert ("hal.device.queue.barrier" in callees) == build.endswith("_async")
    text = (write_package(read_module_file(vmfbs[build]), tmp_path, build) / "__init__.py").read_text()
    body = text.split("def dyn_residual(", 1)[1]
    assert body.count("submit_one_shot_signal") == 2
    assert "hal_command_buffer_dispatch(" not in body and "hal_device_queue_execute(" not in body
    assert body.count("hal_device_queue_dealloca(") == 2


def test_not_found_when_an_op_that_can_fail_sits_between_the_steps(dyn_add):
    pipeline, fn, index, group = dyn_add
    ops = _ops(fn, index)
    create = group.steps[1][1][0]
    ops.insert(_pos(fn, index, create) + 1, _store(0, create.pc + 1))
    assert _find(pipeline, fn) == {}


def test_not_found_when_the_command_buffer_escapes(dyn_add):
    pipeline, fn, index, group = dyn_add
    cmd = group.execute["operands"][4].ordinal
    lookup = group.steps[2][1][0]
    ops = _ops(fn, index)
    ops.insert(_pos(fn, index, lookup), _store(cmd, lookup.pc - 1))
    assert _find(pipeline, fn) == {}


def test_alloca_left_out_when_its_fence_escapes(dyn_add):
    pipeline, fn, index, group = dyn_add
    f0 = group.execute["operands"][2].ordinal
    # a read of the fence after the await: live after the execute
    fn.blocks[index + 1].ops.insert(0, _store(f0, fn.blocks[index + 1].ops[0].pc - 1))
    (group2,) = _find(pipeline, fn).values()
    assert _kinds(group2)[0] == "create" and not group2.allocas


def test_not_found_when_an_op_between_reads_a_step_value(dyn_add):
    pipeline, fn, index, group = dyn_add
    lookup = group.steps[2][1][0]
    result = lookup["results"][0].ordinal
    ops = _ops(fn, index)
    # an integer op reading the lookup's result before the dispatch
    ops.insert(_pos(fn, index, lookup) + 1, _numeric("add.i64", lookup.pc + 1, result, result, 200))
    assert _find(pipeline, fn) == {}


def test_not_found_for_a_division_by_an_unknown_register(dyn_add):
    pipeline, fn, index, group = dyn_add
    lookup = group.steps[2][1][0]
    ops = _ops(fn, index)
    ops.insert(_pos(fn, index, lookup) + 1, _numeric("div.i64.s", lookup.pc + 1, 200, 202, 204))
    assert _find(pipeline, fn) == {}
    # by a register a constant op set before: movable
    const = _numeric("const.i64", lookup.pc + 1, 202)
    const.values["value"] = Imm("i64", 7)
    ops.insert(_pos(fn, index, lookup) + 1, const)
    assert _find(pipeline, fn) != {}
    const.values["value"] = Imm("i64", 2**64 - 1)  # -1: (INT_MIN / -1 fails)
    assert _find(pipeline, fn) == {}
    const.values["value"] = Imm("i64", 0)
    assert _find(pipeline, fn) == {}


def test_an_integer_op_right_before_the_execute_is_no_ending(dyn_add):
    """An op that is no call between the execute's fence.create and the execute: no
    ending (and no error)."""
    pipeline, fn, index, group = dyn_add
    ops = _ops(fn, index)
    ops.insert(_pos(fn, index, group.execute), _numeric("add.i32", group.execute.pc - 1, 200, 202, 204, wide=False))
    assert _find(pipeline, fn) == {}


def test_integer_ops_between_the_execute_and_its_await(dyn_add):
    """Integer ops after the execute, before the await, stay where they are (the call
    goes at the await); not where one writes an operand the call reads after it."""
    pipeline, fn, index, group = dyn_add
    ops = _ops(fn, index)
    at = _pos(fn, index, group.execute) + 1
    ops.insert(at, _numeric("add.i32", group.execute.pc + 1, 200, 202, 204, wide=False))
    (found,) = _find(pipeline, fn).values()
    assert [op.mnemonic for op in found.ending.between] == ["add.i32"]
    flags = group.execute["operands"][5].ordinal  # the execute's flags (an i64)
    ops[at] = _numeric("add.i64", group.execute.pc + 1, 200, 202, flags)
    assert _find(pipeline, fn) == {}


def test_not_found_when_the_device_register_is_written_between(dyn_add):
    pipeline, fn, index, group = dyn_add
    dev = group.execute["operands"][0].ordinal
    lookup = group.steps[2][1][0]
    null = Op(lookup.pc + 1, 0, BY_MNEMONIC["const.ref.zero"], {"result": Reg(REF_BIT | dev, "ref")})
    ops = _ops(fn, index)
    ops.insert(_pos(fn, index, lookup) + 1, null)
    assert _find(pipeline, fn) == {}


def test_not_found_when_the_function_comes_from_an_older_lookup(dyn_add):
    pipeline, fn, index, group = dyn_add
    lookup = group.steps[2][1][0]
    again = Op(lookup.pc + 1, lookup.length, lookup.spec, dict(lookup.values))
    again.values["results"] = (Reg(lookup["results"][0].raw + 40),)  # another register
    ops = _ops(fn, index)
    ops.insert(_pos(fn, index, lookup) + 1, again)
    assert _find(pipeline, fn) == {}


def test_generated_code_records_steps_and_calls_the_helper(vmfbs, tmp_path):
    pkg = write_package(read_module_file(vmfbs["dyn_add"]), tmp_path, "dyn_add")
    text = (pkg / "__init__.py").read_text()
    assert "recording = [(ALLOCA," in text and "recording.append((CREATE," in text
    assert "submit_one_shot(" in text and "ALLOCA_FENCE" in text
    assert "hal_command_buffer_dispatch(" not in text.split("def dyn_add", 1)[1]
    unfused = write_package(read_module_file(vmfbs["dyn_add"]), tmp_path / "u", "dyn_add", fuse_submissions=False)
    assert "recording" not in (unfused / "__init__.py").read_text()


# -- the helper: fast path == general path -----------------------------------------------


class _Parts:
    """A local device, its hal module, an executable of dyn_add and its export's name."""

    def __init__(self, packages, device="local-sync"):
        ctx = packages["dyn_add"][True].load(device=device)
        self.ctx = ctx
        self.hal = ctx.modules["hal"]
        self.device = next(ctx.refs[k] for k in range(len(ctx.refs)) if isinstance(ctx.refs[k], LocalDevice))
        self.exe = next(ctx.refs[k] for k in range(len(ctx.refs)) if isinstance(ctx.refs[k], HalExecutable))
        self.name = VMBuffer(self.exe.export_names()[0].encode(), readonly=True)

    def helper(self, builder=one_shot.one_shot):
        """A helper (`one_shot`, or `one_shot_signal`) built from this context's imports."""
        h = self.hal
        return builder(
            h.fence_create, h.device_queue_alloca, h.fence_join, h.command_buffer_create,
            h.executable_lookup_function, h.command_buffer_dispatch,
            h.command_buffer_execution_barrier, h.command_buffer_copy_buffer,
            h.command_buffer_fill_buffer, h.command_buffer_finalize, h.device_queue_execute,
            h.fence_await, h.device_queue_dealloca,
        )

    def input(self, values):
        data = np.asarray(values, np.float32)
        buf = fresh_buffer(data.nbytes, 0x30, 0xC03, self.device.allocator)
        buf.write(0, data.tobytes())
        return buf


def _steps(parts, n=6, *, pool=0, size=None, wait=None, modes=1, categories=3, capacity=0,
           exe=None, name=None, offset=0, length=None, a=None, constants=None, workgroups=None):
    nbytes = 4 * n
    size = nbytes if size is None else size
    length = nbytes if length is None else length
    a = parts.input(np.arange(n)) if a is None else a
    b = parts.input(np.full(n, 2.0))
    counts = workgroups or (1, 1, 1)
    consts = (n, 0, n, 0) if constants is None else constants
    return [
        (ALLOCA, 0, -1, wait, pool, 48, 3075, size, 0),
        (CREATE, modes, categories, -1, capacity),
        (LOOKUP, parts.exe if exe is None else exe, parts.name if name is None else name),
        (DISPATCH, parts.exe if exe is None else exe, LOOKED_UP, *counts, 0, consts,
         ((0, 0, a, offset, length), (0, 0, b, 0, nbytes), (0, 0, ALLOCATED, 0, nbytes))),
        (BARRIER, 28, 13, 0),
    ]


def _call(run, parts, steps, *, wait=ALLOCA_FENCE, timeout=-1):
    try:
        buffer, function, status = run(parts.device, steps, 0, -1, wait, 0, timeout, 0)
    except VMError as e:
        return ("error", e.code, e.message)
    return ("ok", None if buffer is None else buffer.read(), function, status)


def _both(packages, warm=True, **kw):
    """The fast helper (warmed by one good call, so its lookup is answered) and its
    general path, each on a fresh context: (outcome, bytes allocated) for each."""
    out = []
    for general in (False, True):
        parts = _Parts(packages)
        helper = parts.helper()
        assert helper is not helper.general
        if warm and not general:
            assert _call(helper, parts, _steps(parts))[0] == "ok"
        before = parts.device.allocator.bytes_allocated
        got = _call(helper.general if general else helper, parts, _steps(parts, **kw))
        out.append((got, parts.device.allocator.bytes_allocated - before))
    return out


def _count_allocations(monkeypatch) -> list:
    """The fast path's allocations (its compiled functions read `fresh_buffer` from the
    namespace they are compiled in; the general path allocates through the import)."""
    made = []
    real = one_shot.fresh_buffer
    monkeypatch.setitem(one_shot._NAMESPACE, "fresh_buffer", lambda *a: made.append(a) or real(*a))
    return made


def test_fast_path_result_and_accounting_equal_general(packages, monkeypatch):
    made = _count_allocations(monkeypatch)
    (fast, fast_bytes), (gen, gen_bytes) = _both(packages)
    assert len(made) == 1  # the fast path's own (the warm-up call's lookup went through the imports)
    assert fast == gen and fast_bytes == gen_bytes
    want = ((np.arange(6) + 2.0) * 2.0).astype(np.float32).tobytes()
    assert fast[0] == "ok" and fast[1] == want and fast[3] == 0


def test_first_call_goes_through_the_imports_then_the_fast_path(packages, monkeypatch):
    parts = _Parts(packages)
    helper = parts.helper()
    general = helper.general
    made = _count_allocations(monkeypatch)
    for _ in range(3):
        assert _call(helper, parts, _steps(parts))[3] == 0
    assert len(made) == 2  # the first call's lookup was not answered yet
    assert general is helper.general


@pytest.mark.parametrize(
    "kw, code",
    [
        ({"pool": 1}, StatusCode.UNIMPLEMENTED),
        ({"size": -1}, StatusCode.INVALID_ARGUMENT),
        ({"capacity": -1}, StatusCode.INVALID_ARGUMENT),
        ({"categories": 1}, StatusCode.FAILED_PRECONDITION),  # TRANSFER only: no dispatch
        ({"offset": 4}, StatusCode.OUT_OF_RANGE),  # the range past the argument's end
        ({"length": -1}, None),  # (the whole buffer: the imports resolve it)
        ({"size": 8}, StatusCode.OUT_OF_RANGE),  # the new buffer shorter than its binding
        ({"exe": Fence()}, StatusCode.INVALID_ARGUMENT),
        ({"name": VMBuffer(b"no_such_export", readonly=True)}, StatusCode.NOT_FOUND),
        ({"a": Fence()}, StatusCode.INVALID_ARGUMENT),
        ({"constants": (6, 0)}, StatusCode.INVALID_ARGUMENT),  # fails when it runs
        ({"workgroups": (0, 1, 1)}, None),  # an empty grid runs nothing
        ({"modes": 0}, None),  # a reusable command buffer: the imports run it
    ],
    ids=["pool", "negative-size", "negative-capacity", "no-dispatch-category", "offset",
         "whole-length", "short-buffer", "wrong-executable", "unknown-export", "wrong-ref",
         "constant-count", "empty-grid", "reusable"],
)
def test_fast_path_errors_equal_general(packages, kw, code):
    (fast, fast_bytes), (gen, gen_bytes) = _both(packages, **kw)
    assert fast == gen, (fast, gen)
    assert fast_bytes == gen_bytes
    if code is None:
        assert fast[0] == "ok" and fast[3] == 0
    else:
        assert fast[0] == "error" and fast[1] == code, fast


@pytest.mark.parametrize(
    "kw, code",
    [({}, None), ({"constants": (6, 0)}, StatusCode.INVALID_ARGUMENT), ({"size": -1}, None)],
    ids=["ok", "fails-when-it-runs", "negative-size"],
)
def test_kept_fence_fast_path_equals_general(packages, kw, code):
    """`keep`: the awaited fence comes back before the status (a loop's next submission
    waits on it), reached, or failed with the execution's error, as the imports leave it."""
    outs = []
    for general in (False, True):
        parts = _Parts(packages)
        helper = parts.helper()
        if not general:  # (warmed: the lookup answered, so the fast path runs)
            assert _call(helper, parts, _steps(parts))[0] == "ok"
        run = helper.general if general else helper
        try:
            buffer, function, fence, status = run(
                parts.device, _steps(parts, **kw), 0, -1, ALLOCA_FENCE, 0, -1, 0, None, True
            )
        except VMError as e:
            outs.append(("error", e.code))
            continue
        assert type(fence) is Fence
        outs.append(("ok", buffer.read(), function, fence.query(), status))
    assert outs[0] == outs[1], outs
    if kw.get("size") == -1:
        assert outs[0] == ("error", StatusCode.INVALID_ARGUMENT)
    elif code is None:
        assert outs[0][3] == 0 and outs[0][4] == 0
    else:  # (the await of the failed fence raises its error, fused or not)
        assert outs[0] == ("error", code)


def test_kept_and_carried_fences_found_in_a_loop(tmp_path):
    """A loop's head awaits a one-shot submission and the next iteration's allocas wait on
    the awaited fence: the group is found with the fence kept, and the register that held
    the command buffer (reused for that fence) is no obstacle. The body's submission
    signals a new fence the loop carries, unawaited (its workgroup count divides by a
    constant of the entry block: `block_constants`)."""
    from tests.test_readback_loops import HALVE

    vmfb = compile_mlir(HALVE, tmp_path, LLVM_CPU_FLAGS, "halve")
    pipeline = Pipeline.from_file(vmfb)
    fn = _function(pipeline, "halve")
    groups = list(_find(pipeline, fn).values())
    kept = [g for g in groups if g.ending.kept]
    assert len(kept) == 1 and kept[0].ending.awaited is not None
    carried = [g for g in groups if g.ending.carried]
    assert len(carried) == 1 and carried[0].ending.awaited is None
    assert one_shots.block_constants(fn)[1]


def _rewritten(fn, block, const, value, pc):
    """A copy of integer const op `const` writing `value`, appended to `block` before its
    terminator (`value` >= 0: its raw bits)."""
    from translator.ir import Imm

    values = dict(const.values)
    values["value"] = Imm(const["value"].type, value)
    ops = fn.blocks[block].ops
    ops.insert(len(ops) - 1, Op(pc, const.length, const.spec, values))


def test_a_divisor_written_again_elsewhere_is_still_known_where_it_holds(tmp_path):
    """HALVE's carried group divides by a constant set in the entry block. Written
    again in the exit block, which no path from there reaches the division through, it
    still holds the constant at the division (block_constants: per block, on every
    path); written again in the loop body after the group, it flows back round the
    loop to the division: unknown there, no group."""
    from tests.test_readback_loops import HALVE

    vmfb = compile_mlir(HALVE, tmp_path, LLVM_CPU_FLAGS, "halve")
    pipeline = Pipeline.from_file(vmfb)
    base = _function(pipeline, "halve")
    found = _find(pipeline, base)
    (body, group), = [(i, g) for i, g in found.items() if g.ending.carried]
    division = next(op for op in _ops(base, body) if op.spec.fails_on_divisor)
    divisor = division["right"]
    const = next(op for op in base.blocks[0].ops
                 if op.spec.integer_const and op.writes()[0].ordinal == divisor.ordinal)
    value = const["value"].value
    assert one_shots.block_constants(base)[body][divisor.ordinal] == (divisor.is_wide, value)
    exits = [b.index for b in base.blocks
             if b.index not in (0, body) and b.ops[-1].spec.mnemonic.startswith("return")]
    assert exits
    fn = _function(pipeline, "halve")
    _rewritten(fn, exits[0], const, value + 1, 0x7FFF0)
    assert body in _find(pipeline, fn)
    fn = _function(pipeline, "halve")
    _rewritten(fn, body, const, value + 1, 0x7FFF0)
    assert body not in _find(pipeline, fn)
    assert divisor.ordinal not in one_shots.block_constants(fn)[body]


def _transfer_steps(parts, *, categories=1, copy=(0, 0, 8), fill=(0, 8, 4), pattern=0x01020304,
                    size=24, source_length=None, target=None):
    """An ALLOCA, a copy of a 16-byte argument into the new buffer (or `target`) at
    (target offset, source offset, length) `copy`, and a fill of (offset, length, pattern
    length) into the new buffer (or `target`)."""
    a = parts.input(np.arange(4))
    to, so, n = copy
    fo, fn, pl = fill
    target = ALLOCATED if target is None else target
    return [
        (ALLOCA, 0, -1, None, 0, 48, 3075, size, 0),
        (CREATE, 1, categories, -1, 0),
        (COPY, 0, 0, a, so, target, to, n, 0),
        (FILL, target, fo + 16, fn, 0, pattern, pl, 0),
        (BARRIER, 28, 13, 0),
    ]


TRANSFER_CASES = pytest.mark.parametrize(
    "kw, code",
    [
        ({}, None),
        ({"categories": 2}, StatusCode.FAILED_PRECONDITION),  # DISPATCH only: no transfer
        ({"copy": (0, 12, 8)}, StatusCode.OUT_OF_RANGE),  # past the source's end
        ({"copy": (20, 0, 8)}, StatusCode.OUT_OF_RANGE),  # past the new buffer's end
        ({"fill": (0, 8, 3)}, StatusCode.INVALID_ARGUMENT),  # pattern length 3
        ({"fill": (2, 4, 4)}, StatusCode.INVALID_ARGUMENT),  # offset not a multiple
        ({"fill": (0, 6, 4)}, StatusCode.INVALID_ARGUMENT),  # length not a multiple
        ({"fill": (0, 8, 2), "pattern": -2}, None),  # (a negative pattern's low bytes)
        ({"copy": (0, 0, -1)}, None),  # the whole source (the imports resolve the length)
    ],
    ids=["ok", "no-transfer-category", "copy-source", "copy-target", "fill-pattern-length",
         "fill-offset", "fill-length", "fill-negative-pattern", "copy-whole"],
)


@TRANSFER_CASES
def test_copies_and_fills_fast_path_equals_general(packages, kw, code):
    outs = []
    for general in (False, True):
        parts = _Parts(packages)
        helper = parts.helper()
        run = helper.general if general else helper
        before = parts.device.allocator.bytes_allocated
        try:
            buffer, status = run(parts.device, _transfer_steps(parts, **kw), 0, -1, ALLOCA_FENCE, 0, -1, 0)
            got = ("ok", buffer.read(), status)
        except VMError as e:
            got = ("error", e.code, e.message)
        outs.append((got, parts.device.allocator.bytes_allocated - before))
    assert outs[0] == outs[1], outs
    if code is None:
        assert outs[0][0][0] == "ok"
    else:
        assert outs[0][0][:2] == ("error", code), outs[0]
    if not kw:
        data = outs[0][0][1]
        assert data[:8] == np.arange(4, dtype=np.float32).tobytes()[:8]
        assert data[16:] == bytes([4, 3, 2, 1]) * 2


def _transfer_outcomes(parts, run, n, **kw) -> list:
    """`n` calls of `run` on _transfer_steps(**kw): each call's outcome."""
    outs = []
    for _ in range(n):
        try:
            buffer, status = run(parts.device, _transfer_steps(parts, **kw), 0, -1, ALLOCA_FENCE,
                                 0, -1, 0)
            outs.append(("ok", buffer.read(), status))
        except VMError as e:
            outs.append(("error", e.code, e.message))
    return outs


@TRANSFER_CASES
def test_copies_and_fills_replayed_equal_general(packages, monkeypatch, kw, code):
    """The same transfers call after call: from the second, one replay plan (its copy a
    memmove, its fill the pattern's low bytes), each outcome the general path's."""
    runs = replay_runs(monkeypatch)
    parts = _Parts(packages)
    fast = _transfer_outcomes(parts, parts.helper(), 4, **kw)
    assert fast == _transfer_outcomes(_Parts(packages), parts.helper().general, 4, **kw)
    if native.native_runtime() is None:
        return
    if code is None and "copy" not in kw:  # (a whole-source copy takes the imports)
        assert [ran for _, ran in runs] == [True] * 3
    else:
        assert runs == []


def test_a_module_of_copies_only_replays_them(packages, monkeypatch):
    """dyn_concat imports no dispatch (its one-shot command buffers hold two copies):
    the fast path still applies, and from a size's second call its copies replay."""
    runs = replay_runs(monkeypatch)
    f = packages["dyn_concat"][True].load(device="local-sync").dyn_concat
    a, b = np.arange(5, dtype=np.float32), np.arange(3, dtype=np.float32) + 10
    for _ in range(3):
        assert f(a, b).tobytes() == np.concatenate([a, b]).tobytes()
    if native.native_runtime() is not None:
        assert [ran for _, ran in runs] == [True, True]
        assert runs[0][0].names == ["", ""]  # (two transfers, no export name)


@pytest.mark.parametrize("which", ["copy", "fill"])
def test_a_read_only_transfer_target_is_never_replayed(packages, monkeypatch, which):
    """A copy or fill into a read-only buffer fails as the general path fails, call after
    call (the direct runs raise), where the same shape into a writable one replays."""
    from runtime_support.hal.buffer import HalBuffer

    runs = replay_runs(monkeypatch)
    parts = _Parts(packages)
    helper = parts.helper()
    writable = fresh_buffer(24, 0x30, 0xC03, parts.device.allocator)
    read_only = HalBuffer.wrap_host(bytes(24), readonly=True)
    # (the other transfer into the new buffer, which the step list allows: not read-only)
    kw = {"copy": (0, 0, 8)} if which == "copy" else {"fill": (-16, 8, 4)}
    for target in (writable, writable, writable):
        steps = _transfer_steps(parts, target=target, **kw)
        if which == "fill":  # (the copy into the new buffer, the fill into the target)
            steps[2] = (COPY, 0, 0, parts.input(np.arange(4)), 0, ALLOCATED, 0, 8, 0)
        else:
            steps[3] = (FILL, ALLOCATED, 16, 8, 0, 0x01020304, 4, 0)
        assert helper(parts.device, steps, 0, -1, ALLOCA_FENCE, 0, -1, 0)[1] == 0
    assert native.native_runtime() is None or runs[-1][1] is True
    count = len(runs)
    outs = []
    for run in (helper, helper.general):
        steps = _transfer_steps(parts, target=read_only, **kw)
        if which == "fill":
            steps[2] = (COPY, 0, 0, parts.input(np.arange(4)), 0, ALLOCATED, 0, 8, 0)
        else:
            steps[3] = (FILL, ALLOCATED, 16, 8, 0, 0x01020304, 4, 0)
        try:
            run(parts.device, steps, 0, -1, ALLOCA_FENCE, 0, -1, 0)
            outs.append("ok")
        except VMError as e:
            outs.append((e.code, e.message))
    assert outs[0] == outs[1] and outs[0][0] == StatusCode.PERMISSION_DENIED, outs
    assert len(runs) == count  # (the plan was not run)


def _two_allocas(parts, *, second_size=24, tail_buffer=None):
    """Two ALLOCAs joined, a dispatch writing the second's buffer from an argument and
    the first's, and the dealloca tail releasing `tail_buffer` (default: the second)."""
    a = parts.input(np.arange(6))
    steps = [
        (ALLOCA, 0, -1, None, 0, 48, 3075, 24, 0),
        (ALLOCA, 0, -1, None, 0, 48, 3075, second_size, 0),
        (JOIN, 0),
        (CREATE, 1, 3, -1, 0),
        (LOOKUP, parts.exe, parts.name),
        (DISPATCH, parts.exe, LOOKED_UP, 1, 1, 1, 0, (6, 0, 6, 0),
         ((0, 0, a, 0, 24), (0, 0, ALLOCATED, 0, 24), (0, 0, ALLOCATED_1, 0, 24))),
        (BARRIER, 28, 13, 0),
    ]
    return steps, (0, -1, ALLOCATED_1 if tail_buffer is None else tail_buffer, 0)


@pytest.mark.parametrize("case", ["ok", "short-second", "failing", "outside-tail-buffer", "null-tail-buffer"])
def test_joined_allocas_and_dealloca_tail_equal_general(packages, case):
    outs = []
    for general in (False, True):
        parts = _Parts(packages)
        helper = _signal_helper(parts)
        steps, tail = _two_allocas(parts)
        helper(parts.device, steps, -1, ALLOCA_FENCE, Fence(), 0, tail)  # (warm)
        if case == "failing":
            parts.exe.close()
        kw = {"second_size": 8} if case == "short-second" else {}
        if case == "outside-tail-buffer":
            kw["tail_buffer"] = parts.input(np.arange(2))
        if case == "null-tail-buffer":
            kw["tail_buffer"] = None
        steps, tail = _two_allocas(parts, **kw)
        if case == "null-tail-buffer":
            tail = (0, -1, None, 0)
        signal = Fence()
        run = helper.general if general else helper
        before = parts.device.allocator.bytes_allocated
        try:
            first, second, function = run(parts.device, steps, -1, ALLOCA_FENCE, signal, 0, tail)
            got = ["ok", first.read(), second.read(), function]
        except VMError as e:
            got = ["error", e.code, e.message]
        got.append(signal.query())
        got.append(parts.device.allocator.bytes_allocated - before)
        outs.append(got)
    assert outs[0] == outs[1], outs
    if case in ("ok", "outside-tail-buffer"):
        # (dyn_add's kernel: (a + b) * b with b the first new buffer, zeros)
        assert outs[0][0] == "ok" and outs[0][1] == bytes(24)
        assert outs[0][-2] == 0  # the signal fence reached
    elif case == "failing":
        assert outs[0][0] == "ok" and outs[0][-2] == StatusCode.FAILED_PRECONDITION  # (the fence's)
    else:
        assert outs[0][0] == "error"


@pytest.mark.parametrize("case", ["ok", "failing", "outside-tail-buffer"])
def test_awaited_dealloca_tail_equals_general(packages, case):
    """The await form with a queue.dealloca between the execute and the await (a sync
    function releasing its transient): the status and buffers as through the imports."""
    outs = []
    for general in (False, True):
        parts = _Parts(packages)
        helper = parts.helper()
        steps, tail = _two_allocas(parts)
        helper(parts.device, steps, 0, -1, ALLOCA_FENCE, 0, -1, 0, tail)  # (warm)
        if case == "failing":
            parts.exe.close()
        kw = {"tail_buffer": parts.input(np.arange(2))} if case == "outside-tail-buffer" else {}
        steps, tail = _two_allocas(parts, **kw)
        run = helper.general if general else helper
        before = parts.device.allocator.bytes_allocated
        try:
            first, second, function, status = run(parts.device, steps, 0, -1, ALLOCA_FENCE, 0, -1, 0, tail)
            got = ["ok", first.read(), second.read(), function, status]
        except VMError as e:
            got = ["error", e.code, e.message]
        outs.append((got, parts.device.allocator.bytes_allocated - before))
    assert outs[0] == outs[1], outs
    if case == "failing":
        assert outs[0][0][:2] == ["error", StatusCode.FAILED_PRECONDITION]
    else:
        assert outs[0][0][0] == "ok" and outs[0][0][-1] == 0


def test_command_buffer_without_dispatches(packages):
    outs = []
    for general in (False, True):
        parts = _Parts(packages)
        helper = parts.helper()
        run = helper.general if general else helper
        steps = [(ALLOCA, 0, -1, None, 0, 48, 3075, 8, 0), (CREATE, 1, 3, -1, 0), (BARRIER, 28, 13, 0)]
        before = parts.device.allocator.bytes_allocated
        buffer, status = run(parts.device, steps, 0, -1, ALLOCA_FENCE, 0, -1, 0)
        outs.append((buffer.read(), status, parts.device.allocator.bytes_allocated - before))
    assert outs[0] == outs[1] == (bytes(8), 0, 8)
    assert one_shot.compile_fast(steps) is not None


@pytest.mark.parametrize("form", ["await", "signal"])
def test_one_value_comes_back_as_a_tuple(packages, form):
    """Without allocas and lookups the helper returns one value (the await's status, or
    the new fence it signals): a tuple of one on every path, as the generated code
    unpacks it (`(i0,) = submit_one_shot(...)`)."""
    steps = [(CREATE, 1, 3, -1, 0), (BARRIER, 28, 13, 0)]
    outs = []
    for general in (False, True):
        parts = _Parts(packages)
        helper = parts.helper(one_shot.one_shot if form == "await" else one_shot.one_shot_signal)
        run = helper.general if general else helper
        for _ in range(2):  # (the first call compiles the fast path)
            if form == "await":
                got = run(parts.device, steps, 0, -1, None, 0, -1, 0)
                assert got == (0,)
            else:
                got = run(parts.device, steps, -1, None, NEW_FENCE, 0, None, 0)
                assert type(got) is tuple and len(got) == 1 and type(got[0]) is Fence
                assert got[0].query() == 0
        outs.append(got if form == "await" else (got[0].query(),))
    assert outs[0] == outs[1]
    assert one_shot.compile_fast(steps, signal_form=form == "signal", new_fence=form == "signal")


def _signal_helper(parts):
    return parts.helper(one_shot.one_shot_signal)


@pytest.mark.parametrize("case", ["ok", "failing", "failing-null-signal", "busy"])
def test_signal_form_fast_path_equals_general(packages, monkeypatch, case):
    """The signal form leaves the caller's fence as the queue leaves it: reached, or
    failed with the execution's error (raised where the signal fence is null)."""
    outs = []
    for general in (False, True):
        parts = _Parts(packages)
        helper = _signal_helper(parts)
        assert helper is not helper.general
        signal = None if case == "failing-null-signal" else Fence()
        helper(parts.device, _steps(parts), -1, ALLOCA_FENCE, Fence(), 0)  # (warm)
        if case.startswith("failing"):
            parts.exe.close()
        run = helper.general if general else helper
        queue = parts.device.queue
        if case == "busy":
            queue._draining = True  # another thread runs the queue: the work queues behind
        try:
            buffer, function = run(parts.device, _steps(parts), -1, ALLOCA_FENCE, signal, 0)
            got = ["ok", function]
        except VMError as e:
            buffer, got = None, ["error", e.code, e.message]
        if case == "busy":
            got.append(signal.query())  # (not reached yet)
            queue.release()  # the other thread gives the role back
        if signal is not None:
            got.append(signal.query())
            try:
                signal.wait(0)
            except VMError as e:
                got.append((e.code, e.message))
        got.append(None if buffer is None else buffer.read())
        outs.append(got)
    assert outs[0] == outs[1], outs
    want = ((np.arange(6) + 2.0) * 2.0).astype(np.float32).tobytes()
    if case in ("ok", "busy"):
        assert outs[0][0] == "ok" and outs[0][-1] == want
    else:
        assert StatusCode.FAILED_PRECONDITION in (outs[0][1], *(x[0] for x in outs[0] if isinstance(x, tuple)))


@pytest.mark.parametrize("case", ["ok", "failing", "busy"])
def test_new_signal_fence_fast_path_equals_general(packages, case):
    """NEW_FENCE: the call makes the fence the execute signals (a loop carries it to its
    next iteration, nothing in the block awaits it) and returns it, reached or failed with
    the execution's error, as the queue leaves the fence the unfused code creates."""
    outs = []
    for general in (False, True):
        parts = _Parts(packages)
        helper = _signal_helper(parts)
        helper(parts.device, _steps(parts), -1, ALLOCA_FENCE, NEW_FENCE, 0, None, 0)  # (warm)
        if case == "failing":
            parts.exe.close()
        run = helper.general if general else helper
        queue = parts.device.queue
        if case == "busy":
            queue._draining = True  # another thread runs the queue: the work queues behind
        buffer, function, fence = run(parts.device, _steps(parts), -1, ALLOCA_FENCE, NEW_FENCE, 0,
                                      None, 0)
        got = [type(fence).__name__, function]
        if case == "busy":
            got.append(fence.query())  # (not reached yet)
            queue.release()
        got.append(fence.query())
        got.append(buffer.read() if fence.query() == 0 else None)
        outs.append(got)
    assert outs[0] == outs[1], outs
    want = ((np.arange(6) + 2.0) * 2.0).astype(np.float32).tobytes()
    if case == "failing":
        assert outs[0][-2] == StatusCode.FAILED_PRECONDITION
    else:
        assert outs[0][0] == "Fence" and outs[0][-2] == 0 and outs[0][-1] == want


def test_unreached_wait_takes_the_general_path(packages):
    results = []
    for general in (False, True):
        parts = _Parts(packages)
        helper = parts.helper()
        _call(helper, parts, _steps(parts))  # (warm)
        wait = Fence()
        run = helper.general if general else helper
        buffer, _, status = run(parts.device, _steps(parts, wait=wait), 0, -1, ALLOCA_FENCE, 0, 0, 0)
        early = buffer.read()
        wait.signal()  # the queued work runs now
        results.append((status, early, buffer.read()))
    assert results[0] == results[1]
    assert results[0][0] == StatusCode.DEADLINE_EXCEEDED


def test_busy_queue_resumes_through_the_imports(packages, monkeypatch):
    """Another thread takes the queue between the fast path's check and its taking the
    draining role: the helper finishes through the imports from the command buffer's
    create on, with the buffer and lookup it made; the execution waits behind that
    thread's work, and runs when it gives the role back."""
    parts = _Parts(packages)
    helper = parts.helper()
    made = _count_allocations(monkeypatch)
    _call(helper, parts, _steps(parts))  # (warm: the lookup answered, through the imports)
    queue = parts.device.queue
    real = queue._lock

    class TakenMeanwhile:
        def acquire(self):
            queue._lock = real
            real.acquire()
            queue._draining = True  # (as if another thread had taken it just before)

        def release(self):
            real.release()

    queue._lock = TakenMeanwhile()
    buffer, function, status = helper(parts.device, _steps(parts), 0, -1, ALLOCA_FENCE, 0, 0, 0)
    assert status == StatusCode.DEADLINE_EXCEEDED and len(made) == 1  # the fast path's buffer
    assert buffer.read() == bytes(24)  # (queued behind the other thread's work)
    queue.release()  # the other thread gives the role back: the queue runs it
    assert buffer.read() == ((np.arange(6) + 2.0) * 2.0).astype(np.float32).tobytes()
    assert function == parts.exe.lookup(parts.exe.export_names()[0])


def test_kernel_failure_fails_the_await_as_unfused(packages):
    outs = []
    for general in (False, True):
        parts = _Parts(packages)
        helper = parts.helper()
        _call(helper, parts, _steps(parts))  # (warm)
        parts.exe.close()  # (every dispatch of it now fails when it runs)
        outs.append(_call(helper.general if general else helper, parts, _steps(parts)))
    assert outs[0] == outs[1] and outs[0][0] == "error"


# -- replay plans: a recording that comes again runs as one native plan --------------------


@pytest.mark.parametrize("device", ["local-sync", "local"])
def test_a_recording_that_comes_again_replays_its_plan(packages, monkeypatch, device):
    """The first call of a shape runs its dispatches directly, the second builds the plan
    (keyed by counts, constants and binding lengths, not by buffers or offsets) and every
    later one runs it: results equal the general path's on fresh inputs each call."""
    runs = replay_runs(monkeypatch)
    parts = _Parts(packages, device)
    helper = parts.helper()
    _call(helper, parts, _steps(parts))  # (warm: the lookup answered)
    for i in range(4):
        a = parts.input(np.arange(6) * (i + 1.0))
        got = _call(helper, parts, _steps(parts, a=a))
        want = _call(helper.general, parts, _steps(parts, a=a))
        assert got == want and got[0] == "ok"
    # (the warm call took the imports, its lookup not answered yet; the loop's first call
    # saw the key first; each call after it replays the one plan)
    assert [ran for _, ran in runs] == [True] * 3 and len({id(p) for p, _ in runs}) == 1
    # an offset into the argument changes the binding's address only: the same plan
    longer = parts.input(np.arange(8.0))
    got = _call(helper, parts, _steps(parts, a=longer, offset=8))
    assert got == _call(helper.general, parts, _steps(parts, a=longer, offset=8))
    assert len(runs) == 4 and runs[-1][0] is runs[0][0]


def test_a_shape_new_every_call_builds_no_plan(packages, monkeypatch):
    """A key seen once (a length that grows every call) costs no plan: the direct runs."""
    runs = replay_runs(monkeypatch)
    built = []
    build = one_shot._Replays._build
    monkeypatch.setattr(one_shot._Replays, "_build",
                        lambda self, key, workers: built.append(key) or build(self, key, workers))
    parts = _Parts(packages)
    helper = parts.helper()
    for n in range(1, 9):
        assert _call(helper, parts, _steps(parts, n=n))[0] == "ok"
    assert runs == [] and built == []


@pytest.mark.parametrize(
    "kw, code",
    [
        ({"workgroups": (1, 1, 0x10000)}, StatusCode.OUT_OF_RANGE),  # no plan holds it
        ({"constants": (6, 0)}, StatusCode.INVALID_ARGUMENT),  # nor a wrong constant count
        ({"workgroups": (0, 1, 1)}, None),  # an empty grid: a plan that runs nothing
    ],
    ids=["count-past-limits", "constant-count", "empty-grid"],
)
def test_replayed_keys_fail_as_the_direct_runs_fail(packages, kw, code):
    """A key no plan can hold takes the direct runs every time it comes, which raise
    what the general path raises; where a plan holds it, its outcome is the same."""
    outs = []
    for general in (False, True):
        parts = _Parts(packages)
        helper = parts.helper()
        run = helper.general if general else helper
        outs.append([_call(run, parts, _steps(parts, **kw)) for _ in range(4)])
    assert outs[0] == outs[1], outs
    for got in outs[0]:
        assert (got[0], got[1]) == ("error", code) if code else got[0] == "ok"


def test_a_closed_executable_is_never_replayed(packages, monkeypatch):
    runs = replay_runs(monkeypatch)
    outs = []
    for general in (False, True):
        parts = _Parts(packages)
        helper = parts.helper()
        for _ in range(3):
            assert _call(helper, parts, _steps(parts))[0] == "ok"
        assert runs[-1][1] is True  # (the plan built and run)
        parts.exe.close()
        outs.append(_call(helper.general if general else helper, parts, _steps(parts)))
        if not general:
            assert runs[-1][1] is False  # the plan declined: the direct run raised
    assert outs[0] == outs[1] and outs[0][0] == "error"


def test_foreign_imports_get_the_general_path_only(packages):
    parts = _Parts(packages)
    h = parts.hal
    calls = []

    def spy(f):
        return lambda *a: calls.append(f.__name__) or f(*a)

    helper = one_shot.one_shot(
        spy(h.fence_create), h.device_queue_alloca, h.fence_join, h.command_buffer_create,
        h.executable_lookup_function, h.command_buffer_dispatch,
        h.command_buffer_execution_barrier, h.command_buffer_copy_buffer,
        h.command_buffer_fill_buffer, h.command_buffer_finalize, h.device_queue_execute,
        h.fence_await,
    )
    assert not hasattr(helper, "general")
    assert _call(helper, parts, _steps(parts))[3] == 0
    assert calls == ["fence_create", "fence_create"]


def test_statistics_count_each_dispatch(packages):
    ctx = packages["dyn_2d"][True].load(device="local-sync")
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    statistics.reset()
    statistics.enable()
    try:
        for _ in range(3):
            ctx.dyn_transpose_rowsum(a)
        counts = {name: c for name, (c, _) in statistics.snapshot().items()}
    finally:
        statistics.enable(False)
        statistics.reset()
    assert sum(counts.values()) == 6  # 2 dispatches x 3 calls


def test_threads_sharing_a_context(packages):
    ctx = packages["dyn_add"][True].load(device="local")
    rng = np.random.default_rng(3)
    inputs = [(rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32))
              for n in (1, 7, 64, 1000, 4096)]
    want = [((a + b) * b).tobytes() for a, b in inputs]
    errors = []

    def work():
        try:
            for _ in range(50):
                for (a, b), w in zip(inputs, want):
                    assert ctx.dyn_add(a, b).tobytes() == w
        except Exception as e:  # (reported below)
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


# -- differential: fused == unfused == iree.runtime ----------------------------------------


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


@pytest.mark.parametrize("name", ASYNC)
@pytest.mark.parametrize("device, driver", [("local-sync", "local-sync"), ("local", "local-task")])
def test_async_export_matches_iree(vmfbs, packages, name, device, driver):
    """An async-external build (the signal form) equals its unfused package and
    iree.runtime on the synchronous build."""
    rt = pytest.importorskip("iree.runtime")
    ctx = rt.SystemContext(config=rt.Config(driver))
    ctx.add_vm_module(rt.VmModule.copy_buffer(ctx.instance, vmfbs[name].read_bytes()))
    iree_fn = getattr(ctx.modules.module, EXPORT[name])
    ours = {fuse: getattr(packages[f"{name}_async"][fuse].load(device=device), EXPORT[name])
            for fuse in (True, False)}
    rng = np.random.default_rng(5)
    for n in (1, 3, 1000, 5000, 3, 0):
        args = _inputs(name, rng, n)
        want = np.asarray(iree_fn(*args).to_host()).tobytes()
        for fuse in (True, False):
            assert np.asarray(ours[fuse](*args)).tobytes() == want, (n, fuse)


@pytest.mark.parametrize("name", sorted(SOURCES))
@pytest.mark.parametrize("device, driver", [("local-sync", "local-sync"), ("local", "local-task")])
def test_packages_match_iree(vmfbs, packages, name, device, driver):
    rt = pytest.importorskip("iree.runtime")
    ctx = rt.SystemContext(config=rt.Config(driver))
    ctx.add_vm_module(rt.VmModule.copy_buffer(ctx.instance, vmfbs[name].read_bytes()))
    iree_fn = getattr(ctx.modules.module, EXPORT[name])
    ours = {fuse: getattr(packages[name][fuse].load(device=device), EXPORT[name]) for fuse in (True, False)}
    rng = np.random.default_rng(11)
    last = 0 if name in ("dyn_add", "fill_and_add", "dyn_mlp", "dyn_residual") else 2
    # (sizes coming again: from a size's second call its commands replay one plan)
    for n in (1, 3, 16, 3, 1000, 16, 5000, 1000, 5000, 3, last, 1, last):
        args = _inputs(name, rng, n)
        want = iree_fn(*args)
        want = [want] if not isinstance(want, (tuple, list)) else want
        want = [np.asarray(w.to_host()).tobytes() for w in want]
        for fuse in (True, False):
            got = ours[fuse](*args)
            got = [got] if not isinstance(got, tuple) else got
            assert [np.asarray(g).tobytes() for g in got] == want, (name, n, fuse)


# -- iree-turbine: a dynamic batch dim (main$async: the signal form; argument checks whose
# shape register the byte length reuses) ----------------------------------------------------


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


# What each export's generated main$async must show: the signal form, the shape snapshot,
# and for the CNN the joined allocas and the released arena.
_TURBINE = {
    "linear_relu": ((16,), ("submit_one_shot_signal(", "shape = (")),
    "small_cnn": ((3, 16, 16), ("submit_one_shot_signal(", "(JOIN,", "ALLOCATED_1", "queue.dealloca after it")),
}


# Noise from torch.export / iree-turbine internals, not from pyree (as in test_models.py).
@pytest.mark.filterwarnings("ignore:.*LeafSpec:FutureWarning")
@pytest.mark.filterwarnings("ignore:__array__ implementation:DeprecationWarning")
@pytest.mark.parametrize("name", sorted(_TURBINE))
@pytest.mark.parametrize("device, driver", [("local-sync", "local-sync"), ("local", "local-task")])
def test_turbine_dynamic_batch_matches_iree(turbine_vmfbs, tmp_path, name, device, driver):
    rt = pytest.importorskip("iree.runtime")
    vmfb = turbine_vmfbs[name]
    shape, shown = _TURBINE[name]
    pkg = write_package(read_module_file(vmfb), tmp_path, name)
    text = (pkg / "__init__.py").read_text()
    for s in shown:
        assert s in text, s
    unfused = write_package(read_module_file(vmfb), tmp_path / "u", name, fuse_submissions=False)
    ctx = rt.SystemContext(config=rt.Config(driver))
    ctx.add_vm_module(rt.VmModule.copy_buffer(ctx.instance, vmfb.read_bytes()))
    ours = [import_package_as(f"_turbine_{name}_{device}_{k}", p).load(device=device) for k, p in enumerate((pkg, unfused))]
    rng = np.random.default_rng(9)
    for batch in (1, 4, 33, 4, 0):
        x = rng.standard_normal((batch, *shape)).astype(np.float32)
        want = np.asarray(ctx.modules.module.main(x).to_host()).tobytes()
        for c in ours:
            assert np.asarray(c.main(x)).tobytes() == want, batch

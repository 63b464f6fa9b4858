"""Queue regions (translator/analyses/queue_regions.py, docs/design/host-path.md §4).

- coverage: every step op lies inside exactly one region, in every corpus and bench
  program (regions never overlap);
- shapes: small programs (checks between submissions, readbacks, dynamic dispatches),
  each as few regions as the design says;
- privacy: a fence or command buffer that escapes is an output, never interior.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.programs import PROGRAMS
from conftest import REPO_ROOT, corpus_cases
from translator.analyses import queue_regions
from translator.analyses.liveness import RefLiveness
from translator.pipeline import Pipeline
from runtime_support.exec import steps

LLVM_CPU = (
    "--iree-hal-target-device=local",
    "--iree-hal-local-target-device-backends=llvm-cpu",
    "--iree-llvmcpu-target-cpu=generic",
)
BENCH = sorted((REPO_ROOT / "bench" / "programs").glob("*.mlir"))
CORPUS = corpus_cases(variants=["embedded-elf"])


def regions_of(pipeline: Pipeline):
    """(k, fn, live, regions) per function, the analyses invoked as codegen does."""
    for k, fn in enumerate(pipeline.functions):
        live = RefLiveness(fn, pipeline.cfg(k))
        yield k, fn, live, queue_regions.find(pipeline.module, fn, live, pipeline.cfg(k))


def check_coverage(path) -> int:
    """Every step op in exactly one region; returns how many regions there are."""
    p = Pipeline.from_file(path)
    count = 0
    for _k, fn, live, regions in regions_of(p):
        for pc in step_pcs(p, fn):
            inside = [r for r in regions if pc in r.pcs]
            assert len(inside) == 1, f"{fn.name}: the step at pc {pc} is in {len(inside)} regions"
        pcs = [r.pcs for r in regions]
        for a in range(len(pcs)):  # regions never overlap
            for b in range(a + 1, len(pcs)):
                assert not pcs[a] & pcs[b], (fn.name, a, b)
        count += len(regions)
    return count


@pytest.mark.parametrize("case", CORPUS, ids=lambda c: c.id)
def test_corpus_steps_lie_in_one_region(case, compile_mlir):
    check_coverage(compile_mlir(case.source, case.flags))


@pytest.mark.parametrize("src", BENCH, ids=lambda p: p.stem)
def test_bench_steps_lie_in_one_region(src, compile_mlir):
    assert check_coverage(compile_mlir(src, LLVM_CPU)) > 0  # (every bench program has some)


# --------------------------------------------------------------------------- shapes



def main_regions(compile_mlir, tmp_path, name, source, fn_name="main", flags=LLVM_CPU):
    src = tmp_path / f"{name}.mlir"
    src.write_text(source)
    p = Pipeline.from_file(compile_mlir(src, flags))
    for _k, fn, live, regions in regions_of(p):
        if fn.name == fn_name:
            for r in regions:
                print(r.describe())
            return p, fn, live, regions
    raise AssertionError(f"no function {fn_name}")


def step_pcs(p, fn) -> set[int]:
    return {op.pc for op in fn.ops() if queue_regions._step(p.module, op) is not None}


def made(region, v) -> str:
    return region.made_by[v][1]


def ref_outputs(region) -> list[str]:
    return sorted(made(region, v) for r, v in region.outputs if r.is_ref)


# (a) a cf.assert on a host scalar: IREE 3.13 hoists it after the argument checks and
# before the submission; the region goes through it (a fail exit), holding the argument
# checks and the command buffer recorded per call.
ASSERT_BETWEEN = """
func.func @main(%a: tensor<?xf32>, %b: tensor<?xf32>, %k: i32) -> tensor<?xf32> {
  %x = arith.addf %a, %a : tensor<?xf32>
  %c100 = arith.constant 100 : i32
  %ok = arith.cmpi slt, %k, %c100 : i32
  cf.assert %ok, "k out of range"
  %y = arith.mulf %x, %b : tensor<?xf32>
  return %y : tensor<?xf32>
}
"""


def test_assert_between_checks_and_submission(compile_mlir, tmp_path):
    p, fn, live, regions = main_regions(compile_mlir, tmp_path, "assert_between", ASSERT_BETWEEN)
    big = max(regions, key=lambda r: len(r.steps))
    assert [f.message for f in big.fail_exits] == ["k out of range", "failed to wait on timepoint"]
    kinds = {s.kind for s in big.steps}
    assert {steps.CheckArgument, steps.Dispatch} <= kinds  # the checks and the recording, one region
    # in: the second view and k (the check's compare is a movable op reading it)
    assert {(r.is_ref, r.ordinal) for r in big.inputs} >= {(True, 1), (False, 0)}
    assert ref_outputs(big) == ["Alloca"]  # the result buffer only
    kinds = {made(big, v) for v in big.interior}
    assert {"NewFence", "Record", "Join"} <= kinds or {"NewFence", "Record"} <= kinds
    # every queue op of main is in a region, one region: the second argument's
    # buffer_view.dim between the checks is a step too (ViewDim)
    assert step_pcs(p, fn) <= set().union(*(r.pcs for r in regions))
    assert len(regions) == 1


# (c) a readback the host branches on: the region ends in the Read, whose value is its
# one integer output; the loop body is a region of its own whose buffer and fence the
# back edge carries into the next iteration.
READBACK_WHILE = """
func.func @main(%x0: tensor<8xf32>) -> tensor<8xf32> {
  %limit = arith.constant 100.0 : f32
  %c0 = arith.constant 0 : index
  %r = scf.while (%x = %x0) : (tensor<8xf32>) -> tensor<8xf32> {
    %s = tensor.extract %x[%c0] : tensor<8xf32>
    %more = arith.cmpf olt, %s, %limit : f32
    scf.condition(%more) %x : tensor<8xf32>
  } do {
  ^bb0(%x: tensor<8xf32>):
    %d = arith.addf %x, %x : tensor<8xf32>
    scf.yield %d : tensor<8xf32>
  }
  return %r : tensor<8xf32>
}
"""


def test_readback_ends_region(compile_mlir, tmp_path):
    p, fn, live, regions = main_regions(compile_mlir, tmp_path, "readback_while", READBACK_WHILE)
    (reading,) = [r for r in regions if any(s.kind is steps.Read for s in r.steps)]
    assert reading.steps[-1].kind is steps.Read and reading.ops[-1] is reading.steps[-1].op
    ints = [(r, v) for r, v in reading.outputs if not r.is_ref]
    assert [made(reading, v) for _, v in ints] == ["Read"]
    assert [f.message for f in reading.fail_exits] == ["failed to wait on timepoint"]
    # the next op (the host's float compare of the value) is in no region
    block = fn.blocks[reading.blocks[-1]]
    after = block.ops[block.ops.index(reading.ops[-1]) + 1]
    assert all(after.pc not in r.pcs for r in regions)
    assert ints[0][0] in after.reads() or any(x.ordinal == ints[0][0].ordinal for x in after.reads())
    (body,) = [r for r in regions if r.carried]
    carried = {made(body, v) for r, v in body.outputs if any(r == a for a, _ in body.carried)}
    assert carried == {"Alloca", "NewFence"}  # the new x and the fence its producer signals
    assert len(body.transients) == 1 and made(body, body.transients[0]) == "Alloca"
    assert step_pcs(p, fn) <= set().union(*(r.pcs for r in regions))


# (d) dynamic length, several dispatches: one region from the first argument's check to
# the await; the workgroup counts' ceil-division (by the tile size, a constant the
# dataflow proves) is a movable op of it.
DYNAMIC = """
func.func @main(%a: tensor<?x16xf32>, %b: tensor<16x16xf32>) -> tensor<?x16xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %a, %c0 : tensor<?x16xf32>
  %e = tensor.empty(%n) : tensor<?x16xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<?x16xf32>) -> tensor<?x16xf32>
  %m = linalg.matmul ins(%a, %b : tensor<?x16xf32>, tensor<16x16xf32>) outs(%f : tensor<?x16xf32>) -> tensor<?x16xf32>
  %t = math.tanh %m : tensor<?x16xf32>
  %m2 = linalg.matmul ins(%t, %b : tensor<?x16xf32>, tensor<16x16xf32>) outs(%f : tensor<?x16xf32>) -> tensor<?x16xf32>
  %r = arith.addf %m2, %a : tensor<?x16xf32>
  return %r : tensor<?x16xf32>
}
"""


def test_dynamic_dispatches_one_region(compile_mlir, tmp_path):
    p, fn, live, regions = main_regions(compile_mlir, tmp_path, "dynamic16", DYNAMIC)
    (region,) = regions
    assert step_pcs(p, fn) <= region.pcs
    kinds = [s.kind for s in region.steps]
    assert kinds.count(steps.Dispatch) >= 2 and kinds.count(steps.CheckArgument) == 4
    divs = [op for op in region.movable if op.spec.fails_on_divisor]
    assert divs  # a division IREE emits for the counts, kept as a movable op
    assert ref_outputs(region) == ["Alloca"]
    assert {(True, 0), (True, 1)} <= {(r.is_ref, r.ordinal) for r in region.inputs}  # the views
    assert len(region.transients) == 1


# --------------------------------------------------------------------------- privacy


CALLS_INNER = """
func.func private @inner(%a: tensor<4xf32>) -> tensor<4xf32> attributes {noinline} {
  %x = arith.mulf %a, %a : tensor<4xf32>
  return %x : tensor<4xf32>
}
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %x = arith.addf %a, %a : tensor<4xf32>
  %y = call @inner(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %z = arith.addf %y, %a : tensor<4xf32>
  return %z : tensor<4xf32>
}
"""


def test_fence_passed_to_a_call_is_an_output(compile_mlir, tmp_path):
    p, fn, live, regions = main_regions(compile_mlir, tmp_path, "calls_inner", CALLS_INNER)
    (call,) = [op for op in fn.ops() if op.spec.emit == "call" and queue_regions._step(p.module, op) is None
               and op.mnemonic == "call" and not op["callee_ordinal"] & 0x80000000]
    before = [r for r in regions if max(r.pcs) < call.pc]
    assert before and all(call.pc not in r.pcs for r in regions)
    region = before[-1]
    passed = {r.ordinal for r in call["operands"] if r.is_ref}
    outs = {r.ordinal: made(region, v) for r, v in region.outputs if r.is_ref}
    assert {outs.get(o) for o in passed} == {"Alloca", "NewFence"}  # the buffer and its fence
    fence = next(v for r, v in region.outputs if r.ordinal in passed and made(region, v) == "NewFence")
    assert fence not in region.interior


def test_returned_command_buffer_is_an_output(compile_mlir):
    p = Pipeline.from_file(compile_mlir(REPO_ROOT / "bench" / "programs" / "readback_loop.mlir", LLVM_CPU))
    checked = 0
    for _k, fn, _live, regions in regions_of(p):
        ret = fn.blocks[-1].ops[-1]
        for r in regions:
            if r.steps[-1].kind is not steps.Finalize or ret.spec.emit != "return":
                continue
            (cmd,) = [v for s in r.steps if s.kind is steps.Record for v in s.results]
            assert cmd not in r.interior
            (reg,) = [reg for reg, v in r.outputs if v == cmd]
            assert any(x.ordinal == reg.ordinal and x.is_ref for x in ret.reads())
            checked += 1
    assert checked >= 2  # the command buffers __init records, each returned


def test_fence_carried_by_a_branch_is_an_output(compile_mlir):
    p = Pipeline.from_file(compile_mlir(REPO_ROOT / "bench" / "programs" / "readback_loop.mlir", LLVM_CPU))
    (main,) = [(fn, rs) for _k, fn, _l, rs in regions_of(p) if fn.name == "main"]
    fn, regions = main
    first = regions[0]  # argument check, alloca, fill; then `br` into the loop header
    term = fn.blocks[first.blocks[-1]].ops[-1]
    assert term.spec.emit == "branch" and term.pc not in first.pcs
    copied = {src.ordinal for _pc, pairs in term.edges() for src, _ in pairs if src.is_ref}
    fill_fence = next(s.fields["signal_fence"] for s in first.steps if s.kind is steps.Fill)
    (reg,) = [r for r, v in first.outputs if v == fill_fence]
    assert reg.ordinal in copied and fill_fence not in first.interior


def test_a_fill_of_the_value_read_back_joins_its_program(compile_mlir):
    """greedy_decode: the argmax read back, sign-extended and written into the output at
    the step's offset: one region from the allocas to the fill."""
    p = Pipeline.from_file(compile_mlir(next(p for p in PROGRAMS if p.name == "greedy_decode").source, LLVM_CPU))
    (region,) = [  # (the loop body's: the start token's read is a region of its own)
        r for _k, fn, _live, regions in regions_of(p) if fn.name == "main"
        for r in regions if any(s.kind is steps.Dispatch for s in r.steps)
        and any(s.kind is steps.Read for s in r.steps)
    ]
    kinds = [s.kind for s in region.steps]
    read = kinds.index(steps.Read)
    assert steps.Fill in kinds[read + 1:], [k.__name__ for k in kinds]
    (value,) = [v for s in region.steps if s.kind is steps.Read for v in s.results]
    assert any(value in c.args for c in region.order if type(c).__name__ == "Compute")

"""Loop mode of queue programs (docs/design/host-path.md §5.4, runtime_support/exec/loops.py).

A host loop whose body's queue work is one program with carried buffers and fences is
written as `queue_n.step(...)` in the loop and `queue_n.results(...)` where the loop is
left; its steps are deferred and run as one native call. Here: the analysis marks the
loops IREE writes (scf.while as a do-while with its induction ops before the back edge,
scf.for and a guarded scf.while with the test first), the results equal iree.runtime's
and the general path's for trip counts 0, 1, 2, 3 and 50 (a dynamic one from an
argument), the loop mode was taken (steps deferred, one native call, no plan launched per
iteration), and a failing execution or a busy queue gives what the general path gives.
"""

from __future__ import annotations

import ctypes
import re

import numpy as np
import pytest

from conftest import REPO_ROOT, load_manifest
from iree_oracle import IreeSession
from runtime_support.errors import StatusCode, VMError
from differential import load_package
from translator.analyses import queue_regions
from translator.analyses.liveness import RefLiveness
from translator.codegen import write_package
from translator.pipeline import Pipeline
from translator.reader import read_module_file

pytest.importorskip("iree.runtime")

FLAGS = tuple(load_manifest()["variants"]["embedded-elf"]["flags"])
N = 16

# The matvec+tanh body of bench/programs/host_loop.mlir, 16 wide, its trip count an argument.
_FOR = """
func.func @main(%w: tensor<16x16xf32>, %x0: tensor<16xf32>, %n: i32) -> tensor<16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %ub = arith.index_cast %n : i32 to index
  %zero = arith.constant 0.0 : f32
  %r = scf.for %i = %c0 to %ub step %c1 iter_args(%x = %x0) -> tensor<16xf32> {
    %e = tensor.empty() : tensor<16xf32>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16xf32>) -> tensor<16xf32>
    %y = linalg.matvec ins(%w, %x : tensor<16x16xf32>, tensor<16xf32>)
                       outs(%f : tensor<16xf32>) -> tensor<16xf32>
    %t = math.tanh %y : tensor<16xf32>
    scf.yield %t : tensor<16xf32>
  }
  return %r : tensor<16xf32>
}
"""

_WHILE = """
func.func @main(%w: tensor<16x16xf32>, %x0: tensor<16xf32>, %n: i32) -> tensor<16xf32> {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %zero = arith.constant 0.0 : f32
  %r:2 = scf.while (%i = %c0, %x = %x0) : (i32, tensor<16xf32>) -> (i32, tensor<16xf32>) {
    %more = arith.cmpi slt, %i, %n : i32
    scf.condition(%more) %i, %x : i32, tensor<16xf32>
  } do {
  ^bb0(%i: i32, %x: tensor<16xf32>):
    %e = tensor.empty() : tensor<16xf32>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16xf32>) -> tensor<16xf32>
    %y = linalg.matvec ins(%w, %x : tensor<16x16xf32>, tensor<16xf32>)
                       outs(%f : tensor<16xf32>) -> tensor<16xf32>
    %t = math.tanh %y : tensor<16xf32>
    %next = arith.addi %i, %c1 : i32
    scf.yield %next, %t : i32, tensor<16xf32>
  }
  return %r#1 : tensor<16xf32>
}
"""

# A window that slides with the loop index: the dispatch's constants are computed per
# iteration in the program, so the loop is marked but each step is a call.
_SLIDE = """
func.func @main(%t: tensor<64xf32>, %x0: tensor<4xf32>, %n: i32) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c7 = arith.constant 7 : i32
  %nm = arith.andi %n, %c7 : i32
  %ub = arith.index_cast %nm : i32 to index
  %r = scf.for %i = %c0 to %ub step %c1 iter_args(%x = %x0) -> tensor<4xf32> {
    %s = tensor.extract_slice %t[%i] [4] [1] : tensor<64xf32> to tensor<4xf32>
    %y = arith.addf %x, %s : tensor<4xf32>
    %z = arith.mulf %y, %y : tensor<4xf32>
    scf.yield %z : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}
"""

# A scalar argument scales each step's result: a dispatch constant (its f32 bits) computed
# from an input, the same in every step of the loop.
_SCALE = """
func.func @main(%w: tensor<16x16xf32>, %x0: tensor<16xf32>, %n: i32, %s: f32) -> tensor<16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %ub = arith.index_cast %n : i32 to index
  %zero = arith.constant 0.0 : f32
  %r = scf.for %i = %c0 to %ub step %c1 iter_args(%x = %x0) -> tensor<16xf32> {
    %e = tensor.empty() : tensor<16xf32>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16xf32>) -> tensor<16xf32>
    %y = linalg.matvec ins(%w, %x : tensor<16x16xf32>, tensor<16xf32>)
                       outs(%f : tensor<16xf32>) -> tensor<16xf32>
    %t = math.tanh %y : tensor<16xf32>
    %e2 = tensor.empty() : tensor<16xf32>
    %u = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                         iterator_types = ["parallel"]} ins(%t : tensor<16xf32>) outs(%e2 : tensor<16xf32>) {
    ^bb0(%a: f32, %o: f32):
      %m = arith.mulf %a, %s : f32
      linalg.yield %m : f32
    } -> tensor<16xf32>
    scf.yield %u : tensor<16xf32>
  }
  return %r : tensor<16xf32>
}
"""

# The loop starts from an argument it also reads every step: its first step gets one
# buffer under two names.
_ALIAS = """
func.func @main(%b: tensor<16xf32>, %n: i32) -> tensor<16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %ub = arith.index_cast %n : i32 to index
  %r = scf.for %i = %c0 to %ub step %c1 iter_args(%x = %b) -> tensor<16xf32> {
    %y = arith.mulf %x, %b : tensor<16xf32>
    %z = math.tanh %y : tensor<16xf32>
    scf.yield %z : tensor<16xf32>
  }
  return %r : tensor<16xf32>
}
"""

SOURCES = {"for": _FOR, "while": _WHILE, "slide": _SLIDE, "scale": _SCALE, "alias": _ALIAS}
TRIPS = (0, 1, 2, 3, 50)


def _vmfb(compile_mlir, tmp_path, kind: str):
    src = tmp_path / f"{kind}_loop.mlir"
    src.write_text(SOURCES[kind])
    return compile_mlir(src, FLAGS)


def _package(vmfb, tmp_path, name="pkg"):
    return load_package(write_package(read_module_file(vmfb), tmp_path, name))


def _inputs(seed: int = 0):
    rng = np.random.default_rng(seed)
    w = (rng.standard_normal((N, N)) / 4).astype(np.float32)
    x = rng.standard_normal(N).astype(np.float32)
    return w, x


@pytest.fixture
def loop_modes(monkeypatch):
    """Every LoopMode made from here on (exec/loops.py), to read its counters."""
    from runtime_support.exec import loops

    made = []
    real = loops.LoopMode.__init__

    def init(self, *args):
        real(self, *args)
        made.append(self)

    monkeypatch.setattr(loops.LoopMode, "__init__", init)
    return made


def _regions(vmfb, fn_name="main"):
    pipeline = Pipeline(read_module_file(vmfb))
    for k, fn in enumerate(pipeline.functions):
        if fn.name == fn_name:
            live = RefLiveness(fn, pipeline.cfg(k))
            return queue_regions.find(pipeline.module, fn, live, pipeline.cfg(k))
    raise AssertionError(fn_name)


@pytest.mark.parametrize("kind", ["for", "while", "host_loop"])
def test_analysis_marks_the_loop_body(kind, compile_mlir, tmp_path):
    """The loop body's region carries its fence and buffer into the next iteration and
    has loop exits; no other region of the function does."""
    if kind == "host_loop":
        vmfb = compile_mlir(REPO_ROOT / "bench" / "programs" / "host_loop.mlir", FLAGS)
    else:
        vmfb = _vmfb(compile_mlir, tmp_path, kind)
    regions = _regions(vmfb)
    looped = [r for r in regions if r.loop_exits]
    assert len(looped) == 1, "\n".join(r.describe() for r in regions)
    (region,) = looped
    assert len(region.carried) == 2
    assert {(a.ordinal, a.is_ref) for a, _ in region.carried} == {
        (r.ordinal, r.is_ref) for r, _ in region.outputs
    }


def test_analysis_declines_a_loop_with_readbacks(compile_mlir):
    """readback_loop's body reads a value back and branches on it: no loop mode."""
    vmfb = compile_mlir(REPO_ROOT / "bench" / "programs" / "readback_loop.mlir", FLAGS)
    assert not any(r.loop_exits for r in _regions(vmfb))


@pytest.mark.parametrize("device", ["local-sync", "local"])
@pytest.mark.parametrize("kind", ["for", "while"])
def test_loop_matches_iree_and_is_deferred(kind, device, compile_mlir, tmp_path, loop_modes):
    """Trip counts 0, 1, 2, 3 and 50 (an argument): results bit-identical to
    iree.runtime's; on a warm context every step of the loop is deferred and run in one
    native call, no plan launched per iteration."""
    from runtime_support.exec.plan import Plan

    vmfb = _vmfb(compile_mlir, tmp_path, kind)
    ctx = _package(vmfb, tmp_path).load(device=device)
    session = IreeSession(vmfb)
    sig = session.signature("main")
    w, x = _inputs()
    ctx.call("main", w, x, 2)  # (builds the segment's plan: its first step is a call)
    (mode,) = loop_modes
    launches = []
    real_launch = Plan.launch
    Plan.launch = lambda plan, workers: launches.append(1) or real_launch(plan, workers)
    try:
        for n in TRIPS:
            before = (mode.runs_started, mode.steps_deferred, mode.native_steps)
            launches.clear()
            got = ctx.call("main", w, x, n)
            (want,) = session.call("main", [w, x, np.int32(n)], sig)
            assert got.tobytes() == np.asarray(want).tobytes(), n
            runs, deferred, native_steps = (a - b for a, b in zip(
                (mode.runs_started, mode.steps_deferred, mode.native_steps), before))
            assert (runs, deferred, native_steps) == ((n > 0) * 1, n, n), n
            assert not launches, n  # (no plan launched per iteration: one native call)
    finally:
        Plan.launch = real_launch


def test_bench_host_loop_matches_the_general_path(compile_mlir, tmp_path, monkeypatch, loop_modes):
    """bench's host_loop (50 iterations, do-while with add/cmp before the back edge):
    loop mode, loop mode off and the general path give the same bytes; loop mode took
    49 steps of the first call and all 50 of the second; the allocator counted the same
    bytes (each step's allocas, the transient one's too)."""
    vmfb = compile_mlir(REPO_ROOT / "bench" / "programs" / "host_loop.mlir", FLAGS)
    pkg = _package(vmfb, tmp_path)
    rng = np.random.default_rng(1)
    w = (rng.standard_normal((256, 256)) / 16).astype(np.float32)
    x = rng.standard_normal(256).astype(np.float32)
    def call(ctx):
        """(the result's bytes, the bytes the call's allocas counted)"""
        allocator = ctx.device.allocator
        before = allocator.bytes_allocated
        out = ctx.call("main", w, x).tobytes()
        return out, allocator.bytes_allocated - before

    ctx = pkg.load(device="local-sync")
    first, second = call(ctx), call(ctx)
    (mode,) = loop_modes
    assert (mode.runs_started, mode.steps_deferred, mode.native_steps) == (2, 99, 99)
    monkeypatch.setenv("PYREE_QUEUE_LOOP", "0")
    off = call(pkg.load(device="local-sync"))
    monkeypatch.setenv("PYREE_QUEUE_FAST", "0")
    general = call(pkg.load(device="local-sync"))
    assert first == second == off == general


def _failing_steps(monkeypatch, fail_at: int):
    """The native steps runner, failing the `fail_at`-th step it runs (1-based, counted
    over all its calls) as a kernel would: the steps before it run, it counts as run and
    its error is DATA_LOSS. Returns the list of failures made."""
    from runtime_support.exec import loops
    from runtime_support.exec.plan import Plan
    from runtime_support.native import jit as native_jit, layout as native_layout

    runtime = native_jit.native_runtime()
    real = runtime.run_plan_steps
    seen = [0]
    failures = []
    words = len(native_layout.STEPS_FIELDS)

    def run_steps(address):
        block = (ctypes.c_int64 * words).from_address(address)
        count = block[loops._COUNT]
        if failures or seen[0] + count < fail_at:
            result = real(address)
            seen[0] += block[loops._RAN]
            return result
        ok = fail_at - 1 - seen[0]
        ran = 0
        if ok:
            block[loops._COUNT] = ok
            assert real(address) == 0
            ran = block[loops._RAN]
        block[loops._RAN] = ran + 1
        seen[0] += ran + 1
        failures.append(True)
        return 1 << 8  # (a failure of the plan's record 1: Plan._raise below)

    def raise_(plan, result):
        raise VMError(StatusCode.DATA_LOSS, "kernel failed on purpose")

    monkeypatch.setattr(runtime, "run_plan_steps", run_steps)
    monkeypatch.setattr(Plan, "_raise", raise_)
    return failures


def _failing_executions(monkeypatch, fail_at: int):
    """HalCommandBuffer.execute and Plan.launch failing at the `fail_at`-th execution
    of either (the general path's and the segment's per-call runs)."""
    from runtime_support.hal.command_buffer import HalCommandBuffer
    from runtime_support.exec.plan import Plan

    seen = [0]
    real_execute, real_launch = HalCommandBuffer.execute, Plan.launch

    def count():
        seen[0] += 1
        if seen[0] == fail_at:
            raise VMError(StatusCode.DATA_LOSS, "kernel failed on purpose")

    def execute(self, *args, **kwargs):
        count()
        return real_execute(self, *args, **kwargs)

    def launch(plan, workers):
        count()
        return real_launch(plan, workers)

    monkeypatch.setattr(HalCommandBuffer, "execute", execute)
    monkeypatch.setattr(Plan, "launch", launch)
    return seen


def _outcome(ctx, *args):
    try:
        return ctx.call("main", *args).tobytes(), None
    except VMError as exc:
        return None, (exc.code, str(exc))


@pytest.mark.parametrize("fail_at", [1, 7])
def test_failing_step_raises_as_the_general_path(fail_at, compile_mlir, tmp_path, monkeypatch, loop_modes):
    """The `fail_at`-th iteration's execution fails: loop mode (the native steps runner
    failing there), loop mode off and the general path raise the same error; a later call
    runs the loop again."""
    vmfb = _vmfb(compile_mlir, tmp_path, "while")
    pkg = _package(vmfb, tmp_path)
    w, x = _inputs(3)
    ctx = pkg.load(device="local-sync")
    good = _outcome(ctx, w, x, 12)  # (warm: the plan is built)
    with monkeypatch.context() as m:
        failures = _failing_steps(m, fail_at)
        looped = _outcome(ctx, w, x, 12)
        assert failures
    assert looped[1] is not None and looped[1][0] == StatusCode.DATA_LOSS
    assert _outcome(ctx, w, x, 12) == good
    (mode,) = loop_modes
    assert mode.runs_started == 3
    with monkeypatch.context() as m:
        m.setenv("PYREE_QUEUE_LOOP", "0")
        off = pkg.load(device="local-sync")
        _outcome(off, w, x, 12)
        _failing_executions(m, fail_at)
        assert _outcome(off, w, x, 12) == looped
    with monkeypatch.context() as m:
        m.setenv("PYREE_QUEUE_FAST", "0")
        general = pkg.load(device="local-sync")
        _failing_executions(m, fail_at)
        assert _outcome(general, w, x, 12) == looped


def test_busy_queue_runs_the_steps_as_calls(compile_mlir, tmp_path, monkeypatch, loop_modes):
    """Where the queue is held when the deferred steps are due, they run as calls of the
    program (through the imports): the same results, nothing run natively."""
    from runtime_support.hal.queue import LocalQueue

    vmfb = _vmfb(compile_mlir, tmp_path, "for")
    ctx = _package(vmfb, tmp_path).load(device="local-sync")
    w, x = _inputs(5)
    want = ctx.call("main", w, x, 9).tobytes()
    (mode,) = loop_modes
    native_before = mode.native_steps
    deferred_before = mode.steps_deferred
    with monkeypatch.context() as m:
        m.setattr(LocalQueue, "hold", lambda self: False)
        assert ctx.call("main", w, x, 9).tobytes() == want
    assert mode.native_steps == native_before
    assert mode.steps_deferred == deferred_before + 9


def test_statistics_turn_the_loop_mode_off(compile_mlir, tmp_path, monkeypatch, loop_modes):
    """With statistics on, no step is deferred (each is a call: the plan's own counted
    run); the results are the same."""
    from runtime_support.loaders import statistics

    vmfb = _vmfb(compile_mlir, tmp_path, "while")
    ctx = _package(vmfb, tmp_path).load(device="local-sync")
    w, x = _inputs(6)
    want = ctx.call("main", w, x, 5).tobytes()
    (mode,) = loop_modes
    deferred = mode.steps_deferred
    monkeypatch.setattr(statistics, "enabled", True)
    assert ctx.call("main", w, x, 5).tobytes() == want
    assert mode.steps_deferred == deferred


def test_results_pass_other_values_through():
    """`results` of values that are no tokens (a loop left before its first step): the
    values themselves."""
    from runtime_support.exec.loops import results

    a, b = object(), object()
    assert results(a) is a
    assert results(a, b) == (a, b)


@pytest.mark.parametrize("fast", ["1", "0"])
def test_loop_with_a_constant_per_step_matches_iree(fast, compile_mlir, tmp_path, monkeypatch, loop_modes):
    """A loop whose dispatch constant changes every step (a window sliding with the loop
    index): on the fast path each run of deferred steps is broken off by the next step
    (its index differs), and after a few such runs the loop mode stops trying (each step
    a call); on the general path `step` is the call and `results` passes values through.
    Every call equals iree.runtime."""
    from runtime_support.exec import loops

    monkeypatch.setenv("PYREE_QUEUE_FAST", fast)
    vmfb = _vmfb(compile_mlir, tmp_path, "slide")
    assert any(r.loop_exits for r in _regions(vmfb))
    ctx = _package(vmfb, tmp_path).load(device="local-sync")
    session = IreeSession(vmfb)
    rng = np.random.default_rng(7)
    t = (rng.standard_normal(64) / 2).astype(np.float32)
    x = (rng.standard_normal(4) / 2).astype(np.float32)
    for n in (0, 1, 2, 7, 7, 7, 3):
        got = ctx.call("main", t, x, n)
        (want,) = session.call("main", [t, x, np.int32(n)], session.signature("main"))
        assert got.tobytes() == np.asarray(want).tobytes(), n
    if fast == "0":
        assert not loop_modes
    else:
        (mode,) = loop_modes
        assert mode.short_runs == loops._SHORT_RUNS
        assert mode.runs_started <= loops._SHORT_RUNS + 2


def test_packed_inputs_take_the_loop_mode(compile_mlir, tmp_path, monkeypatch, loop_modes):
    """A program whose inputs travel as one tuple (here: more than 4, the limit lowered
    from 10): `queue_n.step((...,))` still defers its steps; equal to iree.runtime."""
    from runtime_support.exec import program
    from translator.codegen import queue_programs

    monkeypatch.setattr(program, "MAX_POSITIONAL", 4)
    monkeypatch.setattr(queue_programs, "MAX_POSITIONAL", 4)
    vmfb = _vmfb(compile_mlir, tmp_path, "for")
    pkg_dir = write_package(read_module_file(vmfb), tmp_path, "pkg")
    assert re.search(r"\.step\(\s*\(", (pkg_dir / "__init__.py").read_text())
    ctx = load_package(pkg_dir).load(device="local-sync")
    session = IreeSession(vmfb)
    w, x = _inputs(9)
    for n in (3, 3, 50):
        got = ctx.call("main", w, x, n)
        (want,) = session.call("main", [w, x, np.int32(n)], session.signature("main"))
        assert got.tobytes() == np.asarray(want).tobytes(), n
    (mode,) = loop_modes
    assert mode.packed and mode.native_steps == 2 + 3 + 50


def test_dispatch_constants_of_a_run(compile_mlir, tmp_path, loop_modes):
    """A dispatch constant computed from a scalar argument: written once per run, the
    value of that call's argument (scales 1.5, then -0.75, then 1.5 again); equal to
    iree.runtime and deferred."""
    vmfb = _vmfb(compile_mlir, tmp_path, "scale")
    ctx = _package(vmfb, tmp_path).load(device="local-sync")
    session = IreeSession(vmfb)
    w, x = _inputs(11)
    for n, scale in ((4, 1.5), (6, -0.75), (5, 1.5), (0, 2.0), (1, 2.0)):
        got = ctx.call("main", w, x, n, scale)
        (want,) = session.call("main", [w, x, np.int32(n), np.float32(scale)], session.signature("main"))
        assert got.tobytes() == np.asarray(want).tobytes(), (n, scale)
    (mode,) = loop_modes
    assert mode.native_steps == 3 + 6 + 5 + 1


def test_a_run_goes_with_its_call(compile_mlir, tmp_path, loop_modes):
    """After a call, nothing holds its run of deferred steps (no reference cycle: its
    buffers go when the function returns, with the gc off too)."""
    import gc

    from runtime_support.exec import loops

    vmfb = _vmfb(compile_mlir, tmp_path, "while")
    ctx = _package(vmfb, tmp_path).load(device="local-sync")
    w, x = _inputs(12)
    ctx.call("main", w, x, 5)
    gc.collect()
    gc.disable()
    try:
        for n in (5, 6, 1):
            ctx.call("main", w, x, n)
        alive = sum(type(o) is loops._Run for o in gc.get_objects())
    finally:
        gc.enable()
    (mode,) = loop_modes
    assert mode.runs_started == 4 and alive == 0


def test_steps_queue_behind_another_thread(compile_mlir, tmp_path, loop_modes):
    """While another thread runs the device's queue, the deferred steps cannot run
    natively: they run as calls of the program, whose queue work goes through the imports
    behind the other thread's; the call waits for it, and its result is the same."""
    from helpers_threads import call_behind_held_queue

    vmfb = _vmfb(compile_mlir, tmp_path, "for")
    ctx = _package(vmfb, tmp_path).load(device="local-sync")
    w, x = _inputs(13)
    want = ctx.call("main", w, x, 8).tobytes()
    (mode,) = loop_modes
    native_before, runs_before = mode.native_steps, mode.runs_started
    queue = ctx.device.queue
    got = call_behind_held_queue(queue, lambda: ctx.call("main", w, x, 8))
    assert got.tobytes() == want
    assert mode.runs_started == runs_before + 1 and mode.native_steps == native_before


def test_first_step_with_one_buffer_under_two_names(compile_mlir, tmp_path, loop_modes):
    """The first step reads the loop's initial buffer under two names: its segment runs
    step by step and that decides nothing about the shape, so the second step builds it
    and the third starts a run (before: the shape was refused for good, no step native);
    a later call's first step, the same buffer under two names, runs in the run (the plan
    is the same: only building it needed to tell the names apart)."""
    vmfb = _vmfb(compile_mlir, tmp_path, "alias")
    ctx = _package(vmfb, tmp_path).load(device="local-sync")
    session = IreeSession(vmfb)
    b = (np.random.default_rng(14).standard_normal(N)).astype(np.float32)
    for n in (5, 5, 1, 0):
        got = ctx.call("main", b, n)
        (want,) = session.call("main", [b, np.int32(n)], session.signature("main"))
        assert got.tobytes() == np.asarray(want).tobytes(), n
    (mode,) = loop_modes
    assert mode.native_steps == 3 + 5 + 1

"""Queue programs (issue #25, docs/design/host-path.md): every queue region written as a
`QueueProgram` and run by runtime_support/exec gives what iree.runtime gives.

The property suite of the design's migration step 2: each corpus program translated
(queue programs: the default) against iree.runtime on the same vmfb, results
bit-identical and errors with the same status, on both local devices; and random HAL
queue programs (tests/support/random_programs.py) against iree.runtime.
"""

from __future__ import annotations

import os

import pytest

from conftest import CompileError, load_manifest
from iree_oracle import IreeSession
from random_programs import queue_functions, queue_inputs, queue_module_text
from runtime_support.errors import VMError
from runtime_support.hal.buffer_view import HalBufferView
from differential import DEVICE_CASES, same_results as _same, check_against_iree, iree_status, load_package
from translator.codegen import write_package
from translator.reader import read_module_file

pytest.importorskip("iree.runtime")


@pytest.mark.parametrize("case,device", DEVICE_CASES, ids=[f"{c.id}-{d}" for c, d in DEVICE_CASES])
def test_programs_match_iree_runtime(case, device, compile_mlir, tmp_path):
    check_against_iree(case, device, compile_mlir, tmp_path)


# The general path alone (PYREE_QUEUE_FAST=0): what the fast path must equal.
GENERAL_CASES = [(c, d) for c, d in DEVICE_CASES if d == "local-sync"]


@pytest.mark.parametrize("case,device", GENERAL_CASES, ids=[f"{c.id}-{d}" for c, d in GENERAL_CASES])
def test_general_path_matches_iree_runtime(case, device, compile_mlir, tmp_path, monkeypatch):
    monkeypatch.setenv("PYREE_QUEUE_FAST", "0")
    check_against_iree(case, device, compile_mlir, tmp_path)


def _count_shapes(monkeypatch) -> tuple[list, list]:
    """(builds, runs): one entry per segment plan built, and run_shape's answer per run."""
    from runtime_support.exec import shapes

    builds, runs = [], []
    real_build, real_run = shapes.build_shape, shapes.run_shape

    def counted_build(*args):
        builds.append(True)
        return real_build(*args)

    def counted_run(*args):
        runs.append(real_run(*args))
        return runs[-1]

    monkeypatch.setattr(shapes, "build_shape", counted_build)
    monkeypatch.setattr(shapes, "run_shape", counted_run)
    return builds, runs


def test_fast_path_runs_one_shot_recordings_as_plans(compile_mlir, tmp_path, monkeypatch):
    """A dynamic-shape program records a one-shot command buffer per call: the first call
    of a shape records it through the imports into a scratch command buffer and builds
    the segment's plan, every call of a known shape runs the plan (nothing recorded), a
    new shape builds again; results equal iree.runtime's."""
    import numpy as np

    from conftest import corpus_cases
    from iree_oracle import IreeSession
    from differential import load_package
    from translator.codegen import write_package
    from translator.reader import read_module_file

    (case,) = [c for c in corpus_cases(variants=("embedded-elf",)) if c.id.startswith("dyn_shape_2d@")]
    vmfb = compile_mlir(case.source, case.flags)
    pkg = load_package(write_package(read_module_file(vmfb), tmp_path, "pkg"))
    builds, runs = _count_shapes(monkeypatch)
    ctx = pkg.load(device="local-sync")
    session = IreeSession(vmfb)
    rng = np.random.default_rng(0)
    for m, k, n in [(2, 3, 4), (2, 3, 4), (5, 7, 3), (2, 3, 4), (5, 7, 3)]:
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        got = ctx.call("dyn_matmul", a, b)
        (want,) = session.call("dyn_matmul", [a, b], session.signature("dyn_matmul"))
        assert got.tobytes() == np.asarray(want).tobytes()
    assert len(builds) == 2 and runs == [True] * 5


_MUL_MLIR = """
func.func @mul(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.mulf %a, %b : tensor<4xf32>
  %1 = arith.addf %0, %a : tensor<4xf32>
  return %1 : tensor<4xf32>
}
"""


def _mul_translated(compile_mlir, tmp_path):
    """(vmfb, package) of the mul program, the package translated with queue programs."""
    src = tmp_path / "mul.mlir"
    src.write_text(_MUL_MLIR)
    vmfb = compile_mlir(src, QUEUE_FLAGS)
    return vmfb, load_package(write_package(read_module_file(vmfb), tmp_path, "pkg"))


def _counted_queue_imports(monkeypatch) -> dict:
    """Counts the calls of the hal module's queue and fence imports (the class's own
    methods, wrapped at class level: the fast path still sees them as the module's own)."""
    from runtime_support.hal.module import HalModule

    calls: dict[str, int] = {}
    for name in ("fence_create", "device_queue_alloca", "device_queue_execute_indirect"):
        real = getattr(HalModule, name)

        def counted(self, *args, _real=real, _name=name):
            calls[_name] = calls.get(_name, 0) + 1
            return _real(self, *args)

        counted.__vm_import__ = real.__vm_import__
        monkeypatch.setattr(HalModule, name, counted)
    return calls


def test_fast_path_makes_no_private_fence(compile_mlir, tmp_path, monkeypatch):
    """A dispatch per submission (alloca, execute.indirect, await on private fences): on a
    free queue the fast path runs each step here, makes none of the fences and calls none
    of the queue imports; the results equal iree.runtime's."""
    import numpy as np

    vmfb, pkg = _mul_translated(compile_mlir, tmp_path)
    calls = _counted_queue_imports(monkeypatch)
    ctx = pkg.load(device="local-sync")
    session = IreeSession(vmfb)
    a = np.arange(4, dtype=np.float32)
    b = np.full(4, 1.5, np.float32)
    (want,) = session.call("mul", [a, b], session.signature("mul"))
    calls.clear()  # (the module's initialiser made its own)
    for _ in range(3):
        assert ctx.call("mul", a, b).tobytes() == np.asarray(want).tobytes()
    assert calls == {}


def test_fast_path_queues_behind_another_thread(compile_mlir, tmp_path, monkeypatch):
    """While another thread runs the device's queue, the program's queue steps go through
    the imports (the work queues behind the other thread's, as IREE's queue orders it) and
    the call waits for it; the result is the same."""
    import numpy as np

    from helpers_threads import call_behind_held_queue

    vmfb, pkg = _mul_translated(compile_mlir, tmp_path)
    calls = _counted_queue_imports(monkeypatch)
    ctx = pkg.load(device="local-sync")
    a = np.arange(4, dtype=np.float32)
    b = np.full(4, 1.5, np.float32)
    want = ctx.call("mul", a, b).tobytes()
    calls.clear()
    queue = ctx.device.queue
    got = call_behind_held_queue(queue, lambda: ctx.call("mul", a, b))
    assert got.tobytes() == want
    assert calls.get("device_queue_execute_indirect", 0) >= 1


def test_segment_failure_raises_as_the_general_path(compile_mlir, tmp_path, monkeypatch):
    """A command buffer whose execution fails inside a segment's plan: the call raises
    the error the general path raises for the same failure (its await of the failed
    fence), and the next call runs the plan again."""
    import numpy as np

    from runtime_support.errors import StatusCode

    vmfb, pkg = _mul_translated(compile_mlir, tmp_path)
    a = np.arange(4, dtype=np.float32)
    b = np.full(4, 1.5, np.float32)
    want = load_package(write_package(read_module_file(vmfb), tmp_path, "ref"))
    want = want.load(device="local-sync").call("mul", a, b).tobytes()
    from runtime_support.exec.plan import Plan

    real_launch = Plan.launch
    failures = []

    def failing(plan, workers):
        if not failures:
            failures.append(True)
            raise VMError(StatusCode.DATA_LOSS, "kernel failed on purpose")
        return real_launch(plan, workers)

    monkeypatch.setattr(Plan, "launch", failing)
    ctx = pkg.load(device="local-sync")
    with pytest.raises(VMError) as fast_error:
        ctx.call("mul", a, b)
    assert failures
    assert ctx.call("mul", a, b).tobytes() == want

    # The general path, its command buffer failing the same way.
    from runtime_support.hal.command_buffer import HalCommandBuffer

    monkeypatch.setenv("PYREE_QUEUE_FAST", "0")
    real_execute = HalCommandBuffer.execute

    def failing_execute(self, table=None, workers=None):
        raise VMError(StatusCode.DATA_LOSS, "kernel failed on purpose")

    monkeypatch.setattr(HalCommandBuffer, "execute", failing_execute)
    general = pkg.load(device="local-sync")
    with pytest.raises(VMError) as general_error:
        general.call("mul", a, b)
    monkeypatch.setattr(HalCommandBuffer, "execute", real_execute)
    assert (fast_error.value.code, str(fast_error.value)) == (
        general_error.value.code,
        str(general_error.value),
    )


_OFFSET_MLIR = """
func.func @window(%t: tensor<64xf32>, %i: index) -> tensor<4xf32> {
  %s = tensor.extract_slice %t[%i] [4] [1] : tensor<64xf32> to tensor<4xf32>
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]} ins(%s : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %b: f32):
    %m = arith.mulf %a, %a : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}
"""


def test_dispatch_constants_are_value_slots(compile_mlir, tmp_path, monkeypatch):
    """A dispatch constant that changes per call (an offset, a decode step's index) is
    written into the segment's plan per call, not a plan per value: one plan for every
    offset, each call's result equal to iree.runtime's."""
    import numpy as np

    src = tmp_path / "window.mlir"
    src.write_text(_OFFSET_MLIR)
    vmfb = compile_mlir(src, QUEUE_FLAGS)
    pkg = load_package(write_package(read_module_file(vmfb), tmp_path, "pkg"))
    builds, runs = _count_shapes(monkeypatch)
    ctx = pkg.load(device="local-sync")
    session = IreeSession(vmfb)
    t = np.arange(64, dtype=np.float32) / 7
    for i in [0, 5, 60, 5, 33, 0]:
        got = ctx.call("window", t, i)
        (want,) = session.call("window", [t, i], session.signature("window"))
        assert got.tobytes() == np.asarray(want).tobytes(), i
    assert len(builds) == 1 and runs == [True] * 6


def _segment_alone(pkg):
    """The mul program's segment (from its first FenceCreate: alloca, execute, await)
    as a queue program of its own, and its inputs' names."""
    import dataclasses

    from runtime_support.exec.program import QueueProgram, fields_read, names_in
    from runtime_support.exec.steps import DeviceQueueExecuteIndirect, FenceCreate

    program = next(
        value for name in ("QUEUE_0", "QUEUE_1", "QUEUE_2")
        if isinstance(value := getattr(pkg, name, None), QueueProgram)
        and any(type(s) is DeviceQueueExecuteIndirect for s in value.steps)
    )
    first = next(k for k, s in enumerate(program.steps) if type(s) is FenceCreate)
    made, inputs = set(), []
    for step in program.steps[first:]:
        for name in names_in(fields_read(step)):
            if name not in made and name not in inputs:
                inputs.append(name)
        if getattr(step, "out", None):
            made.add(step.out)
    return dataclasses.replace(program, steps=program.steps[first:], inputs=tuple(inputs))


def test_segment_checks_its_buffers_and_waits_as_the_general_path(compile_mlir, tmp_path, monkeypatch):
    """A segment called with buffers from outside: buffers of the right size give what
    the general path gives; a buffer too small for the dispatch makes the plan decline its
    slot checks and the call raises what the general path raises (nothing written past
    the buffer); a wait fence still pending makes the call wait for it."""
    import threading

    import numpy as np

    from runtime_support.exec.bind import bind_program
    from runtime_support.exec.program import names_in
    from runtime_support.hal.buffer import HalBuffer
    from runtime_support.hal.fence import Fence

    vmfb, pkg = _mul_translated(compile_mlir, tmp_path)
    ctx = pkg.load(device="local-sync")
    program = _segment_alone(pkg)
    builds, runs = _count_shapes(monkeypatch)
    fast = bind_program(program, ctx, pkg._IMPORTS)
    monkeypatch.setenv("PYREE_QUEUE_FAST", "0")
    general = bind_program(program, ctx, pkg._IMPORTS)
    monkeypatch.delenv("PYREE_QUEUE_FAST")
    command_buffer = next(
        ctx.refs.get(k) for k in range(8) if type(ctx.refs.get(k)).__name__ == "HalCommandBuffer"
    )

    def values(size, wait=None):
        a = HalBuffer.allocate(size, 0xFFFF, 0xFFFF)
        b = HalBuffer.allocate(size, 0xFFFF, 0xFFFF)
        a.write(0, np.arange(size // 4, dtype=np.float32).tobytes())
        b.write(0, np.full(size // 4, 1.5, np.float32).tobytes())
        known = {"device": ctx.device, "wait": wait, "command_buffer": command_buffer}
        out = []
        for name in program.inputs:
            step_fields = [
                p for s in program.steps for p in getattr(s, "PARAMS", ())
                if name in names_in(getattr(s, p))
            ]
            role = next(f for f in step_fields)
            if role in ("device", "wait_fence", "command_buffer"):
                out.append(known[{"wait_fence": "wait"}.get(role, role)])
            else:
                out.append(a if not out or not any(isinstance(v, HalBuffer) for v in out) else b)
        return out

    got = []
    for run in (fast, fast, general):  # (the fast one builds its plan, then runs it)
        result = run(*values(16))
        result = result[0] if isinstance(result, tuple) else result
        got.append(np.frombuffer(result.bytes_view(0, 16), np.float32).tolist())
    assert got[0] == got[1] == got[2] == [0, 2.5, 5, 7.5]  # (a * 1.5 + a)
    assert len(builds) == 1 and runs == [True, True]  # (the fast calls ran the plan)
    errors = []
    for run in (fast, general):
        with pytest.raises(VMError) as error:
            run(*values(8))
        errors.append((error.value.code, str(error.value)))
    assert errors[0] == errors[1] and runs[-1] is False  # (the plan declined its checks)
    # A wait still pending: the call waits for it.
    wait = Fence()
    done = {}
    caller = threading.Thread(target=lambda: done.setdefault("result", fast(*values(16, wait))))
    caller.start()
    caller.join(0.5)
    assert caller.is_alive()
    wait.signal()
    caller.join(30)
    assert "result" in done


def test_segment_keeps_transients_apart(compile_mlir, tmp_path, monkeypatch):
    """A hand-written program: two transient buffers live at once (each written by one
    execution, both read by a third; nothing reads them after). Their arena places must
    not overlap: the fast path's result equals the general path's."""
    import numpy as np

    from runtime_support.exec.bind import bind_program
    from runtime_support.exec.program import FailIf, QueueProgram
    from runtime_support.exec.steps import (
        DeviceQueueAlloca, DeviceQueueExecuteIndirect, FenceAwait, FenceCreate,
    )
    from runtime_support.hal.buffer import HalBuffer

    vmfb, pkg = _mul_translated(compile_mlir, tmp_path)
    ctx = pkg.load(device="local-sync")
    command_buffer = next(
        ctx.refs.get(k) for k in range(8) if type(ctx.refs.get(k)).__name__ == "HalCommandBuffer"
    )
    queue = dict(device="device", queue_affinity=-1, flags=0)
    steps = []
    wait = None
    for k, name in enumerate(("t1", "t2", "out")):
        steps += [
            FenceCreate(out=f"a{k}", device="device", flags=0),
            DeviceQueueAlloca(out=name, **queue, wait_fence=wait, signal_fence=f"a{k}", pool=0,
                              memory_types=48, buffer_usage=3075, allocation_size=16),
        ]
        wait = f"a{k}"
    for k, (x, y, z) in enumerate((("x", "y", "t1"), ("y", "y", "t2"), ("t1", "t2", "out"))):
        steps += [
            FenceCreate(out=f"e{k}", device="device", flags=0),
            DeviceQueueExecuteIndirect(**queue, wait_fence=wait, signal_fence=f"e{k}",
                                       command_buffer="cmd",
                                       binding_table=((x, 0, 16), (y, 0, 16), (z, 0, 16))),
        ]
        wait = f"e{k}"
    steps += [
        FenceAwait(out="status", timeout_millis=-1, flags=0, fences=(wait,)),
        FailIf(test="status", status="status", message="failed to wait on timepoint"),
    ]
    program = QueueProgram(function="hand", inputs=("device", "cmd", "x", "y"),
                           steps=tuple(steps), outputs=("out",))
    builds, runs = _count_shapes(monkeypatch)
    fast = bind_program(program, ctx, pkg._IMPORTS)
    monkeypatch.setenv("PYREE_QUEUE_FAST", "0")
    general = bind_program(program, ctx, pkg._IMPORTS)

    def buffer(values):
        b = HalBuffer.allocate(16, 0xFFFF, 0xFFFF)
        b.write(0, np.asarray(values, np.float32).tobytes())
        return b

    x, y = buffer([1, 2, 3, 4]), buffer([0.5, -1, 2, 3])
    got = [
        np.frombuffer(run(ctx.device, command_buffer, x, y).bytes_view(0, 16), np.float32).tolist()
        for run in (fast, fast, general)
    ]
    assert got[0] == got[1] == got[2]
    assert len(builds) == 1 and runs == [True, True]


# --- random HAL queue programs ------------------------------------------------------------------
#
# tests/support/random_programs.py's queue programs (several dispatches and barriers per command
# buffer, dynamic lengths, readbacks in scf.if / scf.while / scf.for, a call of a function
# that is not inlined, cf.assert failures, arguments of the wrong length or shape), each
# translated and run on both local devices against iree.runtime on the same vmfb. More:
#
#     PYREE_QUEUE_MODULES=40 PYREE_RANDOM_SEED=7 python -m pytest -q tests/runtime/test_queue_programs.py -k random

QUEUE_MODULES = int(os.environ.get("PYREE_QUEUE_MODULES", "6"))
QUEUE_FUNCTIONS = 4  # per module
QUEUE_SEED = int(os.environ.get("PYREE_RANDOM_SEED", "0"))
QUEUE_FLAGS = tuple(load_manifest()["variants"]["embedded-elf"]["flags"])


def _compile_queue_functions(functions, tmp_path, compile_mlir, seed):
    """(vmfb, names): the module of all `functions`, or where iree-compile rejects it (it has
    internal errors on some of these programs), of as many as compile together, in order."""
    src = tmp_path / f"queue_{seed}.mlir"
    src.write_text(queue_module_text(functions))
    try:
        return compile_mlir(src, QUEUE_FLAGS), [name for name, _ in functions]
    except CompileError:
        pass
    kept, vmfb = [], None
    for k, (name, text) in enumerate(functions):
        part = tmp_path / f"queue_{seed}_{k}.mlir"
        part.write_text(queue_module_text(kept + [(name, text)]))
        try:
            vmfb = compile_mlir(part, QUEUE_FLAGS)
            kept.append((name, text))
        except CompileError:
            print(
                f"iree-compile rejects {name} (python -m tests.support.random_programs --queue {seed} "
                f"{QUEUE_FUNCTIONS})"
            )
    if not kept:
        pytest.skip(f"iree-compile rejects every function of queue module {seed}")
    return vmfb, [name for name, _ in kept]


def _as_views(args):
    """pyree's arguments: an array of the wrong static shape goes in as a buffer view, so that
    the module's own check decides (as it does in iree.runtime, which gets a buffer view of the
    array's shape); the numpy wrapper would reject it before the call."""
    x, y, w = args
    return (x, y, w) if w.shape == (4,) else (x, y, HalBufferView.from_numpy(w))


def _outcome(fn, args):
    try:
        return fn(*args), None
    except Exception as e:  # noqa: BLE001 - a failure is an outcome to compare
        return None, e


def _differs(expected, expected_error, actual, actual_error) -> str | None:
    if expected_error is not None:
        if actual_error is None:
            return f"IREE failed ({expected_error}) but pyree returned"
        want = iree_status(expected_error)
        got = actual_error.code.name if isinstance(actual_error, VMError) else None
        if got != want:
            return (
                f"IREE failed with {want} ({' '.join(str(expected_error).split())[:200]}) but "
                f"pyree with {got or type(actual_error).__name__} ({actual_error})"
            )
        return None
    if actual_error is not None:
        return f"pyree failed: {actual_error!r}"
    actual = actual if isinstance(actual, tuple) else (actual,)
    if len(actual) != len(expected):
        return f"{len(actual)} results, IREE {len(expected)}"
    for i, (e, a) in enumerate(zip(expected, actual)):
        if not _same(e, a):
            return f"result {i}: IREE {e!r} != pyree {a!r}"
    return None


# Seeds found to fail once, kept: 1100055 (seed 11's module 22) has a loop call whose
# counter is an i64 carried by the back edge; its high half (no local of its own) was
# passed to the loop call as a register of its own (UnboundLocalError), until the loop's
# copies and registers left high halves out (queue_loops.without_high_halves).
KEPT_SEEDS = (1100055,)
SEEDS = tuple(QUEUE_SEED * 100003 + module for module in range(QUEUE_MODULES)) + KEPT_SEEDS


@pytest.mark.parametrize("seed", SEEDS)
def test_random_queue_programs_match_iree(seed, compile_mlir, tmp_path, monkeypatch):
    """fast path == general path == iree.runtime, results and errors."""
    vmfb, names = _compile_queue_functions(
        queue_functions(seed, QUEUE_FUNCTIONS), tmp_path, compile_mlir, seed
    )
    pkg = load_package(write_package(read_module_file(vmfb), tmp_path, "pkg"))
    contexts = {device: pkg.load(device=device) for device in ("local-sync", "local")}
    monkeypatch.setenv("PYREE_QUEUE_FAST", "0")  # (read when a context binds its programs)
    contexts["local-sync, general path"] = pkg.load(device="local-sync")
    monkeypatch.delenv("PYREE_QUEUE_FAST")
    session = IreeSession(vmfb)
    problems, compared, failed = [], 0, 0
    for k, name in enumerate(names):
        for args in queue_inputs(seed * 1000 + k):
            expected, expected_error = _outcome(lambda *a: session.call(name, list(a)), args)
            failed += expected_error is not None
            compared += expected_error is None
            for device, ctx in contexts.items():
                actual, actual_error = _outcome(getattr(ctx, name), _as_views(args))
                why = _differs(expected, expected_error, actual, actual_error)
                if why:
                    problems.append(f"{name}(lengths {[a.shape[0] for a in args]}) {device}: {why}")
    where = f"python -m tests.support.random_programs --queue {seed} {QUEUE_FUNCTIONS}"
    print(
        f"queue module {seed}: {len(names)} functions, {compared} calls equal, "
        f"{failed} failing on every side ({where})"
    )
    assert not problems, f"module: {where}\n" + "\n".join(problems)
    assert compared > 0


def _mul_package(compile_mlir, tmp_path):
    """(package, local-sync context) of the mul program, translated with queue programs."""
    _, pkg = _mul_translated(compile_mlir, tmp_path)
    return pkg, pkg.load(device="local-sync")


def _hal_bindings(ctx, pkg, steps):
    """(import declarations, context-like object) binding each step's import to the hal
    module of a loaded context: for hand-written queue programs that call imports the
    package does not import."""
    from types import SimpleNamespace

    from runtime_support.hal.module import HalModule

    hal = next(fn.__self__ for fn in ctx.imports if isinstance(getattr(fn, "__self__", None), HalModule))
    names = sorted({s.IMPORT for s in steps if hasattr(s, "IMPORT")})
    decls = [(name,) for name in names]
    bound = [getattr(hal, HalModule.method_name(name)) for name in names]
    return decls, SimpleNamespace(imports=bound, rodata=ctx.rodata)


def _fast_and_general(program, decls, bound, monkeypatch):
    from runtime_support.exec.fast import FastProgram
    from runtime_support.exec.bind import bind_program

    fast = bind_program(program, bound, decls)
    monkeypatch.setenv("PYREE_QUEUE_FAST", "0")
    general = bind_program(program, bound, decls)
    monkeypatch.delenv("PYREE_QUEUE_FAST")
    assert isinstance(fast, FastProgram) and not isinstance(general, FastProgram)
    return fast, general


def _result(run, *args):
    try:
        return ("ok", run(*args))
    except VMError as e:
        return ("error", e.code, str(e))


def test_segment_declines_a_read_only_buffer_it_writes(compile_mlir, tmp_path, monkeypatch):
    """A hand-written segment filling a buffer from outside: a writable one is filled by
    the plan as by the general path; a read-only one makes the plan decline (its row's
    writability check) and the call raises what the general path raises."""
    import numpy as np

    from runtime_support.exec.program import FailIf, QueueProgram
    from runtime_support.exec.steps import (
        CommandBufferCreate,
        CommandBufferFillBuffer,
        CommandBufferFinalize,
        DeviceQueueExecute,
        FenceAwait,
        FenceCreate,
    )
    from runtime_support.hal.buffer import Allocation, HalBuffer

    pkg, ctx = _mul_package(compile_mlir, tmp_path)
    program = QueueProgram(
        function="fill",
        inputs=("device", "out"),
        steps=(
            FenceCreate(out="f0", device="device", flags=0),
            CommandBufferCreate(
                out="cmd", device="device", modes=1, command_categories=3, queue_affinity=-1,
                binding_capacity=0,
            ),
            CommandBufferFillBuffer(
                command_buffer="cmd", target_buffer="out", target_offset=4, length=8,
                target_buffer_slot=0, pattern=0x01020304, pattern_length=4, flags=0,
            ),
            CommandBufferFinalize(command_buffer="cmd"),
            DeviceQueueExecute(
                device="device", queue_affinity=-1, wait_fence=None, signal_fence="f0",
                command_buffer="cmd", flags=0,
            ),
            FenceAwait(out="status", timeout_millis=-1, flags=0, fences=("f0",)),
            FailIf(test="status", status="status", message="failed to wait on timepoint", location=None),
        ),
        outputs=("status",),
    )
    decls, bound = _hal_bindings(ctx, pkg, program.steps)
    builds, runs = _count_shapes(monkeypatch)
    fast, general = _fast_and_general(program, decls, bound, monkeypatch)
    got = []
    for run in (fast, fast, general):
        out = HalBuffer.allocate(16, 0xFFFF, 0xFFFF)
        assert run(ctx.device, out) == 0
        got.append(out.read())
    assert got[0] == got[1] == got[2] == bytes(4) + bytes([4, 3, 2, 1]) * 2 + bytes(4)
    assert len(builds) == 1 and runs == [True, True]  # (both fast calls ran the plan)

    def read_only():
        array = np.zeros(16, np.uint8)
        array.flags.writeable = False
        return HalBuffer.over(Allocation.wrap(array, readonly=True), 0xFFFF, 0xFFFF)

    outcomes = [_result(run, ctx.device, read_only()) for run in (fast, general)]
    assert outcomes[0] == outcomes[1] and outcomes[0][0] == "error"
    assert runs[-1] is False  # (the plan declined: the steps raised)


def test_readback_raises_as_the_import(compile_mlir, tmp_path, monkeypatch):
    """A readback (`hal.buffer.load`) on the fast path reads what the import reads, and
    out of range, with a length the import refuses or on a null buffer raises the
    import's own error."""
    from runtime_support.exec.program import QueueProgram
    from runtime_support.exec.steps import BufferLoad
    from runtime_support.hal.buffer import HalBuffer

    pkg, ctx = _mul_package(compile_mlir, tmp_path)
    program = QueueProgram(
        function="read",
        inputs=("buffer", "offset", "length"),
        steps=(BufferLoad(out="value", source_buffer="buffer", source_offset="offset", length="length"),),
        outputs=("value",),
    )
    decls, bound = _hal_bindings(ctx, pkg, program.steps)
    fast, general = _fast_and_general(program, decls, bound, monkeypatch)
    buffer = HalBuffer.allocate(8, 0xFFFF, 0xFFFF)
    buffer.write(0, bytes([0x01, 0x80, 0xFF, 0xFF, 0x05, 0x06, 0x07, 0x08]))
    cases = [(0, 4), (0, 1), (1, 2), (4, 4), (6, 2), (7, 2), (8, 1), (-1, 1), (0, 0), (0, 5), (0, 3)]
    for offset, length in cases:
        want = _result(general, buffer, offset, length)
        assert _result(fast, buffer, offset, length) == want, (offset, length)
    assert _result(fast, buffer, 0, 4) == ("ok", -32767)  # (0xFFFF8001, as an i32)
    assert _result(fast, None, 0, 4) == _result(general, None, 0, 4)
    assert _result(fast, None, 0, 4)[0] == "error"


def test_argument_checks_raise_as_the_imports(compile_mlir, tmp_path, monkeypatch):
    """An argument's checks (IREE's view assert, view buffer, allocator, buffer assert) as
    one fast op: a view of another shape, element type or encoding, or a buffer too short,
    raises what the imports raise one by one."""
    import numpy as np

    from runtime_support.exec.fast import FastProgram
    from runtime_support.exec.bind import bind_program
    from runtime_support.exec.program import QueueProgram
    from runtime_support.exec.steps import BufferAssert, BufferViewAssert, BufferViewBuffer
    from runtime_support.hal.buffer import HalBuffer

    pkg, ctx = _mul_package(compile_mlir, tmp_path)
    program = next(
        value for name, value in vars(pkg).items()
        if name.startswith("QUEUE_") and isinstance(value, QueueProgram)
        and any(type(s) is BufferViewAssert for s in value.steps)
    )
    first = next(k for k, s in enumerate(program.steps) if type(s) is BufferViewAssert)
    check = program.steps[first]
    assert [type(s) for s in program.steps[first : first + 2]] == [BufferViewAssert, BufferViewBuffer]
    fast = bind_program(program, ctx, pkg._IMPORTS)
    monkeypatch.setenv("PYREE_QUEUE_FAST", "0")
    general = bind_program(program, ctx, pkg._IMPORTS)
    monkeypatch.delenv("PYREE_QUEUE_FAST")
    assert isinstance(fast, FastProgram)
    assert any(getattr(op, "__name__", "") == "argument" for op in fast._fast_ops)
    minimum = next(s.minimum_length for s in program.steps if type(s) is BufferAssert)
    element, encoding, shape = check.element_type, check.encoding_type, check.shape

    def view(shape=shape, element=element, encoding=encoding, size=minimum):
        return HalBufferView(HalBuffer.allocate(size, 0xFFFF, 0xFFFF), shape, element, encoding)

    def call(run, v):
        return _result(run, *[v if n == check.buffer_view else inputs[n] for n in program.inputs])

    # The inputs of a real call, captured from the general program.
    captured = {}
    real_call = FastProgram.__call__

    def capture(self, *args):
        captured.setdefault(self.program.function, args)
        return real_call(self, *args)

    monkeypatch.setattr(FastProgram, "__call__", capture)
    a = np.arange(4, dtype=np.float32)
    ctx.call("mul", a, a)
    monkeypatch.undo()
    args = captured[program.function]
    inputs = dict(zip(program.inputs, args[0] if program.packed else args))
    assert _result(fast, *[inputs[n] for n in program.inputs])[0] == "ok"
    bad = [
        view(shape=tuple(d + 1 for d in shape) or (2,)),
        view(element=element ^ 1),
        view(encoding=encoding ^ 2),
        view(size=minimum - 4),
    ]  # (memory types and usage: a host buffer always has what these programs ask)
    # (an opaque encoding passes the import's assert: the fast op hands it over)
    assert call(fast, view(encoding=0))[0] == call(general, view(encoding=0))[0] == "ok"
    for i, v in enumerate(bad):
        got, want = call(fast, v), call(general, v)
        assert got == want and got[0] == "error", (i, got[0], want[0])


_READBACK_MLIR = """
func.func @pick(%x: tensor<f32>) -> tensor<f32> {
  %one = arith.constant dense<1.0> : tensor<f32>
  %gt = arith.cmpf ogt, %x, %one : tensor<f32>
  %m = tensor.extract %gt[] : tensor<i1>
  cf.cond_br %m, ^big, ^small
^big:
  %y = arith.addf %x, %one : tensor<f32>
  return %y : tensor<f32>
^small:
  return %x : tensor<f32>
}

func.func @scaled(%x: tensor<i32>) -> (tensor<i32>, i32) {
  %c = arith.constant dense<-7> : tensor<i32>
  %s = arith.muli %x, %c : tensor<i32>
  %v = tensor.extract %s[] : tensor<i32>
  return %s, %v : tensor<i32>, i32
}
"""


def test_segment_reads_back_while_it_holds_the_queue(compile_mlir, tmp_path, monkeypatch):
    """A readback right after a segment's await is read by the segment's call, from the
    buffer's place in an arena (nothing else reads it: no buffer is made for it per
    call): the values, 1- and 4-byte, negative ones included, equal iree.runtime's, and
    every call runs its segments' plans."""
    import numpy as np

    from runtime_support.exec import shapes as shape_plans

    src = tmp_path / "readback.mlir"
    src.write_text(_READBACK_MLIR)
    vmfb = compile_mlir(src, QUEUE_FLAGS)
    pkg = load_package(write_package(read_module_file(vmfb), tmp_path, "pkg"))
    _, runs = _count_shapes(monkeypatch)
    shapes = []
    counted_build = shape_plans.build_shape
    monkeypatch.setattr(shape_plans, "build_shape", lambda *a: shapes.append(counted_build(*a)) or shapes[-1])
    ctx = pkg.load(device="local-sync")
    session = IreeSession(vmfb)
    for name, values in (
        ("pick", [np.float32(v) for v in (0.5, 2.0, 1.0, 3.5, -4.0)]),
        ("scaled", [np.int32(v) for v in (3, -5, 0, 2**28, -(2**28))]),
    ):
        for v in values:
            arg = np.array(v)
            got = ctx.call(name, arg)
            want = session.call(name, [arg], session.signature(name))
            got = got if isinstance(got, tuple) else (got,)
            assert len(got) == len(want)
            for g, w in zip(got, want):
                assert _same(w, g), (name, v, g, w)
    arenas = {id(a.allocation.array) for shape in shapes if shape for a in shape.arenas}
    loads = [load for shape in shapes if shape for load in shape.loads]
    assert len(loads) == 2 and all(id(source) in arenas for _, source, _, _ in loads)
    assert all(runs) and len(runs) == 12  # (10 calls; pick's big arm, twice: a second segment)


_DYNAMIC_MLIR = """
func.func @dmul(%a: tensor<?xf32>, %b: tensor<?xf32>) -> tensor<?xf32> {
  %0 = arith.mulf %a, %b : tensor<?xf32>
  return %0 : tensor<?xf32>
}
"""


def test_dynamic_argument_checks_are_one_op(compile_mlir, tmp_path, monkeypatch):
    """A dynamic-shape argument's checks have the byte length's integer op between them
    (view assert, `mul`, view buffer, buffer assert): still one fast op, and views of
    other lengths pass or raise as iree.runtime's imports do."""
    import numpy as np

    from runtime_support.exec.fast import FastProgram
    from runtime_support.exec.program import Compute, QueueProgram
    from runtime_support.exec.steps import BufferAssert, BufferViewAssert
    from runtime_support.hal.buffer import HalBuffer, aligned_empty

    src = tmp_path / "dmul.mlir"
    src.write_text(_DYNAMIC_MLIR)
    vmfb = compile_mlir(src, QUEUE_FLAGS)
    pkg = load_package(write_package(read_module_file(vmfb), tmp_path, "pkg"))
    programs = [v for n, v in vars(pkg).items() if n.startswith("QUEUE_") and isinstance(v, QueueProgram)]
    interleaved = 0
    for program in programs:
        kinds = [type(s) for s in program.steps]
        for k, kind in enumerate(kinds):
            if kind is BufferViewAssert:
                end = kinds.index(BufferAssert, k)
                interleaved += any(kinds[j] is Compute for j in range(k, end))
    assert interleaved  # (the shape this test is about)
    ctx = pkg.load(device="local-sync")
    session = IreeSession(vmfb)
    sig = session.signature("dmul")
    rng = np.random.default_rng(1)
    f32 = lambda n: rng.standard_normal(n).astype(np.float32)  # noqa: E731
    for a, b in [
        (f32(4), f32(4)), (f32(7), f32(7)), (f32(1), f32(1)), (f32(0), f32(0)),
        (f32(4), f32(5)),  # (IREE checks no dims against each other here: a's count)
    ]:
        (want,) = session.call("dmul", [a, b], sig)
        assert _same(want, ctx.call("dmul", a, b)), (a.shape, b.shape)
    # Views the checks refuse (passed as views: the numpy conversion would refuse them
    # first): the fast op raises what the general path's imports raise.
    monkeypatch.setenv("PYREE_QUEUE_FAST", "0")
    general = pkg.load(device="local-sync")
    monkeypatch.delenv("PYREE_QUEUE_FAST")
    good = ctx.wrap_array(aligned_empty((4,), np.float32))

    def view(shape=(4,), element=0x21000020, size=16):
        return HalBufferView(HalBuffer.allocate(size, 0xFFFF, 0xFFFF), shape, element, 1)

    for bad in (view(element=0x10000020), view(shape=(2, 2)), view(size=12), view(shape=(5,), size=16)):
        outcomes = []
        for c in (ctx, general):
            try:
                c.call("dmul", good, bad)
                outcomes.append("ok")
            except VMError as exc:
                outcomes.append(exc.code.name)
        assert outcomes[0] == outcomes[1] != "ok", (bad.shape, outcomes)
    import gc

    ops = [
        op.__name__ for o in gc.get_objects()
        if isinstance(o, FastProgram) and o.program in programs for op in o._fast_ops
    ]
    assert ops.count("argument") >= 2 and "view_assert" not in ops


def test_async_export_signals_the_callers_fence_from_its_plan(compile_mlir, tmp_path, monkeypatch):
    """An async export (`--iree-execution-model=async-external`, iree-turbine's
    `main$async`) ends its queue work with a queue operation that signals the caller's
    fence, and no await: the segment takes that signal as its last step, so every call
    runs the plan (nothing through the queue imports), results equal iree.runtime's; a
    failing execution fails the caller's fence with the error the general path gives it,
    which the sync wrapper's await raises."""
    import numpy as np

    from helpers_plans import launched_plans
    from runtime_support.errors import StatusCode
    from runtime_support.hal.command_buffer import HalCommandBuffer
    from runtime_support.exec.plan import Plan

    src = tmp_path / "mul.mlir"
    src.write_text(_MUL_MLIR)
    vmfb = compile_mlir(src, QUEUE_FLAGS + ("--iree-execution-model=async-external",))
    pkg = load_package(write_package(read_module_file(vmfb), tmp_path, "pkg"))
    session = IreeSession(compile_mlir(src, QUEUE_FLAGS))  # (the oracle: the same program, sync)
    rng = np.random.default_rng(3)
    launched = launched_plans(monkeypatch)
    calls = _counted_queue_imports(monkeypatch)
    ctx = pkg.load(device="local-sync")
    for _ in range(3):
        a, b = (rng.standard_normal(4).astype(np.float32) for _ in range(2))
        (want,) = session.call("mul", [a, b], session.signature("mul"))
        assert ctx.call("mul", a, b).tobytes() == np.asarray(want).tobytes()
    signal = ctx.create_fence()  # (the caller's own fence, as turbine passes it)
    view = ctx.call("mul", a, b, None, signal)
    assert signal.is_reached and view.to_numpy().tobytes() == np.asarray(want).tobytes()
    assert len(launched) == 4 and len({id(p) for p in launched}) == 1
    assert not calls.get("device_queue_alloca") and not calls.get("device_queue_execute_indirect")

    a, b = np.arange(4, dtype=np.float32), np.full(4, 1.5, np.float32)
    real_launch = Plan.launch

    def failing(plan, workers):
        raise VMError(StatusCode.DATA_LOSS, "kernel failed on purpose")

    monkeypatch.setattr(Plan, "launch", failing)
    with pytest.raises(VMError) as fast_error:
        ctx.call("mul", a, b)
    monkeypatch.setattr(Plan, "launch", real_launch)
    ctx.call("mul", a, b)  # (the next call runs)

    monkeypatch.setenv("PYREE_QUEUE_FAST", "0")  # the general path, failing the same way
    monkeypatch.setattr(HalCommandBuffer, "execute", lambda self, table=None, workers=None: failing(None, 1))
    general = pkg.load(device="local-sync")
    with pytest.raises(VMError) as general_error:
        general.call("mul", a, b)
    assert (fast_error.value.code, str(fast_error.value)) == (
        general_error.value.code, str(general_error.value),
    )


def test_queue_fill_does_what_the_import_does(compile_mlir, tmp_path, monkeypatch):
    """`queue.fill` on the fast path (fast_steps.py `_fill`) writes what the import writes and
    signals its fence; out of range, with a bad pattern length, on a read-only or null
    buffer or with no fence to carry the error, it fails the fence or raises exactly as
    the import does; a private signal fence awaited after it sees the same."""
    import numpy as np

    from runtime_support.exec.program import FailIf, QueueProgram
    from runtime_support.exec.steps import DeviceQueueFill, FenceAwait, FenceCreate
    from runtime_support.hal.buffer import Allocation, HalBuffer
    from runtime_support.hal.fence import Fence

    pkg, ctx = _mul_package(compile_mlir, tmp_path)

    def fill(signal):
        return DeviceQueueFill(
            device="device", queue_affinity=-1, wait_fence="wait", signal_fence=signal,
            target_buffer="buffer", target_offset="offset", length="length",
            pattern="pattern", pattern_length="width", flags=0,
        )

    inputs = ("device", "wait", "buffer", "offset", "length", "pattern", "width")
    public = QueueProgram(function="fill", inputs=(*inputs, "signal"), steps=(fill("signal"),),
                          outputs=())
    private = QueueProgram(
        function="fill_awaited", inputs=inputs,
        steps=(
            FenceCreate(out="f0", device="device", flags=0),
            fill("f0"),
            FenceAwait(out="status", timeout_millis=-1, flags=0, fences=("f0",)),
            FailIf(test="status", status="status", message="failed to wait on timepoint", location=None),
        ),
        outputs=("status",),
    )

    def read_only():
        array = np.zeros(16, np.uint8)
        array.flags.writeable = False
        return HalBuffer.over(Allocation.wrap(array, readonly=True), 0xFFFF, 0xFFFF)

    cases = [(0, 16, -2, 4), (4, 8, 0x0102, 2), (3, 5, 0x7F, 1), (12, -1, -1, 4), (0, 16, 1, 3),
             (8, 16, 1, 4), (-4, 4, 1, 4), (2, 4, 1, 4), (0, 0, 5, 1)]
    for program in (public, private):
        decls, bound = _hal_bindings(ctx, pkg, program.steps)
        fast, general = _fast_and_general(program, decls, bound, monkeypatch)
        for make in (lambda: HalBuffer.allocate(16, 0xFFFF, 0xFFFF), read_only, lambda: None):
            for case in cases:
                for signalled in (True, False) if program is public else (None,):
                    outcomes = []
                    for run in (fast, general):
                        buffer = make()
                        args = [ctx.device, Fence.reached(), buffer, *case]
                        fence = Fence() if signalled else None
                        if program is public:
                            args.append(fence)
                        outcome = _result(run, *args)
                        state = None if fence is None else (fence.query(), fence.reached_now())
                        outcomes.append((outcome, state, None if buffer is None else buffer.read()))
                    assert outcomes[0] == outcomes[1], (program.function, case, signalled)
    # (the cases are not all one kind: some fill, some fail)
    decls, bound = _hal_bindings(ctx, pkg, public.steps)
    fast, _ = _fast_and_general(public, decls, bound, monkeypatch)
    buffer, fence = HalBuffer.allocate(16, 0xFFFF, 0xFFFF), Fence()
    assert _result(fast, ctx.device, None, buffer, 4, 8, 0x0102, 2, fence) == ("ok", None)
    assert buffer.read() == bytes(4) + bytes([2, 1]) * 4 + bytes(4) and fence.reached_now()
    assert _result(fast, ctx.device, None, buffer, 0, 16, 1, 3, None)[0] == "error"

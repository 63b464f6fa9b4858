"""Runs of submissions (translator/codegen/runs.py, runtime_support/hal/runs.py).

A run of fused `alloca_execute_indirect` calls becomes one call whose dispatches run as
one native plan. The pass merges only what stays the same program; the run helper's fast
path gives what its general path (the per-group helper, step by step) gives, errors
included; and packages with runs give what unfused packages and iree.runtime give.
"""

from __future__ import annotations

from functools import partial

import threading

import numpy as np
import pytest

from bench.programs import chain_source
from runtime_support.errors import StatusCode, VMError
from runtime_support.hal import runs as hal_runs
from runtime_support.hal.buffer import fresh_buffer
from runtime_support.hal.device import LocalDevice
from runtime_support.loaders import statistics
from runtime_support.run_cli import import_package_as
from translator.codegen import write_package as _write_package
from translator.codegen.runs import RunTable
from translator.codegen.stmt import Assign, Comment, If, Raise, Release, Submit
from translator.reader import read_module_file

# These tests are of the fused mechanisms (`--host-path=fused`), kept until issue #25
# deletes them; the default host path is queue programs (tests/test_queue_programs.py).
write_package = partial(_write_package, host_path="fused")

LLVM_CPU = (
    "--iree-hal-target-device=local",
    "--iree-hal-local-target-device-backends=llvm-cpu",
    "--iree-llvmcpu-target-cpu=generic",
)
STEPS = 6


@pytest.fixture(scope="module")
def vmfb(compile_mlir, tmp_path_factory):
    src = tmp_path_factory.mktemp("runs_src") / f"chain{STEPS}.mlir"
    src.write_text(chain_source(STEPS))
    return compile_mlir(src, LLVM_CPU)


@pytest.fixture(scope="module")
def packages(vmfb, tmp_path_factory):
    """fused: bool -> (package module, generated source)."""
    out = tmp_path_factory.mktemp("runs_pkgs")
    pkgs = {}
    for fuse in (True, False):
        where = out / ("fused" if fuse else "unfused")
        pkg = write_package(read_module_file(vmfb), where, "chain", fuse_submissions=fuse)
        source = (pkg / "__init__.py").read_text()
        pkgs[fuse] = (import_package_as(f"_runs_test_chain_{fuse}", pkg), source)
    return pkgs


def _expected(a, b):
    out = a.copy()
    for _ in range(STEPS):
        out = (out + b).astype(np.float32)
    return out


def _inputs(seed=3):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(4).astype(np.float32), rng.standard_normal(4).astype(np.float32)


# -- generated code -------------------------------------------------------------------------


def test_the_chain_is_one_run_call(packages):
    _, source = packages[True]
    main = source.split("    def main(")[1].split("    def __init(")[0]
    assert main.count("submit_run(") == 1
    assert "submit_alloca_execute_indirect(" not in main
    layout = source.split("RUN_0 = Run(")[1].split("\n)\n")[0]
    assert layout.count("# submission ") == STEPS
    # each later submission reads the buffer the one before it allocated
    for k in range(1, STEPS):
        assert f"((-{k + 1}, " in layout
    _, unfused = packages[False]
    assert "submit_run" not in unfused and "RUN_0" not in unfused


# -- results --------------------------------------------------------------------------------


@pytest.mark.parametrize("device", ["local-sync", "local"])
def test_run_results_equal_unfused_and_numpy(packages, device):
    a, b = _inputs()
    fused = packages[True][0].load(device=device)
    unfused = packages[False][0].load(device=device)
    for _ in range(4):  # the first call builds the combined plan, the next ones reuse it
        got = fused.main(a, b)
        assert got.tobytes() == unfused.main(a, b).tobytes() == _expected(a, b).tobytes()


@pytest.mark.parametrize("device, driver", [("local-sync", "local-sync"), ("local", "local-task")])
def test_run_results_equal_iree(vmfb, packages, device, driver):
    rt = pytest.importorskip("iree.runtime")
    ctx = rt.SystemContext(config=rt.Config(driver))
    ctx.add_vm_module(rt.VmModule.copy_buffer(ctx.instance, vmfb.read_bytes()))
    ours = packages[True][0].load(device=device)
    for seed in range(4):
        a, b = _inputs(seed)
        want = np.asarray(ctx.modules.module.main(a, b).to_host()).tobytes()
        assert ours.main(a, b).tobytes() == want


def test_threads_sharing_a_context_get_their_own_results(packages):
    ctx = packages[True][0].load(device="local-sync")
    errors = []

    def work(seed):
        try:
            for k in range(40):
                a, b = _inputs(seed * 100 + k)
                assert ctx.main(a, b).tobytes() == _expected(a, b).tobytes()
        except BaseException as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_statistics_count_each_dispatch_of_the_run(packages):
    ctx = packages[True][0].load(device="local-sync")
    a, b = _inputs()
    ctx.main(a, b)
    statistics.reset()
    statistics.enable()
    try:
        for _ in range(3):
            ctx.main(a, b)
        counts = {name: c for name, (c, _) in statistics.snapshot().items()}
    finally:
        statistics.enable(False)
        statistics.reset()
    assert sum(counts.values()) == 3 * STEPS and "" not in counts


# -- the helper: fast path == general path --------------------------------------------------


def _run_helper(main):
    """The cell of the `submit_run` helper a loaded context's `main` closes over."""
    cells = dict(zip(main.__code__.co_freevars, main.__closure__))
    return cells["submit_run"]


@pytest.fixture
def recorded(packages):
    """(helper, the arguments main passed to it) from a fresh local-sync context."""
    ctx = packages[True][0].load(device="local-sync")
    cell = _run_helper(ctx._functions["main"])
    helper = cell.cell_contents
    calls = []
    cell.cell_contents = lambda *args: calls.append(args) or helper(*args)
    try:
        ctx.main(*_inputs())
    finally:
        cell.cell_contents = helper
    (args,) = calls
    return helper, args


def _call(fn, args):
    try:
        out = fn(*args)
    except VMError as e:
        return ("error", e.code, e.message)
    return ("ok", tuple(b.read() if b is not None else None for b in out[:-1]), out[-1])


def _input_buffer(device, size=16):
    buf = fresh_buffer(size, 0x30, 0xC03, device.allocator)
    buf.write(0, np.arange(size // 4, dtype=np.float32).tobytes())
    return buf


def _with(args, outside=None, scalars=None):
    layout, device, cbs, old_outside, fences, old_scalars = args
    return (layout, device, cbs, outside or old_outside, fences, scalars or old_scalars)


def test_recorded_call_is_the_whole_chain(recorded):
    helper, (layout, device, cbs, outside, fences, scalars) = recorded
    assert type(device) is LocalDevice and len(cbs) == len(layout.steps) == STEPS
    assert helper is not helper.general
    assert len(outside) == 2 and layout.outputs == (STEPS - 1,)


def test_fast_path_equals_general(recorded):
    helper, args = recorded
    device = args[1]
    outside = (_input_buffer(device), _input_buffer(device))
    before = device.allocator.bytes_allocated
    fast = _call(helper, _with(args, outside))
    fast_bytes = device.allocator.bytes_allocated - before
    gen = _call(helper.general, _with(args, outside))
    assert fast == gen and fast[0] == "ok" and fast[2] == 0
    assert device.allocator.bytes_allocated - before - fast_bytes == fast_bytes == 16 * STEPS
    x = np.arange(4, dtype=np.float32)
    assert fast[1][0] == (x + STEPS * x).astype(np.float32).tobytes()


@pytest.mark.parametrize(
    "change",
    ["short-outside", "null-outside", "short-allocation"],
)
def test_fast_path_errors_equal_general(recorded, change):
    """The combined plan declines (a per-call check) or is never built (a build check):
    the general path then raises or returns what the steps do, unfused."""
    helper, args = recorded
    device, scalars = args[1], args[5]
    helper(*_with(args, (_input_buffer(device), _input_buffer(device))))  # the plan exists
    if change == "short-outside":
        changed = _with(args, (_input_buffer(device, 8), _input_buffer(device)))
    elif change == "null-outside":
        changed = _with(args, (None, _input_buffer(device)))
    else:  # every allocation size (16) made 8: the dispatch's result slot is too short
        changed = _with(args, scalars=tuple(8 if v == 16 else v for v in scalars))
    fast, gen = _call(helper, changed), _call(helper.general, changed)
    assert fast == gen, (fast, gen)
    assert fast[0] == "error" or fast[2] != 0


def test_a_failing_dispatch_fails_as_its_await_does(recorded, monkeypatch):
    helper, args = recorded
    device = args[1]
    outside = (_input_buffer(device), _input_buffer(device))
    helper(*_with(args, outside))
    real = hal_runs.build

    def failing(*a, **k):
        entry = real(*a, **k)

        def run(table, workers):
            raise VMError(StatusCode.ABORTED, "dispatch 3 failed")

        entry.plan.run = run
        return entry

    monkeypatch.setattr(hal_runs, "build", failing)
    scalars = args[5] + (0,)  # other scalars: the cache rebuilds through `failing`
    layout, dev, cbs, _, fences, _ = args
    # as unfused: the execute fails its signal fence, and hal.fence.await of a failed
    # fence raises its error
    with pytest.raises(VMError) as info:
        helper(layout, dev, cbs, outside, fences, scalars)
    assert info.value.code == StatusCode.ABORTED and info.value.message == "dispatch 3 failed"


# -- the pass -------------------------------------------------------------------------------


def _submit(buf, cmd, table, scalar="i3", wait="r9"):
    step = ("r8", "i1", "i2", wait, scalar, "i4", "i5", "i6", "i7", "i1", "i2", cmd, "i7",
            tuple(table), tuple(k for k, e in enumerate(table) if e[0] is None), "i8", "i7")
    reads = frozenset({"r8", wait, cmd, "i1", "i2", "i4", scalar} | {e[0] for e in table if e[0]})
    return Submit(None, (buf, "i0"), "submit_alloca_execute_indirect(...)", reads, step=step)


def _check(message="failed to wait on timepoint"):
    return If(None, "i0", [Raise(None, "i0", message, "main", None)])


def _merge(body):
    table = RunTable(lambda: "submit_run", lambda module, name: name)
    return table.merge(body), table


def test_pass_merges_a_chain_and_keeps_what_registers_hold():
    body = [
        Comment(None, "fused: ..."),
        _submit("r1", "r4", [("r100", "i3", "i6"), (None, "i3", "i6")]),
        Release(None, ["r4", "r100"]),
        _check(),
        _submit("r2", "r5", [("r1", "i3", "i6"), (None, "i3", "i6")]),
        Release(None, ["r5", "r1"]),
        _check(),
        Release(None, ["r8"]),
    ]
    out, table = _merge(body)
    assert [type(s) for s in out] == [Comment, Assign, Release, If, Release]
    call = out[1]
    assert call.targets == ("r2", "i0")
    assert "r100" in call.reads and "r1" not in call.reads
    assert sorted(out[2].names) == ["r1", "r100", "r4", "r5"]
    (name, lines), = table.constants
    text = "\n".join(lines)
    assert "((0, 0, 1), (-1, 0, 1))" in text and "((-2, 0, 1), (-1, 0, 1))" in text
    assert lines[-2].strip() == "(1,),"  # submission 1's buffer comes back


def _two_steps(first_table=None, second_table=None, between=(), check2=None, **second):
    return [
        _submit("r1", "r4", first_table or [("r100", "i3", "i6"), (None, "i3", "i6")]),
        _check(),
        *between,
        _submit("r2", "r5", second_table or [("r1", "i3", "i6"), (None, "i3", "i6")], **second),
        check2 or _check(),
    ]


@pytest.mark.parametrize(
    "body",
    [
        # the second step reads an outside buffer a release emptied in between
        _two_steps(between=[Release(None, ["r100"])],
                   second_table=[("r100", "i3", "i6"), (None, "i3", "i6")]),
        # its status check is another statement
        _two_steps(check2=_check("another message")),
        # a scalar operand is a register the run writes (the status)
        _two_steps(scalar="i0"),
        # its wait fence is the buffer register the first step wrote
        _two_steps(wait="r1"),
        # a table entry's length is the status register the first step wrote
        _two_steps(second_table=[("r1", "i3", "i0"), (None, "i3", "i6")]),
    ],
    ids=["emptied-buffer", "other-check", "scalar-written", "wait-written", "table-scalar-written"],
)
def test_pass_leaves_steps_that_would_change_the_program(body):
    out, table = _merge(list(body))
    assert not table.constants and out == body


def test_pass_merges_inside_nested_bodies():
    inner = _two_steps()
    out, table = _merge([If(None, "i9", inner)])
    assert len(table.constants) == 1 and "submit_run" in out[0].body[1].value


def test_a_few_combined_plans_are_kept_per_run(recorded):
    """Scalars that change per call (sizes of dynamic shapes) each get a combined plan,
    up to runs.ENTRIES_PER_RUN, the oldest dropped first."""
    helper, args = recorded
    device = args[1]
    outside = (_input_buffer(device), _input_buffer(device))
    cells = dict(zip(helper.__code__.co_freevars, helper.__closure__))
    cache = cells["cache"].cell_contents
    layout, dev, cbs, _, fences, scalars = args
    for k in range(hal_runs.ENTRIES_PER_RUN + 2):  # (unused trailing scalars: other keys)
        out = helper(layout, dev, cbs, outside, fences, scalars + (k,))
        assert out[-1] == 0
        assert len(cache[layout]) == min(k + 2, hal_runs.ENTRIES_PER_RUN)
    assert scalars + (hal_runs.ENTRIES_PER_RUN + 1,) in cache[layout]
    assert scalars not in cache[layout]


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


@pytest.mark.parametrize("device, driver", [("local-sync", "local-sync"), ("local", "local-task")])
def test_a_run_of_many_workgroup_dispatches_equals_iree(compile_mlir, tmp_path, device, driver):
    """Dispatches of many workgroups (spread over the worker pool on `local`) in one
    combined plan, 128 KiB buffers inside the arena."""
    rt = pytest.importorskip("iree.runtime")
    src = tmp_path / "wide.mlir"
    src.write_text(WIDE)
    vmfb = compile_mlir(src, LLVM_CPU)
    pkg = write_package(read_module_file(vmfb), tmp_path / "out", "wide")
    assert "submit_run(" in (pkg / "__init__.py").read_text()
    ours = import_package_as(f"_runs_test_wide_{device}", pkg).load(device=device)
    ctx = rt.SystemContext(config=rt.Config(driver))
    ctx.add_vm_module(rt.VmModule.copy_buffer(ctx.instance, vmfb.read_bytes()))
    rng = np.random.default_rng(11)
    for _ in range(3):
        a, b = (rng.standard_normal((512, 64)).astype(np.float32) for _ in range(2))
        want = np.asarray(ctx.modules.module.wide(a, b).to_host()).tobytes()
        assert ours.wide(a, b).tobytes() == want


def test_steps_without_an_alloca_equal_general(recorded):
    """A run whose later steps write a buffer they were given (execute_indirect groups:
    runs.NO_ALLOCA in the alloca's places): the same buffers and results either way."""
    helper, (layout, device, cbs, _, fences, scalars) = recorded
    row = layout.steps[0]
    no_alloca = tuple(
        -1 if k in (hal_runs.CREATE_FLAGS, hal_runs.AFFINITY, hal_runs.POOL,
                    hal_runs.MEMORY_TYPES, hal_runs.USAGE, hal_runs.SIZE,
                    hal_runs.ALLOCA_FLAGS) else v
        for k, v in enumerate(row[: hal_runs.TABLE])
    )
    (_, o, n) = row[hal_runs.TABLE][0]
    custom = hal_runs.Run(
        (
            row,  # outside 0 + outside 1 -> its own buffer
            no_alloca + (((-2, o, n), (1, o, n), (2, o, n)),),  # that + outside 1 -> outside 2
            no_alloca + (((2, o, n), (1, o, n), (3, o, n)),),  # outside 2 + outside 1 -> outside 3
        ),
        (0,),
    )
    outs = []
    for fn in (helper, helper.general):
        outside = tuple(_input_buffer(device) for _ in range(4))
        for _ in range(2):  # (the fast path's second call reuses the combined plan)
            result = _call(fn, (custom, device, cbs[:3], outside, fences, scalars))
        outs.append((result, outside[2].read(), outside[3].read()))
    assert outs[0] == outs[1]
    x = np.arange(4, dtype=np.float32)
    assert outs[0][2] == (x + 3 * x).astype(np.float32).tobytes()
    cache = dict(zip(helper.__code__.co_freevars, helper.__closure__))["cache"].cell_contents
    (entry,) = cache[custom].values()
    assert entry.plan is not None  # the fast path ran it as one plan


def test_pass_merges_steps_without_an_alloca():
    def indirect(cmd, table):
        step = ("r8", None, None, "r9", None, None, None, None, None, "i1", "i2", cmd, "i7",
                tuple(table), (), "i8", "i7")
        reads = frozenset({"r8", "r9", cmd, "i1", "i2", "i7", "i8"} | {e[0] for e in table})
        return Submit(None, ("i0",), "submit_execute_indirect(...)", reads, step=step)

    body = [
        _submit("r1", "r4", [("r100", "i3", "i6"), (None, "i3", "i6")]),
        _check(),
        indirect("r5", [("r1", "i3", "i6"), ("r101", "i3", "i6")]),
        _check(),
        Release(None, ["r5"]),
    ]
    out, table = _merge(body)
    assert [type(s) for s in out] == [Comment, Assign, If, Release]
    assert out[1].targets == ("r1", "i0")  # the first step's buffer is still held
    (_, lines), = table.constants
    assert "(-1, -1, 0, -1, -1, -1, -1, -1" in "\n".join(lines)  # no alloca in step 1

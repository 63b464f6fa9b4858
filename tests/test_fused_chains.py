"""Queue chains fused into one call (translator/analyses/chains.py, runtime_support/hal/
fused.py `chain`): what the analysis finds, the fast path against the general one (the
imports in order) on results, accounting, errors and the escaping fence, and the fused
package against the unfused one and iree.runtime."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

from bench.programs import PROGRAM_DIR
from runtime_support.errors import StatusCode, VMError
from runtime_support.hal import fused, plan_runner
from runtime_support.hal.buffer import HalBuffer, aligned_empty
from runtime_support.hal.command_buffer import HalCommandBuffer
from runtime_support.hal.device import LocalDevice
from runtime_support.hal.fence import REACHED, Fence
from runtime_support.run_cli import import_package_as
from tests.helpers_compile import LLVM_CPU_FLAGS, compile_mlir
from tests.helpers_threads import outputs_from_threads
from translator.analyses import cfg, chains
from translator.analyses.liveness import RefLiveness
from translator.codegen import write_package as _write_package
from translator.pipeline import Pipeline
from translator.reader import read_module_file

# These tests are of the fused mechanisms (`--host-path=fused`), kept until issue #25
# deletes them; the default host path is queue programs (tests/test_queue_programs.py).
write_package = partial(_write_package, host_path="fused")

# The host loop, smaller: the same per-iteration chain (two allocas, join, execute, dealloca).
LOOP = (PROGRAM_DIR / "host_loop.mlir").read_text().replace("256x256", "16x16").replace("256", "16")


@pytest.fixture(scope="module")
def vmfb(tmp_path_factory):
    return compile_mlir(LOOP, tmp_path_factory.mktemp("chain_vmfb"), LLVM_CPU_FLAGS, "loop")


@pytest.fixture(scope="module")
def packages(vmfb, tmp_path_factory):
    out = tmp_path_factory.mktemp("chain_pkgs")
    return {
        fuse: import_package_as(
            f"_chain_test_{fuse}",
            write_package(read_module_file(vmfb), out / str(fuse), "loop", fuse_submissions=fuse,
                          loop_chains=False),  # (the chain helper per iteration: see test_chain_loops)
        )
        for fuse in (True, False)
    }


def _main_chains(vmfb, live_extra=frozenset()):
    pipeline = Pipeline(read_module_file(vmfb))
    fn = next(fn for fn in pipeline.functions if fn.name == "main")
    live = RefLiveness(fn, cfg.analyze(fn))
    if live_extra:
        after = live.after
        live.after = lambda op: after(op) | live_extra
    return chains.find(pipeline.module, fn, live)


def test_host_loop_chain_found(vmfb):
    found = list(_main_chains(vmfb).values())
    assert len(found) == 1
    c = found[0]
    assert len(c.allocas) == 2 and c.join is not None and c.dealloca is not None
    assert len(c.ops) == 9 and len(c.targets) == 3
    assert sorted(j for _, j in c.slots) == [0, 1] and c.dealloca_of in (0, 1)
    assert c.private  # the alloca, join and execute fences' registers


def test_not_found_when_a_private_fence_stays_live(vmfb):
    c = next(iter(_main_chains(vmfb).values()))
    fences = {op["results"][0].ordinal for op in (*c.ops[:-1],) if op is not c.execute
              and op not in c.allocas and op["results"]} - set(c.targets)
    assert fences
    for r in fences:
        assert not _main_chains(vmfb, frozenset({r}))


def test_generated_code_calls_the_chain_helper(packages):
    text = open(packages[True].__file__).read()
    assert "submit_chain(" in text and "ALLOCATED" in text
    # the dealloca'd buffer is read by nothing after the call: TRANSIENT, its result `_`
    assert "TRANSIENT, i14, 1, None),  # queue.dealloca" in text
    assert "r6, _, r0 = submit_chain(" in text
    assert "# fused: fence.create, device.queue.alloca" in text
    assert "submit_chain(" not in open(packages[False].__file__).read()


# -- fast path == general path ------------------------------------------------------------


def _capture(packages, monkeypatch, device="local-sync", call=None):
    """A fresh context of the fused package and the arguments of its chain helper's
    first call (the table as given, before the helper fills it in)."""
    calls = []
    real = fused.chain

    def spy(*imports):
        helper = real(*imports)

        def submit(*args):
            calls.append((*args[:8], list(args[8]), *args[9:]))
            return helper(*args)

        submit.helper = helper
        return submit

    monkeypatch.setattr(packages[True], "chain", spy)
    ctx = packages[True].load(device=device)
    if call is None:
        ctx.main(np.eye(16, dtype=np.float32), np.arange(16, dtype=np.float32))
    else:
        call(ctx)
    hal = ctx.modules["hal"]
    return ctx, hal, calls[0]


def _outcome(helper, args):
    """What a call leaves: its results (buffer bytes, the fence's state and error) or
    the error it raises."""
    try:
        *buffers, fence = helper(*args)
    except VMError as e:
        return ("error", e.code, e.message)
    error = None if fence.error is None else (fence.error.code, fence.error.message)
    return ("ok", [type(b).__name__ for b in buffers], fence.state == REACHED, error)


def _both(packages, monkeypatch, change=lambda args: args, call=None):
    """[(outcome, bytes allocated)] of the fast path, then the general one; the fast
    path's outcome is also checked the same without its compiled form (compile_chain)."""
    out = []
    for path in ("compiled", "uncompiled", "general"):
        _, hal, args = _capture(packages, monkeypatch, call=call)
        helper = fused.chain(
            hal.fence_create, hal.device_queue_alloca, hal.fence_join,
            hal.device_queue_execute_indirect, hal.device_queue_dealloca,
        )
        assert helper is not helper.general
        args = list(change(list(args)))
        device, plan = args[0], args[6]._plan
        if path == "uncompiled":
            plan.chains[args[9]] = None  # (as for a plan compile_chain declines)
        before = device.allocator.bytes_allocated
        got = _outcome(helper.general if path == "general" else helper, args)
        if path == "compiled":
            assert plan.chains[args[9]] is not None
        out.append((got, device.allocator.bytes_allocated - before))
    assert out[0] == out[1], ("compiled", out[0], "uncompiled", out[1])
    return out[1:]


def test_fast_path_equals_general(packages, monkeypatch):
    (fast, fb), (gen, gb) = _both(packages, monkeypatch)
    assert fast == gen and fb == gb
    # (the second buffer is dealloca'd by the chain and read by nothing after it: TRANSIENT)
    assert fast == ("ok", ["HalBuffer", "NoneType"], True, None)
    assert fb > 0


def test_fast_path_results_equal_general(packages, monkeypatch):
    """The allocated buffers hold the same bytes."""
    outs = []
    for general in (False, True):
        _, hal, args = _capture(packages, monkeypatch)
        helper = fused.chain(
            hal.fence_create, hal.device_queue_alloca, hal.fence_join,
            hal.device_queue_execute_indirect, hal.device_queue_dealloca,
        )
        *buffers, fence = (helper.general if general else helper)(*args)
        outs.append([None if b is None else b.read() for b in buffers])
    assert outs[0] == outs[1]
    assert outs[0][0] is not None and outs[0][1] is None  # (the TRANSIENT one)


def _alloca(k, index, value):
    def change(args):
        allocas = [list(a) for a in args[2]]
        allocas[k][index] = value
        args[2] = tuple(tuple(a) for a in allocas)
        return args

    return change


def _table(k, buffer):
    def change(args):
        table = list(args[8])
        table[k] = (buffer, *table[k][1:])
        args[8] = table
        return args

    return change


def _dealloca_buffer(buffer):
    def change(args):
        flags, aff, _, dflags, _, signal = args[10]
        args[10] = (flags, aff, buffer, dflags, -1, signal)
        return args

    return change


@pytest.mark.parametrize(
    "change, code",
    [
        (_alloca(1, 2, 1), StatusCode.UNIMPLEMENTED),  # pool of the second alloca
        (_alloca(0, 5, -1), StatusCode.INVALID_ARGUMENT),  # negative size
        (_table(0, None), StatusCode.INVALID_ARGUMENT),  # a null input entry: the command buffer fails
        (_table(0, Fence()), StatusCode.INVALID_ARGUMENT),  # wrong ref type: the import raises
        (_alloca(0, 5, 8), StatusCode.OUT_OF_RANGE),  # a new buffer shorter than its slot
        (_dealloca_buffer(None), StatusCode.INVALID_ARGUMENT),  # dealloca of null
        (_dealloca_buffer(Fence()), StatusCode.INVALID_ARGUMENT),
    ],
    ids=["pool", "negative-size", "null-entry", "wrong-ref", "short-buffer", "null-dealloca",
         "wrong-dealloca"],
)
def test_fast_path_errors_equal_general(packages, monkeypatch, change, code):
    (fast, fb), (gen, gb) = _both(packages, monkeypatch, change)
    assert fast == gen, (fast, gen)
    assert fb == gb
    # raised by an import, or carried by the escaping fence (a command-buffer failure)
    if fast[0] == "error":
        assert fast[1] == code, fast
    else:
        assert fast[3] is not None and fast[3][0] == code, fast


def test_command_buffer_failure_fails_the_escaping_fence(packages, monkeypatch):
    (fast, _), (gen, _) = _both(packages, monkeypatch, _alloca(0, 5, 8))
    assert fast == gen
    assert fast[0] == "ok" and not fast[2] and fast[3][0] == StatusCode.OUT_OF_RANGE


def test_outside_dealloca_buffer_equals_general(packages, monkeypatch):
    def change(args):
        device = args[0]
        from runtime_support.hal.buffer import fresh_buffer

        return _dealloca_buffer(fresh_buffer(16, 0x30, 0xC03, device.allocator))(args)

    (fast, fb), (gen, gb) = _both(packages, monkeypatch, change)
    assert fast == gen and fb == gb and fast[0] == "ok"


def test_unreached_wait_fence_takes_the_general_path(packages, monkeypatch):
    results = []
    for general in (False, True):
        _, hal, args = _capture(packages, monkeypatch)
        helper = fused.chain(
            hal.fence_create, hal.device_queue_alloca, hal.fence_join,
            hal.device_queue_execute_indirect, hal.device_queue_dealloca,
        )
        wait = Fence()
        args = list(args)
        args[1] = wait
        *buffers, fence = (helper.general if general else helper)(*args)
        early = fence.state == REACHED
        wait.signal()  # the queued work runs now
        results.append((early, fence.state == REACHED,
                        [None if b is None else b.read() for b in buffers]))
    assert results[0] == results[1]
    assert results[0][:2] == (False, True)


def test_foreign_imports_get_the_general_path_only(packages, monkeypatch):
    _, hal, args = _capture(packages, monkeypatch)
    calls = []

    def spy(f):
        return lambda *a: calls.append(f.__name__) or f(*a)

    helper = fused.chain(
        spy(hal.fence_create), spy(hal.device_queue_alloca), spy(hal.fence_join),
        spy(hal.device_queue_execute_indirect), spy(hal.device_queue_dealloca),
    )
    assert not hasattr(helper, "general")
    *_, fence = helper(*args)
    assert fence.state == REACHED
    assert calls == [
        "fence_create", "device_queue_alloca", "fence_create", "device_queue_alloca",
        "fence_join", "fence_create", "device_queue_execute_indirect", "fence_create",
        "device_queue_dealloca",
    ]


def test_fast_path_taken_on_local_sync(packages, monkeypatch):
    """The fused package's chain calls allocate through the fast path (fresh_buffer here)."""
    _, hal, args = _capture(packages, monkeypatch)
    allocs = []
    real = fused.fresh_buffer
    monkeypatch.setattr(fused, "fresh_buffer", lambda *a: allocs.append(a) or real(*a))
    monkeypatch.setattr(plan_runner, "fresh_buffer", lambda *a: allocs.append(a) or real(*a))
    helper = fused.chain(
        hal.fence_create, hal.device_queue_alloca, hal.fence_join,
        hal.device_queue_execute_indirect, hal.device_queue_dealloca,
    )
    plan = args[6]._plan
    plan.chains.clear()  # (compiled again, with the counting fresh_buffer)
    helper(*args)
    # through the call site's compiled chain: one new buffer, the TRANSIENT one is scratch
    assert len(allocs) == 1
    assert plan.chains[args[9]] is not None
    plan.chains[args[9]] = None  # and the fast path without it: both new
    helper(*args)
    assert len(allocs) == 3
    assert isinstance(args[0], LocalDevice) and isinstance(args[6], HalCommandBuffer)
    assert all(isinstance(e[0], (HalBuffer, type(fused.ALLOCATED))) for e in args[8])


# -- differential: fused == unfused == iree.runtime ----------------------------------------


@pytest.mark.parametrize("device, driver", [("local-sync", "local-sync"), ("local", "local-task")])
def test_fused_loop_matches_iree(vmfb, packages, device, driver):
    rt = pytest.importorskip("iree.runtime")
    ctx = rt.SystemContext(config=rt.Config(driver))
    ctx.add_vm_module(rt.VmModule.copy_buffer(ctx.instance, vmfb.read_bytes()))
    ours = {fuse: packages[fuse].load(device=device).main for fuse in (True, False)}
    rng = np.random.default_rng(3)
    for _ in range(4):
        w = (rng.standard_normal((16, 16)) * 0.3).astype(np.float32)
        x = rng.standard_normal(16).astype(np.float32)
        want = np.asarray(ctx.modules.module.main(w, x).to_host()).tobytes()
        assert np.asarray(ours[True](w, x)).tobytes() == want
        assert np.asarray(ours[False](w, x)).tobytes() == want


# -- a coarse-fences export: the dealloca signals the caller's fence ----------------------

ASYNC = """
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


@pytest.fixture(scope="module")
def async_packages(tmp_path_factory):
    out = tmp_path_factory.mktemp("chain_async")
    vmfb = compile_mlir(ASYNC, out, LLVM_CPU_FLAGS, "mlp_async")
    return vmfb, {
        fuse: import_package_as(
            f"_chain_async_{fuse}",
            write_package(read_module_file(vmfb), out / str(fuse), "mlp_async", fuse_submissions=fuse),
        )
        for fuse in (True, False)
    }


def test_outside_signal_chain_found(async_packages):
    vmfb, pkgs = async_packages
    pipeline = Pipeline(read_module_file(vmfb))
    fn = next(fn for fn in pipeline.functions if fn.name == "main_async")
    [c] = chains.find(pipeline.module, fn, RefLiveness(fn, cfg.analyze(fn))).values()
    assert len(c.allocas) == 2 and c.dealloca is not None and c.targets[-1] == -1
    assert c.dealloca_of >= 0
    assert "submit_chain(" in open(pkgs[True].__file__).read()


@pytest.mark.parametrize("device", ["local-sync", "local"])
def test_outside_signal_fused_equals_unfused_and_numpy(async_packages, device):
    _, pkgs = async_packages
    x, w1, w2 = _async_inputs()
    outs = []
    for fuse in (True, False):
        ctx = pkgs[fuse].load(device=device)
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


def _async_call(ctx):
    ctx.call_vm("main_async", *_views(ctx, _async_inputs()), None, ctx.create_fence())


def _fresh_signal(args):
    flags, aff, buffer, dflags, which, _ = args[10]
    args[10] = (flags, aff, buffer, dflags, which, Fence())
    return args


@pytest.mark.parametrize(
    "change, code",
    [
        (lambda a: a, None),
        (lambda a: _alloca(1, 5, 8)(a), StatusCode.OUT_OF_RANGE),  # the command buffer fails
        (_alloca(0, 2, 1), StatusCode.UNIMPLEMENTED),
    ],
    ids=["ok", "short-buffer", "pool"],
)
def test_outside_signal_fast_path_equals_general(async_packages, monkeypatch, change, code):
    _, pkgs = async_packages
    (fast, fb), (gen, gb) = _both(
        pkgs, monkeypatch, lambda a: change(_fresh_signal(a)), call=_async_call
    )
    assert fast == gen and fb == gb, (fast, gen)
    if code is None:
        assert fast[0] == "ok" and fast[2] and fast[3] is None
    elif fast[0] == "error":
        assert fast[1] == code
    else:  # the caller's fence carries the failure
        assert not fast[2] and fast[3][0] == code


@pytest.mark.parametrize("device", ["local-sync", "local"])
def test_threads_sharing_a_context_get_the_single_thread_results(packages, device):
    """Four threads run the fused loop on one context at once: the queue's draining role,
    the plan's guard and the compiled chain's fallbacks keep each call's result its own."""
    ctx = packages[True].load(device=device)
    rng = np.random.default_rng(11)
    inputs = [((rng.standard_normal((16, 16)) * 0.3).astype(np.float32),
               rng.standard_normal(16).astype(np.float32)) for _ in range(4)]
    want = [np.asarray(ctx.main(w, x)).tobytes() for w, x in inputs]
    got = outputs_from_threads(lambda w, x: np.asarray(ctx.main(w, x)).tobytes(), inputs, 150)
    for k, outs in enumerate(got):
        assert len(outs) == 150 and set(outs) == {want[k]}


def _compiled_chain(packages, monkeypatch):
    """The loop's first chain call's arguments and its call site's compiled chain."""
    _, hal, args = _capture(packages, monkeypatch)
    helper = fused.chain(
        hal.fence_create, hal.device_queue_alloca, hal.fence_join,
        hal.device_queue_execute_indirect, hal.device_queue_dealloca,
    )
    helper(*args)
    fast = args[6]._plan.chains[args[9]]
    assert fast is not None and args[10][2] is fused.TRANSIENT
    return helper, args, fast


@pytest.mark.parametrize("by", ["copy", "memset"])
def test_transient_scratch_is_zero_filled_before_each_run(packages, monkeypatch, by):
    """The scratch a TRANSIENT alloca runs on holds zeros when the plan runs, as a new
    buffer would, whatever the last call left in it (small ones zero-filled from zero
    bytes, larger ones by memset)."""
    import ctypes

    if by == "memset":
        monkeypatch.setattr(plan_runner, "_ZERO_BY_COPY", 0)
    helper, args, fast = _compiled_chain(packages, monkeypatch)
    scratch = fast.__globals__["scratch"][0]
    assert scratch is not None  # the first call made it
    buffer, _ = scratch
    view = memoryview(buffer.allocation.array)
    seen = []
    real = fast.__globals__["run_plan"]

    def run_plan(address):
        seen.append(ctypes.string_at(buffer.address, buffer.length))
        return real(address)

    monkeypatch.setitem(fast.__globals__, "run_plan", run_plan)
    for _ in range(2):
        view[:] = b"\xab" * buffer.length  # what a last run could leave
        *_, fence = helper(*args)
        assert fence.state == REACHED
    assert seen == [bytes(buffer.length)] * 2
    assert fast.__globals__["scratch"][0] is scratch  # reused, not made again


def test_transient_over_the_scratch_limit_gets_a_new_buffer(packages, monkeypatch):
    """A TRANSIENT alloca larger than the scratch limit is allocated per call; the
    results and accounting equal the general path's."""
    from runtime_support.hal import plan_runner as pr

    monkeypatch.setattr(pr, "_SCRATCH_MAX", 8)  # (read when the chain is compiled)
    (fast, fb), (gen, gb) = _both(packages, monkeypatch)
    assert fast == gen == ("ok", ["HalBuffer", "NoneType"], True, None) and fb == gb

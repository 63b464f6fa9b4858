"""Threads and soak: calls from many threads, many calls, many load/drop cycles.

Short forms run in the default test command. The long forms are one command:

    PYREE_SOAK=long python -m pytest -q tests/runtime/test_threads_soak.py

(100,000 calls, 500 load/drop cycles, 8 threads x 2,000 calls). A context shared by
threads serializes their calls (no error, no lost update); contexts are independent.
Leaks are judged on RSS, open fds and mappings after a warm-up.
"""

from __future__ import annotations

import gc
import os
import threading

import numpy as np
import pytest

from helpers_compile import LLVM_CPU_FLAGS
from hostile_util import load_package, process_footprint
from iree_oracle import IreeSession
from translator.codegen import write_package
from translator.reader import read_module_file

LONG = os.environ.get("PYREE_SOAK") == "long"
THREADS = 8
CALLS_PER_THREAD = 2000 if LONG else 200
SOAK_CALLS = 100_000 if LONG else 3_000
CYCLES = 500 if LONG else 40

PROGRAM = """
util.global private mutable @count = 0 : i32

func.func @bump(%x: i32) -> i32 {
  %v = util.global.load @count : i32
  %s = arith.addi %v, %x : i32
  util.global.store %s, @count : i32
  return %s : i32
}

func.func @fma(%a: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<64xf32> {
  %0 = arith.mulf %a, %b : tensor<64xf32>
  %1 = arith.addf %0, %a : tensor<64xf32>
  return %1 : tensor<64xf32>
}
"""


@pytest.fixture(scope="module")
def built(compile_mlir, tmp_path_factory):
    d = tmp_path_factory.mktemp("soak")
    (d / "soak.mlir").write_text(PROGRAM)
    vmfb = compile_mlir(d / "soak.mlir", LLVM_CPU_FLAGS)
    pkg = write_package(read_module_file(vmfb), d / "out", "soak")
    return vmfb, load_package(pkg)


def _inputs(seed: int):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(64).astype(np.float32), rng.standard_normal(64).astype(np.float32)


@pytest.fixture(scope="module")
def expected(built):
    """IREE's results for the per-thread inputs."""
    vmfb, _ = built
    s = IreeSession(vmfb)
    return [s.call("fma", list(_inputs(t)))[0] for t in range(THREADS)]


def _hammer(contexts, expected, calls):
    errors = []
    barrier = threading.Barrier(THREADS)

    def work(t):
        ctx = contexts[t % len(contexts)]
        a, b = _inputs(t)
        try:
            barrier.wait()
            for _ in range(calls):
                if not np.array_equal(ctx.fma(a, b).view(np.uint32), expected[t].view(np.uint32)):
                    errors.append(f"thread {t}: wrong result")
                    return
                ctx.bump(1)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(f"thread {t}: {type(e).__name__}: {e}")

    threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=600)
    assert not any(th.is_alive() for th in threads), "a thread hung"
    assert not errors, errors[:5]


def test_threads_share_one_context(built, expected):
    """8 threads x N calls on ONE context: calls serialize; no error, no lost update."""
    _, pkg = built
    ctx = pkg.load(device="local")
    before = process_footprint()
    _hammer([ctx], expected, CALLS_PER_THREAD)
    assert ctx.bump(0) == THREADS * CALLS_PER_THREAD
    _report(f"{THREADS} threads x {CALLS_PER_THREAD} calls on one context", before)


def test_threads_on_own_contexts(built, expected):
    _, pkg = built
    contexts = [pkg.load(device="local") for _ in range(THREADS)]
    before = process_footprint()
    _hammer(contexts, expected, CALLS_PER_THREAD)
    assert [c.bump(0) for c in contexts] == [CALLS_PER_THREAD] * THREADS
    _report(f"{THREADS} threads x {CALLS_PER_THREAD} calls on {THREADS} contexts", before)


def _report(what, before):
    """The footprint figures around a threaded run, with -s (threads' first calls warm
    per-thread caches, so growth here is reported, not judged: the soak tests judge it)."""
    gc.collect()
    print(f"\n{what}: before {before}, after {process_footprint()}")


def _leak_check(before, after, what):
    print(f"\n{what}: before {before}, after {after}")  # the figures, with -s
    assert after["fds"] <= before["fds"], (what, before, after)
    assert after["maps"] <= before["maps"] + 8, (what, before, after)
    assert after["rss_kib"] - before["rss_kib"] < 16 * 1024, (what, before, after)


def test_soak_calls(built, expected):
    _, pkg = built
    ctx = pkg.load(device="local-sync")
    a, b = _inputs(0)
    for _ in range(200):  # warm-up: caches, allocator pools
        ctx.fma(a, b)
    gc.collect()
    before = process_footprint()
    for i in range(SOAK_CALLS):
        r = ctx.fma(a, b)
        ctx.bump(1)
    gc.collect()
    after = process_footprint()
    assert np.array_equal(r.view(np.uint32), expected[0].view(np.uint32))
    assert ctx.bump(0) == SOAK_CALLS
    _leak_check(before, after, f"{SOAK_CALLS} calls")


def test_load_drop_cycles(built, expected):
    _, pkg = built
    a, b = _inputs(1)

    def cycle():
        ctx = pkg.load(device="local")
        r = ctx.fma(a, b)
        ctx.close()
        return r

    for _ in range(10):
        cycle()
    gc.collect()
    before = process_footprint()
    for _ in range(CYCLES):
        r = cycle()
    gc.collect()
    after = process_footprint()
    assert np.array_equal(r.view(np.uint32), expected[1].view(np.uint32))
    _leak_check(before, after, f"{CYCLES} load/drop cycles")


HOLD_PROGRAM = """
func.func private @custom.hold(i32) -> i32

func.func @main(%a: tensor<4xf32>, %n: i32) -> tensor<4xf32> {
  %x = call @custom.hold(%n) : (i32) -> i32
  %f = arith.sitofp %x : i32 to f32
  %e = tensor.empty() : tensor<4xf32>
  %s = linalg.fill ins(%f : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %r = arith.addf %a, %s : tensor<4xf32>
  return %r : tensor<4xf32>
}
"""


@pytest.fixture(scope="module")
def hold_pkg(compile_mlir, tmp_path_factory):
    d = tmp_path_factory.mktemp("hold")
    (d / "hold.mlir").write_text(HOLD_PROGRAM)
    vmfb = compile_mlir(d / "hold.mlir", LLVM_CPU_FLAGS)
    return load_package(write_package(read_module_file(vmfb), d / "out", "hold"))


def test_close_waits_for_calls_in_flight(hold_pkg):
    """close() from another thread while a call is inside an import and a second call
    waits for it: the call completes with the right result, the queued one either
    completes too or is refused (never runs on the globals close() released: "device is
    null"), and every later call is FAILED_PRECONDITION naming close()."""
    from runtime_support.errors import StatusCode, VMError

    outcomes, closer = [], None

    class Hold:
        IMPORTS = {"custom.hold": "0i_i"}

        def hold(self, n):
            nonlocal closer
            if n == 1 and closer is None:  # the first call
                queued.start()  # a call from another thread, queued behind this one
                queued.join(0.5)
                closer = threading.Thread(target=ctx.close)  # close() from a third
                closer.start()
                closer.join(0.5)  # (returns at once where close() does not wait)
            return n

    def queued_call():
        try:
            outcomes.append(ctx.main(np.ones(4, np.float32), 2))
        except VMError as e:
            outcomes.append(e)

    queued = threading.Thread(target=queued_call)
    ctx = hold_pkg.load(device="local", modules={"custom": Hold()})
    np.testing.assert_array_equal(ctx.main(np.ones(4, np.float32), 1), np.full(4, 2.0, np.float32))
    closer.join(60)
    queued.join(60)
    assert not closer.is_alive() and not queued.is_alive()
    (out,) = outcomes
    if isinstance(out, VMError):
        assert out.code == StatusCode.FAILED_PRECONDITION and "close()" in str(out), out
    else:
        np.testing.assert_array_equal(out, np.full(4, 3.0, np.float32))
    with pytest.raises(VMError) as e:
        ctx.main(np.ones(4, np.float32), 1)
    assert e.value.code == StatusCode.FAILED_PRECONDITION and "close()" in str(e.value)
    assert len(str(e.value).splitlines()) == 1

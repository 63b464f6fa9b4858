"""A loop call's iterations in native code (docs/design/host-path.md §19,
runtime_support/exec/native_loops.py, native/loop.ll).

Here: each op of the op table gives what its numerics helper gives on edge and random
operands (i32, i64 and f32: NaNs, infinities, signed zeros, denormals); the token walk
and bench's convergence_loop run every iteration after a loop call's first natively and are
bit-identical with iree.runtime, with native loops off and on the general path; a loop
whose key changes mid-run (a new shape) hands the iteration to Python; a plan failing
in a native iteration raises the plan's error, as the held run raises it; the turns of
new buffers never hand a buffer still in use to the next iteration (convergence_loop
reads its last iteration's buffer). A program that is a segment and a tail of fills
(greedy decoding's token written per step, and a token writer whose fill runs past its
buffer) runs natively too: its fill checked before it is done, a fill that would fail
left to the general path from the tail, which raises what native loops off raise.
"""

from __future__ import annotations

import ctypes
import itertools
import math
import struct
from array import array

import numpy as np
import pytest

from iree_oracle import IreeSession
from runtime_support.errors import VMError
from test_host_loop_calls import CASES, FLAGS, NEVER, _args, _outcome, _walk
from test_host_loop_calls import host_loops  # noqa: F401 - (the fixture: every HostLoop made)
from test_loop_carried_programs import _package

pytest.importorskip("iree.runtime")


# -- the ops ------------------------------------------------------------------------------

_I32 = (0, 1, -1, 2, 7, 31, 32, 33, 63, 64, 255, 256, 65535, 65536, 2**31 - 1, -(2**31), -5)
_I64 = _I32 + (2**32, 2**32 + 5, -(2**32), 2**63 - 1, -(2**63), 2**40 + 3)


def _f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


_F32 = [_f32(x) for x in (0.0, -0.0, 1.0, -1.0, 1.5, 1e-40, -1e-40, 3.4e38, math.inf, -math.inf, 2.5)]
_NAN = float("nan")


def _bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def _run_one(code: int, operands: list[int], arity: int) -> int:
    """R[out] = op(R[0..arity-1]), then leave (on a zero register): one native run."""
    from runtime_support.native import jit
    from runtime_support.native import layout as L

    zero, out = 3, 4
    regs = array("q", [*operands, *([0] * (3 - len(operands))), 0, 0])
    args = [0, 1, 2][:arity] + [0] * (3 - arity)
    ops = array("q", [code, out, *args, L.LOOP_LEAVE_IF, 0, zero, 0, 0])
    handles = array("q", [0])
    block = array("q", [0] * len(L.LOOP_FIELDS))
    names = L.LOOP_FIELDS_NAMES
    block[names.index("ops")] = ops.buffer_info()[0]
    block[names.index("regs")] = regs.buffer_info()[0]
    block[names.index("handles")] = handles.buffer_info()[0]
    block[names.index("limit")] = 10
    assert jit.native_runtime().run_loop(block.buffer_info()[0]) == L.LOOP_EXIT_LEFT
    return regs[out]


def test_each_op_equals_its_numerics_helper():
    """Every op of native_loops.OPS on edge operands of its kinds (and NaN for the f32
    compares) gives the numerics helper's result (an f32 result: its bits)."""
    from runtime_support.exec.computes import compute_function
    from runtime_support.exec.native_loops import OPS

    rng = np.random.default_rng(5)
    for mnemonic, (code, kinds, result) in OPS.items():
        fn = compute_function(mnemonic)
        wide = ".i64" in mnemonic and not mnemonic.startswith("trunc.i64")
        pool = {"i": list(_I64 if wide or mnemonic.startswith("trunc.i64") else _I32), "f": _F32 + [_NAN]}
        pool["i"] += [int(v) for v in rng.integers(-(2**31), 2**31, 6)]
        if wide:
            pool["i"] += [int(v) for v in rng.integers(-(2**63), 2**63 - 1, 6)]
        for values in itertools.product(*[pool[k] for k in kinds]):
            words = [v if k == "i" else _bits(v) for v, k in zip(values, kinds)]
            words = [w - (1 << 64) if w >= 1 << 63 else w for w in words]
            got = _run_one(code, words, len(kinds))
            want = fn(*values)
            if result == "f":
                assert got == _bits(want) or (want != want and got & 0x7FFFFFFF > 0x7F800000), (
                    mnemonic, values)
            else:
                assert got == want, (mnemonic, values, got, want)


# -- loops ----------------------------------------------------------------------------------


@pytest.mark.parametrize("device", ["local-sync", "local"])
def test_walk_runs_natively_and_matches_iree(device, compile_mlir, tmp_path, monkeypatch, host_loops):
    """The walk's cases bit-identical with iree.runtime; every iteration but the first
    loop call's first (a call: the shape is built) runs natively, and the same results
    with native loops off and on the general path."""
    vmfb = _walk(compile_mlir, tmp_path)
    pkg = _package(vmfb, tmp_path)
    session = IreeSession(vmfb)
    sig = session.signature("main")
    want = [np.asarray(session.call("main", list(_args(*c)), sig)[0]).tobytes() for c in CASES]
    ctx = pkg.load(device=device)
    for case, expected in zip(CASES, want):
        assert _outcome(ctx, *_args(*case)) == (expected, None), case
    (loop,) = host_loops
    trips = [int.from_bytes(w, "little", signed=True) // 100 for w in want]
    assert loop.iterations == sum(trips)
    assert loop.native_iterations == sum(trips) - 1  # (all but the first: it builds the shape)
    for knob in ("PYREE_NATIVE_LOOP", "PYREE_QUEUE_FAST"):
        with monkeypatch.context() as m:
            m.setenv(knob, "0")
            other = pkg.load(device=device)
            for case, expected in zip(CASES, want):
                assert _outcome(other, *_args(*case)) == (expected, None), (knob, case)
    assert host_loops[1].native_iterations == 0


def test_convergence_loop_runs_natively(compile_mlir, tmp_path, monkeypatch, host_loops):
    """convergence_loop (its carried buffer read by the next iteration: two turns; an f32
    compare in its test) bit-identical with iree.runtime for several inputs, natively; the
    allocator counts the bytes the held runs in Python count."""
    from bench.programs import PROGRAMS

    program = {p.name: p for p in PROGRAMS}["convergence_loop"]
    vmfb = compile_mlir(program.source, FLAGS)
    pkg = _package(vmfb, tmp_path)
    session = IreeSession(vmfb)
    sig = session.signature("main")
    inputs = [program.inputs(np.random.default_rng(seed)) for seed in range(4)]

    def flat(results):
        return b"".join(np.asarray(r).tobytes() for r in results)

    want = [flat(session.call("main", list(args), sig)) for args in inputs]

    def run(ctx):
        """(the results, the bytes the calls' allocas counted)"""
        allocator = ctx.device.allocator
        before = allocator.bytes_allocated
        out = [flat(ctx.call("main", *args)) for args in inputs]
        return out, allocator.bytes_allocated - before

    on, counted = run(pkg.load(device="local-sync"))
    assert on == want
    (loop,) = host_loops
    assert loop.native_iterations == loop.iterations - 1 > 0  # (all but the first)
    with monkeypatch.context() as m:
        m.setenv("PYREE_NATIVE_LOOP", "0")
        assert run(pkg.load(device="local-sync")) == (want, counted)


def test_new_shape_mid_run_hands_over_to_python(compile_mlir, tmp_path, host_loops, monkeypatch):
    """A key check that fails mid-run (the shape's integer key changed) leaves the
    iteration to Python from the registers as they are: planted here by a shape whose
    key never matches after the first native iteration (the op table's expected value
    changed), the results stay iree.runtime's."""
    from runtime_support.exec import native_loops
    from runtime_support.native import layout as L

    real = native_loops.NativeLoop.build.__func__

    def build(cls, *args):
        native = real(cls, *args)
        ops = native.ops
        for i in range(0, len(ops), L.LOOP_OP_WORDS):
            if ops[i] == L.LOOP_DECLINE_NE:
                ops[i + 3] += 12345  # (no iteration's key)
                return native
        raise AssertionError("no key check in the walk's op table (its key has integers)")

    monkeypatch.setattr(native_loops.NativeLoop, "build", classmethod(build))
    vmfb = _walk(compile_mlir, tmp_path)
    session = IreeSession(vmfb)
    sig = session.signature("main")
    ctx = _package(vmfb, tmp_path).load(device="local-sync")
    for case in CASES:
        want = np.asarray(session.call("main", list(_args(*case)), sig)[0]).tobytes()
        assert _outcome(ctx, *_args(*case)) == (want, None), case
    (loop,) = host_loops
    assert loop.native_iterations == 0 and loop.held_iterations > 0


def test_plan_failing_in_a_native_iteration_raises_its_error(compile_mlir, tmp_path, monkeypatch, host_loops):
    """A plan failing in the k-th native iteration (the native runner's result injected
    at the foreign call's boundary: the iterations before it run for real) raises the
    error the plan's runner reports, as a held run raises it (the segment's await); the
    context runs the loop again afterwards."""
    from runtime_support.native import jit
    from runtime_support.native import layout as L

    vmfb = _walk(compile_mlir, tmp_path)
    ctx = _package(vmfb, tmp_path).load(device="local-sync")
    args = _args(NEVER, 1, 20)
    good = _outcome(ctx, *args)
    (loop,) = host_loops
    ((shape, native),) = loop._natives.values()
    index = next(i for i, e in enumerate(native.plan.errors) if e is not None)
    code = (index << 8) | L.ERR_KERNEL
    try:
        native.plan._raise(code)
    except VMError as exc:
        expected = (exc.code, str(exc))
    runtime = jit.native_runtime()
    real = runtime.run_loop
    names = L.LOOP_FIELDS_NAMES
    for k in (0, 1, 5):

        def failing(address, k=k):
            block = (ctypes.c_int64 * len(names)).from_address(address)
            block[names.index("iterations")] = 0
            if k:  # (k iterations for real, then the k+1-th fails)
                block[names.index("limit")] = k
                assert real(address) == L.LOOP_EXIT_LIMIT
            block[names.index("pc")] = native.plan_pc
            block[names.index("result")] = code
            return L.LOOP_EXIT_FAILED

        monkeypatch.setattr(runtime, "run_loop", failing)
        result, error = _outcome(ctx, *args)
        assert result is None and error[0] == expected[0], k
        assert error[1] == expected[1] + "; in main", k  # (the function the await raises in)
        monkeypatch.setattr(runtime, "run_loop", real)
        assert _outcome(ctx, *args) == good


# -- a segment and a tail of fills ----------------------------------------------------------

# The walk, each step's token written into the result at the step's index (a queue fill
# after the segment, its flags a register): n past 8 writes past the buffer's end.
_WRITER = """func.func @main(%tab: tensor<8xi32>, %start: tensor<i32>, %n: tensor<i32>) -> tensor<8xi32> {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c7 = arith.constant 7 : i32
  %none = arith.constant -1 : i32
  %t0 = tensor.extract %start[] : tensor<i32>
  %n0 = tensor.extract %n[] : tensor<i32>
  %e0 = tensor.empty() : tensor<8xi32>
  %out0 = linalg.fill ins(%none : i32) outs(%e0 : tensor<8xi32>) -> tensor<8xi32>
  %r:3 = scf.while (%i = %c0, %tok = %t0, %out = %out0) : (i32, i32, tensor<8xi32>) -> (i32, i32, tensor<8xi32>) {
    %more = arith.cmpi slt, %i, %n0 : i32
    %alive = arith.cmpi ne, %tok, %c0 : i32
    %go = arith.andi %more, %alive : i1
    scf.condition(%go) %i, %tok, %out : i32, i32, tensor<8xi32>
  } do {
  ^bb0(%i: i32, %tok: i32, %out: tensor<8xi32>):
    %row = arith.index_cast %tok : i32 to index
    %x = tensor.extract_slice %tab[%row] [1] [1] : tensor<8xi32> to tensor<1xi32>
    %e = tensor.empty() : tensor<1xi32>
    %y = linalg.generic {indexing_maps = [affine_map<(d) -> (d)>, affine_map<(d) -> (d)>],
                         iterator_types = ["parallel"]}
        ins(%x : tensor<1xi32>) outs(%e : tensor<1xi32>) {
    ^bb0(%a: i32, %b: i32):
      %s = arith.addi %a, %c1 : i32
      %u = arith.remui %s, %c7 : i32
      linalg.yield %u : i32
    } -> tensor<1xi32>
    %k0 = arith.constant 0 : index
    %next = tensor.extract %y[%k0] : tensor<1xi32>
    %ii = arith.index_cast %i : i32 to index
    %out1 = tensor.insert %next into %out[%ii] : tensor<8xi32>
    %i1 = arith.addi %i, %c1 : i32
    scf.yield %i1, %next, %out1 : i32, i32, tensor<8xi32>
  }
  return %r#2 : tensor<8xi32>
}
"""


def _counted(ctx, calls):
    """(each call's result bytes or error, the bytes the calls' allocas counted)"""
    allocator = ctx.device.allocator
    before = allocator.bytes_allocated
    out = []
    for fn, args in calls:
        try:
            out.append((np.asarray(fn(ctx, *args)).tobytes(), None))
        except VMError as exc:
            out.append((None, (exc.code, str(exc))))
    return out, allocator.bytes_allocated - before


def test_greedy_decode_runs_natively(compile_mlir, tmp_path, monkeypatch, host_loops):
    """bench's greedy_decode (a segment and a fill per step) bit-identical with
    iree.runtime for several start tokens, every iteration after a loop call's first
    native; native loops off give the same results and count the same bytes."""
    from bench.programs import PROGRAMS

    program = {p.name: p for p in PROGRAMS}["greedy_decode"]
    vmfb = compile_mlir(program.source, FLAGS)
    pkg = _package(vmfb, tmp_path)
    weights = program.setup(np.random.default_rng(3))
    session = IreeSession(vmfb)
    session.call("setup", list(weights), session.signature("setup"))
    sig = session.signature("main")
    starts = [np.array(t, np.int32) for t in (0, 1, 5, 77, 255)]
    want = [(np.asarray(session.call("main", [t], sig)[0]).tobytes(), None) for t in starts]
    calls = [(lambda ctx, t: ctx.call("main", t), (t,)) for t in starts]

    def load():
        ctx = pkg.load(device="local-sync")
        ctx.setup(*weights)
        return ctx

    on, counted = _counted(load(), calls)
    assert on == want
    (loop,) = host_loops
    assert loop.native_iterations == loop.iterations - 1 > 0  # (all but the first)
    with monkeypatch.context() as m:
        m.setenv("PYREE_NATIVE_LOOP", "0")
        assert _counted(load(), calls) == (want, counted)
    assert host_loops[1].native_iterations == 0


def test_fill_past_the_end_raises_as_native_loops_off(compile_mlir, tmp_path, monkeypatch, host_loops):
    """The token writer: trip counts 0-8 bit-identical with iree.runtime; 9 and 12 steps
    write past the result's end, where iree.runtime fails (OUT_OF_RANGE) and pyree raises
    the same error with native loops on (the fill's check declines: the tail's general
    path raises it), off, and on the general path."""
    src = tmp_path / "writer.mlir"
    src.write_text(_WRITER)
    vmfb = compile_mlir(src, FLAGS)
    pkg = _package(vmfb, tmp_path)
    session = IreeSession(vmfb)
    sig = session.signature("main")
    table = np.array([1, 1, 0, 1, 1, 1, 1, 1], np.int32)
    counts = (0, 1, 5, 8, 9, 12)
    calls = [(lambda ctx, n: ctx.call("main", *_args(table, 1, n)), (n,)) for n in counts]
    on, counted = _counted(pkg.load(device="local-sync"), calls)
    for n, (result, error) in zip(counts, on):
        if n <= 8:
            assert result == np.asarray(session.call("main", list(_args(table, 1, n)), sig)[0]).tobytes()
        else:
            assert result is None and error[0].name == "OUT_OF_RANGE", n
            with pytest.raises(Exception, match="OUT_OF_RANGE"):
                session.call("main", list(_args(table, 1, n)), sig)
    (loop,) = host_loops
    assert loop.native_iterations > 0
    for knob in ("PYREE_NATIVE_LOOP", "PYREE_QUEUE_FAST"):
        with monkeypatch.context() as m:
            m.setenv(knob, "0")
            assert _counted(pkg.load(device="local-sync"), calls) == (on, counted), knob

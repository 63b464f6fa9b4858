"""Loop calls (docs/design/host-path.md §18, runtime_support/exec/host_loops.py).

A host loop whose body is one queue program and integer ops that cannot fail, its
back edge a conditional branch on a value those ops compute from the program's
outputs (a readback) and counters, is written with the program's call as
`queue_n.loop(...)`: one call runs the iterations while the test holds and returns the
state of the last call. Here: the analysis marks the greedy decoding loop and a token
walk (each iteration indexes a table with the last iteration's readback, and stops on
token 0 or after n steps) and nothing else; the results are bit-identical with
iree.runtime on both local devices for trip counts 0, 1, 2, 3, 50 and an early exit, with
loop calls on, off (PYREE_HOST_LOOP=0) and on the general path (PYREE_QUEUE_FAST=0); a
failing execution at the first or a later iteration raises what loop calls off and the
general path raise; a queue held by another thread and statistics on give the same
results. Where the program is one segment (the walk, convergence_loop) the iterations
after a loop call's first run its plan under one hold of the queue (held runs).
"""

from __future__ import annotations

import numpy as np
import pytest

from conftest import REPO_ROOT, load_manifest
from iree_oracle import IreeSession
from runtime_support.errors import StatusCode, VMError
from test_loop_carried_programs import _failing_executions, _package, _regions

pytest.importorskip("iree.runtime")

FLAGS = tuple(load_manifest()["variants"]["embedded-elf"]["flags"])

# A token walk: each iteration's dispatch reads the table row of the last iteration's
# token (a dispatch constant from the readback) and the loop stops on token 0 or after n.
# next = (table[tok] + 1) % 7: 0 (the early exit) where table[tok] is 6.
_WALK = """
func.func @main(%tab: tensor<8xi32>, %start: tensor<i32>, %n: tensor<i32>) -> tensor<i32> {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c7 = arith.constant 7 : i32
  %t0 = tensor.extract %start[] : tensor<i32>
  %n0 = tensor.extract %n[] : tensor<i32>
  %r:2 = scf.while (%i = %c0, %tok = %t0) : (i32, i32) -> (i32, i32) {
    %more = arith.cmpi slt, %i, %n0 : i32
    %alive = arith.cmpi ne, %tok, %c0 : i32
    %go = arith.andi %more, %alive : i1
    scf.condition(%go) %i, %tok : i32, i32
  } do {
  ^bb0(%i: i32, %tok: i32):
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
    %i1 = arith.addi %i, %c1 : i32
    scf.yield %i1, %next : i32, i32
  }
  %c100 = arith.constant 100 : i32
  %hundreds = arith.muli %r#0, %c100 : i32
  %sum = arith.addi %hundreds, %r#1 : i32
  %res = tensor.from_elements %sum : tensor<i32>
  return %res : tensor<i32>
}
"""

# A table whose walk never reaches token 0 (1 -> 2 -> 1 ...), and one that does: from
# token 3, 3 -> 4 -> 5 -> 6 -> 0 (the fourth iteration reads table[6] = 6).
NEVER = np.array([1, 1, 0, 1, 1, 1, 1, 1], np.int32)
ARANGE = np.arange(8, dtype=np.int32)
CASES = [  # (table, start, n): trip counts 0, 1, 2, 3, 50, an early exit, a start of 0
    (NEVER, 1, 0), (NEVER, 1, 1), (NEVER, 1, 2), (NEVER, 1, 3), (NEVER, 1, 50),
    (ARANGE, 3, 50), (ARANGE, 0, 5),
]


@pytest.fixture
def host_loops(monkeypatch):
    """Every HostLoop made from here on (exec/host_loops.py), to read its counters."""
    from runtime_support.exec import host_loops

    made = []
    real = host_loops.HostLoop.__init__

    def init(self, *args):
        real(self, *args)
        made.append(self)

    monkeypatch.setattr(host_loops.HostLoop, "__init__", init)
    return made


def _walk(compile_mlir, tmp_path):
    src = tmp_path / "walk.mlir"
    src.write_text(_WALK)
    return compile_mlir(src, FLAGS)


def _args(table, start, n):
    return table, np.array(start, np.int32), np.array(n, np.int32)


def _outcome(ctx, *args):
    try:
        return ctx.call("main", *args).tobytes(), None
    except VMError as exc:
        return None, (exc.code, str(exc))


def test_analysis_marks_the_readback_loops(compile_mlir, tmp_path):
    """The walk's, greedy decoding's and convergence_loop's loop bodies are loop calls
    (one region each, its readback feeding the test; convergence_loop's a float
    compare), readback_loop's (several programs) and host_loop's (loop mode's) are not;
    the loop call passes the counters and returns the counter the ops after the call
    read."""
    regions = _regions(_walk(compile_mlir, tmp_path))
    (looped,) = [r for r in regions if r.loop is not None]
    assert not looped.loop_exits and not looped.carried
    assert [op.mnemonic for op in looped.loop.after] == ["add.i32", "cmp.lt.i32.s", "cmp.nz.i32", "and.i32"]
    assert len(looped.loop.kept) == 1  # (the counter)
    greedy = _regions(compile_mlir(REPO_ROOT / "bench" / "programs" / "greedy_decode.mlir", FLAGS))
    (looped,) = [r for r in greedy if r.loop is not None]
    assert [(a.is_ref, b.is_ref) for a, b in looped.loop.copies] == [(True, True)]  # (the fill's fence)
    convergence = _regions(compile_mlir(REPO_ROOT / "bench" / "programs" / "convergence_loop.mlir", FLAGS))
    (looped,) = [r for r in convergence if r.loop is not None]
    assert "cmp.lt.f32.o" in [op.mnemonic for op in looped.loop.after]  # (the tolerance test)
    readback = _regions(compile_mlir(REPO_ROOT / "bench" / "programs" / "readback_loop.mlir", FLAGS))
    assert not any(r.loop is not None for r in readback)  # (its body: several programs)
    host = _regions(compile_mlir(REPO_ROOT / "bench" / "programs" / "host_loop.mlir", FLAGS))
    assert not any(r.loop is not None for r in host) and any(r.loop_exits for r in host)


@pytest.mark.parametrize("device", ["local-sync", "local"])
def test_walk_matches_iree(device, compile_mlir, tmp_path, monkeypatch, host_loops):
    """Every case bit-identical with iree.runtime, loop calls on and off and on the
    general path; with loop calls on, each call of the function is one loop call that ran
    all its iterations (the trip count: at least 1, the loop being a do-while after its
    guard)."""
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
    assert trips == [0, 1, 2, 3, 50, 4, 0]
    assert loop.loop_calls == sum(1 for t in trips if t) and loop.iterations == sum(trips)
    # (every iteration but the first loop call's first, which builds the shape: the
    # plan under the loop call's hold, natively from the loop call's start once built)
    assert loop.held_iterations == loop.iterations - 1
    for knob in ("PYREE_HOST_LOOP", "PYREE_QUEUE_FAST"):
        with monkeypatch.context() as m:
            m.setenv(knob, "0")
            other = pkg.load(device=device)
            for case, expected in zip(CASES, want):
                assert _outcome(other, *_args(*case)) == (expected, None), (knob, case)
    # (loop calls off: one iteration per loop call)
    off = host_loops[1]
    assert off.iterations == off.loop_calls == sum(trips)


@pytest.mark.parametrize("fail_at", [1, 2, 9])
def test_failing_execution_raises_as_the_general_path(
    fail_at, compile_mlir, tmp_path, monkeypatch, host_loops
):
    """The `fail_at`-th execution fails (a kernel's error): loop calls on (their held
    runs in Python: the failure is injected in Plan.launch, which native iterations do
    not call; test_native_loops.py fails those), off and the general path raise the same
    error; the context runs the loop again afterwards."""
    vmfb = _walk(compile_mlir, tmp_path)
    pkg = _package(vmfb, tmp_path)
    args = _args(NEVER, 1, 12)
    outcomes = {}
    for name, knob in (("on", None), ("off", "PYREE_HOST_LOOP"), ("general", "PYREE_QUEUE_FAST")):
        with monkeypatch.context() as m:
            m.setenv("PYREE_NATIVE_LOOP", "0")
            if knob:
                m.setenv(knob, "0")
            ctx = pkg.load(device="local-sync")
            good = _outcome(ctx, *args)  # (warm: the plan is built)
            _failing_executions(m, fail_at)
            outcomes[name] = _outcome(ctx, *args)
        assert _outcome(ctx, *args) == good
    assert outcomes["on"][1] is not None and outcomes["on"][1][0] == StatusCode.DATA_LOSS
    assert outcomes["on"] == outcomes["off"] == outcomes["general"]


def test_queue_held_by_another_thread(compile_mlir, tmp_path, host_loops):
    """While another thread holds the device's queue, the loop call's first iteration
    waits behind it, the others run under the loop call's hold; where the hold is never
    had, every iteration is a call; the results are the same."""
    from helpers_threads import call_behind_held_queue

    vmfb = _walk(compile_mlir, tmp_path)
    ctx = _package(vmfb, tmp_path).load(device="local-sync")
    args = _args(NEVER, 1, 20)
    want = _outcome(ctx, *args)
    got = call_behind_held_queue(ctx.device.queue, lambda: _outcome(ctx, *args))
    assert got == want
    (loop,) = host_loops
    # (the second call's queue programs before the loop wait behind the other thread: its
    # loop call starts with the queue free and runs every iteration natively)
    assert loop.iterations == 40 and loop.held_iterations == 39

    def held_elsewhere(self):
        return False  # (another thread's: no held runs, each iteration a call)

    from runtime_support.hal.queue import LocalQueue

    real = LocalQueue.hold
    LocalQueue.hold = held_elsewhere
    try:
        assert _outcome(ctx, *args) == want
    finally:
        LocalQueue.hold = real
    assert loop.iterations == 60 and loop.held_iterations == 39


def test_statistics_on(compile_mlir, tmp_path, monkeypatch, host_loops):
    """With statistics on, the same results (each iteration's plan its own counted run)."""
    from runtime_support.loaders import statistics

    vmfb = _walk(compile_mlir, tmp_path)
    ctx = _package(vmfb, tmp_path).load(device="local-sync")
    args = _args(ARANGE, 3, 30)
    want = _outcome(ctx, *args)
    (loop,) = host_loops
    held = loop.held_iterations
    monkeypatch.setattr(statistics, "enabled", True)
    assert _outcome(ctx, *args) == want
    assert loop.held_iterations == held  # (each iteration a call)


def test_greedy_decode_loop_calls(compile_mlir, tmp_path, monkeypatch, host_loops):
    """bench's greedy_decode (its loop call carries the fill's fence): every start token
    bit-identical with loop calls off and the general path, the steps (16, or fewer where
    token 0 ends it; none from token 0) run by one loop call per call."""
    from bench.programs import PROGRAMS

    program = {p.name: p for p in PROGRAMS}["greedy_decode"]
    vmfb = compile_mlir(program.source, FLAGS)
    pkg = _package(vmfb, tmp_path)
    rng = np.random.default_rng(3)
    weights = program.setup(rng)
    starts = [np.array(s, np.int32) for s in (0, 1, 2, 3, 7, 100, 255)]

    def run(ctx):
        ctx.setup(*weights)
        return [ctx.call("main", s).tobytes() for s in starts]

    on = run(pkg.load(device="local-sync"))
    (loop,) = host_loops
    steps = [int((np.frombuffer(r, np.int32) != -1).sum()) for r in on]  # (a token per step)
    assert loop.loop_calls == sum(1 for n in steps if n) and loop.iterations == sum(steps)
    assert loop.iterations > 2 * loop.loop_calls
    # (a segment and a fill: no held runs in Python; natively, every iteration but the
    # first loop call's first: exec/native_loops.py)
    assert loop.held_iterations == loop.native_iterations == loop.iterations - 1
    for knob in ("PYREE_HOST_LOOP", "PYREE_QUEUE_FAST"):
        with monkeypatch.context() as m:
            m.setenv(knob, "0")
            assert run(pkg.load(device="local-sync")) == on, knob


def test_convergence_loop_calls(compile_mlir, tmp_path, monkeypatch, host_loops):
    """bench's convergence_loop (a float compare in its test, two carried refs): several
    inputs bit-identical with loop calls off and the general path, one loop call per call
    running every iteration."""
    from bench.programs import PROGRAMS

    program = {p.name: p for p in PROGRAMS}["convergence_loop"]
    vmfb = compile_mlir(program.source, FLAGS)
    pkg = _package(vmfb, tmp_path)
    inputs = [program.inputs(np.random.default_rng(seed)) for seed in range(3)]

    def run(ctx):
        return [b"".join(np.asarray(r).tobytes() for r in ctx.call("main", *args)) for args in inputs]

    on = run(pkg.load(device="local-sync"))
    (loop,) = host_loops
    assert loop.loop_calls == len(inputs) and loop.iterations > 2 * loop.loop_calls
    assert loop.held_iterations == loop.iterations - 1  # (all but the one that builds the shape)
    for knob in ("PYREE_HOST_LOOP", "PYREE_QUEUE_FAST"):
        with monkeypatch.context() as m:
            m.setenv(knob, "0")
            assert run(pkg.load(device="local-sync")) == on, knob


def test_inline_ops_equal_their_numerics_helpers():
    """Each op exec/computes.py writes inline (`inline_op`) gives what its numerics helper
    gives, on every pair of edge operands (i32 and i64 edges both: the registers hold
    Python ints of either width)."""
    import itertools

    from runtime_support.exec.computes import compute_function, inline_op

    edges = (0, 1, -1, 2, 31, 32, 63, 64, 2**31 - 1, -(2**31), 2**63 - 1, -(2**63), 2**32 + 5)
    mnemonics = [
        "and.i32", "and.i64", "or.i32", "or.i64", "xor.i32", "xor.i64", "cmp.lt.i32.s",
        "cmp.lt.i64.s", "cmp.eq.i32", "cmp.eq.i64", "cmp.ne.i32", "cmp.ne.i64", "add.i32",
        "add.i64", "cmp.nz.i32", "cmp.nz.i64", "ext.i32.i64.s", "trunc.i64.i32",
    ]
    for mnemonic in mnemonics:
        fn = compute_function(mnemonic)
        arity = 1 if mnemonic.startswith(("cmp.nz", "ext", "trunc")) else 2
        op = inline_op(mnemonic, tuple(range(arity)), arity)
        assert op is not None, mnemonic
        for args in itertools.product(edges, repeat=arity):
            env = [*args, None]
            op(env)
            want = fn(*args)
            assert env[arity] == want and type(env[arity]) is type(want), (mnemonic, args)
    assert inline_op("mul.i64", (0, 1), 2) is None

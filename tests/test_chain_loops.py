"""Host loops of one queue chain (translator/codegen/loops.py, runtime_support/hal/
chain_loop.py): what the pass rewrites and what it leaves alone, and the rewritten loop
(its steps replayed natively) against the loop as it was, numpy and iree.runtime, on
results, accounting, statistics, failures, fallbacks and threads."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

from bench.programs import PROGRAM_DIR
from runtime_support.errors import StatusCode, VMError
from runtime_support.hal import chain_loop
from runtime_support.loaders import statistics
from runtime_support.run_cli import import_package_as
from tests.helpers_compile import LLVM_CPU_FLAGS, compile_mlir
from tests.helpers_threads import outputs_from_threads
from translator.codegen import loops, write_package as _write_package
from translator.codegen.stmt import Assign, ChainCall, Comment, Continue, If, Release, While
from translator.codegen.stmt import Provenance
from translator.reader import read_module_file

# These tests are of the fused mechanisms (`--host-path=fused`), kept until issue #25
# deletes them; the default host path is queue programs (tests/test_queue_programs.py).
write_package = partial(_write_package, host_path="fused")

# The benchmark's host loop, smaller: 50 iterations of a 16-wide matvec + tanh.
LOOP = (PROGRAM_DIR / "host_loop.mlir").read_text().replace("256x256", "16x16").replace("256", "16")
ITERATIONS = 50


@pytest.fixture(scope="module")
def vmfb(tmp_path_factory):
    return compile_mlir(LOOP, tmp_path_factory.mktemp("loop_vmfb"), LLVM_CPU_FLAGS, "loop")


@pytest.fixture(scope="module")
def packages(vmfb, tmp_path_factory):
    """{True: the loop rewritten, False: as it was}."""
    out = tmp_path_factory.mktemp("loop_pkgs")
    return {
        rewrite: import_package_as(
            f"_chain_loop_test_{rewrite}",
            write_package(read_module_file(vmfb), out / str(rewrite), "loop", loop_chains=rewrite),
        )
        for rewrite in (True, False)
    }


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    w = (rng.standard_normal((16, 16)) * 0.3).astype(np.float32)
    return w, rng.standard_normal(16).astype(np.float32)


def _expected(w, x):
    """The loop in numpy (float32 matvec + tanh, 50 times): a tolerance check only; the
    bit-exact comparisons are against the unrewritten loop and iree.runtime."""
    for _ in range(ITERATIONS):
        x = np.tanh(w @ x).astype(np.float32)
    return x


def test_the_loop_is_rewritten(packages):
    text = open(packages[True].__file__).read()
    assert "loop_0 = ChainLoop(" in text and "loop_0.step()" in text
    assert "r6, _, r0 = loop_0.results()" in text
    # the moves the steps carry are gone; the chain call is made only through the loop
    assert "r0 = r6" not in text and "submit_chain(\n" not in text.split("loop_0 = ChainLoop(")[1]
    plain = open(packages[False].__file__).read()
    assert "ChainLoop" not in plain and "r0 = r6" in plain


@pytest.mark.parametrize("device, driver", [("local-sync", "local-sync"), ("local", "local-task")])
def test_rewritten_loop_matches_iree_and_the_loop_as_it_was(vmfb, packages, device, driver):
    rt = pytest.importorskip("iree.runtime")
    ctx = rt.SystemContext(config=rt.Config(driver))
    ctx.add_vm_module(rt.VmModule.copy_buffer(ctx.instance, vmfb.read_bytes()))
    ours = {k: packages[k].load(device=device).main for k in (True, False)}
    for seed in range(4):
        w, x = _inputs(seed)
        want = np.asarray(ctx.modules.module.main(w, x).to_host())
        for _ in range(2):  # (the second call replays on buffers of the first's kind)
            got = np.asarray(ours[True](w, x))
            assert got.tobytes() == want.tobytes()
            assert np.asarray(ours[False](w, x)).tobytes() == want.tobytes()
        np.testing.assert_allclose(got, _expected(w, x), rtol=1e-4, atol=1e-5)


def _count_replays(monkeypatch):
    """Counts the steps each loop's replays ran, read at its results()."""
    counts = {"replayed": 0}
    real_results = chain_loop.ChainLoop.results

    def results(self):
        replay = self.replay
        out = real_results(self)
        counts["replayed"] += replay.ran if replay is not None else 0
        return out

    monkeypatch.setattr(chain_loop.ChainLoop, "results", results)
    return counts


def test_steps_after_the_first_are_replays(packages, monkeypatch):
    counts = _count_replays(monkeypatch)
    ctx = packages[True].load(device="local-sync")
    ctx.main(*_inputs())  # (its first step builds the command buffer's plan)
    assert counts["replayed"] == ITERATIONS - 1
    ctx.main(*_inputs())
    assert counts["replayed"] == 2 * ITERATIONS - 1


def _accounting(ctx):
    device = ctx.refs.get(0)
    command_buffer = ctx.refs.get(2)
    return device.allocator.bytes_allocated, command_buffer.executions


def test_accounting_equals_the_loop_as_it_was(packages):
    """Each replayed step counts its allocas and its execution as the chain call did."""
    deltas = []
    for k in (True, False):
        ctx = packages[k].load(device="local-sync")
        before = _accounting(ctx)
        ctx.main(*_inputs())
        after = _accounting(ctx)
        deltas.append((after[0] - before[0], after[1] - before[1]))
    assert deltas[0] == deltas[1] and deltas[0][1] == ITERATIONS


def test_statistics_count_every_step(packages):
    """With statistics on, steps go through the chain helper: each dispatch counted."""
    ctx = packages[True].load(device="local-sync")
    w, x = _inputs()
    want = np.asarray(ctx.main(w, x)).tobytes()
    statistics.reset()
    statistics.enable()
    try:
        got = np.asarray(ctx.main(w, x)).tobytes()
        counts = {name: c for name, (c, _) in statistics.snapshot().items()}
    finally:
        statistics.enable(False)
        statistics.reset()
    assert got == want and sum(counts.values()) == ITERATIONS


@pytest.mark.parametrize("busy", ["queue", "plan"])
def test_steps_that_cannot_replay_go_through_the_helper(packages, monkeypatch, busy):
    """Where another thread holds the queue or the plan when the deferred steps would
    run, every step goes through the helper: the same results and accounting."""
    ctx = packages[True].load(device="local-sync")
    w, x = _inputs(5)
    want = np.asarray(packages[False].load(device="local-sync").main(w, x)).tobytes()
    assert np.asarray(ctx.main(w, x)).tobytes() == want  # (the plan built: replays from step 1)
    counts = _count_replays(monkeypatch)
    real_run = chain_loop.ChainLoop._run_pending

    def run_pending(self, r):
        if busy == "plan":
            token = r.plan._token.pop()  # (as another thread running the plan holds it)
            try:
                return real_run(self, r)
            finally:
                r.plan._token.append(token)
        queue = r.queue
        with queue._lock:
            queue._draining = True  # (as another thread draining the queue holds it)
        try:
            return real_run(self, r)
        finally:
            with queue._lock:
                queue._draining = False

    monkeypatch.setattr(chain_loop.ChainLoop, "_run_pending", run_pending)
    before = _accounting(ctx)
    if busy == "queue":
        # (the helper's steps then queue behind the "other thread": drain them as it would)
        real_helper_step = chain_loop.ChainLoop._helper_step

        def helper_step(self):
            queue = self.args[0].queue
            with queue._lock:
                queue._draining = False
            real_helper_step(self)

        monkeypatch.setattr(chain_loop.ChainLoop, "_helper_step", helper_step)
    assert np.asarray(ctx.main(w, x)).tobytes() == want
    after = _accounting(ctx)
    assert counts["replayed"] == 0
    plain = packages[False].load(device="local-sync")
    p_before = _accounting(plain)
    plain.main(w, x)
    plain.main(w, x)
    p_after = _accounting(plain)
    assert (after[0] - before[0]) * 2 == p_after[0] - p_before[0]  # (two calls there)
    assert after[1] - before[1] == ITERATIONS


def test_a_failing_replayed_step_fails_the_loop_as_the_chain_did(packages, monkeypatch):
    """A dispatch failure in a replayed step fails its fence; later steps wait on it and
    run nothing; the await raises the error, as the chain helper's steps would."""
    ctx = packages[True].load(device="local-sync")
    w, x = _inputs()
    ctx.main(w, x)
    before = _accounting(ctx)
    ctx.main(w, x)
    good = _accounting(ctx)[0] - before[0]  # (what a whole call allocates)
    plan = ctx.refs.get(2)._plan
    ran = []
    real_set_up = chain_loop.ChainLoop._set_up

    def set_up(self):
        replay = real_set_up(self)
        real_steps, block = replay.run_steps, replay.block
        count, ran_word = chain_loop._COUNT, chain_loop._RAN

        def run_steps(address):  # the native steps, the fifth one failing
            if len(ran) == 4:
                ran.append(1)
                block[ran_word] = 1  # (as the native loop leaves a failed step: run)
                return 1
            block[count] = min(block[count], 4 - len(ran))
            result = real_steps(address)
            ran.extend([1] * block[ran_word])
            return result

        replay.run_steps = run_steps
        return replay

    def fail(result):
        raise VMError(StatusCode.ABORTED, "injected kernel failure")

    monkeypatch.setattr(chain_loop.ChainLoop, "_set_up", set_up)
    monkeypatch.setattr(plan, "_raise", fail)
    before = _accounting(ctx)
    with pytest.raises(VMError) as info:
        ctx.main(w, x)
    assert info.value.code == StatusCode.ABORTED and "injected kernel failure" in str(info.value)
    assert len(ran) == 5  # (nothing ran after the failure)
    # every step still allocated as its chain call would (the later ones through the helper)
    after = _accounting(ctx)
    assert after[0] - before[0] == good


@pytest.mark.parametrize("device", ["local-sync", "local"])
def test_threads_sharing_a_context(packages, device):
    ctx = packages[True].load(device=device)
    inputs = [_inputs(seed) for seed in range(4)]
    want = [np.asarray(ctx.main(w, x)).tobytes() for w, x in inputs]
    got = outputs_from_threads(lambda w, x: np.asarray(ctx.main(w, x)).tobytes(), inputs, 40)
    for k, outs in enumerate(got):
        assert set(outs) == {want[k]}


# -- what the pass leaves alone -------------------------------------------------------------

_P = Provenance("main", 0, "add.i32", None)
_CALL = Provenance("main", 0, "call", None)


def _chain(table=(("r0", "i14", "i12"), ("r5", "i14", "i10"), (None, "i14", "i12")),
           sizes="i12", targets=("r6", "r0")):
    args = (("r3", "device"), ("r1", "wait fence"), (f"((i14, i16, i14, i3, i2, {sizes}, i14),)", "allocas"),
            ("None", ""), ("i14", ""), ("i16", ""), ("r4", ""), ("i14", ""), ("[...]", "table"),
            ("((2, 0),)", ""), ("None", ""))
    reads = frozenset({"r3", "r1", "r0", "r5", "r4", "i14", "i16", "i3", "i2", "i12", "i10", sizes})
    return ChainCall(_CALL, targets, "submit_chain(...)", reads, args=args, table=table)


def _loop(chain=None, ints=None, moves=None, post=None):
    body = [Comment(None, "x"), chain or _chain(), Release(None, ["r1"])]
    body += ints if ints is not None else [
        Assign(_P, ("i0",), "add_i32(i0, i5)", frozenset({"i0", "i5"})),
        Assign(_P, ("i4",), "int(i0 < i6)", frozenset({"i0", "i6"})),
    ]
    body.append(If(None, "i4", (moves if moves is not None else [
        Assign(None, ("r1",), "r0", frozenset({"r0"})),
        Assign(None, ("r0",), "r6", frozenset({"r6"})),
    ]) + [Continue(None)]))
    body += post if post is not None else [Release(None, ["r3"])]
    return While(None, body)


def test_the_model_loop_matches():
    assert loops._match(_loop()) is not None


@pytest.mark.parametrize(
    "loop",
    [
        # an operand the body writes that no move carries from the chain
        _loop(chain=_chain(sizes="i0")),
        # an integer op reading a ref
        _loop(ints=[Assign(_P, ("i4",), "int(r6 is not None)", frozenset({"r6"}))]),
        # an import call among the integer ops
        _loop(ints=[Assign(_CALL, ("i4",), "hal_devices_count()", frozenset())]),
        # a table buffer carried from somewhere other than the chain's allocation
        _loop(moves=[Assign(None, ("r1",), "r0", frozenset({"r0"})),
                     Assign(None, ("r0",), "r5", frozenset({"r5"}))]),
        # a moved register the exit reads that is neither the chain's nor released
        _loop(moves=[Assign(None, ("r1",), "r0", frozenset({"r0"})),
                     Assign(None, ("r0",), "r6", frozenset({"r6"})),
                     Assign(None, ("r7",), "r6", frozenset({"r6"}))]),
        # a second way back to the loop head
        _loop(post=[If(None, "i0", [Continue(None)])]),
        # the wait fence carried from a buffer
        _loop(moves=[Assign(None, ("r1",), "r6", frozenset({"r6"})),
                     Assign(None, ("r0",), "r6", frozenset({"r6"}))]),
    ],
    ids=["written-operand", "int-reads-ref", "import-call", "foreign-carry", "moved-kept",
         "second-back-edge", "wait-from-buffer"],
)
def test_loops_left_alone(loop):
    assert loops._match(loop) is None


def test_each_replayed_step_writes_zero_filled_buffers(packages, monkeypatch):
    """Every buffer a replayed step writes (its turn's alloca buffers) is among the ranges
    the native steps zero-fill before that turn's plan runs, as new buffers are zero-filled,
    though the buffers are reused (test_native_dispatch: the native loop zero-fills them
    before each run). The TRANSIENT scratch, which the command buffer's first command
    overwrites whole, is not zero-filled."""
    ctx = packages[True].load(device="local-sync")
    w, x = _inputs()
    want = np.asarray(ctx.main(w, x)).tobytes()
    covered = []
    real_set_up = chain_loop.ChainLoop._set_up

    def set_up(self):
        replay = real_set_up(self)
        ranges = [set(zip(z[::2], z[1::2])) for z in replay.zeros]
        for turn in (0, 1):
            for j, pair in enumerate(replay.outputs):
                b = pair[turn]
                covered.append(((b.address, b.length) in ranges[turn], j == self.transient))
            assert len(ranges[turn]) == len(replay.zeros[turn]) // 2  # (no range twice)
        return replay

    monkeypatch.setattr(chain_loop.ChainLoop, "_set_up", set_up)
    got = np.asarray(ctx.main(w, x))
    assert covered and all(zeroed != transient for zeroed, transient in covered)
    assert any(transient for _, transient in covered)
    assert got.tobytes() == want


# -- the test-first shape (scf.for): an exit may come before any step --------------------

FOR_LOOP = """
func.func @repeat_scale(%t: tensor<4xf32>, %n: i32) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %ub = arith.index_cast %n : i32 to index
  %half = arith.constant dense<0.5> : tensor<4xf32>
  %r = scf.for %i = %c0 to %ub step %c1 iter_args(%acc = %t) -> tensor<4xf32> {
    %m = arith.mulf %acc, %half : tensor<4xf32>
    %a = arith.addf %m, %t : tensor<4xf32>
    scf.yield %a : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}
"""


@pytest.fixture(scope="module")
def for_loop(tmp_path_factory):
    out = tmp_path_factory.mktemp("for_loop")
    vmfb = compile_mlir(FOR_LOOP, out, LLVM_CPU_FLAGS, "for_loop")
    return vmfb, {
        rewrite: import_package_as(
            f"_for_loop_test_{rewrite}",
            write_package(read_module_file(vmfb), out / str(rewrite), "for_loop",
                          loop_chains=rewrite),
        )
        for rewrite in (True, False)
    }


def test_the_test_first_loop_is_rewritten_with_a_guarded_exit(for_loop):
    _, pkgs = for_loop
    text = open(pkgs[True].__file__).read()
    assert "loop_0.step()" in text and "if loop_0.steps:" in text


@pytest.mark.parametrize("device, driver", [("local-sync", "local-sync"), ("local", "local-task")])
def test_test_first_loop_matches_iree_from_zero_steps(for_loop, device, driver):
    rt = pytest.importorskip("iree.runtime")
    vmfb, pkgs = for_loop
    ctx = rt.SystemContext(config=rt.Config(driver))
    ctx.add_vm_module(rt.VmModule.copy_buffer(ctx.instance, vmfb.read_bytes()))
    ours = {k: pkgs[k].load(device=device).repeat_scale for k in (True, False)}
    t = np.array([1.0, -2.0, 3.5, 0.25], np.float32)
    for n in (0, 1, 2, 3, 17):
        want = np.asarray(ctx.modules.module.repeat_scale(t, n).to_host())
        for k in (True, False):
            assert np.asarray(ours[k](t, n)).tobytes() == want.tobytes(), (k, n)


def _for_loop(pre=None, inner_before=()):
    """The test-first shape: `cond; if cond: chain; ...; moves; continue`, then the exit."""
    test = If(None, "i8", [*inner_before, _chain(targets=("r6", "r7")),
                           Release(None, ["r1", "r0"]),
                           Assign(_P, ("i20",), "add_i64(i20, i6)", frozenset({"i20", "i6"})),
                           Assign(None, ("r1",), "r7", frozenset({"r7"})),
                           Release(None, ["r7"]),
                           Assign(None, ("r0",), "r6", frozenset({"r6"})),
                           Release(None, ["r6"]),
                           Continue(None)])
    body = (pre if pre is not None else [Assign(_P, ("i8",), "int(i20 < i0)", frozenset({"i20", "i0"}))])
    return While(None, body + [test, Release(None, ["r3"])])


def test_the_test_first_model_loop_matches():
    found = loops._match(_for_loop())
    assert found is not None and found.guarded


@pytest.mark.parametrize(
    "loop",
    [
        # a ref released before the test: it runs once more at the exit
        _for_loop(pre=[Assign(_P, ("i8",), "int(i20 < i0)", frozenset({"i20", "i0"})),
                       Release(None, ["r1"])]),
        # a ref move before the chain (it could read what the steps no longer assign)
        _for_loop(inner_before=[Assign(None, ("r9",), "r6", frozenset({"r6"}))]),
    ],
    ids=["release-before-test", "move-before-chain"],
)
def test_test_first_loops_left_alone(loop):
    assert loops._match(loop) is None


def test_overwritten_first():
    """Which new buffers the commands overwrite whole before reading (no zero-fill)."""
    from runtime_support.hal.command_buffer import BufferRef, _Copy, _Dispatch, _Fill, _Update
    from runtime_support.hal.command_buffer import overwritten_first as first

    def ref(slot, offset=0, length=64):
        return BufferRef(None, slot, offset, length)

    copy = _Copy(ref(0), ref(3))
    assert first([copy], 3, 64, 0, 64) and first([copy], 3, 64, 0, -1)
    assert first([_Fill(ref(3, 0, -1), 0, 4)], 3, 64, 0, -1)
    assert first([_Update(b"x" * 64, ref(3))], 3, 64, 0, 64)
    assert not first([_Update(b"x" * 8, ref(3, 0, 8))], 3, 64, 0, 64)  # (part of it)
    assert not first([_Copy(ref(0), ref(3, 0, 32))], 3, 64, 0, 64)  # (part of it)
    assert not first([_Copy(ref(0), ref(3, 8, 56))], 3, 64, 0, 64)  # (not from its start)
    assert not first([copy], 3, 64, 16, 48)  # (the entry starts inside the buffer)
    assert not first([_Copy(ref(3), ref(3))], 3, 64, 0, 64)  # (read too)
    dispatch = _Dispatch(None, 0, (1, 1, 1), (), (ref(0), ref(3)), 0)
    assert not first([dispatch, copy], 3, 64, 0, 64)  # (a dispatch first: unknown writes)
    assert first([dispatch, copy], 5, 64, 0, 64) is False  # (never touched)
    assert first([_Copy(ref(0), ref(1)), copy], 3, 64, 0, 64)  # (other slots first)


def test_a_replay_table_image_is_what_plan_run_writes(packages):
    """The table image a replay checks once (plan_runner.image_of) holds the words
    plan.run writes for the same table, and is refused where plan.run would decline."""
    from runtime_support.hal.buffer import fresh_buffer

    ctx = packages[True].load(device="local-sync")
    ctx.main(*_inputs())
    plan = ctx.refs.get(2)._plan
    device = ctx.refs.get(0)
    sizes = [16 * 4, 16 * 16 * 4, 16 * 4, 16 * 4]
    table = [(fresh_buffer(n, 0x30, 0xC03, device.allocator), 0, n) for n in sizes]
    image = chain_loop._checked_image(plan, table)
    assert image is not None
    assert plan.run(table, 1)  # (the words it writes are left in plan.table)
    assert list(image) == list(plan.table)
    short = list(table)
    short[1] = (fresh_buffer(16, 0x30, 0xC03, device.allocator), 0, 16)
    assert chain_loop._checked_image(plan, short) is None and not plan.run(short, 1)
    assert chain_loop._checked_image(plan, table[:1]) is None  # (slots past the table)
    assert chain_loop._checked_image(plan, [(None, 0, n) for n in sizes]) is None

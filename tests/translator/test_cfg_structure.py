"""CFG analyses and structuring on graphs written as adjacency lists.

Each graph is structured by the real code generator (`FunctionEmitter` with blocks that
only record their visit), printed, executed, and must visit blocks in exactly the order
a direct walk of the graph does under the same branch decisions.
"""

from __future__ import annotations

import random

import pytest

from translator.analyses import cfg
from translator.codegen.function import FunctionEmitter
from translator.codegen.ops import Edge, Terminator
from translator.codegen.printer import Printer
from translator.codegen.stmt import Call, Raise, Return

# name -> (successor lists, failing blocks, expect structured)
GRAPHS = {
    "straight": ([[1], [2], []], (), True),
    "diamond": ([[1, 2], [3], [3], []], (), True),
    "if_without_else": ([[1, 2], [2], []], (), True),
    "while": ([[1], [2, 3], [1], []], (), True),
    "do_while": ([[1], [1, 2], []], (), True),
    "nested_loops": ([[1], [2, 5], [3], [2, 4], [1], []], (), True),
    "loop_with_break_and_continue": ([[1], [2, 5], [3, 1], [5, 4], [1], []], (), True),
    "early_return": ([[1, 2], [], [3], []], (), True),
    "fail_arms_merge": ([[1, 2], [5], [3, 4], [5], [6], [], []], (5,), True),
    # 100 checks sharing one failure block, as IREE emits fence waits.
    "shared_fail_chain": ([[k + 1, 101] for k in range(100)] + [[]] + [[]], (101,), True),
    "switch": ([[1, 2, 3, 4], [5], [5], [5], [], []], (), True),
    "loop_two_exits_to_return": ([[1], [2, 3], [1, 4], [], []], (), True),
    # A loop left by a normal exit (2 -> 5) and a failed check (1 -> 4), both reaching
    # the `vm.fail` block 6 that checks before the loop share too (IREE's host loops
    # that read a result back each iteration): the exit into the failure is inlined.
    "loop_exits_into_shared_fail": (
        [[1, 3], [2, 4], [1, 5], [6], [6], [7, 6], [], []], (6,), True,
    ),
    # The same with a longer path after the loop (too big to inline): it is the `break`.
    "loop_fail_exit_and_long_tail": (
        [[1, 3], [2, 4], [1, 5], [6], [6], [8, 6], [], [], [9], [10], [11], [12], [13], [14], [7]],
        (6,), True,
    ),
    # Two entries into the cycle {1, 2}: irreducible, handled by the block-state loop.
    "irreducible": ([[1, 2], [2, 3], [1, 3], []], (), False),
}


class GraphEmitter(FunctionEmitter):
    """A FunctionEmitter whose blocks are adjacency-list nodes, not VM ops."""

    def __init__(self, succ, fails) -> None:  # noqa: D107  (no super: nothing to decode)
        self.succ = succ
        self.fails = set(fails)
        self.info = cfg.analyze_graph(succ, frozenset(fails))
        self._terms = {}

    def params(self):
        return []

    def ref_init(self):
        return []

    def int_init(self):  # no registers: the nodes hold no VM ops
        return []

    def block_sizes(self):
        return [2] * len(self.succ)

    def block_ops(self, b):
        return [Call(None, f"visit({b})")]

    def remap(self, b, pairs):
        return []

    def terminator(self, b):
        s = self.succ[b]
        if not s:
            exit_ = [Raise(None, "1", "fail", "f", None)] if b in self.fails else [Return(None, ())]
            return Terminator(None, [], exit_, [])
        edges = [Edge(f"choose({b}, {k})", t, ()) for k, t in enumerate(s[:-1])]
        return Terminator(None, [], None, edges + [Edge(None, s[-1], ())])


class Failed(Exception):
    pass


def _run_generated(source: str, decisions: list[int], succ):
    trace, state = [], {"i": 0, "pick": None}

    def visit(b):
        if len(trace) > 300:
            raise StopIteration
        trace.append(b)
        state["pick"] = decisions[state["i"] % len(decisions)] % max(1, len(succ[b]))
        state["i"] += 1

    def choose(b, k):
        return state["pick"] == k

    def vm_fail(status, message, function, location):
        return Failed()

    ns = {"visit": visit, "choose": choose, "vm_fail": vm_fail}
    exec(source, ns)  # noqa: S102  (our own generated code)
    try:
        ns["f"]()
        end = "return"
    except Failed:
        end = "fail"
    except StopIteration:
        end = "limit"
    return trace, end


def _walk(succ, fails, decisions):
    trace, i, b = [], 0, 0
    while True:
        if len(trace) > 300:
            return trace, "limit"
        trace.append(b)
        pick = decisions[i % len(decisions)] % max(1, len(succ[b]))
        i += 1
        if not succ[b]:
            return trace, "fail" if b in fails else "return"
        b = succ[b][pick]


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_structured_code_walks_the_graph(name):
    succ, fails, expect_structured = GRAPHS[name]
    tree = GraphEmitter(succ, fails).generate()
    assert tree.structured == expect_structured
    body = Printer().function_body(tree.body)
    source = "def f():\n" + "".join(f"    {line}\n" for line in body)
    rng = random.Random(name)
    for _ in range(50):
        decisions = [rng.randrange(4) for _ in range(rng.randrange(1, 40))]
        assert _run_generated(source, decisions, succ) == _walk(succ, fails, decisions), source


def test_shared_fail_chain_stays_flat():
    succ, fails, _ = GRAPHS["shared_fail_chain"]
    body = Printer().function_body(GraphEmitter(succ, fails).generate().body)
    assert max(len(line) - len(line.lstrip()) for line in body) == 4  # `if c:` -> raise


def test_analyses():
    info = cfg.analyze_graph([[1], [2, 4], [3, 1], [1], []])
    assert info.reducible
    assert set(info.loops) == {1}
    assert info.loops[1].body == {1, 2, 3}
    assert info.loops[1].exits == [4]
    assert info.idom == {0: 0, 1: 0, 2: 1, 3: 2, 4: 1}
    assert not cfg.analyze_graph(GRAPHS["irreducible"][0]).reducible


def test_failure_paths_do_not_hide_merges():
    # 0 -> {1: fails, 2}; 2 -> {3, 4} -> 5 returns: 0 is post-dominated by 2, 2 by 5.
    info = cfg.analyze_graph([[1, 2], [], [3, 4], [5], [5], []], frozenset({1}))
    ipdom = cfg.region_postdominators(info, set(info.rpo), None)
    assert ipdom[0] == 2 and ipdom[2] == 5 and ipdom[1] == cfg.EXIT


def test_inner_loop_exiting_to_outer_header():
    # Nested whiles where the inner loop's exit is the outer loop's back edge, with a
    # failure check inside the inner loop (found by the random-program test).
    succ = [[1], [2, 7], [3], [4, 1], [6, 5], [3], [], [8], []]
    tree = GraphEmitter(succ, {6}).generate()
    assert tree.structured


def _read_later(fn, index_of, block, start, reg) -> bool:
    """Brute force: does some path from op `start` of `block` read ref `reg` before
    writing it? (Op reads, then writes; a terminator's remaps copy src -> dst in order.)"""
    from translator.analyses.liveness import _own_reads, _refs

    seen, work = set(), [(block, start)]
    while work:
        b, i = work.pop()
        ops = fn.blocks[b].ops
        for op in ops[i:-1]:
            if reg in _refs(op.reads()):
                return True
            if reg in _refs(op.writes()):
                break
        else:
            term = ops[-1]
            if reg in _own_reads(term):
                return True
            if reg in _refs(term.writes()):
                continue
            for pc, pairs in term.edges():
                killed = False
                for src, dst in pairs:
                    if src.is_ref and src.ordinal == reg:
                        return True
                    if dst.is_ref and dst.ordinal == reg:
                        killed = True
                        break
                if not killed and index_of[pc] not in seen:
                    seen.add(index_of[pc])
                    work.append((index_of[pc], 0))
    return False


def test_ref_liveness_equals_a_brute_force_path_search(compile_mlir):
    """Releases at last use (analyses/liveness.py) drop a ref exactly when no path reads
    it again before overwriting it: checked op by op against a direct search."""
    from conftest import corpus_cases
    from translator.analyses.liveness import RefLiveness
    from translator.pipeline import Pipeline

    checked = 0
    cases = [c for c in corpus_cases(variants=("vm", "embedded-elf")) if c.variant == "vm" or c.name == "loop"]
    for case, k, fn, p in (
        (case, k, fn, p)
        for case in cases
        for p in [Pipeline.from_file(compile_mlir(case.source, case.flags))]
        for k, fn in enumerate(p.functions)
    ):
        info = p.cfg(k)
        live = RefLiveness(fn, info)
        index_of = {b.pc: b.index for b in fn.blocks}
        for b in info.rpo:
            for i, op in enumerate(fn.blocks[b].ops[:-1]):
                for r in {r.ordinal for r in op.reads() if r.is_ref}:
                    later = _read_later(fn, index_of, b, i + 1, r)
                    rewritten = r in {w.ordinal for w in op.writes() if w.is_ref}
                    assert (r in live.dies_at(op)) == (not later and not rewritten), (fn.name, op.pc, r)
                    checked += 1
    assert checked > 100

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

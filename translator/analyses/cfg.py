"""Control-flow analyses for code generation: successors, dominators, loops, reducibility.

The structurer (`function.py`) turns reducible CFGs into `while`/`if`; these are the
facts it needs. Blocks are identified by their index in `Function.blocks`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from translator.ir import Function


def successors(fn: Function) -> list[list[int]]:
    index_of = {b.pc: b.index for b in fn.blocks}
    out = []
    for b in fn.blocks:
        term = b.ops[-1]
        succ: list[int] = []
        for pc, _ in term.edges():
            i = index_of[pc]
            if i not in succ:
                succ.append(i)
        out.append(succ)
    return out


def reverse_postorder(succ, entry: int = 0) -> list[int]:
    """Reverse postorder from `entry`; `succ` maps a node (list index or dict key) to its
    successors."""
    seen, order = set(), []
    stack = [(entry, iter(succ[entry]))]
    seen.add(entry)
    while stack:
        node, it = stack[-1]
        for s in it:
            if s not in seen:
                seen.add(s)
                stack.append((s, iter(succ[s])))
                break
        else:
            order.append(node)
            stack.pop()
    order.reverse()
    return order


def dominators(succ: list[list[int]], rpo: list[int]) -> dict[int, int]:
    """Immediate dominators (Cooper, Harvey & Kennedy) of reachable nodes."""
    preds: dict[int, list[int]] = {n: [] for n in rpo}
    for n in rpo:
        for s in succ[n]:
            preds[s].append(n)
    pos = {n: i for i, n in enumerate(rpo)}
    idom = {rpo[0]: rpo[0]}
    changed = True
    while changed:
        changed = False
        for n in rpo[1:]:
            new = None
            for p in preds[n]:
                if p in idom:
                    new = p if new is None else _intersect(p, new, idom, pos)
            if new is not None and idom.get(n) != new:
                idom[n] = new
                changed = True
    return idom


def _intersect(a: int, b: int, idom: dict[int, int], pos: dict[int, int]) -> int:
    while a != b:
        while pos[a] > pos[b]:
            a = idom[a]
        while pos[b] > pos[a]:
            b = idom[b]
    return a


def dominates(idom: dict[int, int], a: int, b: int) -> bool:
    while True:
        if a == b:
            return True
        parent = idom[b]
        if parent == b:
            return False
        b = parent


@dataclass
class Loop:
    header: int
    body: set[int] = field(default_factory=set)
    exits: list[int] = field(default_factory=list)


@dataclass
class CFGInfo:
    succ: list[list[int]]
    preds: dict[int, list[int]]
    rpo: list[int]
    idom: dict[int, int]
    loops: dict[int, Loop]  # by header
    reducible: bool
    loop_of: dict[int, int | None]  # innermost loop header of each node
    fails: frozenset[int] = frozenset()  # blocks that end in `vm.fail`


def analyze(fn: Function) -> CFGInfo:
    fails = frozenset(b.index for b in fn.blocks if b.ops[-1].spec.emit == "fail")
    return analyze_graph(successors(fn), fails)


def analyze_graph(succ: list[list[int]], fails: frozenset[int] = frozenset()) -> CFGInfo:
    """The facts of a CFG given as successor lists (block 0 is the entry); `fails` are
    the blocks that end in `vm.fail` (the others without successors return)."""
    rpo = reverse_postorder(succ)
    reachable = set(rpo)
    preds: dict[int, list[int]] = {n: [] for n in rpo}
    for n in rpo:
        for s in succ[n]:
            preds[s].append(n)
    idom = dominators(succ, rpo)
    pos = {n: i for i, n in enumerate(rpo)}
    loops: dict[int, Loop] = {}
    reducible = True
    for n in rpo:
        for s in succ[n]:
            if pos[s] <= pos[n]:  # retreating edge
                if not dominates(idom, s, n):
                    reducible = False
                    continue
                loop = loops.setdefault(s, Loop(s, {s}))
                work = [n]
                while work:
                    x = work.pop()
                    if x not in loop.body:
                        loop.body.add(x)
                        work.extend(p for p in preds[x] if p in reachable)
    for loop in loops.values():
        for n in sorted(loop.body):
            for s in succ[n]:
                if s not in loop.body and s not in loop.exits:
                    loop.exits.append(s)
    loop_of: dict[int, int | None] = {}
    for n in rpo:
        best = None
        for h, loop in loops.items():
            if n in loop.body and (best is None or len(loop.body) < len(loops[best].body)):
                best = h
        loop_of[n] = best
    return CFGInfo(succ, preds, rpo, idom, loops, reducible, loop_of, fails)


EXIT = -1  # the virtual exit node of a region graph


def region_postdominators(info: CFGInfo, region: set[int], header: int | None) -> dict[int, int]:
    """Immediate post-dominators inside `region` (a loop body, or all reachable blocks).

    Edges that leave the region, go back to the loop `header`, or return all go to the
    virtual EXIT. Failure paths do not count: a block that ends in `vm.fail` has no edge
    to EXIT, so a check `if bad: fail` still merges at the block after it, and only the
    blocks that can go on (reach EXIT) get post-dominators. ipdom == EXIT means the
    paths from a block only meet again outside the region (or never go on at all).
    Dominators of the reversed region graph, rooted at EXIT.
    """
    nodes = [n for n in info.rpo if n in region]
    rsucc: dict[int, list[int]] = {n: [] for n in nodes}
    rsucc[EXIT] = []
    for n in nodes:
        out = []
        for s in info.succ[n]:
            t = EXIT if (s not in region or s == header) else s
            if t not in out:
                out.append(t)
        if not out and n not in info.fails:
            out = [EXIT]
        for t in out:
            rsucc[t].append(n)
    order = reverse_postorder(rsucc, EXIT)
    idom = dominators(rsucc, order)
    return {n: idom.get(n, EXIT) for n in nodes}


def private_region(info: CFGInfo, start: int) -> bool:
    """True when every block reachable from `start` is dominated by it and the region
    has no edge back out (it only ends in return/fail): it can be emitted inline.
    A loop header is never private: its body jumps back to it."""
    if start in info.loops:
        return False
    seen, work = {start}, [start]
    while work:
        x = work.pop()
        if not dominates(info.idom, start, x):
            return False
        for s in info.succ[x]:
            if s not in seen:
                seen.add(s)
                work.append(s)
    return all(s in seen for x in seen for s in info.succ[x]) and not any(
        h in seen for h in info.loops if h != start and not dominates(info.idom, start, h)
    )


def terminal_region_size(info: CFGInfo, start: int, sizes: list[int], limit: int) -> int | None:
    """The ops of every block reachable from `start` when that region only ends in
    return/fail (no loop header in it, so no way back into a loop), else None; None too
    once it passes `limit` ops. A loop exit into such a region (typically the shared
    `vm.fail` block of several checks) can be emitted inline at each jump to it: it never
    falls through, so the loop keeps a single exit for `break`."""
    seen, work, total = {start}, [start], 0
    while work:
        x = work.pop()
        if x in info.loops:
            return None
        total += sizes[x]
        if total > limit:
            return None
        for s in info.succ[x]:
            if s not in seen:
                seen.add(s)
                work.append(s)
    return total

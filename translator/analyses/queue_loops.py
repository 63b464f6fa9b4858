"""The loops around a queue region (translator/analyses/queue_regions.py grows the
region, then asks here): what the loop carries from one call to the next, whether its
call may defer its steps, and whether the whole loop is one call.

Loops: where the region ends before its block's back edge to a loop header (only integer
ops that cannot fail between: IREE's induction ops, `add`, `cmp`, then a `br` or a
`cond_br` one of whose edges is the back edge), every block of the loop but the region's
own writes none of the edge's destinations, and an edge copy moves an output into a
register the region reads as an input, the pair (output, input) is *carried*: the next
iteration's call reads what this one made. Where every output is carried and the rest of
the loop is integer ops and branches that read no register holding an output but through
the carry copies (`loop_exits`), the region has *loop exits*: its call may defer its
steps (runtime_support/exec/loops.py) and each block the loop leaves to reads the last
results first.

A loop call (docs/design/host-path.md §18): where the loop's body is the region and
integer ops, the region's `loop` is a HostLoop (`host_loop`) and the runtime runs the
iterations (runtime_support/exec/host_loops.py).

`finder`, below: the region walker's state (queue_regions.py: the function `fn`, its
cfg `info`, `index_of` (block pc -> index) and the ref liveness `live`).

    carried(finder, region, grown)     -> ((output register, input register), ...)
    loop_exits(finder, region, grown)  -> ((block, registers), ...) or ()
    host_loop(finder, region, grown, ref_live, int_live) -> HostLoop | None
"""

from __future__ import annotations

from dataclasses import replace

from runtime_support.exec.program import MAX_POSITIONAL
from translator.analyses import cfg
from translator.analyses.queue_region_records import HostLoop, Lit, Region
from translator.ir import Op, Reg


def _back_edge(finder, region: Region, grown, between=None):
    """(block, terminator, loop, copies) of the back edge the region's block ends in,
    where only integer ops that cannot fail (`_between`, or `between`) lie between the
    region's last op and that terminator: a plain branch to the loop's header, or a
    conditional one with one edge to it (IREE puts a loop's induction ops there: add, cmp,
    cond_br); or None."""
    fn, info = finder.fn, finder.info
    between = between or _between
    b, last, _ = grown[-1]
    if last.spec.is_terminator:
        return None
    ops = fn.blocks[b].ops
    term = ops[-1]
    if not all(between(op) for op in ops[ops.index(last) + 1 : -1]):
        return None
    if term.spec.emit not in ("branch", "cond_br"):
        return None
    edges = [(finder.index_of.get(pc), pairs) for pc, pairs in term.edges()]
    back = [(h, pairs) for h, pairs in edges if h in info.loops and b in info.loops[h].body]
    if len(back) != 1 or len({h for h, _ in edges}) != len(edges):
        return None
    h, pairs = back[0]
    return b, term, info.loops[h], pairs


def _between(op: Op) -> bool:
    """An op a deferred loop step may pass: an integer op that cannot fail or an integer
    constant, touching no ref register (nothing anyone can see happens there)."""
    if op.spec.is_terminator or not (op.spec.cannot_fail or op.spec.integer_const):
        return False
    return not any(r.is_ref for r in (*op.reads(), *op.writes()))


def carried(finder, region: Region, grown) -> tuple[tuple[Reg, Reg], ...]:
    """(output, input) pairs the loop's back edge carries, where the region ends before
    that edge (see the module docstring and `_back_edge`)."""
    fn = finder.fn
    found = _back_edge(finder, region, grown)
    if found is None:
        return ()
    _b, _term, loop, pairs = found
    outs = {(r.is_ref, r.ordinal): r for r, _ in region.outputs}
    ins = {(r.is_ref, r.ordinal) for r in region.inputs}
    mine = set(region.blocks)
    others = [op for x in loop.body if x not in mine for op in fn.blocks[x].ops]
    others += [op for op in fn.blocks[region.blocks[0]].ops if op.pc < region.ops[0].pc]
    written = {(r.is_ref, r.ordinal) for op in others for r in op.writes()}
    out = []
    for src, dst in pairs:
        key_s, key_d = (src.is_ref, src.ordinal), (dst.is_ref, dst.ordinal)
        if key_s in outs and key_d in ins and key_d not in written:
            out.append((outs[key_s], dst))
    return tuple(out)


def _live_in(finder, s: int) -> frozenset[int]:
    """Ref registers live on entry to block `s`."""
    first = finder.fn.blocks[s].ops[0]
    below = finder.live.live_out(s) if first.spec.is_terminator else finder.live.after(first)
    return frozenset((set(below) - {r.ordinal for r in first.writes() if r.is_ref})
                     | {r.ordinal for r in first.reads() if r.is_ref})


def loop_exits(finder, region: Region, grown) -> tuple[tuple[int, tuple[Reg, ...]], ...]:
    """Where the loop mode holds (docs/design/host-path.md §5.4), the blocks the loop
    leaves to and the registers to read its results from there; else ().

    The call in the loop may then return *tokens* for its outputs and run its steps
    later, two buffers per carried one taking turns, because:
    - every output of the region is a ref the back edge carries into an input, and the
      call assigns nothing else;
    - every other op of the loop is an integer op that cannot fail or a branch (nothing
      anyone can see happens between two calls, and none of them raises), and none of
      them reads a register that may hold a token (the outputs' and the carried inputs'
      registers) but the back edge's own carry copies; no edge leaving the loop copies
      one either;
    - every iteration that reaches the back edge passes the call once (its blocks are a
      chain from its first, each reached from the one before alone), so a register of
      those holds the last call's token or the one before it (the inputs', on an exit
      before the back edge's copies), and a buffer of the call before the last is intact;
    - each block the loop leaves to is reached from the loop alone, so `results(...)` at
      its start runs on every way out; the registers it reads are those that may hold a
      token and are live there (one at least: it runs the deferred steps; registers that
      die are released by the generated code, their tokens with them)."""
    fn, info = finder.fn, finder.info
    found = _back_edge(finder, region, grown)
    if found is None:
        return ()
    b, term, loop, pairs = found
    outputs = {(r.is_ref, r.ordinal) for r, _ in region.outputs}
    carried_out = {(a.is_ref, a.ordinal) for a, _ in region.carried}
    if not outputs or any(not r.is_ref for r, _ in region.outputs) or carried_out != outputs:
        return ()
    if {(r.is_ref, r.ordinal) for r, _ in region.results} != outputs:
        return ()
    dsts = [d for _, d in region.carried]
    if len({d.ordinal for d in dsts}) != len(dsts) or not all(d.is_ref for d in dsts):
        return ()
    tokens = outputs | {(True, d.ordinal) for d in dsts}
    carry = {((a.is_ref, a.ordinal), (d.is_ref, d.ordinal)) for a, d in region.carried}
    pcs = region.pcs
    crossed = {op.pc for op in region.ops if op.spec.is_terminator}
    exits: dict[int, set] = {}  # block left to -> refs a token is copied into on the way
    for x in sorted(loop.body):
        for op in fn.blocks[x].ops:
            if op.pc in pcs and op.pc not in crossed:
                continue
            if op.spec.is_terminator:
                if op.pc in crossed:
                    continue  # (the region's own: its other arms fail inside the call)
                if op.spec.emit not in ("branch", "cond_br", "br_table"):
                    return ()
                cond = [r for r in op.reads() if r.bank is not None]
                if any((r.is_ref, r.ordinal) in tokens for r in cond):
                    return ()
                for pc, copies in op.edges():
                    t = finder.index_of.get(pc)
                    leaving = t not in loop.body
                    for src, dst in copies:
                        k_s, k_d = (src.is_ref, src.ordinal), (dst.is_ref, dst.ordinal)
                        if k_s in tokens:
                            if leaving:  # (a token copied out: read from there too)
                                exits.setdefault(t, set()).add(dst.ordinal)
                            elif not (op is term and t == loop.header and (k_s, k_d) in carry):
                                return ()
                        elif leaving and k_d in outputs:
                            return ()  # (the last token must reach the exit's results)
                    if leaving:
                        exits.setdefault(t, set())
                continue
            if not _between(op):
                return ()
    # the call once per iteration: the region's blocks a chain from its first
    for x in region.blocks[1:]:
        if len(info.preds.get(x, ())) != 1:
            return ()
    if region.blocks[0] != loop.header and not cfg.dominates(info.idom, region.blocks[0], b):
        return ()
    out = []
    for s, copied in exits.items():
        if any(p not in loop.body for p in info.preds.get(s, ())):
            return ()
        held = ({o for _, o in tokens} | copied) & _live_in(finder, s)
        if not held:
            return ()  # (nothing reads the results there: the steps would never run)
        if len(held) > MAX_POSITIONAL:
            return ()  # (the exit's `results(...)` passes each register: 10 at most)
        out.append((s, tuple(Reg(o | 0x8000, None) for o in sorted(held))))
    return tuple(out)


def _key(r: Reg) -> tuple[bool, int]:
    return (r.is_ref, r.ordinal)


def _computed(op: Op) -> bool:
    """An op a loop call computes between two calls of its region: an integer op that
    cannot fail (a numeric op or a select) or a float compare (isa.FLOAT_COMPARES: a
    convergence test), touching no ref register."""
    if op.spec.is_terminator or op.spec.emit not in ("numeric", "select"):
        return False
    if not (op.spec.cannot_fail or op.spec.float_compare):
        return False
    return not any(r.is_ref for r in (*op.reads(), *op.writes()))


def host_loop(finder, region: Region, grown, ref_live, int_live) -> HostLoop | None:
    """The loop call of a loop whose body is `region` and integer ops (HostLoop), or None.

    It holds where: the region's first op is in the loop's head and the loop's blocks are
    the region's; every other op of the loop is an integer op that cannot fail (`_computed`),
    before the region in the head or after it in the block of the back edge; the back edge
    is a conditional branch on an integer register; every register the region writes is
    one of its results (a value it returns, none a literal). Each iteration then runs the
    call once and the ops in the order the loop runs them, and nothing else happens in the
    loop: the runtime may run the iterations one after another (exec/host_loops.py) and hand
    the state of the last call back to the generated code, which goes on from there."""
    fn = finder.fn
    found = _back_edge(finder, region, grown, _computed)
    if found is None:
        return None
    b, term, loop, pairs = found
    if term.spec.emit != "cond_br" or set(loop.body) != set(region.blocks):
        return None
    head = region.blocks[0]
    if head != loop.header or not region.results:
        return None
    if any(isinstance(v, Lit) for _, v in region.results):
        return None
    pcs = region.pcs
    first, last = region.ops[0].pc, region.ops[-1].pc
    before, after = [], []
    for x in loop.body:
        for op in fn.blocks[x].ops:
            if op.pc in pcs or op is term:
                continue
            if x == head and op.pc < first:
                before.append(op)
            elif x == b and op.pc > last:
                after.append(op)
            else:
                return None
    if not all(_computed(op) for op in (*before, *after)):
        return None
    cond = term["condition"]
    if not isinstance(cond, Reg) or cond.is_ref:
        return None
    edges = term.edges()
    back = [k for k, (pc, _) in enumerate(edges) if finder.index_of.get(pc) == loop.header]
    if len(edges) != 2 or back not in ([0], [1]):
        return None
    copies = tuple(edges[back[0]][1])
    # From the call on: what an iteration reads before it writes it, and what it writes.
    results = {_key(r) for r, _ in region.results}
    entry: dict = {_key(r): r for r in region.inputs}
    written = set(results)
    regs: dict = {}

    def reads(rs) -> None:
        for r in rs:
            if r.bank is not None or r.is_ref:
                regs.setdefault(_key(r), r)
                if _key(r) not in written:
                    entry.setdefault(_key(r), r)

    for op in after:
        reads(op.reads())
        written.update(_key(r) for r in op.writes())
        regs.update((_key(r), r) for r in op.writes())
    reads([cond])
    reads([src for src, _ in copies])
    written.update(_key(d) for _, d in copies)
    regs.update((_key(d), d) for _, d in copies)
    for op in before:
        reads(op.reads())
        written.update(_key(r) for r in op.writes())
        regs.update((_key(r), r) for r in op.writes())
    reads(region.inputs)

    def live(k) -> bool:
        return k[1] in ref_live if k[0] else ("i", k[1]) in int_live

    kept = [regs[k] for k in sorted(written - results) if live(k)]
    extra = [r for k, r in entry.items() if k not in {_key(i) for i in region.inputs}]
    # (the kept registers are arguments too: their values at the call, for a loop call
    # that runs one iteration only)
    for r in kept:
        if _key(r) not in entry:
            entry[_key(r)] = r
            extra.append(r)
    if len(region.inputs) + len(extra) > MAX_POSITIONAL * 3:  # (a call one can read)
        return None
    return HostLoop(
        before=tuple(before), after=tuple(after), test=cond, negate=back[0] == 1,
        copies=copies, entry=tuple(extra), kept=tuple(kept),
    )


def without_high_halves(loop: HostLoop, high_at_head: set, high_at_branch: set) -> HostLoop:
    """`loop` without the high halves of its 64-bit values (their slots have no local of
    their own: translator/analyses/regkinds.py): the back edge's copies of a high half
    (`high_at_branch`: the slots holding one at the branch), and the registers read or
    kept that hold one at the loop's head (`high_at_head`), as the code generator's own
    remaps skip them."""
    def keep(r) -> bool:
        return r.is_ref or r.ordinal not in high_at_head

    return replace(
        loop,
        copies=tuple((a, b) for a, b in loop.copies if a.is_ref or a.ordinal not in high_at_branch),
        entry=tuple(r for r in loop.entry if keep(r)),
        kept=tuple(r for r in loop.kept if keep(r)),
    )


__all__ = ["carried", "host_loop", "loop_exits", "without_high_halves"]

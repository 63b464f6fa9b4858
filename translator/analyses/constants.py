"""Integer constants a function's registers are known to hold, and the ops a queue
region's steps may pass (analyses/queue_regions.py).

    block_constants(fn) -> per block: {register ordinal: (wide, value)} on entry, or None
    update_constants(known, op)   what `known` holds after `op`
    movable(op, known)            an op that cannot fail (given what `known` holds)
"""

from __future__ import annotations

from translator.analyses import cfg
from translator.ir import Function, Op, Reg


def _slots(regs) -> set[tuple[str, int]]:
    """Register slots: ("r", n) for a ref, ("i", n) per 32-bit integer slot."""
    out: set[tuple[str, int]] = set()
    for r in regs:
        if r.is_ref:
            out.add(("r", r.ordinal))
        else:
            out.add(("i", r.ordinal))
            if r.is_wide:
                out.add(("i", r.ordinal + 1))
    return out


def _forget(known: dict[int, tuple[bool, int]], regs) -> None:
    """Drops what `known` holds for the registers `regs` write; one of unknown width (in
    a call's result list or a branch's copies) writes both slots it may cover."""
    wide = [r if r.is_ref or r.bank is not None else Reg(r.raw, "i64") for r in regs]
    for kind, n in _slots(wide):
        if kind == "i":
            known.pop(n, None)
            if known.get(n - 1, (False,))[0]:  # (an i64 pair is known by its low ordinal)
                known.pop(n - 1)


def update_constants(known: dict[int, tuple[bool, int]], op: Op) -> None:
    """Integer registers known to hold a constant after `op`: ordinal -> (wide, value)."""
    _forget(known, op.writes())
    if op.spec.integer_const:
        (r,) = op.writes()
        known[r.ordinal] = (r.is_wide, op["value"].value if "value" in op.values else 0)


def movable(op: Op, known: dict[int, tuple[bool, int]] | None = None) -> bool:
    """An op the steps' effects may pass: one that cannot fail (isa.CANNOT_FAIL, a
    rodata move, a null ref; with `known`, a division or remainder by a register known to
    hold a constant of its width other than 0 and -1: isa.FAILS_ON_DIVISOR)."""
    if op.spec.cannot_fail or op.spec.emit in ("rodata", "null"):
        return True
    if known is not None and op.spec.fails_on_divisor:
        divisor = op["right"]
        wide, value = known.get(divisor.ordinal, (None, 0))
        return wide == divisor.is_wide and value not in (0, -1)
    return False


def block_constants(fn: Function) -> list[dict[int, tuple[bool, int]] | None]:
    """Per block: the integer registers known to hold a constant on entry to it, on
    every path from the function's entry (a forward dataflow: a register is known on
    entry where every predecessor's exit holds the same constant of the same width);
    None for a block no path reaches. IREE's compiler sets a function's constants once,
    mostly in the entry block, and a later block may write such a register again after
    reading it (a tile count, then a loop's sum): where the division reads it, it still
    holds the entry block's constant. A branch's argument copies make their targets
    unknown (their widths are not typed), as does any other write (`update_constants`)."""
    succ = cfg.successors(fn)
    index_of = {b.pc: b.index for b in fn.blocks}
    preds: list[list[int]] = [[] for _ in fn.blocks]
    for b, targets in enumerate(succ):
        for t in targets:
            preds[t].append(b)
    order = cfg.reverse_postorder(succ) if fn.blocks else []
    entry: list[dict | None] = [None] * len(fn.blocks)
    exits: dict[tuple[int, int], dict] = {}  # (block, successor) -> known along that edge

    def leave(b: int) -> None:
        known = dict(entry[b])
        ops = fn.blocks[b].ops
        for op in ops:
            update_constants(known, op)
        edges: dict[int, dict] = {}
        for pc, pairs in ops[-1].edges() if ops else ():
            t = index_of[pc]
            along = dict(known)
            _forget(along, [dst for _, dst in pairs])
            # (two edges to one block, a cond_br's both ways: what both leave)
            edges[t] = along if t not in edges else _meet(edges[t], along)
        for t, along in edges.items():
            exits[b, t] = along

    changed = True
    while changed:
        changed = False
        for b in order:
            if b == 0:
                new = {}
            else:
                states = [exits[p, b] for p in preds[b] if (p, b) in exits]
                if not states:
                    continue
                new = states[0]
                for other in states[1:]:
                    new = _meet(new, other)
            if new != entry[b]:
                entry[b] = new
                leave(b)
                changed = True
    return entry


def _meet(a: dict, b: dict) -> dict:
    """What two constant maps agree on."""
    return {k: v for k, v in a.items() if b.get(k) == v}

"""Ref-register liveness: which ref registers some later op may still read.

    live = RefLiveness(fn, info)      # info: cfg.analyze(fn)
    live.after(op)                    # ref ordinals live after a non-terminator op
    live.live_out(b)                  # ref ordinals live on leaving block b (its edges)

Backward dataflow over the CFG. A block's terminator reads its own operands and, per
successor edge, the remap sources; a remap is a sequence of copies, so a destination is
written before the target block runs. The code generator releases a ref operand right
after the op that reads it last (`dies_at`), so a value is held exactly as long as some
register that is still read holds it.
"""

from __future__ import annotations

from translator.ir import Function, Op


def _refs(regs) -> set[int]:
    return {r.ordinal for r in regs if r.is_ref}


def _edge_live(live_in: set[int], pairs) -> set[int]:
    live = set(live_in)
    for src, dst in reversed(pairs):
        if dst.is_ref:
            live.discard(dst.ordinal)
        if src.is_ref:
            live.add(src.ordinal)
    return live


def _own_reads(op: Op) -> set[int]:
    """Ref registers an op reads outside its branch remaps."""
    out = set()
    for f in op.spec.fields:
        v = op.values[f.name]
        if f.write or f.kind not in ("register", "list") or f.bank == "segments":
            continue
        out |= _refs([v] if f.kind == "register" else v)
    return out


class RefLiveness:
    def __init__(self, fn: Function, info) -> None:
        self.fn = fn
        index_of = {b.pc: b.index for b in fn.blocks}
        live_in: dict[int, set[int]] = {b: set() for b in info.rpo}
        order = list(reversed(info.rpo))  # postorder: successors first, mostly
        changed = True
        while changed:
            changed = False
            for b in order:
                new = self._block(fn.blocks[b], live_in, index_of, None)
                if new != live_in[b]:
                    live_in[b], changed = new, True
        self._after: dict[int, frozenset[int]] = {}
        self._out: dict[int, frozenset[int]] = {}
        for b in info.rpo:
            self._block(fn.blocks[b], live_in, index_of, self._after)
            block = fn.blocks[b]
            live: set[int] = set()
            for pc, pairs in block.ops[-1].edges():
                target = index_of.get(pc)
                if target in live_in:
                    live |= _edge_live(live_in[target], pairs)
            self._out[b] = frozenset(live)

    @staticmethod
    def _block(block, live_in, index_of, record) -> set[int]:
        term = block.ops[-1]
        live: set[int] = set()
        for pc, pairs in term.edges():
            target = index_of.get(pc)
            if target in live_in:
                live |= _edge_live(live_in[target], pairs)
        live = (live - _refs(term.writes())) | _own_reads(term)
        for op in reversed(block.ops[:-1]):
            if record is not None:
                record[op.pc] = frozenset(live)
            live = (live - _refs(op.writes())) | _refs(op.reads())
        return live

    def after(self, op: Op) -> frozenset[int]:
        return self._after.get(op.pc, frozenset())

    def live_out(self, block: int) -> frozenset[int]:
        """Ref registers some successor of `block` may read (after its terminator; an
        unreachable block: none)."""
        return self._out.get(block, frozenset())

    def dies_at(self, op: Op) -> frozenset[int]:
        """Ref registers `op` reads for the last time (not live after it, not rewritten)."""
        return frozenset(_refs(op.reads()) - self.after(op) - _refs(op.writes()))

"""Integer or float: which kind of value each value register can hold where it is read.

IREE's i32/f32 (and i64/f64) registers share one storage, and its bytecode verifier only
checks register ordinals; a program reading as an integer a register last written as a
float reads the float's bits. The IREE compiler never emits such a read (every SSA value
is read with the type it was defined with, and a live value's register is not reused), so
only a corrupted module has one. pyree's registers are Python ints and floats; rather
than reinterpret bits on every read, the translator rejects the module.

A forward dataflow over the CFG: each 32-bit slot maps to the set of kinds (INT, FLOAT)
that writes reaching it gave it; merges take the union; branch remaps copy slots one by
one. A slot no write reaches holds zero bits, which read the same either way.
"""

from __future__ import annotations

from typing import Callable, Iterable

from translator.ir import Function, Op

INT, FLOAT = 1, 2
# Register bank or cconv code -> (kind, slots).
_BANK = {"i32": (INT, 1), "i64": (INT, 2), "f32": (FLOAT, 1), "f64": (FLOAT, 2),
         "i": (INT, 1), "I": (INT, 2), "f": (FLOAT, 1), "F": (FLOAT, 2)}
_NAME = {INT: "an integer", FLOAT: "a float"}
_SHOWN = {"i": "i32", "I": "i64", "f": "f32", "F": "f64"}  # cconv code -> bank

# (op) -> ([(reg, bank or code)] read, [(reg, bank or code)] written) for the register
# lists whose banks come from a calling convention (call operands/results, return).
ListBanks = Callable[[Op], tuple[list, list]]


class BankMismatch(Exception):
    def __init__(self, op: Op, reason: str) -> None:
        super().__init__(reason)
        self.op = op
        self.reason = reason


def _typed(op: Op, list_banks: ListBanks) -> tuple[Iterable, Iterable]:
    reads, writes = list_banks(op)
    reads, writes = list(reads), list(writes)
    for f in op.spec.fields:
        v = op.values[f.name]
        if f.kind == "register" and f.bank in _BANK:
            (writes if f.write else reads).append((v, f.bank))
        elif f.kind == "list" and f.bank in _BANK:  # fixed-bank lists (e.g. switch values)
            (writes if f.write else reads).extend((r, f.bank) for r in v)
    return reads, writes


def _transfer(op: Op, state: dict[int, int], list_banks: ListBanks) -> None:
    reads, writes = _typed(op, list_banks)
    for reg, bank in reads:
        if reg.is_ref:
            continue
        kind, width = _BANK[bank]
        for slot in range(reg.ordinal, reg.ordinal + width):
            held = state.get(slot, 0) & ~kind
            if held:
                raise BankMismatch(
                    op,
                    f"register i{slot} is read as {_SHOWN.get(bank, bank)} but holds {_NAME[held]} value "
                    "(a float/integer read of the other kind: corrupted bytecode)",
                )
    for reg, bank in writes:
        if reg.is_ref:
            continue
        kind, width = _BANK[bank]
        for slot in range(reg.ordinal, reg.ordinal + width):
            state[slot] = kind


def check_banks(fn: Function, arguments: list[tuple[str, int]], list_banks: ListBanks) -> None:
    """Raises BankMismatch at the first read of a register whose reaching writes include
    one of the other kind. `arguments`: (cconv code, first register) per argument."""
    entry: dict[int, int] = {}
    for code, ordinal in arguments:
        if code in _BANK:
            kind, width = _BANK[code]
            for slot in range(ordinal, ordinal + width):
                entry[slot] = kind
    index_of = {b.pc: b.index for b in fn.blocks}
    states: dict[int, dict[int, int]] = {0: entry}
    work = [0]
    queued = {0}
    while work:
        b = work.pop()
        queued.discard(b)
        state = dict(states[b])
        block = fn.blocks[b]
        for op in block.ops:
            _transfer(op, state, list_banks)
        for target_pc, pairs in block.ops[-1].edges():
            incoming = dict(state)
            for src, dst in pairs:  # a parallel copy: sources read before any write
                if not src.is_ref:
                    incoming.pop(dst.ordinal, None)
            for src, dst in pairs:
                if not src.is_ref and src.ordinal in state:
                    incoming[dst.ordinal] = state[src.ordinal]
            t = index_of[target_pc]
            old = states.get(t)
            if old is None:
                merged = incoming
            else:
                merged = dict(old)
                for slot, kind in incoming.items():
                    merged[slot] = merged.get(slot, 0) | kind
            if merged != old:
                states[t] = merged
                if t not in queued:
                    queued.add(t)
                    work.append(t)

"""What each value register can hold where it is read: i32, f32, or half of an i64/f64.

IREE's value registers are one array of 32-bit slots shared by i32, f32 and (in even/odd
pairs) i64 and f64, and its bytecode verifier checks ordinals only: a program reading as
an i32 a register last written as an f32, or the high half of an i64, reads those bits.
The IREE compiler never emits such a read (every SSA value is read with the type it was
defined with, and a live value's registers are not reused), so only a corrupted module
has one. pyree's registers are Python ints and floats, an i64 in the local of its low
slot; rather than reinterpret bits on reads, the translator rejects the module (before
this check the generated code raised TypeError, or NameError for a high half).

A forward dataflow over the CFG: each slot maps to the set of things writes reaching it
left there; merges take the union; branch remaps copy slots one by one. A slot no write
reaches holds zero bits, which read the same as anything.
"""

from __future__ import annotations

from typing import Callable, Iterable

from translator.ir import Function, Op

# What a write leaves in a 32-bit slot (one bit each, so a set of them is a mask).
I32, F32, I64_LOW, I64_HIGH, F64_LOW, F64_HIGH = 1, 2, 4, 8, 16, 32
_HELD = {I32: "an i32", F32: "an f32", I64_LOW: "the low half of an i64",
         I64_HIGH: "the high half of an i64", F64_LOW: "the low half of an f64",
         F64_HIGH: "the high half of an f64"}
# Register bank or cconv code -> what each of its slots holds.
_SLOTS = {"i32": (I32,), "f32": (F32,), "i64": (I64_LOW, I64_HIGH), "f64": (F64_LOW, F64_HIGH)}
_SLOTS.update({"i": _SLOTS["i32"], "f": _SLOTS["f32"], "I": _SLOTS["i64"], "F": _SLOTS["f64"]})
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
        if f.kind == "register" and f.bank in _SLOTS:
            (writes if f.write else reads).append((v, f.bank))
        elif f.kind == "list" and f.bank in _SLOTS:  # fixed-bank lists (e.g. switch values)
            (writes if f.write else reads).extend((r, f.bank) for r in v)
    return reads, writes


def _transfer(op: Op, state: dict[int, int], list_banks: ListBanks) -> None:
    reads, writes = _typed(op, list_banks)
    for reg, bank in reads:
        if reg.is_ref:
            continue
        kinds = _SLOTS[bank]
        for slot, kind in enumerate(kinds, reg.ordinal):
            held = state.get(slot, 0) & ~kind
            if held:
                o = reg.ordinal
                shown = f"i{o}" if len(kinds) == 1 else f"i{o}:{o + 1}"
                where = "" if len(kinds) == 1 else f"; i{slot}"
                raise BankMismatch(
                    op,
                    f"register {shown} is read as {_SHOWN.get(bank, bank)} but{where} holds "
                    f"{_HELD[held & -held]} (corrupted bytecode: the compiler reads a register "
                    "as it wrote it)",
                )
    for reg, bank in writes:
        if reg.is_ref:
            continue
        for slot, kind in enumerate(_SLOTS[bank], reg.ordinal):
            state[slot] = kind


def check_banks(fn: Function, arguments: list[tuple[str, int]], list_banks: ListBanks) -> None:
    """Raises BankMismatch at the first read of a register whose reaching writes include
    one of the other kind. `arguments`: (cconv code, first register) per argument."""
    entry: dict[int, int] = {}
    for code, ordinal in arguments:
        for slot, kind in enumerate(_SLOTS.get(code, ()), ordinal):
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

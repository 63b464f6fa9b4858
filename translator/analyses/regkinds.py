"""Which value registers hold what, at each op: the analysis behind register remaps.

An i64/f64 value lives in the Python local of its low slot; its high slot has no local.
Branch remaps copy slots one by one (an i64 block argument is two pairs), so the code
generator must know, at each branch, whether a slot holds a 32-bit value ('n'), the low
half of a 64-bit value ('w') or its high half ('h'). This is a forward dataflow over the
CFG; slots whose kinds disagree at a merge are 'x' (copied as plain locals).
"""

from __future__ import annotations

from translator.analyses.layout import argument_registers
from translator.cconv import CConv
from translator.ir import IMPORT_BIT, Function, Op

NARROW, WIDE, HIGH, MIXED = "n", "w", "h", "x"
_WIDE_CODES = ("I", "F")


def _set(state: dict[int, str], reg_ordinal: int, wide: bool) -> None:
    # A write may clobber half of a previous wide value.
    prev = state.get(reg_ordinal)
    if prev == HIGH:
        state[reg_ordinal - 1] = MIXED
    if wide:
        if state.get(reg_ordinal + 1) == WIDE:
            state[reg_ordinal + 2] = MIXED
        state[reg_ordinal] = WIDE
        state[reg_ordinal + 1] = HIGH
    else:
        if prev == WIDE:
            state[reg_ordinal + 1] = MIXED
        state[reg_ordinal] = NARROW


class RegisterKinds:
    def __init__(self, module, fn: Function, cc: CConv, info, cconvs) -> None:
        self.module = module
        self.fn = fn
        self.cconvs = cconvs
        self._before: dict[int, dict[int, str]] = {}
        entry: dict[int, str] = {}
        for code, ordinal in argument_registers(cc):
            if code != "r":
                _set(entry, ordinal, code in _WIDE_CODES)
        self._run(entry, info)

    def result_codes(self, op: Op) -> tuple:
        callee = op["callee_ordinal"]
        if callee & IMPORT_BIT:
            return self.module.imports[callee & ~IMPORT_BIT].signature.cconv.results
        return self.cconvs[callee].results

    def transfer(self, op: Op, state: dict[int, str]) -> None:
        for f in op.spec.fields:
            if not f.write:
                continue
            v = op.values[f.name]
            if f.kind == "register" and f.bank != "ref":
                _set(state, v.ordinal, f.bank in ("i64", "f64"))
            elif f.kind == "list":
                for reg, code in zip(v, self.result_codes(op)):
                    if not reg.is_ref:
                        _set(state, reg.ordinal, code in _WIDE_CODES)

    @staticmethod
    def apply_remap(pairs, state: dict[int, str]) -> dict[int, str]:
        out = dict(state)
        for src, dst in pairs:
            if src.is_ref:
                continue
            out[dst.ordinal] = out.get(src.ordinal, MIXED) if src.ordinal in out else MIXED
        return out

    def _run(self, entry: dict[int, str], info) -> None:
        index_of = {b.pc: b.index for b in self.fn.blocks}
        states: dict[int, dict[int, str]] = {0: entry}
        work = [0]
        while work:
            b = work.pop(0)
            state = dict(states[b])
            block = self.fn.blocks[b]
            for op in block.ops:
                self._before[op.pc] = dict(state)
                self.transfer(op, state)
            term = block.ops[-1]
            for target_pc, pairs in _edges(term):
                t = index_of[target_pc]
                incoming = self.apply_remap(pairs, state)
                old = states.get(t)
                merged = incoming if old is None else _merge(old, incoming)
                if merged != old:
                    states[t] = merged
                    if t not in work:
                        work.append(t)

    def before(self, op: Op) -> dict[int, str]:
        return self._before.get(op.pc, {})


def _merge(a: dict[int, str], b: dict[int, str]) -> dict[int, str]:
    out = {}
    for k in set(a) | set(b):
        x, y = a.get(k), b.get(k)
        out[k] = x if x == y else MIXED
    return out


def _edges(term: Op):
    """(target pc, remap pairs) for each outgoing edge of a terminator.

    A yieldable call's results are written before its resume block runs (no remaps)."""
    return term.edges()

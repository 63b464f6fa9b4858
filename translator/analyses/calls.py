"""Import calls as the analyses read them: which required import an op calls, and its
operands and results with the register banks the import's calling convention gives.

    callee(module, op) -> (full name, cconv) | None
    typed(module, op) -> (operands, results)
"""

from __future__ import annotations

from translator.ir import IMPORT_BIT, Op, Reg
from translator.isa import CALL_KINDS


def callee(module, op: Op) -> tuple[str, str] | None:
    """(full name, cconv) of a required import an op calls; None for anything else."""
    if op.spec.emit not in CALL_KINDS:
        return None
    c = op["callee_ordinal"]
    if not c & IMPORT_BIT:
        return None
    imp = module.imports[c & ~IMPORT_BIT]
    if imp.optional:
        return None
    return imp.full_name, imp.signature.calling_convention


_BANK = {"i": "i32", "I": "i64", "f": "f32", "F": "f64", "r": "ref"}


def typed(module, op: Op) -> tuple[list[Reg], list[Reg]]:
    """A step's operands and results, each with its bank from the callee's calling
    convention (registers in a call's lists carry none: an i64 covers two slots)."""
    cc = module.imports[op["callee_ordinal"] & ~IMPORT_BIT].signature.cconv
    codes: list[str] = []
    segments = op.get("segment_sizes")
    for k, item in enumerate(cc.arguments):
        codes += list(item) * segments[k] if isinstance(item, tuple) else [item]
    operands, results = op["operands"], op["results"]
    if len(codes) != len(operands) or len(cc.results) != len(results):
        raise ValueError("operands do not match the calling convention")
    return (
        [Reg(r.raw, _BANK[c]) for r, c in zip(operands, codes)],
        [Reg(r.raw, _BANK[c]) for r, c in zip(results, cc.results)],
    )

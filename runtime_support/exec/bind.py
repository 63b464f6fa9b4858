"""Binding a queue program to a context: the choice between the fast path (fast.py) and
the general one (general.py).

Generated code calls `bind_program` once per program and context, at load. It lives apart
from both paths so that neither imports the other: FastProgram extends GeneralProgram, and
this module alone knows both.
"""

from __future__ import annotations

from .fast import FastProgram, has_fast_path
from .general import GeneralProgram
from .program import QueueProgram


def bind_program(program: QueueProgram, ctx, imports) -> GeneralProgram:
    """`program` bound to `ctx`: its imports (by full name, from the module's import
    table `imports`, aligned with `ctx.imports`) and its rodata. The fast path
    (fast.py) where the program has one, unless PYREE_QUEUE_FAST=0 (the general path
    alone: what the property tests compare it with)."""
    from ..env_knobs import flag_knob

    by_name = {decl[0]: fn for decl, fn in zip(imports, ctx.imports) if fn is not None}
    if flag_knob("PYREE_QUEUE_FAST", True) and has_fast_path(program):
        return FastProgram(program, by_name, ctx.rodata)
    return GeneralProgram(program, by_name, ctx.rodata)


__all__ = ["bind_program"]

"""The symbolic values of the kernel walk (kernel.py) and their affine forms: what the
walk, the op handlers (ops.py), the dispatch-time checks (guards.py) and the program's
assembly (assemble.py) share.

A value (`Val`) is the expression that computes it in the generated program, its kind,
the grid and loop dimensions it varies over, an affine form over them where one is
proved (atom -> coefficient, () -> the constant), a lower bound, and, in a reduction
loop, the accumulator it is a step of. `NotVectorizable`: the kernel keeps its scalar
translation (the reason in the message); `Retry`: the walk learned something about the
kernel (a loop that must be sequential, an element kept in a variable) and starts again.
"""

from __future__ import annotations

from dataclasses import dataclass

GRID = ("gz", "gy", "gx")  # axes 0, 1, 2 (IREE's order: z outermost)
COUNTS = {"gz": "cz", "gy": "cy", "gx": "cx"}


class NotVectorizable(Exception):
    pass


class Retry(Exception):
    pass


@dataclass
class Val:
    expr: str
    kind: str  # i32 | i64 | f32 | f64 | ref
    dims: frozenset = frozenset()
    form: dict | None = None  # atom -> coefficient; () -> constant
    lo: int | None = None
    const: int | float | None = None
    flushed: bool = False
    ref: object = None  # for refs: ("binding", k) | "consts" | "local" | "list" | ("rodata", k)
    level: int = 0  # loop depth where defined
    # In a reduction loop (see kernel.py `Kernel.loop`): the accumulator (a variable name) this
    # value is, or (pending) the step that updates it: ("add", term, acc first) | ("fma", a, b)
    taint: str | None = None
    pending: tuple | None = None


def add_forms(a, b, sign=1):
    if a is None or b is None:
        return None
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + sign * v
        if out[k] == 0 and k != ():
            del out[k]
    return out


def scale(a, c):
    if a is None:
        return None
    return {k: v * c for k, v in a.items() if v * c != 0 or k == ()}


__all__ = ["COUNTS", "GRID", "NotVectorizable", "Retry", "Val", "add_forms", "scale"]

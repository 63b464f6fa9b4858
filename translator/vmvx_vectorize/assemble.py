"""The vectorised program's body assembled from the walk's lines (kernel.py) and the
dispatch-time checks (guards.py): the preamble (grid counts, the small-work and
one-workgroup exits, grid axes, bindings and rodata), the checks placed before the first
store with the pure definitions they read hoisted above it, and definitions nothing
reads dropped.

    assemble(kernel, guards) -> [line, ...]   (the body of the kernel's vectorised entry)
"""

from __future__ import annotations

import re

from translator.vmvx_vectorize.kernel import Kernel
from translator.vmvx_vectorize.values import COUNTS, GRID, NotVectorizable

_DEF = re.compile(r"[vt]\d+ = ")
_IMPURE = ("load", "store", "_constant_i32")
_DIVISION = re.compile(r"A\.(?:div|rem)_i(?:32|64)_s\((.*)\)$")


def _safe_divisions(rhs: str) -> bool:
    """Whether a definition divides only by a literal that cannot fault (not 0 or -1)."""
    if "div" not in rhs and "rem" not in rhs:
        return True
    m = _DIVISION.match(rhs)
    if m is None:
        return False
    divisor = m.group(1).rsplit(", ", 1)[-1]
    return divisor.lstrip("-").isdigit() and int(divisor) not in (0, -1)  # (a top-level definition in the generated body)
_NAME = re.compile(r"\b[vt]\d+\b")


def assemble(k: Kernel, guards: list[str]) -> list[str]:
    out = ["cx, cy, cz = counts"]
    if k.work is not None:
        out.append(f"if cx * cy * cz * {k.work} <= A.SMALL_WORK:  # (small: the scalar translation is cheaper)")
        out.append("    return False")
    if k.ndim == 3:
        # (no loop axis: with one workgroup every value is a scalar, which the scalar
        # translation computes without the array wrappers)
        out.append("if cx * cy * cz == 1:  # (one workgroup, no loop axis: nothing varies)")
        out.append("    return False")
    out.append(f"NDIM = {k.ndim}")
    for axis, g in enumerate(GRID):
        out.append(f"_{g} = A.axis_range(0, 1, {COUNTS[g]}, {axis}, NDIM)")
    if k.bindings_used:  # (fewer bindings than the kernel takes: the scalar path's VMError)
        out.append(f"if len(bindings) <= {max(k.bindings_used)}:")
        out.append("    return False")
    for b in sorted(k.bindings_used):
        out.append(f"b{b} = bindings[{b}]")
    for n in sorted(k.rodata_used):
        out.append(f"ro{n} = A.Binding(_rodata[{n}].data)")
    body = [line[4:] for line in k.lines]
    # The checks run before the first write (after the pure code before it, which may
    # compute trip counts they read).
    at = len(body) if k.first_store is None else k.first_store
    body, at = _hoist(body, at, {n for g in guards for n in _NAME.findall(g)})
    return _dead_code_removed(out + body[:at] + guards + body[at:]) + ["return True"]


_DEF_LINE = re.compile(r"^(\s*)([vmt]\d+) = (.*)$")
_USE = re.compile(r"\b[vmt]\d+\b")
# (what a definition may do and still be dropped unread: no memory access, nothing
# that can fault - an integer division - and no fold)
_EFFECTS = ("load", "store", "_constant", "div_", "rem_", "sum_f32", "max_f32", "masked")


def _dead_code_removed(lines: list[str]) -> list[str]:
    """Pure definitions nothing reads dropped (a loop counter's last step, an address
    computed for an access folded away): each was a numpy call per dispatch."""
    while True:
        uses: dict = {}
        for line in lines:
            m = _DEF_LINE.match(line)
            text = m.group(3) if m else line
            for name in _USE.findall(text):
                uses[name] = uses.get(name, 0) + 1
        keep, dropped = [], False
        for j, line in enumerate(lines):
            m = _DEF_LINE.match(line)
            if (m and m.group(2) not in uses and not any(w in m.group(3) for w in _EFFECTS)
                    and not (j and lines[j - 1].rstrip().endswith(":"))):
                dropped = True
                continue
            keep.append(line)
        if not dropped:
            return keep
        lines = keep


def _hoist(body: list, at: int, needed: set) -> tuple[list, int]:
    """(body, at) with the definitions the checks read moved before line `at`: a
    top-level definition after it moves up with what it reads, where it is pure (no
    memory access; no division, which may fault) - a uniform offset computed from push
    constants between two loop nests."""
    defs = {}
    for j, line in enumerate(body):
        if _DEF.match(line):
            defs.setdefault(line.split(" = ", 1)[0], j)
    move: set = set()

    def want(name):
        j = defs.get(name)
        if j is None:
            raise NotVectorizable(f"a dispatch-time check reads {name}, not defined at top level")
        if j < at or j in move:
            return
        rhs = body[j].split(" = ", 1)[1]
        if any(w in rhs for w in _IMPURE) or not _safe_divisions(rhs):
            raise NotVectorizable(f"a dispatch-time check reads {name}, computed after the first store")
        move.add(j)
        for dep in _NAME.findall(rhs):
            want(dep)

    for name in sorted(needed):
        want(name)
    if not move:
        return body, at
    hoisted = [body[j] for j in sorted(move)]
    rest = [line for j, line in enumerate(body) if j >= at and j not in move]
    return body[:at] + hoisted + rest, at + len(hoisted)


__all__ = ["assemble"]

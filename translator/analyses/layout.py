"""Where a function's arguments land: the cconv -> register layout, written once.

Refs take `r0, r1, ...` in order; values take `i0, i1, ...`, and an i64/f64 starts on an
even register and takes two (`i2:3`).
"""

from __future__ import annotations

from translator.cconv import CConv

WIDE_CODES = ("I", "F")


def argument_registers(cc: CConv) -> list[tuple[str, int]]:
    """(cconv code, first register ordinal) per argument."""
    out, n, r = [], 0, 0
    for item in cc.arguments:
        if item == "r":
            out.append((item, r))
            r += 1
        elif item in WIDE_CODES:
            n += n & 1
            out.append((item, n))
            n += 2
        else:
            out.append((item, n))
            n += 1
    return out


def parameter_names(cc: CConv) -> list[str]:
    """The Python parameter names of a function (`r0`, `i0`, `i2` for the pair i2:3)."""
    return [f"{'r' if code == 'r' else 'i'}{ordinal}" for code, ordinal in argument_registers(cc)]

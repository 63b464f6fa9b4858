"""Analyses of decoded functions, shared by the code generator and tests.

    cfg.py       successors, dominators, loops, reducibility, region post-dominators
    regkinds.py  which value registers hold 32-bit values or halves of 64-bit ones, per op
    layout.py    a calling convention's argument registers (`i0`, `i2:3`, `r0`)
    ref_globals.py  ref-global loads whose type check cannot fail (module-wide stores)
"""

"""Analyses of decoded functions, shared by the code generator and tests.

    cfg.py       successors, dominators, loops, reducibility, region post-dominators
    regkinds.py  which value registers hold 32-bit values or halves of 64-bit ones, per op
    banks.py     integer or float: rejects a read of a register whose writes give the other kind
    layout.py    a calling convention's argument registers (`i0`, `i2:3`, `r0`)
    liveness.py  which ref registers some later op may read (releases at last use)
    ref_globals.py  ref-global loads whose type check cannot fail (module-wide stores)
    ownership.py  an export's results returned zero-copy, arguments whose copies are reused
"""

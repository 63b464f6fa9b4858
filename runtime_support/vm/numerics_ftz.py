"""The VM's scalar ops as IREE runs them inside VMVX kernels: denormals flushed to zero.

IREE runs a VMVX kernel's bytecode with the x86-64 MXCSR flags FTZ and DAZ set, so every
float operation reads a denormal operand as a zero of the same sign and writes a zero
(of the result's sign) where the result would be denormal. Host VM code runs without
them (runtime_support/vm/numerics.py). This module exports every name numerics.py does;
the float ops (an `f32`/`f64` mnemonic, bitcasts and int -> float casts aside) are
wrapped so that float operands (libm's functions aside, see LIBM) and float results
are flushed, by the width their mnemonic gives them (`ext.f32.f64` reads an f32 and writes an f64). `fma` is not fused
in the 3.13 runtime: its intermediate product is a float result too, flushed as such.
Moves (loads, stores, selects, constants, bitcasts) carry bits and flush nothing.

Generated kernel code imports its numerics from here instead of numerics.py
(translator/vmvx.py); integer ops are the same objects.
"""

from __future__ import annotations

import inspect

from runtime_support.vm import numerics as _n
from runtime_support.vm.mxcsr import under_daz
from runtime_support.vm.numerics import *  # noqa: F401,F403  (the integer ops unchanged)
from runtime_support.vm.numerics import __all__ as _ALL

# Smallest normal magnitude per float width: values strictly between -T and T (zeros
# aside, which multiply to themselves) are denormal.
TINY = {"f32": 2.0**-126, "f64": 2.0**-1022}

# Ops IREE computes with host libm calls: glibc reads a denormal operand's bits with
# integer instructions (DAZ does not apply; IREE's logf(1e-40) is -103.97), while the
# result is rounded by float instructions (FTZ applies).
LIBM = ("atan", "atan2", "cos", "sin", "exp", "exp2", "expm1", "log", "log10", "log1p",
        "log2", "pow", "tanh", "erf")

# Mnemonics that move bits or read only integers: not wrapped.
# abs and neg are bit operations (andps/xorps), which DAZ and FTZ leave alone: IREE's
# abs of -1e-40 is 1e-40.
_UNWRAPPED_PREFIXES = ("bitcast.", "cast.si", "cast.ui", "abs.", "neg.")


def _widths(mnemonic: str) -> tuple[str, str] | None:
    """(operand width, result width) of a float op, or None for one that is not."""
    if mnemonic.startswith(_UNWRAPPED_PREFIXES):
        return None
    parts = mnemonic.split(".")
    floats = [p for p in parts if p in TINY]
    if not floats:
        return None
    if parts[0] in ("ext", "trunc", "cast"):
        return floats[0], floats[-1] if len(floats) > 1 else floats[0]
    return floats[0], floats[0]


def _wrap(mnemonic: str, fn, widths: tuple[str, str]):
    """fn with DAZ on float operands and FTZ on a float result: a closure per arity, so a
    call costs one frame and a comparison per value."""
    code = getattr(fn, "__code__", None)  # (some are C functions: math.atan)
    arity = code.co_argcount if code is not None else len(inspect.signature(fn).parameters)
    libm = _n.LIBM_F32.get(mnemonic.split(".")[0] + "f") if widths == ("f32", "f32") else None
    if libm is not None:  # (libm's f32 function called under DAZ, as on IREE's workers)
        fn = under_daz(libm)
    ti, to = TINY[widths[0]], TINY[widths[1]]
    # (libm reads a denormal operand's bits: only its result is flushed; ints pass, an
    # int operand of these ops is never denormal)
    flush_operands = mnemonic.split(".")[0] not in LIBM
    if arity == 1 and flush_operands:

        def op(a):
            if -ti < a < ti:
                a = 0.0 * a
            r = fn(a)
            return 0.0 * r if -to < r < to and type(r) is float else r

    elif arity == 2 and flush_operands:

        def op(a, b):
            if -ti < a < ti:
                a = 0.0 * a
            if -ti < b < ti:
                b = 0.0 * b
            r = fn(a, b)
            return 0.0 * r if -to < r < to and type(r) is float else r

    else:

        def op(*args):
            if flush_operands:
                args = [0.0 * a if -ti < a < ti else a for a in args]
            r = fn(*args)
            return 0.0 * r if -to < r < to and type(r) is float else r

    op.__name__ = mnemonic.replace(".", "_")
    op.__doc__ = f"`{mnemonic}` with denormal operands and result flushed to zero."
    return op


def _fma(width: str):
    tiny = TINY[width]
    mul, add = (_n.mul_f32, _n.add_f32) if width == "f32" else (_n.mul_f64, _n.add_f64)

    def fma(a, b, c):
        if -tiny < a < tiny:
            a = 0.0 * a
        if -tiny < b < tiny:
            b = 0.0 * b
        if -tiny < c < tiny:
            c = 0.0 * c
        p = mul(a, b)  # (not fused: the product is rounded, and flushed, first)
        if -tiny < p < tiny:
            p = 0.0 * p
        r = add(p, c)
        return 0.0 * r if -tiny < r < tiny else r

    fma.__name__ = f"fma_{width}"
    return fma


OPS: dict = {}
for _m, _f in _n.OPS.items():
    _w = _widths(_m)
    if _w is None:
        OPS[_m] = _f
    elif _m.startswith("fma."):
        OPS[_m] = _fma(_w[0])
    else:
        OPS[_m] = _wrap(_m, _f, _w)
    globals()[_m.replace(".", "_")] = OPS[_m]

# The f32 ops of a kernel's inner loops, the wrapper and the op above in one call each
# (numerics.py's bodies: the sum, difference or product rounded to f32 by struct's C
# cast), operands and result flushed as the wrapper flushes them.
_pack_f, _unpack_f = _n._pack_f, _n._unpack_f
_T32 = TINY["f32"]


def add_f32(a, b):
    """`add.f32` with denormal operands and result flushed to zero."""
    if -_T32 < a < _T32:
        a = 0.0 * a
    if -_T32 < b < _T32:
        b = 0.0 * b
    r = _unpack_f(_pack_f(a + b))[0]
    return 0.0 * r if -_T32 < r < _T32 else r


def sub_f32(a, b):
    """`sub.f32` with denormal operands and result flushed to zero."""
    if -_T32 < a < _T32:
        a = 0.0 * a
    if -_T32 < b < _T32:
        b = 0.0 * b
    r = _unpack_f(_pack_f(a - b))[0]
    return 0.0 * r if -_T32 < r < _T32 else r


def mul_f32(a, b):
    """`mul.f32` with denormal operands and result flushed to zero."""
    if -_T32 < a < _T32:
        a = 0.0 * a
    if -_T32 < b < _T32:
        b = 0.0 * b
    r = _unpack_f(_pack_f(a * b))[0]
    return 0.0 * r if -_T32 < r < _T32 else r


def fma_f32(a, b, c):
    """`fma.f32` as _fma("f32") computes it (not fused: the product rounded and flushed,
    then the sum), in one call."""
    if -_T32 < a < _T32:
        a = 0.0 * a
    if -_T32 < b < _T32:
        b = 0.0 * b
    if -_T32 < c < _T32:
        c = 0.0 * c
    p = _unpack_f(_pack_f(a * b))[0]
    if -_T32 < p < _T32:
        p = 0.0 * p
    r = _unpack_f(_pack_f(p + c))[0]
    return 0.0 * r if -_T32 < r < _T32 else r


OPS["add.f32"], OPS["sub.f32"], OPS["mul.f32"] = add_f32, sub_f32, mul_f32
OPS["fma.f32"] = fma_f32

# Inline forms of kernel code (translator/vmvx.py): numerics.py's, and the wrapping integer
# arithmetic of a kernel's address and loop-counter updates written out as the functions'
# own expressions (numerics.add_i64 etc.: one call each per element otherwise).
# tests/translator/test_codegen_inline_numerics.py checks every form against its function.
_WRAP = {"i32": (1 << 31, (1 << 32) - 1), "i64": (1 << 63, (1 << 64) - 1)}
INLINE: dict[str, str] = dict(_n.INLINE)
for _t, (_s, _m) in _WRAP.items():
    INLINE[f"add.{_t}"] = f"(({{left}} + {{right}} + {_s}) & {_m}) - {_s}"
    INLINE[f"sub.{_t}"] = f"(({{left}} - {{right}} + {_s}) & {_m}) - {_s}"
    INLINE[f"mul.{_t}"] = f"(({{left}} * {{right}} + {_s}) & {_m}) - {_s}"
    INLINE[f"fma.{_t}"] = f"(({{first}} * {{second}} + {{third}} + {_s}) & {_m}) - {_s}"
del _t, _s, _m

__all__ = list(_ALL) + [m.replace(".", "_") for m in OPS]

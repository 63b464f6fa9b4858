"""The `vmvx` import module: the microkernels VMVX executables call (IREE
runtime/src/iree/modules/vmvx: module.c, elementwise.c), on numpy.

Every import is one row of `_TABLE` (name -> shape, element op); the shape fixes the
calling convention and how the arguments read (IREE's fixed argument structs). Each
operand is a `!vm.buffer` with an ELEMENT offset and element strides; it is mapped
(modules/vmvx_operands.py) as IREE maps it (`MAP_BUFFER_2D_*`: sizes and strides+1
must fit 32 bits, else INVALID_ARGUMENT "buffer overflow for NAME"; the span (size0-1)*stride0 +
(size1-1)*stride1 + 1 elements from the offset, computed modulo 2**64, must lie in the
buffer, else OUT_OF_RANGE; an output needs a mutable buffer, else PERMISSION_DENIED).
Beyond IREE, every element a loop would touch must lie in the buffer (negative strides
can pass IREE's span check and then read outside it: here OUT_OF_RANGE), and a tile
whose zero or overlapping strides make it more than 2**24 elements and more than its
buffer holds is RESOURCE_EXHAUSTED (IREE loops over every element; pyree would first
allocate an index per element the operand claims).

Element loops run row-major, each element read then written, as IREE's C loops do: where
the output overlaps an input (or writes one element twice) the numpy form would differ,
so those calls run the same loop element by element. Numerics are IREE's under the
VMVX worker's MXCSR (denormal operands and results flushed to zero where the operation
is float arithmetic; abs and neg are bit operations and flush nothing); exp and log
call the host libm's expf/logf, as IREE does. Integer division by zero and INT_MIN / -1
(a hardware trap in IREE) are VMError(INVALID_ARGUMENT); shift amounts are taken modulo
32, as x86-64's scalar shifts take them.
"""

from __future__ import annotations

import ctypes
import ctypes.util

import numpy as np

from ..errors import StatusCode, VMError
from .vmvx_operands import Operand
from .vmvx_operands import daz as _daz  # (`daz` is _f32_unary's flag)

MODULE_NAME = "vmvx"
# Argument shapes (IREE's fixed argument structs) -> calling convention.
SHAPES = {
    "binary2d": "0rIIIrIIIrIIIII_v",  # lhs, off, s0, s1, rhs, ..., out, ..., size0, size1
    "unary2d": "0rIIIrIIIII_v",  # in, off, s0, s1, out, off, s0, s1, size0, size1
    "fill2d": "0irIIII_v",  # value, out, off, row stride, size0, size1
    # The ukernel imports (runtime_support/modules/vmvx_ukernels.py): module.c's structs.
    "mmt4d": "0rIIrIIrIIIIIiiii_v",  # lhs, off, row stride, rhs.., out.., M, N, K, M0, N0, K0, flags
    "pack": "0rIIIrIIIIIIIIIIi_v",  # in, off, s0, s1, out.., in sizes 2, out sizes 4, padding, flags
    "unpack": "0rIIIrIIIIIIIIIi_v",  # in, off, s0, s1, out.., in sizes 4, out sizes 2, flags
    "query_tile_sizes2d": "0IIi_II",  # size0, size1, flags -> tile size0, tile size1
}


# --------------------------------------------------------------------------- element ops
# Each takes and returns numpy arrays of the element type (uint32 for the 32-bit ops).


def _f(bits):
    return bits.view(np.float32)


def _f32_binary(op):
    def run(a, b):
        with np.errstate(all="ignore"):
            r = op(_daz(_f(a)), _daz(_f(b)))
            return _daz(r).view(np.uint32)  # (FTZ: the same flush on the result)

    return run


def _f32_unary(op, flush=True, daz=True):
    """`flush`: FTZ on the result; `daz`: DAZ on the operand (libm's expf/logf read a
    denormal's bits with integer instructions, which DAZ does not touch)."""

    def run(a):
        with np.errstate(all="ignore"):
            x = _f(a)
            if not flush:
                return op(x).astype(np.float32).view(np.uint32)
            return _daz(op(_daz(x) if daz else x).astype(np.float32)).view(np.uint32)

    return run


def _libm_f32(name):
    """An element function calling the host libm's `name` (float -> float) under DAZ, as
    IREE's elementwise.c does on its workers (runtime_support/vm/mxcsr.py); numpy's own
    exp/log round differently in places."""
    from ..vm.mxcsr import array_maps, under_daz

    path = ctypes.util.find_library("m") or "libm.so.6"
    fn = getattr(ctypes.CDLL(path), name)
    fn.argtypes, fn.restype = [ctypes.c_float], ctypes.c_float
    call = under_daz(fn)
    maps = array_maps()
    if maps is not None:  # (x86-64: one machine-code loop over the tile, under DAZ)
        map_f32 = maps[0]
        return lambda x: map_f32(fn, x)

    def run(x):
        values = x.astype(np.float64).ravel().tolist()  # (converted before DAZ is set)
        return np.array([call(v) for v in values], np.float32).reshape(x.shape)

    return run


def _rsqrt(x):
    return np.float32(1.0) / np.sqrt(x)


def _signed(a):
    return a.view(np.int32)


def _divs(a, b):
    sa, sb = _signed(a), _signed(b)
    if np.any(sb == 0):
        raise VMError(StatusCode.INVALID_ARGUMENT, "vmvx.divs.2d.i32: integer division by zero")
    if np.any((sa == np.int32(-(2**31))) & (sb == -1)):
        raise VMError(StatusCode.INVALID_ARGUMENT, "vmvx.divs.2d.i32: integer overflow (INT_MIN / -1)")
    q = np.abs(sa.astype(np.int64)) // np.abs(sb.astype(np.int64))  # (C truncates toward zero)
    return np.where((sa < 0) != (sb < 0), -q, q).astype(np.int32).view(np.uint32)


def _divu(a, b):
    if np.any(b == 0):
        raise VMError(StatusCode.INVALID_ARGUMENT, "vmvx.divu.2d.i32: integer division by zero")
    return a // b


def _ctlz(a):
    out = np.full(a.shape, 32, np.uint32)
    v = a.copy()
    n = np.zeros(a.shape, np.uint32)
    for shift in (16, 8, 4, 2, 1):
        high = v >> np.uint32(32 - shift) == 0
        n += np.where(high, np.uint32(shift), np.uint32(0))
        v = np.where(high, v << np.uint32(shift), v)
    return np.where(a == 0, out, n)


_S31 = np.uint32(31)

# name -> (shape, element function, element size in bytes)
_TABLE = {
    "add.2d.f32": ("binary2d", _f32_binary(np.add), 4),
    "sub.2d.f32": ("binary2d", _f32_binary(np.subtract), 4),
    "mul.2d.f32": ("binary2d", _f32_binary(np.multiply), 4),
    "div.2d.f32": ("binary2d", _f32_binary(np.divide), 4),
    "add.2d.i32": ("binary2d", lambda a, b: a + b, 4),
    "sub.2d.i32": ("binary2d", lambda a, b: a - b, 4),
    "mul.2d.i32": ("binary2d", lambda a, b: a * b, 4),
    "divs.2d.i32": ("binary2d", _divs, 4),
    "divu.2d.i32": ("binary2d", _divu, 4),
    "and.2d.i32": ("binary2d", lambda a, b: a & b, 4),
    "or.2d.i32": ("binary2d", lambda a, b: a | b, 4),
    "xor.2d.i32": ("binary2d", lambda a, b: a ^ b, 4),
    "shl.2d.i32": ("binary2d", lambda a, b: a << (b & _S31), 4),
    "shrs.2d.i32": ("binary2d", lambda a, b: (_signed(a) >> _signed(b & _S31)).view(np.uint32), 4),
    "shru.2d.i32": ("binary2d", lambda a, b: a >> (b & _S31), 4),
    "abs.2d.f32": ("unary2d", _f32_unary(np.abs, flush=False), 4),
    "neg.2d.f32": ("unary2d", _f32_unary(np.negative, flush=False), 4),
    "ceil.2d.f32": ("unary2d", _f32_unary(np.ceil), 4),
    "floor.2d.f32": ("unary2d", _f32_unary(np.floor), 4),
    "rsqrt.2d.f32": ("unary2d", _f32_unary(_rsqrt), 4),
    "exp.2d.f32": ("unary2d", "expf", 4),  # (bound to libm when first called)
    "log.2d.f32": ("unary2d", "logf", 4),
    "ctlz.2d.i32": ("unary2d", _ctlz, 4),
    "copy.2d.x8": ("unary2d", None, 1),
    "copy.2d.x16": ("unary2d", None, 2),
    "copy.2d.x32": ("unary2d", None, 4),
    "copy.2d.x64": ("unary2d", None, 8),
    "fill.2d.x32": ("fill2d", None, 4),
    "mmt4d": ("mmt4d", None, 0),
    "pack": ("pack", None, 0),
    "unpack": ("unpack", None, 0),
    "query_tile_sizes.2d": ("query_tile_sizes2d", None, 0),
}

#: Full import name -> calling convention: what the translator checks a kernel against.
IMPORTS = {f"{MODULE_NAME}.{name}": SHAPES[shape] for name, (shape, _, _) in _TABLE.items()}


def _in_order_matters(out: Operand, inputs, elem: int) -> bool:
    """Whether IREE's row-major loop gives another result than one vector operation: the
    output writes an element twice, or element k reads what an earlier element j < k
    wrote (reading the element it writes itself is the same both ways)."""
    w = out.addresses(elem)
    order = np.argsort(w, kind="stable")
    ws = w[order]
    if ws.size > 1 and np.any(ws[1:] == ws[:-1]):
        return True
    for src in inputs:
        r = src.addresses(elem)
        if not r.size or r.max() + elem <= ws[0] or ws[-1] + elem <= r.min():
            continue  # (disjoint address ranges)
        if (int(ws[0]) - int(r[0])) % elem:
            return True  # (elements straddle each other: take the exact loop)
        at = np.searchsorted(ws, r)
        hit = at < ws.size
        hit[hit] = ws[at[hit]] == r[hit]
        if np.any(order[at[hit]] < np.nonzero(hit)[0]):
            return True
    return False


# --------------------------------------------------------------------------- the module


class VmvxModule:
    """The `vmvx` module's imports as methods (`add.2d.f32` -> `add_2d_f32`)."""

    MODULE_NAME = MODULE_NAME
    IMPORTS = IMPORTS

    def __init__(self) -> None:
        self._libm: dict = {}

    def _element_fn(self, name):
        fn = _TABLE[name][1]
        if isinstance(fn, str):
            fn = self._libm.get(fn) or self._libm.setdefault(fn, _f32_unary(_libm_f32(fn), daz=False))
        return fn

    def call(self, name: str, *args):
        shape, _, elem = _TABLE[name]
        where = f"{MODULE_NAME}.{name}"
        if elem == 0:  # (the ukernels: mmt4d, pack, unpack, query_tile_sizes.2d)
            import runtime_support.modules.vmvx_ukernels as vmvx_ukernels

            return getattr(vmvx_ukernels, shape)(where, *args)
        if shape == "binary2d":
            lb, lo, l0, l1, rb, ro, r0, r1, ob, oo, o0, o1, n0, n1 = args
            lhs = Operand(where, "lhs", lb, elem, lo, l0, l1, n0, n1, False)
            rhs = Operand(where, "rhs", rb, elem, ro, r0, r1, n0, n1, False)
            out = Operand(where, "out", ob, elem, oo, o0, o1, n0, n1, True)
            self._elementwise(name, out, (lhs, rhs), elem)
        elif shape == "unary2d":
            ib, io, i0, i1, ob, oo, o0, o1, n0, n1 = args
            src = Operand(where, "in", ib, elem, io, i0, i1, n0, n1, False)
            out = Operand(where, "out", ob, elem, oo, o0, o1, n0, n1, True)
            self._elementwise(name, out, (src,), elem)
        else:  # fill2d
            value, ob, oo, row_stride, n0, n1 = args
            out = Operand(where, "out", ob, elem, oo, row_stride, 1, n0, n1, True)
            if out.index.size:
                out.array[out.index.ravel()] = np.uint32(value & 0xFFFFFFFF)

    def _elementwise(self, name, out, inputs, elem):
        if not out.index.size:
            return
        fn = self._element_fn(name)
        if _in_order_matters(out, inputs, elem):
            # IREE's loop, one element at a time: each write seen by later reads.
            flat = out.index.ravel()
            srcs = [s.index.ravel() for s in inputs]
            for k in range(flat.size):
                vals = [s.array[i[k] : i[k] + 1].copy() for s, i in zip(inputs, srcs)]
                out.array[flat[k]] = vals[0][0] if fn is None else fn(*vals)[0]
            return
        vals = [s.array[s.index] for s in inputs]
        out.array[out.index] = vals[0] if fn is None else fn(*vals)


def _method(name: str):
    def method(self, *args):
        return self.call(name, *args)

    method.__name__ = name.replace(".", "_")
    method.__qualname__ = f"VmvxModule.{method.__name__}"
    method.__doc__ = f"`{MODULE_NAME}.{name}` ({IMPORTS[MODULE_NAME + '.' + name]})."
    return method


for _name in _TABLE:
    setattr(VmvxModule, _name.replace(".", "_"), _method(_name))

__all__ = ["IMPORTS", "VmvxModule"]

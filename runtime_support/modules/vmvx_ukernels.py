"""The `vmvx` module's ukernel imports: `mmt4d`, `pack`, `unpack`, `query_tile_sizes.2d`
(IREE runtime/src/iree/modules/vmvx/module.c over runtime/src/iree/builtins/ukernel),
on numpy. `vmvx.VmvxModule.call` routes their rows of the import table here.

Each operand is mapped as module.c maps it (`MAP_BUFFER_2D_*`, the same checks as the
element ops: `vmvx_operands.Operand`); the element types are the ones module.c accepts (mmt4d:
f32*f32->f32 and s8*s8->s32; pack: f32, i32, i8; unpack: f32, i32), anything else
INVALID_ARGUMENT "unhandled flags", as IREE answers. Where IREE's ukernel only asserts
(debug builds) and a release build would write outside the operands, loop forever or
call a null tile function, here it is VMError(INVALID_ARGUMENT): sizes negative or
beyond the ukernel's ranges, a pack/unpack whose outer*tile sizes do not cover the
unpacked shape, flag bits the ukernel does not know, a tile over the ukernel's
4096-byte temporary buffer where that buffer is used, an mmt4d tile shape with no tile
function and no generic fallback flag. Operands that overlap (the ukernels take them
`restrict`) read every input before writing.

Numerics, as IREE's x86-64 ukernels on this host (the tile function, and so the
rounding, depends on its CPU, as IREE's does: `iree_cpu_data_fields`): an f32 mmt4d
tile that has an architecture-specific tile function (AVX2+FMA: N0=8, AVX-512: N0=16;
K0=1; M0 1, 2, 4, 8 (16 on AVX-512)) accumulates with a fused multiply-add per k, in k
order; the generic tile function multiplies then adds, each rounded to f32, per k and
then per k0. Denormal operands and results are flushed (the VMVX worker's MXCSR).
s8*s8->s32 accumulates in int32, wrapping. `query_tile_sizes.2d` answers the tile
sizes IREE's x86-64 query gives on this host.
"""

from __future__ import annotations

import functools

import numpy as np

from ..errors import StatusCode, VMError
from .vmvx_operands import M64, Operand, daz, signed64

_TMP_BUF = 4096  # (IREE's pack/unpack temporary buffer, in bytes)

# mmt4d flags (IREE's exported_bits.h)
_MMT4D_F32 = 0x01
_MMT4D_S8S8S32 = 0x02
_MMT4D_ACCUMULATE = 0x100
_MMT4D_FALLBACK = 0x200
_MMT4D_KNOWN = 0xFF | 0x100 | 0x200 | 0x400
# pack / unpack flags
_PACK_TYPES = {0x01: (4, "f32"), 0x02: (1, "i8"), 0x03: (4, "i32")}
_UNPACK_TYPES = {0x01: (4, "f32"), 0x03: (4, "i32")}
_TRANSPOSE_INNER = 0x100
_TRANSPOSE_OUTER = 0x200
_PACK_KNOWN = 0xFF | 0x100 | 0x200


def _bad(where: str, message: str) -> VMError:
    return VMError(StatusCode.INVALID_ARGUMENT, f"{where}: {message}")


def _i64(v: int) -> int:
    return signed64(v & M64)


def _i32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >> 31 else v


def _in_range(where: str, names_values, bits: int) -> None:
    for name, value in names_values:
        if not 0 <= value < (1 << bits):
            raise _bad(where, f"{name}={value} outside [0, 2**{bits})")


# --------------------------------------------------------------------------- host CPU


@functools.lru_cache(maxsize=1)
def _cpu_flags() -> frozenset:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.partition(":")[2].split())
    except OSError:
        pass
    return frozenset()


def _avx2_fma() -> bool:
    return {"avx2", "fma", "f16c"} <= _cpu_flags()


def _avx512_base() -> bool:
    return _avx2_fma() and {"avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512cd"} <= _cpu_flags()


def _avx512_vnni() -> bool:
    return _avx512_base() and "avx512_vnni" in _cpu_flags()


def _f32_arch_tile(m0: int, n0: int, k0: int) -> bool:
    """Whether IREE's x86-64 ukernels have an f32 tile function for this tile here."""
    if k0 != 1:
        return False
    if n0 == 16 and m0 in (1, 2, 4, 8, 16):
        return _avx512_base()
    if n0 == 8 and m0 in (1, 2, 4, 8):
        return _avx2_fma()
    return False


# --------------------------------------------------------------------------- f32 steps


def _fma_f32(a, b, c):
    """fmaf(a, b, c) on float32 arrays, one rounding (round to nearest even), with DAZ
    on the operands and FTZ on the result. a*b is exact in float64; the float64 sum's
    error (TwoSum) breaks a tie at a float32 midpoint the way the exact sum would."""
    a64 = daz(a).astype(np.float64)
    b64 = daz(b).astype(np.float64)
    c64 = daz(c).astype(np.float64)
    with np.errstate(all="ignore"):
        p = a64 * b64
        s = p + c64
        bb = s - p
        e = (p - (s - bb)) + (c64 - bb)
        bits = s.view(np.uint64)
        tie = ((bits & np.uint64(0x1FFFFFFF)) == np.uint64(0x10000000)) & (e != 0) & np.isfinite(s)
        if np.any(tie):
            s = np.where(tie, np.nextafter(s, np.where(e > 0, np.inf, -np.inf)), s)
        return daz(s.astype(np.float32))


def _mul_add_f32(a, b, c):
    with np.errstate(all="ignore"):
        p = daz(daz(a) * daz(b))
        return daz(p + daz(c))


# --------------------------------------------------------------------------- mmt4d


def mmt4d(where, lb, lo, ls, rb, ro, rs, ob, oo, os_, m, n, k, m0, n0, k0, flags):
    flags &= 0xFFFFFFFF
    kind = flags & 0xFF
    if kind == _MMT4D_F32:
        in_elem, out_elem = 4, 4
    elif kind == _MMT4D_S8S8S32:
        in_elem, out_elem = 1, 4
    else:
        raise _bad(where, "unhandled flags")
    # (module.c: the i32 tile sizes widen to size_t, sign-extended)
    M, N, K = m & M64, n & M64, k & M64
    M0, N0, K0 = _i32(m0) & M64, _i32(n0) & M64, _i32(k0) & M64
    lhs = Operand(where, "lhs", lb, in_elem, lo, ls, 1, M, K * M0 * K0 & M64, False)
    rhs = Operand(where, "rhs", rb, in_elem, ro, rs, 1, N, K * N0 * K0 & M64, False)
    out = Operand(where, "out", ob, out_elem, oo, os_, 1, M, N * M0 * N0 & M64, True)
    if flags & ~_MMT4D_KNOWN:
        raise _bad(where, f"unknown flags 0x{flags:x}")
    M, N, K = _i64(M), _i64(N), _i64(K)
    M0, N0, K0 = _i64(M0), _i64(N0), _i64(K0)
    _in_range(where, (("M", M), ("N", N), ("K", K)), 31)
    _in_range(where, (("M0", M0), ("N0", N0), ("K0", K0)), 15)
    accumulate = bool(flags & _MMT4D_ACCUMULATE)
    if M == 0 or N == 0 or M0 == 0 or N0 == 0 or (K * K0 == 0 and accumulate):
        return  # (nothing to write: an empty tile, or nothing added to it)
    if K0 == 0:
        K = 0  # (K empty steps: lhs and rhs hold no element, however large K is)
    fused = kind == _MMT4D_F32 and _f32_arch_tile(M0, N0, K0)
    if not fused and not (flags & _MMT4D_FALLBACK) and not (kind == _MMT4D_S8S8S32 and _s8_arch_tile(M0, N0, K0)):
        raise _bad(where, f"no tile function for {M0}x{N0}x{K0} and no generic fallback flag")
    lv = lhs.array[lhs.index].reshape(M, K, M0, K0)
    rv = rhs.array[rhs.index].reshape(N, K, N0, K0)
    oidx = out.index.reshape(M, N, M0, N0)
    if kind == _MMT4D_S8S8S32:
        acc = out.array[oidx].astype(np.int64) if accumulate else np.zeros((M, N, M0, N0), np.int64)
        li, ri = lv.view(np.int8).astype(np.int64), rv.view(np.int8).astype(np.int64)
        acc = acc + np.einsum("akix,bkjx->abij", li, ri)
        out.array[oidx] = (acc & 0xFFFFFFFF).astype(np.uint32)
        return
    lf, rf = lv.view(np.float32), rv.view(np.float32)
    acc = out.array[oidx].view(np.float32).copy() if accumulate else np.zeros((M, N, M0, N0), np.float32)
    step = _fma_f32 if fused else _mul_add_f32
    for kk in range(K):
        for x in range(K0):
            a = np.broadcast_to(lf[:, None, kk, :, None, x], (M, N, M0, N0))
            b = np.broadcast_to(rf[None, :, kk, None, :, x], (M, N, M0, N0))
            acc = step(a, b, acc)
    out.array[oidx] = acc.view(np.uint32)


def _s8_arch_tile(m0, n0, k0) -> bool:
    return False  # (IREE's x86-64 ukernels: no s8*s8->s32 tile function; the result is exact anyway)


# --------------------------------------------------------------------------- pack / unpack


def _ceil_log2(v: int) -> int:
    return 0 if v <= 1 else (v - 1).bit_length()


def _logical(flags, outer0, outer1, tile0, tile1):
    if flags & _TRANSPOSE_OUTER:
        outer0, outer1 = outer1, outer0
    if flags & _TRANSPOSE_INNER:
        tile0, tile1 = tile1, tile0
    return outer0, outer1, tile0, tile1


def _physical(flags, logical):
    """(outer0, outer1, tile0, tile1) in the ukernel's loop order -> the packed layout
    (an involution: the same for both directions)."""
    if flags & _TRANSPOSE_OUTER:
        logical = logical.transpose(1, 0, 2, 3)
    if flags & _TRANSPOSE_INNER:
        logical = logical.transpose(0, 1, 3, 2)
    return logical


def _check_tmpbuf(where, elem, o0, o1, t0, t1, size0, size1, stride1):
    """IREE's pack/unpack copy partial tiles (and strided rows) through a 4096-byte buffer
    holding 4096 >> ceil_log2(tile bytes) tiles; none fit and the ukernel never ends."""
    if _TMP_BUF >> _ceil_log2(t0 * t1 * elem):
        return
    full_rows = size0 // t0 if t0 else 0
    full_cols = size1 >> _ceil_log2(t1)
    if stride1 != 1 or full_rows < o0 or full_cols < o1:
        raise _bad(where, f"a {t0}x{t1} tile exceeds IREE's {_TMP_BUF}-byte ukernel buffer")


def pack(where, ib, io, i0s, i1s, ob, oo, o0s, o1s, in0, in1, s0, s1, s2, s3, padding, flags):
    flags &= 0xFFFFFFFF
    if (flags & 0xFF) not in _PACK_TYPES:
        raise _bad(where, "unhandled flags")
    elem, _ = _PACK_TYPES[flags & 0xFF]
    tile = (s2 & M64) * (s3 & M64) & M64
    src = Operand(where, "in", ib, elem, io, i0s, i1s, in0, in1, False)
    out = Operand(where, "out", ob, elem, oo, o0s, 1, s0, (s1 & M64) * tile & M64, True)
    if flags & ~_PACK_KNOWN:
        raise _bad(where, f"unknown flags 0x{flags:x}")
    in0, in1, s0, s1, s2, s3 = (_i64(v) for v in (in0, in1, s0, s1, s2, s3))
    _in_range(where, (("in_size0", in0), ("in_size1", in1), ("out_size0", s0), ("out_size1", s1),
                      ("out_size2", s2), ("out_size3", s3)), 31)
    if 0 in (s0, s1, s2, s3):
        return
    o0, o1, t0, t1 = _logical(flags, s0, s1, s2, s3)
    if o0 * t0 < in0 or o1 * t1 < in1:
        raise _bad(where, f"a {o0}x{o1} grid of {t0}x{t1} tiles does not cover the {in0}x{in1} input")
    _check_tmpbuf(where, elem, o0, o1, t0, t1, in0, in1, _i64(i1s & M64))
    values = src.array[src.index]
    padded = np.full((o0 * t0, o1 * t1), (padding & M64) & ((1 << (8 * elem)) - 1), values.dtype)
    padded[:in0, :in1] = values
    logical = padded.reshape(o0, t0, o1, t1).transpose(0, 2, 1, 3)
    out.array[out.index.reshape(s0, s1, s2, s3)] = _physical(flags, logical)


def unpack(where, ib, io, i0s, i1s, ob, oo, o0s, o1s, s0, s1, s2, s3, out0, out1, flags):
    flags &= 0xFFFFFFFF
    if (flags & 0xFF) not in _UNPACK_TYPES:
        raise _bad(where, "unhandled flags")
    elem, _ = _UNPACK_TYPES[flags & 0xFF]
    tile = (s2 & M64) * (s3 & M64) & M64
    src = Operand(where, "in", ib, elem, io, i0s, 1, s0, (s1 & M64) * tile & M64, False)
    out = Operand(where, "out", ob, elem, oo, o0s, o1s, out0, out1, True)
    if flags & ~_PACK_KNOWN:
        raise _bad(where, f"unknown flags 0x{flags:x}")
    s0, s1, s2, s3, out0, out1 = (_i64(v) for v in (s0, s1, s2, s3, out0, out1))
    _in_range(where, (("in_size0", s0), ("in_size1", s1), ("in_size2", s2), ("in_size3", s3),
                      ("out_size0", out0), ("out_size1", out1)), 31)
    if out0 == 0 or out1 == 0:
        return
    o0, o1, t0, t1 = _logical(flags, s0, s1, s2, s3)
    if o0 * t0 < out0 or o1 * t1 < out1:
        raise _bad(where, f"a {o0}x{o1} grid of {t0}x{t1} tiles does not cover the {out0}x{out1} output")
    _check_tmpbuf(where, elem, o0, o1, t0, t1, out0, out1, _i64(o1s & M64))
    packed = src.array[src.index].reshape(s0, s1, s2, s3)
    logical = _physical(flags, packed)
    full = logical.transpose(0, 2, 1, 3).reshape(o0 * t0, o1 * t1)
    out.array[out.index] = full[:out0, :out1]


# --------------------------------------------------------------------------- query_tile_sizes.2d

_OP_F32 = 0x0100
_OP_I8 = 0x0200
_OP_MATMUL = (0x0100, 0x0200, 0x0300, 0x0400, 0x0500, 0x0600)


def query_tile_sizes2d(where, size0, size1, flags):
    flags &= 0xFFFFFFFF
    op, role = flags & 0xFF00, flags & 0xFF
    if op not in _OP_MATMUL or role not in (1, 2, 3):
        raise _bad(where, f"unhandled flags 0x{flags:x}")
    if op == _OP_F32:
        m, k, n = (16, 1, 16) if _avx512_base() else (8, 1, 8) if _avx2_fma() else (8, 1, 4)
    elif op == _OP_I8:
        m, k, n = (16, 2, 16) if _avx512_vnni() else (8, 2, 8) if _avx2_fma() else (8, 2, 4)
    else:
        m, k, n = 8, 4, 8  # (IREE's generic answer)
    return {1: (m, k), 2: (n, k), 3: (m, n)}[role]

"""Bit-exact VM scalar semantics (IREE 3.13 x86-64 runtime) on pyree's value conventions.

Values (ARCHITECTURE.md): i32/i64 are signed Python ints in range; f32 is a Python float
whose value is exactly representable as float32; f64 is a Python float.  Every function
here takes and returns values in that form.  Function names are the VM mnemonic with `.`
replaced by `_` (`cmp.ne.f32.o` -> `cmp_ne_f32_o`); `OPS` maps mnemonic -> function.

Semantics notes (vm-bytecode.md §5; everything below was checked against the 3.13
runtime by tests/runtime/test_vm_numerics.py unless it says otherwise):

* Integer division/remainder by zero and `MIN / -1`, `MIN % -1` are a hardware trap in
  IREE (the process dies).  Here they raise `VMError(INVALID_ARGUMENT)` with a message
  naming the op.  No conformance test can depend on this.
* Shifts mask the amount (`& 31` / `& 63`).  `abs(MIN) == MIN`.  `ctlz(0)` = width.
* f32 arithmetic is done in double and rounded once to float32 (`f32`).  For + - * / and
  sqrt of float32 operands that double rounding is provably innocuous, so results are
  correctly rounded, as in C `float`.
* `rem` is IEEE `remainder()` (exact, so f32 needs no extra care); `fma` is NOT fused
  (`a*b` rounded, then `+c` rounded) like the 3.13 x86-64 runtime.
* `min`/`max` are `b < a ? b : a` / `a < b ? b : a`: with a NaN second operand the first
  is returned, and `min(+0, -0)` returns the first operand.
* `round` = C `round` (half away from zero), `round.even` = half to even.
* `round.even(-0.5)` is +0.0 in 3.13 (observed; every other input keeps its sign).
* NaN results follow x86-64/glibc bit for bit where observed: an invalid operation
  (0/0, inf-inf, sqrt(-1), sin(inf), ...) yields the default NaN, which has the sign bit
  set (`-nan`); but log/log10/log2 (f64) and log10f of x < 0 give +nan.  NaN operands
  propagate (atan2 and f64 rem prefer the second NaN; pow with an odd integer exponent
  clears a NaN base's sign).  One deviation: with TWO NaN operands C add/sub/mul/div/fma
  return the first; CPython's float operators may return either (its specialized and
  generic paths differ), so only the NaN's sign/payload can differ.
* Transcendentals (`atan`, `atan2`, `cos`, `sin`, `exp`, `exp2`, `expm1`, `log`,
  `log10`, `log1p`, `log2`, `pow`, `tanh`, `erf`) call C libm in IREE.  The f64 forms use
  Python's `math` (the same glibc libm on Linux).  The f32 forms compute in double and
  round to float32: that is the correctly rounded result except in rare double-rounding
  cases, while glibc's `sinf`/`expf`/... are correctly rounded in most but not all cases
  and older ones (`atanf`, `tanhf`, `erff`, `log1pf`, `expm1f`, `log10f`) carry up to
  ~1-2 ulp error.  Expect occasional 1-ulp differences from IREE for those ops only.
  `rsqrt.f32` is `1.0f / sqrtf(a)` (two float roundings), `rsqrt.f64` is `1.0 / sqrt(a)`.
* Float -> int casts ROUND (C `lroundf`/`llroundf`/`lround`/`llround`, half away from
  zero).  Out of range, +-inf and NaN produce the x86-64 "integer indefinite" value
  INT64_MIN from the 64-bit conversion, so `cast.f32.si32`/`ui32` give 0 (its low 32 bits)
  and `cast.f32.si64`/`cast.f64.si64`/`cast.f64.ui64` give INT64_MIN.
  `cast.f32.ui64` is `(uint64_t)roundf(a)`, compiled by clang for x86-64 as a
  branchless pair of `cvttss2si`: values in [2^63, 2^64) convert modulo 2^64, negative
  values convert as signed (e.g. -3.0 -> -3), and NaN/+-inf/too large give INT64_MIN.
  `cast.f64.si32`/`ui32` first round the double to float (no compiler op emits them;
  not testable through iree-compile).
* Int -> float casts round to nearest even directly from the integer (no double rounding
  through double for 64-bit integers).
"""

from __future__ import annotations

import math
import struct

from runtime_support.errors import StatusCode, VMError

__all__ = [
    "OPS",
    "MNEMONICS",
    "f32",
    "wrap_i32",
    "wrap_i64",
    "wrap_int",
    "to_u32",
    "to_u64",
    "bits_f32",
    "bits_f64",
    "from_bits_f32",
    "from_bits_f64",
    "NAN",
    "NEG_NAN",
    "INF",
]

# --------------------------------------------------------------------------------------
# Constants and fast helpers

M32 = 0xFFFFFFFF
M64 = 0xFFFFFFFFFFFFFFFF
I32_MIN = -0x80000000
I32_MAX = 0x7FFFFFFF
I64_MIN = -0x8000000000000000
I64_MAX = 0x7FFFFFFFFFFFFFFF
_S32 = 0x80000000
_S64 = 0x8000000000000000

INF = float("inf")
NAN = struct.unpack("<d", b"\x00\x00\x00\x00\x00\x00\xf8\x7f")[0]
#: The x86-64 default NaN (result of invalid operations): quiet NaN with the sign set.
NEG_NAN = struct.unpack("<d", b"\x00\x00\x00\x00\x00\x00\xf8\xff")[0]

# Native-order 'f' packs with a plain C `(float)double` cast: round to nearest even,
# +-inf on overflow, NaN kept (sign and quiet payload), no OverflowError (unlike '<f').
# Measured ~90 ns per call (numpy.float32 round trip: ~230 ns).
_F = struct.Struct("f")
_pack_f = _F.pack
_unpack_f = _F.unpack
_pack_d = struct.Struct("d").pack
_unpack_d = struct.Struct("d").unpack
_pack_i = struct.Struct("i").pack
_unpack_i = struct.Struct("i").unpack
_pack_q = struct.Struct("q").pack
_unpack_q = struct.Struct("q").unpack
_isnan = math.isnan
_copysign = math.copysign
_trunc = math.trunc
_floor = math.floor
_ceil = math.ceil
_sqrt = math.sqrt

_TWO52 = 4503599627370496.0  # 2**52: every double with |x| >= this is an integer
_TWO63 = 9223372036854775808.0
_TWO64 = 18446744073709551616.0


def f32(x: float) -> float:
    """Rounds a Python float (or int) to float32 precision (RNE; inf on overflow)."""
    return _unpack_f(_pack_f(x))[0]


def wrap_i32(x: int) -> int:
    return ((x + _S32) & M32) - _S32


def wrap_i64(x: int) -> int:
    return ((x + _S64) & M64) - _S64


def wrap_int(x: int, bits: int, signed: bool = True) -> int:
    """`x` modulo 2**bits, as a signed or unsigned `bits`-wide integer (any width)."""
    x &= (1 << bits) - 1
    return x - (1 << bits) if signed and x >> (bits - 1) else x


def to_u32(x: int) -> int:
    return x & M32


def to_u64(x: int) -> int:
    return x & M64


def bits_f32(x: float) -> int:
    """float32 bit pattern of an f32 value, as a signed i32."""
    return _unpack_i(_pack_f(x))[0]


def bits_f64(x: float) -> int:
    """float64 bit pattern as a signed i64."""
    return _unpack_q(_pack_d(x))[0]


def from_bits_f32(i: int) -> float:
    return _unpack_f(_pack_i(wrap_i32(i)))[0]


def from_bits_f64(i: int) -> float:
    return _unpack_d(_pack_q(wrap_i64(i)))[0]


def _err(mnemonic: str, what: str) -> VMError:
    return VMError(
        StatusCode.INVALID_ARGUMENT,
        f"vm.{mnemonic}: {what} (a hardware trap in the IREE runtime)",
    )


# --------------------------------------------------------------------------------------
# Integer ops (i32)


def add_i32(a, b):
    return ((a + b + _S32) & M32) - _S32


def sub_i32(a, b):
    return ((a - b + _S32) & M32) - _S32


def mul_i32(a, b):
    return ((a * b + _S32) & M32) - _S32


def fma_i32(a, b, c):
    return ((a * b + c + _S32) & M32) - _S32


def div_i32_s(a, b):
    if b == 0:
        raise _err("div.i32.s", "integer division by zero")
    if b == -1 and a == I32_MIN:
        raise _err("div.i32.s", "signed overflow (INT32_MIN / -1)")
    q = abs(a) // abs(b)
    return q if (a ^ b) >= 0 else -q


def div_i32_u(a, b):
    b &= M32
    if b == 0:
        raise _err("div.i32.u", "integer division by zero")
    return (((a & M32) // b + _S32) & M32) - _S32


def rem_i32_s(a, b):
    if b == 0:
        raise _err("rem.i32.s", "integer remainder by zero")
    if b == -1 and a == I32_MIN:
        raise _err("rem.i32.s", "signed overflow (INT32_MIN % -1)")
    r = abs(a) % abs(b)
    return r if a >= 0 else -r


def rem_i32_u(a, b):
    b &= M32
    if b == 0:
        raise _err("rem.i32.u", "integer remainder by zero")
    return (((a & M32) % b + _S32) & M32) - _S32


def not_i32(a):
    return ~a


def and_i32(a, b):
    return a & b


def or_i32(a, b):
    return a | b


def xor_i32(a, b):
    return a ^ b


def shl_i32(a, n):
    return (((a << (n & 31)) + _S32) & M32) - _S32


def shr_i32_s(a, n):
    return a >> (n & 31)


def shr_i32_u(a, n):
    return ((((a & M32) >> (n & 31)) + _S32) & M32) - _S32


def ctlz_i32(a):
    return 32 - (a & M32).bit_length()


def abs_i32(a):
    return a if a >= 0 or a == I32_MIN else -a


def min_i32_s(a, b):
    return b if b < a else a


def min_i32_u(a, b):
    return b if (b & M32) < (a & M32) else a


def max_i32_s(a, b):
    return b if a < b else a


def max_i32_u(a, b):
    return b if (a & M32) < (b & M32) else a


# Integer ops (i64)


def add_i64(a, b):
    return ((a + b + _S64) & M64) - _S64


def sub_i64(a, b):
    return ((a - b + _S64) & M64) - _S64


def mul_i64(a, b):
    return ((a * b + _S64) & M64) - _S64


def fma_i64(a, b, c):
    return ((a * b + c + _S64) & M64) - _S64


def div_i64_s(a, b):
    if b == 0:
        raise _err("div.i64.s", "integer division by zero")
    if b == -1 and a == I64_MIN:
        raise _err("div.i64.s", "signed overflow (INT64_MIN / -1)")
    q = abs(a) // abs(b)
    return q if (a ^ b) >= 0 else -q


def div_i64_u(a, b):
    b &= M64
    if b == 0:
        raise _err("div.i64.u", "integer division by zero")
    return (((a & M64) // b + _S64) & M64) - _S64


def rem_i64_s(a, b):
    if b == 0:
        raise _err("rem.i64.s", "integer remainder by zero")
    if b == -1 and a == I64_MIN:
        raise _err("rem.i64.s", "signed overflow (INT64_MIN % -1)")
    r = abs(a) % abs(b)
    return r if a >= 0 else -r


def rem_i64_u(a, b):
    b &= M64
    if b == 0:
        raise _err("rem.i64.u", "integer remainder by zero")
    return (((a & M64) % b + _S64) & M64) - _S64


not_i64 = not_i32
and_i64 = and_i32
or_i64 = or_i32
xor_i64 = xor_i32


def shl_i64(a, n):
    return (((a << (n & 63)) + _S64) & M64) - _S64


def shr_i64_s(a, n):
    return a >> (n & 63)


def shr_i64_u(a, n):
    return ((((a & M64) >> (n & 63)) + _S64) & M64) - _S64


def ctlz_i64(a):
    return 64 - (a & M64).bit_length()


def abs_i64(a):
    return a if a >= 0 or a == I64_MIN else -a


min_i64_s = min_i32_s
max_i64_s = max_i32_s


def min_i64_u(a, b):
    return b if (b & M64) < (a & M64) else a


def max_i64_u(a, b):
    return b if (a & M64) < (b & M64) else a


# Integer truncation / extension


def trunc_i32_i8(a):
    return a & 0xFF


def trunc_i32_i16(a):
    return a & 0xFFFF


def trunc_i64_i32(a):
    return ((a + _S32) & M32) - _S32


def ext_i8_i32_s(a):
    return ((a + 0x80) & 0xFF) - 0x80


def ext_i8_i32_u(a):
    return a & 0xFF


def ext_i16_i32_s(a):
    return ((a + 0x8000) & 0xFFFF) - 0x8000


def ext_i16_i32_u(a):
    return a & 0xFFFF


def ext_i32_i64_s(a):
    return a


def ext_i32_i64_u(a):
    return a & M32


# Integer compares (result i32 0/1)


def cmp_eq_i32(a, b):
    return 1 if a == b else 0


def cmp_ne_i32(a, b):
    return 1 if a != b else 0


def cmp_lt_i32_s(a, b):
    return 1 if a < b else 0


def cmp_lt_i32_u(a, b):
    return 1 if (a & M32) < (b & M32) else 0


def cmp_nz_i32(a):
    return 1 if a else 0


cmp_eq_i64 = cmp_eq_i32
cmp_ne_i64 = cmp_ne_i32
cmp_lt_i64_s = cmp_lt_i32_s
cmp_nz_i64 = cmp_nz_i32


def cmp_lt_i64_u(a, b):
    return 1 if (a & M64) < (b & M64) else 0


# Ref compares (refs are Python objects or None)


def cmp_eq_ref(a, b):
    return 1 if a is b else 0


def cmp_ne_ref(a, b):
    return 0 if a is b else 1


def cmp_nz_ref(a):
    return 0 if a is None else 1


# --------------------------------------------------------------------------------------
# Float helpers shared by f32 and f64


def _div(a, b):
    try:
        return a / b
    except ZeroDivisionError:
        if a != a:
            return a
        if a == 0.0:
            return NEG_NAN
        return _copysign(INF, a) * _copysign(1.0, b)


def _remainder(a, b):
    # f32 (remainderf): the first NaN operand propagates.
    if a != a:
        return a
    if b != b:
        return b
    try:
        return math.remainder(a, b)
    except ValueError:  # remainder(+-inf, y) or remainder(x, 0)
        return NEG_NAN


def _ceil64(a):
    if -_TWO52 < a < _TWO52:
        return _copysign(float(_ceil(a)), a)
    return a  # already integral, inf or NaN


def _floor64(a):
    if -_TWO52 < a < _TWO52:
        return _copysign(float(_floor(a)), a)
    return a


def _round_away(a):
    """C round(): half away from zero; keeps the sign of zero."""
    if -_TWO52 < a < _TWO52:
        t = _trunc(a)
        d = a - t  # exact
        if d >= 0.5:
            t += 1
        elif d <= -0.5:
            t -= 1
        return _copysign(float(t), a)
    return a


def _round_even(a):
    if -_TWO52 < a < _TWO52:
        if a == -0.5:
            return 0.0  # observed in 3.13: the tie -0.5 rounds to +0.0
        return _copysign(float(round(a)), a)
    return a


def _sqrt64(a):
    try:
        return _sqrt(a)
    except ValueError:
        return NEG_NAN


def _fmin(a, b):
    return b if b < a else a


def _fmax(a, b):
    return b if a < b else a


# Transcendentals with C99 Annex F special values where Python's math raises.


def _exp(a):
    try:
        return math.exp(a)
    except OverflowError:
        return INF


def _exp2(a):
    try:
        return math.exp2(a)
    except OverflowError:
        return INF


def _expm1(a):
    try:
        return math.expm1(a)
    except OverflowError:
        return INF


# log(x < 0) and log(-inf) give NaN whose sign depends on the libm routine (observed on
# 3.13 / glibc): +NaN for log, log10, log2 (f64) and log10f; -NaN for logf and log2f.


def _log(a):
    try:
        return math.log(a)
    except ValueError:
        return -INF if a == 0.0 else NAN


def _log10(a):
    try:
        return math.log10(a)
    except ValueError:
        return -INF if a == 0.0 else NAN


def _log2(a):
    try:
        return math.log2(a)
    except ValueError:
        return -INF if a == 0.0 else NAN


def _logf(a):
    try:
        return math.log(a)
    except ValueError:
        return -INF if a == 0.0 else NEG_NAN


def _log2f(a):
    try:
        return math.log2(a)
    except ValueError:
        return -INF if a == 0.0 else NEG_NAN


def _log1p(a):
    try:
        return math.log1p(a)
    except ValueError:
        if a == -1.0:
            return -INF
        return NEG_NAN


def _sin(a):
    try:
        return math.sin(a)
    except ValueError:  # +-inf
        return NEG_NAN


def _cos(a):
    try:
        return math.cos(a)
    except ValueError:
        return NEG_NAN


def _is_odd_integer(y):
    return math.isfinite(y) and y == _floor(y) and abs(y) < 2.0**53 and int(y) & 1


def _pow(a, b):
    if a != a and b != 0.0:
        # glibc pow: with an odd integer exponent a NaN base loses its sign bit
        # (observed: pow(-nan, 1) = pow(+nan, 3) = +nan); otherwise it propagates.
        return abs(a) if _is_odd_integer(b) else a
    try:
        return math.pow(a, b)
    except OverflowError:
        if a < 0 and _is_odd_integer(b):
            return -INF
        return INF
    except ValueError:
        if a == 0.0:  # pow(+-0, y<0)
            if _is_odd_integer(b):
                return _copysign(INF, a)
            return INF
        return NEG_NAN  # negative finite base, non-integer exponent


def _atan2(a, b):
    # CPython returns a fresh +NaN; libm propagates the operand (the second if both).
    if b != b:
        return b
    if a != a:
        return a
    return math.atan2(a, b)


def _rsqrt64(a):
    s = _sqrt64(a)
    try:
        return 1.0 / s
    except ZeroDivisionError:
        return _copysign(INF, s)


# --------------------------------------------------------------------------------------
# f32 ops


def add_f32(a, b):
    return _unpack_f(_pack_f(a + b))[0]


def sub_f32(a, b):
    return _unpack_f(_pack_f(a - b))[0]


def mul_f32(a, b):
    return _unpack_f(_pack_f(a * b))[0]


def div_f32(a, b):
    try:
        return _unpack_f(_pack_f(a / b))[0]
    except ZeroDivisionError:
        return _div(a, b)


def rem_f32(a, b):
    return _unpack_f(_pack_f(_remainder(a, b)))[0]


def fma_f32(a, b, c):
    return _unpack_f(_pack_f(_unpack_f(_pack_f(a * b))[0] + c))[0]


def abs_f32(a):
    return abs(a)


def neg_f32(a):
    return -a


ceil_f32 = _ceil64
floor_f32 = _floor64
round_f32 = _round_away
round_f32_even = _round_even
min_f32 = _fmin
max_f32 = _fmax


def sqrt_f32(a):
    return f32(_sqrt64(a))


def rsqrt_f32(a):
    s = f32(_sqrt64(a))
    try:
        return f32(1.0 / s)
    except ZeroDivisionError:
        return _copysign(INF, s)


def _libm_f32():
    """The C library's float math functions, which IREE's VM calls: using the same ones
    makes f32 transcendentals bit-exact (glibc's are not all correctly rounded)."""
    import ctypes

    try:  # (glibc's soname first: find_library runs `ldconfig -p`, ~10 ms per process)
        libm = ctypes.CDLL("libm.so.6")
    except OSError:  # pragma: no cover - other C libraries
        try:
            import ctypes.util

            libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so")
        except OSError:  # non-glibc hosts without a libm to find fall back to double math
            return {}
    out = {}
    for name, arity in (
        ("atanf", 1), ("atan2f", 2), ("cosf", 1), ("sinf", 1), ("expf", 1), ("exp2f", 1),
        ("expm1f", 1), ("logf", 1), ("log10f", 1), ("log1pf", 1), ("log2f", 1),
        ("powf", 2), ("tanhf", 1), ("erff", 1),
    ):
        fn = getattr(libm, name, None)
        if fn is not None:
            fn.restype = ctypes.c_float
            fn.argtypes = [ctypes.c_float] * arity
            out[name] = fn
    return out


#: The host libm's float functions by C name (`expf` -> ctypes function; empty without a
#: libm): the f32 ops below, numerics_ftz and loaders/vmvx_arrays call them.
LIBM_F32 = _libm_f32()


def atan_f32(a):
    fn = LIBM_F32.get('atanf')
    if fn is not None:
        return fn(a)
    return f32(math.atan(a))


def atan2_f32(a, b):
    fn = LIBM_F32.get('atan2f')
    if fn is not None:
        return fn(a, b)
    return f32(_atan2(a, b))


def cos_f32(a):
    fn = LIBM_F32.get('cosf')
    if fn is not None:
        return fn(a)
    return f32(_cos(a))


def sin_f32(a):
    fn = LIBM_F32.get('sinf')
    if fn is not None:
        return fn(a)
    return f32(_sin(a))


def exp_f32(a):
    fn = LIBM_F32.get('expf')
    if fn is not None:
        return fn(a)
    return f32(_exp(a))


def exp2_f32(a):
    fn = LIBM_F32.get('exp2f')
    if fn is not None:
        return fn(a)
    return f32(_exp2(a))


def expm1_f32(a):
    fn = LIBM_F32.get('expm1f')
    if fn is not None:
        return fn(a)
    return f32(_expm1(a))


def log_f32(a):
    fn = LIBM_F32.get('logf')
    if fn is not None:
        return fn(a)
    return f32(_logf(a))


def log10_f32(a):
    fn = LIBM_F32.get('log10f')
    if fn is not None:
        return fn(a)
    return f32(_log10(a))


def log1p_f32(a):
    fn = LIBM_F32.get('log1pf')
    if fn is not None:
        return fn(a)
    return f32(_log1p(a))


def log2_f32(a):
    fn = LIBM_F32.get('log2f')
    if fn is not None:
        return fn(a)
    return f32(_log2f(a))


def pow_f32(a, b):
    fn = LIBM_F32.get('powf')
    if fn is not None:
        return fn(a, b)
    return f32(_pow(a, b))


def tanh_f32(a):
    fn = LIBM_F32.get('tanhf')
    if fn is not None:
        return fn(a)
    return f32(math.tanh(a))


def erf_f32(a):
    fn = LIBM_F32.get('erff')
    if fn is not None:
        return fn(a)
    return f32(math.erf(a))


def cmp_eq_f32_o(a, b):
    return 1 if a == b else 0


def cmp_eq_f32_u(a, b):
    return 0 if (a < b or a > b) else 1


def cmp_ne_f32_o(a, b):
    # C `a != b`: TRUE when either operand is NaN despite the ordered suffix (observed).
    return 1 if a != b else 0


def cmp_ne_f32_u(a, b):
    return 1 if a != b else 0


def cmp_lt_f32_o(a, b):
    return 1 if a < b else 0


def cmp_lt_f32_u(a, b):
    return 0 if a >= b else 1


def cmp_lte_f32_o(a, b):
    return 1 if a <= b else 0


def cmp_lte_f32_u(a, b):
    return 0 if a > b else 1


def cmp_nan_f32(a):
    return 1 if a != a else 0


# --------------------------------------------------------------------------------------
# f64 ops


def add_f64(a, b):
    return a + b


def sub_f64(a, b):
    return a - b


def mul_f64(a, b):
    return a * b


div_f64 = _div


def rem_f64(a, b):
    # glibc remainder(): with two NaN operands the second one propagates (observed).
    if b != b:
        return b
    return _remainder(a, b)


def fma_f64(a, b, c):
    return a * b + c


abs_f64 = abs_f32
neg_f64 = neg_f32
ceil_f64 = _ceil64
floor_f64 = _floor64
round_f64 = _round_away
round_f64_even = _round_even
min_f64 = _fmin
max_f64 = _fmax
sqrt_f64 = _sqrt64
rsqrt_f64 = _rsqrt64
atan_f64 = math.atan
atan2_f64 = _atan2
cos_f64 = _cos
sin_f64 = _sin
exp_f64 = _exp
exp2_f64 = _exp2
expm1_f64 = _expm1
log_f64 = _log
log10_f64 = _log10
log1p_f64 = _log1p
log2_f64 = _log2
pow_f64 = _pow
tanh_f64 = math.tanh
erf_f64 = math.erf
cmp_eq_f64_o = cmp_eq_f32_o
cmp_eq_f64_u = cmp_eq_f32_u
cmp_ne_f64_o = cmp_ne_f32_o
cmp_ne_f64_u = cmp_ne_f32_u
cmp_lt_f64_o = cmp_lt_f32_o
cmp_lt_f64_u = cmp_lt_f32_u
cmp_lte_f64_o = cmp_lte_f32_o
cmp_lte_f64_u = cmp_lte_f32_u
cmp_nan_f64 = cmp_nan_f32


# --------------------------------------------------------------------------------------
# Casts


def _lround64(a):
    """C lround/llround on x86-64 (64-bit long): half away from zero; NaN, inf and
    out-of-range values give the integer-indefinite value INT64_MIN."""
    if -_TWO63 <= a < _TWO63:  # False for NaN
        if -_TWO52 < a < _TWO52:
            t = _trunc(a)
            d = a - t
            if d >= 0.5:
                return t + 1
            if d <= -0.5:
                return t - 1
            return t
        return int(a)
    return I64_MIN


def cast_f32_si32(a):
    return ((_lround64(a) + _S32) & M32) - _S32


cast_f32_ui32 = cast_f32_si32  # llroundf truncated to 32 bits: same bits


def cast_f32_si64(a):
    return _lround64(a)


def cast_f32_ui64(a):
    # (uint64_t)roundf(a), x86-64 clang lowering: cvttss2si(r) if r < 2^63 else
    # cvttss2si(r - 2^63) ^ 2^63; cvttss2si gives INT64_MIN when out of range or NaN.
    r = _round_away(a)
    if -_TWO63 < r < _TWO63:
        return int(r)
    if _TWO63 <= r < _TWO64:
        return int(r) - (1 << 64)
    return I64_MIN


def cast_f64_si32(a):
    return cast_f32_si32(f32(a))


cast_f64_ui32 = cast_f64_si32


def cast_f64_si64(a):
    return _lround64(a)


cast_f64_ui64 = cast_f64_si64  # llround reinterpreted as uint64: same bits


def _int_to_f32(x):
    """Correctly rounded (RNE) conversion of a Python int of at most 64 bits to f32."""
    if -0x20000000000000 <= x <= 0x20000000000000:
        return _unpack_f(_pack_f(float(x)))[0]  # float(x) exact, one rounding
    neg = x < 0
    m = -x if neg else x
    shift = m.bit_length() - 24
    q = m >> shift
    rem = m - (q << shift)
    half = 1 << (shift - 1)
    if rem > half or (rem == half and q & 1):
        q += 1
    v = float(q << shift)  # exact: at most 25 significant bits
    return -v if neg else v


def cast_si32_f32(a):
    return _unpack_f(_pack_f(float(a)))[0]


def cast_ui32_f32(a):
    return _unpack_f(_pack_f(float(a & M32)))[0]


def cast_si64_f32(a):
    return _int_to_f32(a)


def cast_ui64_f32(a):
    return _int_to_f32(a & M64)


def cast_si32_f64(a):
    return float(a)


def cast_ui32_f64(a):
    return float(a & M32)


def cast_si64_f64(a):
    return float(a)  # Python int -> float is correctly rounded


def cast_ui64_f64(a):
    return float(a & M64)


def trunc_f64_f32(a):
    return _unpack_f(_pack_f(a))[0]


def ext_f32_f64(a):
    return a


def bitcast_i32_f32(a):
    return _unpack_f(_pack_i(a))[0]


def bitcast_f32_i32(a):
    return _unpack_i(_pack_f(a))[0]


def bitcast_i64_f64(a):
    return _unpack_d(_pack_q(a))[0]


def bitcast_f64_i64(a):
    return _unpack_q(_pack_d(a))[0]


# --------------------------------------------------------------------------------------
# The mnemonic table: every arithmetic / compare / conversion scalar op of the core,
# ext_f32 and ext_f64 opcode sets (plus the three ref compares).  Hand-written list;
# tests/runtime/test_vm_numerics.py checks it against shared/reference/isa.json.

MNEMONICS: tuple[str, ...] = (
    # core: i32 arithmetic
    "add.i32", "sub.i32", "mul.i32", "div.i32.s", "div.i32.u", "rem.i32.s", "rem.i32.u",
    "fma.i32", "abs.i32", "ctlz.i32",
    "min.i32.s", "min.i32.u", "max.i32.s", "max.i32.u",
    "not.i32", "and.i32", "or.i32", "xor.i32",
    "shl.i32", "shr.i32.s", "shr.i32.u",
    # core: i64 arithmetic
    "add.i64", "sub.i64", "mul.i64", "div.i64.s", "div.i64.u", "rem.i64.s", "rem.i64.u",
    "fma.i64", "abs.i64", "ctlz.i64",
    "min.i64.s", "min.i64.u", "max.i64.s", "max.i64.u",
    "not.i64", "and.i64", "or.i64", "xor.i64",
    "shl.i64", "shr.i64.s", "shr.i64.u",
    # core: truncation / extension
    "trunc.i32.i8", "trunc.i32.i16", "trunc.i64.i32",
    "ext.i8.i32.s", "ext.i8.i32.u", "ext.i16.i32.s", "ext.i16.i32.u",
    "ext.i32.i64.s", "ext.i32.i64.u",
    # core: compares
    "cmp.eq.i32", "cmp.ne.i32", "cmp.lt.i32.s", "cmp.lt.i32.u", "cmp.nz.i32",
    "cmp.eq.i64", "cmp.ne.i64", "cmp.lt.i64.s", "cmp.lt.i64.u", "cmp.nz.i64",
    "cmp.eq.ref", "cmp.ne.ref", "cmp.nz.ref",
    # ext_f32
    "add.f32", "sub.f32", "mul.f32", "div.f32", "rem.f32", "fma.f32",
    "abs.f32", "neg.f32", "ceil.f32", "floor.f32", "round.f32", "round.f32.even",
    "min.f32", "max.f32", "sqrt.f32", "rsqrt.f32",
    "atan.f32", "atan2.f32", "cos.f32", "sin.f32", "exp.f32", "exp2.f32", "expm1.f32",
    "log.f32", "log10.f32", "log1p.f32", "log2.f32", "pow.f32", "tanh.f32", "erf.f32",
    "cmp.eq.f32.o", "cmp.eq.f32.u", "cmp.ne.f32.o", "cmp.ne.f32.u",
    "cmp.lt.f32.o", "cmp.lt.f32.u", "cmp.lte.f32.o", "cmp.lte.f32.u", "cmp.nan.f32",
    "cast.si32.f32", "cast.ui32.f32", "cast.f32.si32", "cast.f32.ui32",
    "cast.f32.si64", "cast.f32.ui64", "cast.si64.f32", "cast.ui64.f32",
    "bitcast.i32.f32", "bitcast.f32.i32",
    # ext_f64
    "add.f64", "sub.f64", "mul.f64", "div.f64", "rem.f64", "fma.f64",
    "abs.f64", "neg.f64", "ceil.f64", "floor.f64", "round.f64", "round.f64.even",
    "min.f64", "max.f64", "sqrt.f64", "rsqrt.f64",
    "atan.f64", "atan2.f64", "cos.f64", "sin.f64", "exp.f64", "exp2.f64", "expm1.f64",
    "log.f64", "log10.f64", "log1p.f64", "log2.f64", "pow.f64", "tanh.f64", "erf.f64",
    "cmp.eq.f64.o", "cmp.eq.f64.u", "cmp.ne.f64.o", "cmp.ne.f64.u",
    "cmp.lt.f64.o", "cmp.lt.f64.u", "cmp.lte.f64.o", "cmp.lte.f64.u", "cmp.nan.f64",
    "trunc.f64.f32", "ext.f32.f64",
    "cast.si32.f64", "cast.ui32.f64", "cast.f64.si32", "cast.f64.ui32",
    "cast.si64.f64", "cast.ui64.f64", "cast.f64.si64", "cast.f64.ui64",
    "bitcast.i64.f64", "bitcast.f64.i64",
)  # fmt: skip

OPS: dict = {m: globals()[m.replace(".", "_")] for m in MNEMONICS}

# The ops whose exact semantics is one plain Python expression on the value forms above:
# generated code writes these inline rather than calling the function of the same name
# (the translator fills `{name}` with the ISA table's operand fields). Each form must
# equal its function on every value; tests/translator/test_codegen_inline_numerics.py checks them
# on edge values (wrapping, signedness, shift amounts, NaN).
INLINE: dict[str, str] = {
    "and.i32": "{left} & {right}",
    "or.i32": "{left} | {right}",
    "xor.i32": "{left} ^ {right}",
    "and.i64": "{left} & {right}",
    "or.i64": "{left} | {right}",
    "xor.i64": "{left} ^ {right}",
    "not.i32": "~{operand}",
    "not.i64": "~{operand}",
    "shr.i32.s": "{operand} >> ({amount} & 31)",
    "shr.i64.s": "{operand} >> ({amount} & 63)",
    "ext.i8.i32.u": "{operand} & 0xFF",
    "ext.i16.i32.u": "{operand} & 0xFFFF",
    "ext.i32.i64.s": "{operand}",
    "ext.i32.i64.u": "{operand} & 0xFFFFFFFF",
    "cmp.eq.i32": "int({left} == {right})",
    "cmp.ne.i32": "int({left} != {right})",
    "cmp.lt.i32.s": "int({left} < {right})",
    "cmp.nz.i32": "int({operand} != 0)",
    "cmp.eq.i64": "int({left} == {right})",
    "cmp.ne.i64": "int({left} != {right})",
    "cmp.lt.i64.s": "int({left} < {right})",
    "cmp.nz.i64": "int({operand} != 0)",
    "cmp.eq.ref": "int({left} is {right})",
    "cmp.ne.ref": "int({left} is not {right})",
    "cmp.nz.ref": "int({operand} is not None)",
}

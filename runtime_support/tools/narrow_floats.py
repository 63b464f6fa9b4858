"""bf16 and the 8-bit float types, converted to and from f32 the way IREE's tools do.

iree-run-module parses such an element as an f32 (strtof) and narrows it rounding to
nearest-even; it prints one by widening it to f32 and formatting with `%G`. The rules
that matter for byte-exact agreement (they differ from ml_dtypes in places):

* f32 subnormals become zero, except for bf16 (same exponent width), whose mantissa is
  rounded; values below a format's subnormal range become zero.
* Overflow gives Inf where the format has one, else NaN (`FN`, `FNUZ`). NaN input gives
  the format's NaN. `FNUZ` formats have no -0: it becomes +0 (their NaN is the -0 code).
* f8E8M0FNU (exponent only, unsigned): non-finite -> NaN (0xFF), <= 0 -> 2**-127 (code 0),
  else the nearest power of two, ties (a mantissa of exactly 1.5) going up.
* Widening gives a positive NaN for every NaN code.

Works on bit patterns (numpy unsigned ints), so ml_dtypes is not needed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class _Format:
    exp_bits: int
    mantissa_bits: int
    have_inf: bool
    have_nan: bool
    bias_tweak: int
    nan_as_neg_zero: bool

    @property
    def bias(self) -> int:
        return self.bias_tweak + (1 << (self.exp_bits - 1)) - 1

    @property
    def storage(self) -> str:
        return "<u2" if 1 + self.exp_bits + self.mantissa_bits > 8 else "u1"


# Element type name (as iree-run-module prints it) -> format.
FORMATS = {
    "bf16": _Format(8, 7, True, True, 0, False),
    "f8E5M2": _Format(5, 2, True, True, 0, False),
    "f8E4M3FN": _Format(4, 3, False, True, 0, False),
    "f8E5M2FNUZ": _Format(5, 2, False, True, 1, True),
    "f8E4M3FNUZ": _Format(4, 3, False, True, 1, True),
}
E8M0 = "f8E8M0FNU"
NAMES = (*FORMATS, E8M0)
# f16 narrows by the same rules where IREE narrows it (parsing `--input` values): numpy's
# own f32 -> f16 cast rounds values under the smallest subnormal differently.
_NARROWING = {**FORMATS, "f16": _Format(5, 10, True, True, 0, False)}


def _f32_bits(value: float) -> int:
    with np.errstate(over="ignore"):
        return int(np.array(value, dtype="<f4").view("<u4"))


def _round_shift(value: int, shift: int) -> int:
    """value >> shift, rounding to nearest-even (shift >= 1)."""
    even = 1 << shift
    odd = even >> 1
    return (value + (odd if value & even else odd - 1)) >> shift


def from_float32(value: float, name: str) -> int:
    """The bit pattern of f32 `value` narrowed to type `name` (IREE's rounding rules)."""
    if name == E8M0:
        if not math.isfinite(value):
            return 0xFF
        if value <= 0:
            return 0
        mantissa, exp = math.frexp(value)
        biased = exp - (mantissa < 0.75) + 127
        return 0 if biased < 0 else 0xFF if biased > 0xFF else biased
    f = _NARROWING[name]
    u = _f32_bits(value)
    sign = (u >> 31) << (f.exp_bits + f.mantissa_bits)
    f32_exp = (u >> 23) & 0xFF
    f32_mantissa = u & 0x7FFFFF
    exp_mask = ((1 << f.exp_bits) - 1) << f.mantissa_bits
    mantissa_mask = (1 << f.mantissa_bits) - 1
    shift = 23 - f.mantissa_bits
    exp = mantissa = 0
    nan = inf = False
    if f32_exp == 0xFF:
        nan, inf = bool(f32_mantissa), not f32_mantissa
    elif f32_exp == 0:
        if f.exp_bits == 8:  # bf16 keeps f32 subnormals
            mantissa = _round_shift(f32_mantissa, shift)
    else:
        e = f32_exp - 127
        if e > (1 << (f.exp_bits - 1)) - f.have_inf:
            inf = True
        elif e + f.bias <= 0:  # a subnormal of the narrow type, or zero
            sub_shift = shift - e + (1 - f.bias)
            if 0 <= sub_shift <= 23:
                mantissa = _round_shift((1 << 23) | f32_mantissa, sub_shift)
        else:
            biased = _round_shift(f32_mantissa, shift) << shift
            if biased > 0x7FFFFF:
                biased = 0
                e += 1
            exp = (e + f.bias) << f.mantissa_bits
            mantissa = biased >> shift
            if not f.have_inf and exp > exp_mask:
                nan = True
    if inf:
        if f.have_inf:
            return sign | exp_mask
        nan = f.have_nan
        if not nan:
            return sign | exp_mask | mantissa_mask
    if nan:
        if not f.have_nan:
            return 0
        if f.nan_as_neg_zero:
            return 1 << (f.exp_bits + f.mantissa_bits)
        return sign | exp_mask | mantissa_mask
    if f.nan_as_neg_zero and exp == 0 and mantissa == 0:
        return 0
    return sign | exp | mantissa


def _widen_one(bits: int, name: str) -> float:
    if name == E8M0:
        return math.nan if bits == 0xFF else math.ldexp(1.0, bits - 127)
    f = FORMATS[name]
    sign_mask = 1 << (f.exp_bits + f.mantissa_bits)
    sign = -1.0 if bits & sign_mask else 1.0
    exp = (bits >> f.mantissa_bits) & ((1 << f.exp_bits) - 1)
    mantissa = bits & ((1 << f.mantissa_bits) - 1)
    if exp == (1 << f.exp_bits) - 1:
        if f.have_inf:
            return math.nan if (f.have_nan and mantissa) else sign * math.inf
        if f.have_nan and mantissa == (1 << f.mantissa_bits) - 1 and not f.nan_as_neg_zero:
            return math.nan
    elif f.have_nan and f.nan_as_neg_zero and bits == sign_mask:
        return math.nan
    elif exp == 0:
        return sign * math.ldexp(mantissa, 1 - f.bias - f.mantissa_bits)
    return sign * math.ldexp(mantissa + (1 << f.mantissa_bits), exp - f.bias - f.mantissa_bits)


_TABLES: dict[str, np.ndarray] = {}


def to_float32(bits, name: str) -> np.ndarray:
    """Bit patterns (any unsigned/raw array of the type's width) widened to float32."""
    bits = np.asarray(bits)
    if name == "bf16":
        u = bits.view("<u2").astype("<u4") << 16
        out = u.view("<f4")
        return np.where(np.isnan(out), np.float32(np.nan), out)
    table = _TABLES.get(name)
    if table is None:
        table = np.array([_widen_one(b, name) for b in range(256)], dtype=np.float32)
        _TABLES[name] = table
    return table[bits.view("u1")]

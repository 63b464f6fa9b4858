"""Numbers read as iree-run-module reads them: C `strtoll(s, NULL, 0)` / `strtoull` /
`strtof` / `strtod` over the longest valid prefix (`5abc` -> 5, `0x10` -> 16, `010` -> 8,
hex floats, `nan(PAYLOAD)` as glibc makes it), correctly rounded, and None where C would
parse nothing or report ERANGE. Texts longer than the tool's copy buffer (MAX_LEN_32,
MAX_LEN_64 characters) are rejected whatever they hold. io_specs.py reads `--input`
scalars and elements with these.
"""

from __future__ import annotations

import math
import re
import struct
from fractions import Fraction

_INT_RE = re.compile(r"\s*([+-]?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)")
_FLOAT_RE = re.compile(
    r"\s*([+-]?)("
    r"(?i:infinity|inf)"
    r"|(?i:nan)(?:\([0-9A-Za-z_]*\))?"
    r"|0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?"
    r"|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
    r")"
)


# iree-run-module copies a number into a small buffer before converting it: texts longer
# than these (in characters) are rejected outright, whatever they hold.
MAX_LEN_32 = 15  # integers of 32 bits or fewer
MAX_LEN_64 = 31  # 64-bit integers and all floats


def strtoll(text: str, max_len: int = MAX_LEN_64) -> int | None:
    """C strtoll(text, NULL, 0) over the longest prefix; None if nothing parses, the text is
    too long or the value is outside int64 (ERANGE)."""
    if len(text) > max_len:
        return None
    m = _INT_RE.match(text)
    if not m:
        return None
    v = (
        int(m.group(2), 0)
        if not re.fullmatch(r"0[0-7]+", m.group(2))
        else int(m.group(2), 8)
    )
    if m.group(1) == "-":
        v = -v
    if not -(2**63) <= v < 2**63:
        return None
    return v


def strtoull(text: str) -> int | None:
    if len(text) > MAX_LEN_64:
        return None
    m = _INT_RE.match(text)
    if not m:
        return None
    v = (
        int(m.group(2), 0)
        if not re.fullmatch(r"0[0-7]+", m.group(2))
        else int(m.group(2), 8)
    )
    if v >= 2**64:
        return None
    return (-v) % 2**64 if m.group(1) == "-" else v


# (mantissa bits excluding the implicit one, min normal exponent, max exponent)
_FLOAT_FORMATS = {32: (23, -126, 127), 64: (52, -1022, 1023), 16: (10, -14, 15)}


def _round_fraction(q: Fraction, bits: int) -> float:
    """Correctly rounded (nearest-even) conversion of an exact rational to an IEEE float of
    `bits` bits, returned as a Python float (overflow -> inf)."""
    if q == 0:
        return 0.0
    mant, emin, emax = _FLOAT_FORMATS[bits]
    sign = -1.0 if q < 0 else 1.0
    a = abs(q)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    e = max(e, emin)
    scale = Fraction(2) ** (mant - e)
    scaled = a * scale
    m = scaled.numerator // scaled.denominator
    rem = scaled - m
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and m & 1):
        m += 1
    value = Fraction(m) / scale
    if value >= Fraction(2) ** (emax + 1):
        return sign * math.inf
    return sign * float(value)


def _nan_with_payload(chars: str, neg: bool, bits: int) -> float:
    """The quiet NaN C's strtof/strtod (glibc) make of `nan(CHARS)`: CHARS read as an
    unsigned integer (base 0, all of it, else 0; saturating) fills the mantissa below the
    quiet bit. For bits=32 the payload sits where an f64 -> f32 cast carries it over."""
    payload = 0
    if re.fullmatch(r"0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*", chars):
        payload = min(int(chars, 16 if chars[1:2] in ("x", "X") else 8 if chars[0] == "0" else 10), 2**64 - 1)
    if bits == 32:
        payload = (payload & 0x3FFFFF) << 29
    raw = (0xFFF8 if neg else 0x7FF8) << 48 | (payload & ((1 << 51) - 1))
    return struct.unpack("<d", raw.to_bytes(8, "little"))[0]


def _far_exponent(low: str) -> int:
    """+1 / -1 where a number text's exponent alone puts it past every double (over /
    under), 0 otherwise. Texts are at most 31 characters, so the mantissa moves the value
    by at most 10**31 (2**120 in hex): exponents past 400 (1300) decide."""
    if low.startswith("0x"):
        exp, limit = low.partition("p")[2], 1300
    else:
        exp, limit = low.partition("e")[2], 400
    e = int(exp) if exp else 0
    return 1 if e > limit else -1 if e < -limit else 0


def _nonzero_mantissa(low: str) -> bool:
    mantissa = low[2:].partition("p")[0] if low.startswith("0x") else low.partition("e")[0]
    return any(c not in "0." for c in mantissa)


def strtof(text: str, bits: int) -> float | None:
    """C strtof (bits=32) / strtod (bits=64) over the longest prefix. None when nothing
    parses, the text is too long or a non-zero number underflows to zero (ERANGE)."""
    if len(text) > MAX_LEN_64:
        return None
    m = _FLOAT_RE.match(text)
    if not m:
        return None
    sign, body = m.group(1), m.group(2)
    neg = sign == "-"
    low = body.lower()
    if low.startswith("inf"):
        return -math.inf if neg else math.inf
    if low.startswith("nan"):
        return _nan_with_payload(body[4:-1] if body.endswith(")") else "", neg, bits)
    far = _far_exponent(low)
    if far:  # (exact rationals of 10**400000 take seconds: the outcome is known)
        if not _nonzero_mantissa(low):
            return -0.0 if neg else 0.0
        if far < 0:
            return None  # underflow: ERANGE
        return -math.inf if neg else math.inf
    if low.startswith("0x"):
        digits = body[2:]
        exp = 0
        if "p" in digits.lower():
            digits, exp_text = re.split("[pP]", digits)
            exp = int(exp_text)
        if "." in digits:
            ip, fp = digits.split(".")
        else:
            ip, fp = digits, ""
        q = Fraction(int((ip + fp) or "0", 16), 16 ** len(fp)) * Fraction(2) ** exp
    else:
        q = Fraction(body)
    if neg:
        q = -q
    value = _round_fraction(q, bits) if q != 0 else (-0.0 if neg else 0.0)
    if value == 0 and q != 0:
        return None  # underflow: ERANGE
    return value

"""`--input` element text is converted in bulk (runtime_support.tools.io_specs.element_values):
the same values, bit for bit, and the same errors as the element-by-element reference
(`_parse_element`), and no per-element Python call for the common spellings."""

from __future__ import annotations

import random
import struct

import numpy as np
import pytest

from runtime_support.tools import io_specs
from runtime_support.tools.io_specs import SpecError, element_values, parse_buffer_view, parse_element_type

VALUE_TYPES = ["i8", "i16", "i32", "i64", "si8", "si16", "si32", "si64", "ui8", "ui16",
               "ui32", "ui64", "f16", "bf16", "f32", "f64", "f8E5M2", "f8E4M3FN",
               "f8E5M2FNUZ", "f8E4M3FNUZ", "f8E8M0FNU"]
OPAQUE_TYPES = ["i1", "cf64", "*16", "*24"]
EDGE_TOKENS = [
    "0", "-0", "+0", "00", "007", "08", "010", "0x10", "0X1f", "-0x80", "0xg", "1e3", "1.5",
    "-1.5", ".5", "5.", "+.5e-3", "1e-50", "1e-400", "1e39", "1e400", "-1e39", "inf", "-INF",
    "Infinity", "nan", "-nan", "nan(123)", "NaN(0x7)", "0x1p-3", "0x1.8P1", "1e", "e5", ".",
    "+", "-", "1_0", "１", "12abc", "3.4028235e38", "3.4028236e38", "1.17549435e-38",
    "1.4e-45", "7e-46", "2.2250738585072014e-308", "4.9e-324", "2e-324", "127", "128",
    "-128", "-129", "255", "256", "-32768", "65535", "65536", "2147483647", "2147483648",
    "-2147483648", "4294967295", "4294967296", "-4294967297", "999999999999999",
    "9999999999999999", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
    "18446744073709551615", "18446744073709551616", "-18446744073709551615", "0.1", "65504",
    "65520", "6e-8", "3e-8", "1.00000006", "0.000000000000000000000000000001",
    "1" * 31, "1" * 32, "0" * 15, "0" * 16, "ffff", "FFFF", "zz", "00ff00", "abcdef123456",
]


def _reference(tokens, et):
    """The element-by-element path as it was: `_parse_element` per token, assembled."""
    values = [io_specs._parse_element(t, et) for t in tokens]
    if et.name == "f16":
        return np.array(values, dtype="<u2").view(np.float16)
    if et.has_value_parser:
        dtype = et.storage_dtype
        return np.array(values, dtype=dtype if et.kind != "f" else np.float64).astype(dtype)
    return np.frombuffer(b"".join(values), dtype=et.storage_dtype)


def _outcome(fn, tokens, et):
    try:
        return ("ok", fn(tokens, et).tobytes())
    except SpecError as e:
        return ("error", e.code, e.message)


def _f32_midpoint_tokens(rng, n):
    """Decimal spellings on, and just beside, the midpoint of two adjacent float32s."""
    out = []
    for _ in range(n):
        bits = rng.randrange(0x00800000, 0x7F7FFFFF)
        lo, hi = (struct.unpack("<f", struct.pack("<I", b))[0] for b in (bits, bits + 1))
        mid = (lo + hi) / 2  # exact in float64
        sign = rng.choice(["", "-"])
        out += [sign + repr(mid), sign + f"{mid:.25e}", sign + f"{np.nextafter(mid, 0):.17e}"]
    return out


def _random_tokens(rng, n):
    out = []
    for _ in range(n):
        k = rng.randrange(7)
        if k == 0:
            out.append(str(rng.randint(-(2**rng.randrange(1, 66)), 2**rng.randrange(1, 66))))
        elif k == 1:
            out.append(repr(rng.uniform(-1e6, 1e6)))
        elif k == 2:
            e = rng.randrange(-330, 330)
            out.append(f"{rng.choice('+-')}{rng.randrange(10**rng.randrange(1, 20))}e{e}")
        elif k == 3:
            out.append(repr(struct.unpack("<f", struct.pack("<I", rng.getrandbits(32)))[0]))
        elif k == 4:
            out.append(str(rng.randrange(-300, 300)))
        elif k == 5:
            out.append("".join(rng.choice("0123456789.eE+-x") for _ in range(rng.randrange(1, 9))))
        else:
            out.append(f"{rng.uniform(0, 1):.{rng.randrange(1, 30)}f}")
    return out


@pytest.mark.parametrize("type_name", VALUE_TYPES + OPAQUE_TYPES)
def test_bulk_path_matches_element_by_element(type_name):
    rng = random.Random(type_name)
    et = parse_element_type(type_name)
    tokens = EDGE_TOKENS + _random_tokens(rng, 1500) + _f32_midpoint_tokens(rng, 200)
    good, bad = [], []
    for t in tokens:
        (good if _outcome(_reference, [t], et)[0] == "ok" else bad).append(t)
    # The valid tokens in one bulk call, against the reference over the same list.
    assert good, type_name
    assert _outcome(element_values, good, et) == _outcome(_reference, good, et)
    # Each invalid token among valid ones fails the same way.
    for t in bad:
        mixed = good[:5] + [t] + good[5:10]
        assert _outcome(element_values, mixed, et) == _outcome(_reference, mixed, et), t


def test_common_spellings_make_no_per_element_call(monkeypatch):
    """Structural: plain decimal text never reaches the per-element parser, however many
    elements there are (hazards only: one f32 midpoint here)."""
    calls = []
    real = io_specs._parse_element
    monkeypatch.setattr(io_specs, "_parse_element", lambda t, et: calls.append(t) or real(t, et))
    n = 20_000
    ints = " ".join(str(i - n // 2) for i in range(n))
    floats = " ".join(f"{i * 0.37:.3f}" for i in range(n))
    naturals = " ".join(str(i) for i in range(n))
    for spec in (f"{n}xi32={ints}", f"{n}xsi16={ints}", f"{n}xui64={naturals}",
                 f"{n}xf32={floats}", f"{n}xf64={floats}", f"{n}xbf16={floats}",
                 f"{n}xf16={floats}", f"{n}xi8=-7", f"{n}x{n}xf32=2.5",
                 f"{n // 2}x2xcf64=" + " ".join(["00" * 8] * n)):
        parse_buffer_view(spec)
    assert calls == []
    parse_buffer_view("3xf32=1 16777217 nan")  # a midpoint and a nan: those two only
    assert calls == ["16777217", "nan"]


def test_splat_allocates_once_and_fails_cleanly_when_huge():
    """A splat is one parsed token filled into the view (no token list of the view's
    size); a view too large to allocate is RESOURCE_EXHAUSTED, as in iree-run-module."""
    assert parse_buffer_view("3x2xi1=ff").tobytes() == b"\xff" * 6
    with pytest.raises(SpecError) as e:
        parse_buffer_view("99999999999x4xf32=1")
    assert e.value.code.name == "RESOURCE_EXHAUSTED"


def test_far_exponents_are_decided_without_exact_rationals(monkeypatch):
    """`6e911595` (found by tests/fuzz_cli.py: 10 s in an exact rational): the exponent
    alone decides overflow, underflow or zero."""
    def no_fraction(*a):
        raise AssertionError("exact rational built")

    from runtime_support.tools import c_numbers

    monkeypatch.setattr(c_numbers, "Fraction", no_fraction)
    et = parse_element_type("f32")
    values = element_values(["6e911595", "-6e911595", "0e999999", "-0x0p99999999"], et)
    assert values.tolist() == [np.inf, -np.inf, 0.0, 0.0] and np.signbit(values[3])
    for t in ("1e-999999", "0x1p-99999999"):
        with pytest.raises(SpecError):
            element_values([t], et)

"""The test-only `check` import module (hal-abi.md §F; IREE `modules/check/module.cc`).

Compiled test programs call these imports to compare tensors with expected values. They are
declared OPTIONAL and every call is guarded by `vm.import.resolved`, so a program run without
this module silently checks nothing: runners should assert `calls` is non-zero.

Semantics (same as IREE's module):

* `expect_true(i)` / `expect_false(i)`: the i32 operand is nonzero / zero.
* `expect_all_true(device, view)`: every element is nonzero, read as the view's element type
  (8/16/32/64-bit integers of any signedness, i1 stored as bool8, f32, f64).
* `expect_eq(device, lhs, rhs)`: element types equal, shapes equal, and the dense contents
  byte-identical (any element type, sub-byte types compared packed).
* `expect_almost_eq(device, lhs, rhs, atol, rtol)`: element types and shapes equal and, per
  element, with `actual = lhs` and `expected = rhs` converted to double:
  `actual == expected` or both NaN or
  (`isfinite(expected)` and `|actual - expected| <= atol + rtol * |expected|`).
  Element types f64, f32, f16, bf16 and the f8 variants; anything else is INVALID_ARGUMENT.
  The compiler's defaults when the source gives none are atol = 1e-4, rtol = 0.
* The `_const` forms in MLIR (`check.expect_eq_const`, `check.expect_almost_eq_const`) are
  lowered by the compiler to the plain imports; `expect_eq_const` and
  `expect_almost_eq_const` here are conveniences for Python callers that build the expected
  view from an array and then call the plain check.

Failures: IREE records a gtest failure and lets the program go on. Here a failed check raises
`VMError(FAILED_PRECONDITION, message)` by default; `CheckModule(raise_on_failure=False)`
records the message in `failures` and returns, as IREE does. Bad arguments (null or
non-view refs, unsupported element types) always raise INVALID_ARGUMENT. The messages follow
IREE's: `Expected equality of these values. Contents does not match.` then both views as
`SHAPExTYPE=DATA` lines (at most 1024 elements each).
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from ..errors import StatusCode, VMError
import runtime_support.hal.element_types as et
from ..hal.buffer_view import HalBufferView
from ..vm.args import Ref, bad_argument, import_module, vm_import

# The device argument is not used; IREE only requires it non-null.
_DEVICE = Ref(object, "!hal.device")
_VIEW = Ref(HalBufferView, "!hal.buffer_view")

# Defaults the compiler applies to `check.expect_almost_eq[_const]` (CheckOps.td).
DEFAULT_ATOL = float(np.float32(1e-4))
DEFAULT_RTOL = 0.0

# Elements printed per view in failure messages (IREE's BufferViewToString).
MAX_FORMAT_ELEMENTS = 1024


# --------------------------------------------------------------------------- element decoding


def _minifloat_table(exp_bits: int, mant_bits: int, bias: int, kind: str) -> np.ndarray:
    """float64 value of every 8-bit pattern of a small float format.

    kind: "ieee" (all-ones exponent = inf/NaN), "fn" (no inf; all-ones exponent and
    mantissa = NaN), "fnuz" (no inf, no -0; 0x80 = NaN), "e8m0" (unsigned exponent only;
    0xFF = NaN).
    """
    table = np.empty(256, dtype=np.float64)
    exp_max = (1 << exp_bits) - 1
    mant_max = (1 << mant_bits) - 1
    for bits in range(256):
        if kind == "e8m0":
            table[bits] = math.nan if bits == 0xFF else math.ldexp(1.0, bits - bias)
            continue
        sign = -1.0 if bits & 0x80 else 1.0
        exponent = (bits >> mant_bits) & exp_max
        mantissa = bits & mant_max
        if kind == "fnuz" and bits == 0x80:
            value = math.nan
        elif kind == "ieee" and exponent == exp_max:
            value = sign * math.inf if mantissa == 0 else math.nan
        elif kind == "fn" and exponent == exp_max and mantissa == mant_max:
            value = math.nan
        elif exponent == 0:
            value = sign * math.ldexp(mantissa, 1 - bias - mant_bits)
        else:
            value = sign * math.ldexp(mantissa + (1 << mant_bits), exponent - bias - mant_bits)
        table[bits] = value
    return table


_F8_TABLES: dict[int, np.ndarray] = {
    et.FLOAT_8_E5M2: _minifloat_table(5, 2, 15, "ieee"),
    et.FLOAT_8_E4M3FN: _minifloat_table(4, 3, 7, "fn"),
    et.FLOAT_8_E5M2_FNUZ: _minifloat_table(5, 2, 16, "fnuz"),
    et.FLOAT_8_E4M3_FNUZ: _minifloat_table(4, 3, 8, "fnuz"),
    et.FLOAT_8_E8M0_FNU: _minifloat_table(8, 0, 127, "e8m0"),
}

# Element types expect_almost_eq compares.
_ALMOST_EQ_TYPES = frozenset({et.FLOAT_16, et.FLOAT_32, et.FLOAT_64, et.BFLOAT_16, *_F8_TABLES})


def float_values(raw: np.ndarray, element_type: int) -> np.ndarray:
    """float64 values of packed elements (`raw`: uint8 bytes) of a float element type."""
    raw = np.ascontiguousarray(raw, dtype=np.uint8)
    with np.errstate(invalid="ignore"):  # signaling NaNs convert quietly
        return _float_values(raw, element_type)


def _float_values(raw: np.ndarray, element_type: int) -> np.ndarray:
    if element_type == et.FLOAT_32:
        return raw.view("<f4").astype(np.float64)
    if element_type == et.FLOAT_64:
        return raw.view("<f8").astype(np.float64)
    if element_type == et.FLOAT_16:
        return raw.view("<f2").astype(np.float64)
    if element_type == et.BFLOAT_16:
        return (raw.view("<u2").astype("<u4") << 16).view("<f4").astype(np.float64)
    table = _F8_TABLES.get(element_type)
    if table is not None:
        return table[raw]
    raise VMError(
        StatusCode.INVALID_ARGUMENT,
        f"unsupported element type {et.element_type_name(element_type)}",
    )


def _nonzero_mask(raw: np.ndarray, element_type: int) -> np.ndarray | None:
    """Per-element `!= 0` for expect_all_true's types; None when unsupported."""
    kind, bits = et.numerical_type(element_type), et.bit_count(element_type)
    if kind in (*et._INTEGER_KINDS, et.NUMERICAL_BOOLEAN) and bits in (8, 16, 32, 64):
        return raw.view(f"<u{bits // 8}") != 0
    if element_type in (et.FLOAT_32, et.FLOAT_64):
        return raw.view(f"<f{et.bit_count(element_type) // 8}") != 0
    return None


# --------------------------------------------------------------------------- formatting


def _c_float(value: float) -> str:
    """C `%G` (what IREE's buffer view formatter prints for floats)."""
    if math.isnan(value):
        return "-NAN" if math.copysign(1.0, value) < 0 else "NAN"
    return "%G" % value


def _g(value: float) -> str:
    """A float as C++ `ostream <<` prints it (precision 6)."""
    if math.isnan(value):
        return "-nan" if math.copysign(1.0, value) < 0 else "nan"
    return "%g" % value


def _element_texts(raw: np.ndarray, element_type: int, count: int) -> list[str]:
    kind, bits = et.numerical_type(element_type), et.bit_count(element_type)
    if kind in et._INTEGER_KINDS and bits in (8, 16, 32, 64):
        code = "u" if kind == et.NUMERICAL_INTEGER_UNSIGNED else "i"
        return [str(v) for v in raw[: count * bits // 8].view(f"<{code}{bits // 8}").tolist()]
    if element_type in _ALMOST_EQ_TYPES:
        size = (bits + 7) // 8
        values = float_values(raw[: count * size], element_type).tolist()
        texts = [_c_float(v) for v in values]
        if bits == 16:  # IREE prints every f16/bf16 NaN as NAN
            texts = ["NAN" if t.endswith("NAN") else t for t in texts]
        return texts
    # No value printer (i1, complex, sub-byte, opaque): each element's bytes as hex.
    size = max(1, (bits + 7) // 8)
    data = raw.tobytes()
    return [data[i * size : (i + 1) * size].hex().upper() for i in range(min(count, len(data) // size))]


def format_buffer_view(
    view: HalBufferView, max_element_count: int | None = MAX_FORMAT_ELEMENTS
) -> str:
    """`SHAPExTYPE=DATA` as IREE's buffer view formatter writes it (rows in brackets,
    elements past `max_element_count` elided with `...`)."""
    shape = view.shape
    count = view.element_count
    budget = count if max_element_count is None or max_element_count < 0 else max_element_count
    raw = _contents(view)
    texts = _element_texts(raw, view.element_type, min(count, budget))
    state = {"pos": 0, "budget": budget}

    def row(n: int) -> str:
        parts: list[str] = []
        for _ in range(n):
            if state["budget"] <= 0 or state["pos"] >= len(texts):
                parts.append("...")
                break
            parts.append((" " if parts else "") + texts[state["pos"]])
            state["pos"] += 1
            state["budget"] -= 1
        return "".join(parts)

    def rec(dims: tuple[int, ...]) -> str:
        if len(dims) <= 1:
            return row(dims[0] if dims else 1)
        return "".join("[" + rec(dims[1:]) + "]" for _ in range(dims[0]))

    head = "x".join([str(d) for d in shape] + [et.element_type_name(view.element_type)])
    return f"{head}={rec(shape)}"


# --------------------------------------------------------------------------- access


def _contents(view: HalBufferView) -> np.ndarray:
    """The dense contents (uint8, packed) read through the view's buffer. Local CPU
    buffers are host memory, so no transfer is needed."""
    return view.buffer.bytes_view(0, view.byte_length)


def _both_views(os_lines: list[str], lhs: HalBufferView, rhs: HalBufferView) -> str:
    return (
        "".join(os_lines)
        + "\n  lhs:\n    "
        + format_buffer_view(lhs)
        + "\n  rhs:\n    "
        + format_buffer_view(rhs)
    )


# --------------------------------------------------------------------------- the module


@import_module("check")
class CheckModule:
    """The `check` import module: one method per import (ARCHITECTURE.md conventions).

    `calls` counts every call per check (`expect_eq`, ...), failing ones included;
    `failures` holds the message of every failed check.
    """

    NAME = "check"
    FAILURE_CODE = StatusCode.FAILED_PRECONDITION

    def __init__(self, *, raise_on_failure: bool = True) -> None:
        self.raise_on_failure = raise_on_failure
        self.calls: Counter[str] = Counter()
        self.failures: list[str] = []

    def __repr__(self) -> str:
        return f"<CheckModule calls={self.total_calls} failures={len(self.failures)}>"

    @property
    def total_calls(self) -> int:
        return sum(self.calls.values())

    def reset(self) -> None:
        self.calls.clear()
        self.failures.clear()

    def _fail(self, message: str) -> None:
        self.failures.append(message)
        if self.raise_on_failure:
            raise VMError(self.FAILURE_CODE, message)

    # -- imports --------------------------------------------------------------------------

    @vm_import("check.expect_true", "0i_v")
    def expect_true(self, operand: int) -> None:
        self.calls["expect_true"] += 1
        if not operand:
            self._fail(f"Expected {operand} to be nonzero.")

    @vm_import("check.expect_false", "0i_v")
    def expect_false(self, operand: int) -> None:
        self.calls["expect_false"] += 1
        if operand:
            self._fail(f"Expected {operand} to be zero.")

    @vm_import("check.expect_all_true", "0rr_v", device=_DEVICE, operand=_VIEW)
    def expect_all_true(self, device, operand) -> None:
        self.calls["expect_all_true"] += 1
        view = operand
        mask = _nonzero_mask(_contents(view), view.element_type)
        if mask is None:
            raise VMError(
                StatusCode.INVALID_ARGUMENT,
                f"unsupported element type {et.element_type_name(view.element_type)}",
            )
        if not mask.all():
            self._fail("Expected all true values, but got:\n    " + format_buffer_view(view))

    @vm_import("check.expect_eq", "0rrr_v", device=_DEVICE, lhs=_VIEW, rhs=_VIEW)
    def expect_eq(self, device, lhs, rhs) -> None:
        self.calls["expect_eq"] += 1
        types_eq = lhs.element_type == rhs.element_type
        shapes_eq = lhs.shape == rhs.shape
        contents_eq = (
            types_eq
            and shapes_eq
            and lhs.byte_length == rhs.byte_length
            and np.array_equal(_contents(lhs), _contents(rhs))
        )
        if contents_eq:
            return
        message = ["Expected equality of these values."]
        if not types_eq:
            message.append(" Element types do not match.")
        if not shapes_eq:
            message.append(" Shapes do not match.")
        message.append(" Contents does not match.")
        self._fail(_both_views(message, lhs, rhs))

    @vm_import("check.expect_almost_eq", "0rrrff_v", device=_DEVICE, lhs=_VIEW, rhs=_VIEW)
    def expect_almost_eq(self, device, lhs, rhs, atol: float, rtol: float) -> None:
        self.calls["expect_almost_eq"] += 1
        types_eq = lhs.element_type == rhs.element_type
        shapes_eq = lhs.shape == rhs.shape
        if not (types_eq and shapes_eq):
            message = ["Expected near equality of these values."]
            if not types_eq:
                message.append(" Element types do not match.")
            if not shapes_eq:
                message.append(" Shapes do not match.")
            self._fail(_both_views(message, lhs, rhs))
            return
        if lhs.element_type not in _ALMOST_EQ_TYPES:
            raise VMError(
                StatusCode.INVALID_ARGUMENT,
                f"unsupported element type {et.element_type_name(lhs.element_type)}",
            )
        actual = float_values(_contents(lhs), lhs.element_type)
        expected = float_values(_contents(rhs), rhs.element_type)
        atol, rtol = float(np.float32(atol)), float(np.float32(rtol))
        with np.errstate(invalid="ignore", over="ignore"):
            diff = np.abs(actual - expected)
            close = (
                (actual == expected)
                | (np.isnan(actual) & np.isnan(expected))
                | (np.isfinite(expected) & (diff <= atol + rtol * np.abs(expected)))
            )
        if close.all():
            return
        index = int(np.argmin(close))
        message = [
            "Expected near equality of these values. Contents does not match to tolerance "
            f"parameters atol={_g(atol)}, rtol={_g(rtol)}. The first failure occurs at index "
            f"{index} as the lhs value {_g(actual[index])} differs from the rhs value "
            f"{_g(expected[index])} by {_g(diff[index])}."
        ]
        self._fail(_both_views(message, lhs, rhs))

    # -- conveniences for Python callers (not imports) -------------------------------------

    def expect_eq_const(self, device, lhs, expected) -> None:
        """`expect_eq` against an array (or view) of expected values, given in lhs's type."""
        self.expect_eq(device, lhs, _expected_view(lhs, expected))

    def expect_almost_eq_const(
        self, device, lhs, expected, atol: float = DEFAULT_ATOL, rtol: float = DEFAULT_RTOL
    ) -> None:
        """`expect_almost_eq` against an array (or view) of expected values."""
        self.expect_almost_eq(device, lhs, _expected_view(lhs, expected), atol, rtol)


def _expected_view(lhs, expected) -> HalBufferView:
    if isinstance(expected, HalBufferView):
        return expected
    if not isinstance(lhs, HalBufferView):
        raise bad_argument("check.expect_eq_const", "lhs", "!hal.buffer_view", lhs)
    array = np.asarray(expected)
    try:
        dtype = et.to_numpy_dtype(lhs.element_type)
    except ValueError:
        dtype = array.dtype
    if array.dtype != dtype:
        array = array.astype(dtype)
    return HalBufferView.from_numpy(array, element_type=lhs.element_type)

"""`--expected_output`: compare results with expected values like iree-run-module 3.13.

Each expected value is a `--input`-style SPEC parsed for the result's type; `(ignored)`
skips a ref result. Buffer views match when shape and element type are equal and every
element is: exactly (integers, bool, f8 and opaque types, or `--equality_mode=exact`,
bytewise) or approximately (f16/f32/f64/bf16: `|actual - expected| <= atol + rtol *
|expected|`, NaN equal to NaN, a non-finite expected value only equal to itself).
The report goes to stdout: `[FAILED] result[i]: ...` per mismatch (with both views), or
`[SUCCESS] all function outputs matched their expected values.`; exit status 1 on a
mismatch.

As in iree-run-module 3.13, a scalar (i32/i64/f32/f64) result never matches: that tool
reports `variant types mismatch; expected i32 but got i32` for every scalar.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from runtime_support.tools import narrow_floats
from runtime_support.tools.io_format import (
    element_strings,
    element_type_of,
    format_buffer_view_data,
)
from runtime_support.tools.io_specs import StorageInput, parse_input, parse_inputs

IGNORED = "(ignored)"
_SCALARS = ("i32", "i64", "f32", "f64")


@dataclass
class Tolerances:
    """iree-run-module's defaults (its float flags widened to double as C does)."""

    mode: str = "approximate"  # or "exact"
    f16: float = float(np.float32(0.001))
    f32: float = float(np.float32(0.0001))
    f64: float = 0.0001
    bf16: float = float(np.float32(0.01))
    rtol: float = 1e-5


def parse_expected_list(specs, vm_types) -> list:
    """The expected values of a `--expected_output` list for results of VM types
    `vm_types`, parsed as one list (io_specs.parse_inputs: shared files, `*FILE.npy`)."""
    values = parse_inputs(specs, vm_types)
    return [
        IGNORED if vm_type == "ref" and value is None else value
        for value, vm_type in zip(values, vm_types)
    ]


def parse_expected(spec: str, vm_type: str):
    """One expected value for a result of VM type `vm_type` ("ref", "i32"...)."""
    value = parse_input(spec, vm_type).value
    # A null ref (`(null)`, `(ignored)`) is an empty variant, which matches anything.
    return IGNORED if vm_type == "ref" and value is None else value


def _fuzzy(actual: float, expected: float, atol: float, rtol: float) -> bool:
    if actual == expected or (math.isnan(actual) and math.isnan(expected)):
        return True
    if not math.isfinite(expected):
        return False
    return abs(actual - expected) <= atol + rtol * abs(expected)


def _as_floats(flat: np.ndarray, name: str) -> list[float] | None:
    if name in ("f16", "f32", "f64"):
        return flat.view(f"<f{int(name[1:]) // 8}").astype(np.float64).tolist()
    if name == "bf16":
        return narrow_floats.to_float32(flat, "bf16").astype(np.float64).tolist()
    return None


def _first_mismatch(expected: np.ndarray, actual: np.ndarray, et, tol: Tolerances) -> int | None:
    exp = np.ascontiguousarray(expected).reshape(-1)
    act = np.ascontiguousarray(actual).reshape(-1)
    floats = _as_floats(exp, et.name) if tol.mode == "approximate" else None
    if floats is not None:
        atol = getattr(tol, et.name)
        for i, (a, e) in enumerate(zip(_as_floats(act, et.name), floats)):
            if not _fuzzy(a, e, atol, tol.rtol):
                return i
        return None
    size = et.byte_size
    eb, ab = exp.tobytes(), act.tobytes()
    for i in range(len(eb) // size):
        if eb[i * size : (i + 1) * size] != ab[i * size : (i + 1) * size]:
            return i
    return None


def _view_name(array) -> str:
    et = element_type_of(array)
    return "x".join([str(d) for d in np.shape(array)] + [et.name])


def _compare_view(i: int, expected, actual, tol: Tolerances) -> str:
    exp_et, act_et = element_type_of(expected), element_type_of(actual)
    want = _view_name(expected)
    if np.shape(expected) != np.shape(actual) or exp_et.name != act_et.name:
        why = f"metadata is {_view_name(actual)}; expected that the view matches {want}"
    else:
        index = _first_mismatch(np.asarray(expected), np.asarray(actual), exp_et, tol)
        if index is None:
            return ""
        a = element_strings(np.asarray(actual).reshape(-1)[index : index + 1], act_et)[0]
        e = element_strings(np.asarray(expected).reshape(-1)[index : index + 1], exp_et)[0]
        why = f"element at index {index} ({a}) does not match the expected ({e})"
    return (
        f"[FAILED] result[{i}]: {why}; expected that the view is equal to contents of a "
        f"view of {want}\n  expected:\n{format_buffer_view_data(expected)}\n"
        f"  actual:\n{format_buffer_view_data(actual)}\n"
    )


def _type_name(value, vm_type: str | None) -> str:
    if vm_type in _SCALARS:
        return vm_type
    if isinstance(value, np.ndarray):
        return "hal.buffer_view"
    if isinstance(value, list):
        return "vm.list"
    if value is None:
        return "empty"
    if isinstance(value, StorageInput):  # `&SPEC`: a buffer, not a view
        return "hal.buffer"
    from runtime_support.tools.io_format import ref_display_name

    return ref_display_name(value)


def compare(results, result_types, expected, tol: Tolerances | None = None) -> tuple[str, bool]:
    """(report text, all matched). `result_types`: per result "ref"/"i32"/... or None."""
    tol = tol or Tolerances()
    if len(expected) != len(results):
        return f"[FAILED] expected {len(expected)} list elements but {len(results)} provided\n", False
    out = []
    for i, (want, got) in enumerate(zip(expected, results)):
        t = result_types[i] if result_types else None
        if isinstance(want, str) and want == IGNORED:
            continue
        if isinstance(want, np.ndarray) and isinstance(got, np.ndarray) and t not in _SCALARS:
            out.append(_compare_view(i, want, got, tol))
            continue
        out.append(
            f"[FAILED] result[{i}]: variant types mismatch; expected "
            f"{_type_name(want, t)} but got {_type_name(got, t)}\n"
        )
    text = "".join(out)
    if text:
        return text, False
    return "[SUCCESS] all function outputs matched their expected values.\n", True

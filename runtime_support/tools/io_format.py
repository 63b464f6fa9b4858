"""Result printing, byte-compatible with `iree-run-module` 3.13.

Rules (established against the real tool; tests/tools/test_io_specs.py checks them):

* `EXEC @NAME` before the call; then per result `result[i]: ` followed by the value.
* Scalars: `i32=5`, `i64=-1`, `f32=0.333333` (C `%g`: 6 significant digits, `1e-08`,
  `1e+20`, `inf`, `-inf`, `nan`, `-nan`, `-0`).
* Null refs: `(null)`.
* Buffer views: `hal.buffer_view` then a line `SHAPExTYPE=DATA` (rank 0: `TYPE=DATA`).
  DATA: rank 1 elements separated by one space; for rank >= 2 every sub-array of the outer
  dimension is wrapped in brackets: `2x3xf32=[1 2 3][4 5 6]`, `1x1x1xf32=[[2]]`,
  `2x0xf32=[][]`, `0x4xf32=` (nothing).
  Float elements use C `%G` (`1E-08`, `INF`, `NAN`, `-NAN`); f16/bf16 NaN always print `NAN`.
  Signless/signed ints print signed, `ui` types unsigned. Types without a value printer
  (`i1`, `cf64`, `*16`...) print each element's bytes as uppercase hex (`01`, `FF`).
* Elision (`--output_max_element_count`, default 1024, negative = unlimited): a budget of
  elements is shared over the whole view; inside each innermost row, when the budget is spent
  before the row ends, `...` is appended right after the last printed element (or alone):
  `2x3xf32=[1 2 3][4...]`, `[...][...]`, rank 0 with budget 0 prints `f32=...`.
* `!vm.list`: `vm.list`, then each element as `child_list[j]: VALUE`, then an empty line.
* Other refs print their type name and `(no printer)` on the next line.
* Traces (`flow.tensor.trace "KEY" = [...]`, the `hal.buffer_view.trace` import), written
  to stderr by iree-run-module and iree.runtime alike: `=== KEY ===`, one line per buffer
  view in the form above with no elision (every element), then an empty line.
"""

from __future__ import annotations

import math
import sys
from typing import Sequence

import numpy as np

from runtime_support.tools import narrow_floats
from runtime_support.tools.io_specs import (
    ElementType,
    HalArray,
    SpecError,
    element_type_for_dtype,
    parse_element_type,
)
from runtime_support.errors import StatusCode

DEFAULT_MAX_ELEMENT_COUNT = 1024

_SCALAR_NUMPY_TYPES = {
    np.dtype(np.int32): "i32",
    np.dtype(np.int64): "i64",
    np.dtype(np.float32): "f32",
    np.dtype(np.float64): "f64",
}


def element_type_of(array: np.ndarray) -> ElementType:
    """The element type a result array prints with: a HalArray's own, else inferred from
    the dtype (ints are signless `i`N as compiled modules produce them, bool is i1)."""
    et = getattr(array, "element_type", None)
    if et:
        return parse_element_type(et) if isinstance(et, str) else et
    dt = np.asarray(array).dtype
    if dt.kind == "i":
        return ElementType(f"i{dt.itemsize * 8}", "i", dt.itemsize * 8)
    if dt.fields is None and dt.kind in "Vf":  # ml_dtypes' bfloat16 / float8_* types
        from runtime_support.hal import element_types

        try:
            name = element_types.element_type_name(element_types.from_numpy_dtype(dt))
        except ValueError:
            name = None
        if name in narrow_floats.NAMES:
            return parse_element_type(name)
    return element_type_for_dtype(dt)


# ---------------------------------------------------------------------------- numbers


def _c_float(value: float, upper: bool) -> str:
    if math.isnan(value):
        text = "-nan" if math.copysign(1.0, value) < 0 else "nan"
    else:
        text = "%g" % value
    return text.upper() if upper else text


def format_scalar(value, vm_type: str | None = None) -> str:
    """`i32=5`, `f32=0.333333`... `vm_type` overrides the type inferred from `value`."""
    if vm_type is None:
        vm_type = scalar_vm_type(value)
    if vm_type in ("i32", "i64"):
        return f"{vm_type}={int(value)}"
    return f"{vm_type}={_c_float(float(value), upper=False)}"


def scalar_vm_type(value) -> str:
    """numpy scalars say their type; a Python int is i32 when it fits else i64; a Python
    float is f32 when exactly representable as one, else f64."""
    if isinstance(value, np.generic):
        t = _SCALAR_NUMPY_TYPES.get(value.dtype)
        if t:
            return t
        return "i64" if value.dtype.kind in "iub" else "f64"
    if isinstance(value, (bool, int)):
        return "i32" if -(2**31) <= int(value) < 2**31 else "i64"
    f = float(value)
    if math.isnan(f) or math.isinf(f) or float(np.float32(f)) == f:
        return "f32"
    return "f64"


def element_strings(flat: np.ndarray, et: ElementType) -> list[str]:
    """Text of each element of the flat storage array."""
    if et.kind in ("i", "si", "ui") and et.bits in (8, 16, 32, 64):
        if et.kind == "ui":
            vals = flat.view(f"<u{et.bits // 8}")
        else:
            vals = flat.view(f"<i{et.bits // 8}")
        return [str(v) for v in vals.tolist()]
    if (et.kind == "f" and et.bits in (16, 32, 64)) or et.name in narrow_floats.NAMES:
        if et.name in narrow_floats.NAMES:  # widened to f32 as IREE does (NaN positive)
            vals = narrow_floats.to_float32(flat, et.name)
        else:
            vals = flat.view(f"<f{et.bits // 8}")
        out = [_c_float(v, upper=True) for v in vals.astype(np.float64).tolist()]
        if et.bits == 16:
            out = ["NAN" if s.endswith("NAN") else s for s in out]
        return out
    size = et.byte_size
    raw = flat.tobytes()
    return [
        raw[i * size : (i + 1) * size].hex().upper() for i in range(len(raw) // size)
    ]


def format_buffer_view_data(
    array: np.ndarray,
    element_type: ElementType | str | None = None,
    max_element_count: int | None = DEFAULT_MAX_ELEMENT_COUNT,
) -> str:
    """The `SHAPExTYPE=DATA` line (no newline)."""
    if element_type is None:
        et = element_type_of(array)
    elif isinstance(element_type, str):
        et = parse_element_type(element_type)
    else:
        et = element_type
    arr = np.asarray(array)
    shape = arr.shape
    budget = [
        (
            math.inf
            if max_element_count is None or max_element_count < 0
            else max_element_count
        )
    ]
    count = math.prod(shape)
    limit = count if budget[0] == math.inf else min(count, int(budget[0]))
    storage = arr.reshape(-1)
    if storage.dtype.itemsize != et.byte_size:
        raise SpecError(
            StatusCode.INVALID_ARGUMENT,
            f"array dtype {arr.dtype} does not hold element type {et.name}",
        )
    texts = element_strings(storage[:limit], et)

    pos = [0]

    def row(n: int) -> str:
        parts = []
        for _ in range(n):
            if budget[0] <= 0:
                parts.append("...")
                break
            parts.append((" " if parts else "") + texts[pos[0]])
            pos[0] += 1
            budget[0] -= 1
        return "".join(parts)

    def rec(dims: tuple[int, ...]) -> str:
        if len(dims) <= 1:
            return row(dims[0] if dims else 1)
        return "".join("[" + rec(dims[1:]) + "]" for _ in range(dims[0]))

    body = rec(shape)
    head = "x".join([str(d) for d in shape] + [et.name])
    return f"{head}={body}"


# --------------------------------------------------------------------------- values


def is_vm_list(value) -> bool:
    return isinstance(value, list) or (
        hasattr(value, "__len__")
        and hasattr(value, "__getitem__")
        and type(value).__name__.lower().endswith("list")
        and not isinstance(value, (np.ndarray, str, bytes))
    )


def _buffer_view_as_array(value) -> HalArray | None:
    """A runtime_support.hal HalBufferView (duck-typed) as a HalArray; else None."""
    if not (
        hasattr(value, "to_numpy")
        and isinstance(getattr(value, "element_type", None), int)
    ):
        return None
    from runtime_support.hal.element_types import element_type_name

    name = element_type_name(value.element_type)
    arr = np.asarray(value.to_numpy())
    try:
        et = parse_element_type(name)
    except SpecError:
        et = ElementType(name, "*", arr.dtype.itemsize * 8)
    return HalArray.wrap(arr, et)


def format_value(
    value,
    vm_type: str | None = None,
    max_element_count: int | None = DEFAULT_MAX_ELEMENT_COUNT,
) -> str:
    """The text after `result[i]: ` (with its trailing newline)."""
    if value is None:
        return "(null)\n"
    if vm_type in ("i32", "i64", "f32", "f64"):
        return format_scalar(value, vm_type) + "\n"
    if isinstance(value, np.ndarray):
        return (
            "hal.buffer_view\n"
            + format_buffer_view_data(value, None, max_element_count)
            + "\n"
        )
    if isinstance(value, (int, float, np.generic)):
        return format_scalar(value) + "\n"
    bv = _buffer_view_as_array(value)
    if bv is not None:
        return (
            "hal.buffer_view\n"
            + format_buffer_view_data(bv, None, max_element_count)
            + "\n"
        )
    if is_vm_list(value):
        if hasattr(value, "items_with_types"):  # runtime_support.vm.list.VMList
            items = [
                (v, {"i8": "i32", "i16": "i32"}.get(t, t))
                for t, v in value.items_with_types()
            ]
        else:
            items = [(v, None) for v in value]
        out = ["vm.list\n"]
        for j, (item, t) in enumerate(items):
            out.append(f"child_list[{j}]: " + format_value(item, t, max_element_count))
        out.append("\n")
        return "".join(out)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "vm.buffer\n(no printer)\n"
    return f"{ref_display_name(value)}\n(no printer)\n"


def ref_display_name(value) -> str:
    """A ref's VM type name as IREE prints it (`vm.buffer`, `hal.buffer`, `hal.fence`)."""
    from runtime_support.vm.refs import ref_type_name

    name = ref_type_name(value)
    if name is not None:
        return name.lstrip("!")
    return getattr(value, "vm_type_name", None) or type(value).__name__


def format_trace(key: str, views: Sequence) -> str:
    """The block IREE's stdio debug sink writes for one `hal.buffer_view.trace`: the key
    (up to a NUL, as C's `%.*s` stops there) between `===`, each view unabridged, an empty
    line."""
    lines = [f"=== {key.partition(chr(0))[0]} ===\n"]
    for view in views:
        array = _buffer_view_as_array(view)
        if array is None:  # a numpy array (tests, user modules)
            array = np.asarray(view)
        lines.append(format_buffer_view_data(array, None, None) + "\n")
    lines.append("\n")
    return "".join(lines)


def format_results(
    function: str,
    results: Sequence,
    result_types: Sequence[str | None] | None = None,
    max_element_count: int | None = DEFAULT_MAX_ELEMENT_COUNT,
    include_exec: bool = True,
) -> str:
    """`EXEC @NAME` + one `result[i]: ...` block per result."""
    out = [f"EXEC @{function}\n"] if include_exec else []
    for i, value in enumerate(results):
        t = result_types[i] if result_types and i < len(result_types) else None
        out.append(f"result[{i}]: " + format_value(value, t, max_element_count))
    return "".join(out)


# ------------------------------------------------------------------- --output=@FILE


def to_numpy_for_output(value, vm_type: str | None = None, npy: bool = True) -> np.ndarray:
    """A result as iree-run-module writes it to .npy (scalars -> shape ()); with
    `npy=False`, for a raw `.bin` file, whose bytes any element type can give."""
    if value is None:  # an empty i8 view: keeps several values of one npy file in order
        return np.zeros(0, np.int8)
    if vm_type in ("i32", "i64", "f32", "f64") or isinstance(
        value, (int, float, np.generic)
    ):
        t = vm_type or scalar_vm_type(value)
        return np.array(
            value, dtype={"i32": "<i4", "i64": "<i8", "f32": "<f4", "f64": "<f8"}[t]
        )
    bv = _buffer_view_as_array(value)
    if bv is not None:
        value = bv
    if isinstance(value, np.ndarray):
        et = element_type_of(value)
        if npy and (
            et.kind in ("bf", "f8") or (et.kind == "f" and et.bits not in (16, 32, 64))
        ):
            raise SpecError(StatusCode.UNIMPLEMENTED, "unsupported data encoding")
        array = np.array(np.asarray(value).view(np.ndarray), order="C")
        if et.kind == "*" and array.dtype.kind != "V":  # opaque: bytes (write_npy: `<VN`)
            array = array.view(f"V{array.dtype.itemsize}")
        return array
    raw = _ref_bytes(value)
    if raw is not None:  # a !hal.buffer or !vm.buffer: its bytes, as an i8 array
        return np.frombuffer(raw, np.int8).copy()
    raise SpecError(
        StatusCode.INVALID_ARGUMENT,
        "unsupported output source type; expected: !hal.buffer, !hal.buffer_view, "
        "!vm.buffer",
    )


def write_npy(f, array: np.ndarray) -> None:
    """One array in .npy form as iree-run-module writes it: numpy's own format, except
    that an opaque (`*N`, numpy void) array's descr is `<VN` (`|V1` for one byte), as
    IREE spells it."""
    array = np.asarray(array)
    if array.dtype.kind != "V":
        np.save(f, array, allow_pickle=False)
        return
    size = array.dtype.itemsize
    descr = f"{'|' if size == 1 else '<'}V{size}"
    dims = ", ".join(str(d) for d in array.shape) + ("," if array.ndim == 1 else "")
    header = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': ({dims}), }}".encode()
    used = 8 + 2 + len(header) + 1  # magic and version, length, dict, newline
    header += b" " * (-used % 64) + b"\n"
    f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header)
    f.write(np.ascontiguousarray(array).tobytes())


def _ref_bytes(value) -> bytes | None:
    """The contents of a `!hal.buffer` or `!vm.buffer` ref; None for other values."""
    name = ref_display_name(value) if not isinstance(value, (list, tuple)) else None
    if name == "vm.buffer":
        return value.tobytes()
    if name == "hal.buffer":
        return value.read()
    return None

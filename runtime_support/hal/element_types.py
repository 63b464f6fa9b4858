"""HAL element types and encodings (hal-abi.md §B.1, §B.2) and their numpy dtypes.

An element type is a u32: `(numerical_type << 24) | bit_count`. Bits 8..23 are reserved.
"""

from __future__ import annotations

import threading

import numpy as np

# Numerical types (bits 24..31).
NUMERICAL_UNKNOWN = 0x00
NUMERICAL_INTEGER = 0x10
NUMERICAL_INTEGER_SIGNED = 0x11
NUMERICAL_INTEGER_UNSIGNED = 0x12
NUMERICAL_BOOLEAN = 0x13
NUMERICAL_FLOAT_IEEE = 0x21
NUMERICAL_FLOAT_BRAIN = 0x22
NUMERICAL_FLOAT_COMPLEX = 0x23
NUMERICAL_FLOAT_8_E5M2 = 0x24
NUMERICAL_FLOAT_8_E4M3FN = 0x25
NUMERICAL_FLOAT_8_E5M2_FNUZ = 0x26
NUMERICAL_FLOAT_8_E4M3_FNUZ = 0x27
NUMERICAL_FLOAT_8_E8M0_FNU = 0x28

_INTEGER_KINDS = (NUMERICAL_INTEGER, NUMERICAL_INTEGER_SIGNED, NUMERICAL_INTEGER_UNSIGNED)

# Encoding types (§B.2).
ENCODING_OPAQUE = 0
ENCODING_DENSE_ROW_MAJOR = 1


def make_element_type(numerical_type: int, bit_count: int) -> int:
    return ((numerical_type & 0xFF) << 24) | (bit_count & 0xFF)


def numerical_type(element_type: int) -> int:
    return (element_type >> 24) & 0xFF


def bit_count(element_type: int) -> int:
    return element_type & 0xFF


def byte_count(element_type: int) -> int:
    """Bytes per element, rounded up (sub-byte types are packed in buffers)."""
    return (bit_count(element_type) + 7) // 8


def is_integer(element_type: int) -> bool:
    return numerical_type(element_type) in _INTEGER_KINDS


def is_compatible(actual: int, expected: int) -> bool:
    """Whether a view of type `actual` passes `buffer_view.assert` against `expected`.

    Opaque actual types match anything; integers match when their bit widths are equal
    (signedness is ignored); otherwise the types must be equal.
    """
    actual &= 0xFFFFFFFF
    expected &= 0xFFFFFFFF
    if actual == expected or numerical_type(actual) == NUMERICAL_UNKNOWN:
        return True
    return is_integer(actual) and is_integer(expected) and bit_count(actual) == bit_count(expected)


# Named element types.
OPAQUE_8 = make_element_type(NUMERICAL_UNKNOWN, 8)
OPAQUE_16 = make_element_type(NUMERICAL_UNKNOWN, 16)
OPAQUE_32 = make_element_type(NUMERICAL_UNKNOWN, 32)
OPAQUE_64 = make_element_type(NUMERICAL_UNKNOWN, 64)
BOOL_8 = make_element_type(NUMERICAL_BOOLEAN, 8)
INT_4 = make_element_type(NUMERICAL_INTEGER, 4)
INT_8 = make_element_type(NUMERICAL_INTEGER, 8)
INT_16 = make_element_type(NUMERICAL_INTEGER, 16)
INT_32 = make_element_type(NUMERICAL_INTEGER, 32)
INT_64 = make_element_type(NUMERICAL_INTEGER, 64)
SINT_8 = make_element_type(NUMERICAL_INTEGER_SIGNED, 8)
SINT_16 = make_element_type(NUMERICAL_INTEGER_SIGNED, 16)
SINT_32 = make_element_type(NUMERICAL_INTEGER_SIGNED, 32)
SINT_64 = make_element_type(NUMERICAL_INTEGER_SIGNED, 64)
UINT_8 = make_element_type(NUMERICAL_INTEGER_UNSIGNED, 8)
UINT_16 = make_element_type(NUMERICAL_INTEGER_UNSIGNED, 16)
UINT_32 = make_element_type(NUMERICAL_INTEGER_UNSIGNED, 32)
UINT_64 = make_element_type(NUMERICAL_INTEGER_UNSIGNED, 64)
FLOAT_16 = make_element_type(NUMERICAL_FLOAT_IEEE, 16)
FLOAT_32 = make_element_type(NUMERICAL_FLOAT_IEEE, 32)
FLOAT_64 = make_element_type(NUMERICAL_FLOAT_IEEE, 64)
BFLOAT_16 = make_element_type(NUMERICAL_FLOAT_BRAIN, 16)
COMPLEX_64 = make_element_type(NUMERICAL_FLOAT_COMPLEX, 64)
COMPLEX_128 = make_element_type(NUMERICAL_FLOAT_COMPLEX, 128)
FLOAT_8_E5M2 = make_element_type(NUMERICAL_FLOAT_8_E5M2, 8)
FLOAT_8_E4M3FN = make_element_type(NUMERICAL_FLOAT_8_E4M3FN, 8)
FLOAT_8_E5M2_FNUZ = make_element_type(NUMERICAL_FLOAT_8_E5M2_FNUZ, 8)
FLOAT_8_E4M3_FNUZ = make_element_type(NUMERICAL_FLOAT_8_E4M3_FNUZ, 8)
FLOAT_8_E8M0_FNU = make_element_type(NUMERICAL_FLOAT_8_E8M0_FNU, 8)

# Element type -> numpy dtype. Signless integers read as signed. bf16 and the f8 types
# use ml_dtypes when it is installed, else their raw bit patterns (uint16 / uint8).
_DTYPES: dict[int, np.dtype] = {
    BOOL_8: np.dtype(np.bool_),
    INT_8: np.dtype(np.int8),
    INT_16: np.dtype(np.int16),
    INT_32: np.dtype(np.int32),
    INT_64: np.dtype(np.int64),
    SINT_8: np.dtype(np.int8),
    SINT_16: np.dtype(np.int16),
    SINT_32: np.dtype(np.int32),
    SINT_64: np.dtype(np.int64),
    UINT_8: np.dtype(np.uint8),
    UINT_16: np.dtype(np.uint16),
    UINT_32: np.dtype(np.uint32),
    UINT_64: np.dtype(np.uint64),
    FLOAT_16: np.dtype(np.float16),
    FLOAT_32: np.dtype(np.float32),
    FLOAT_64: np.dtype(np.float64),
    COMPLEX_64: np.dtype(np.complex64),
    COMPLEX_128: np.dtype(np.complex128),
    OPAQUE_8: np.dtype(np.uint8),
    OPAQUE_16: np.dtype(np.uint16),
    OPAQUE_32: np.dtype(np.uint32),
    OPAQUE_64: np.dtype(np.uint64),
    BFLOAT_16: np.dtype(np.uint16),
    FLOAT_8_E5M2: np.dtype(np.uint8),
    FLOAT_8_E4M3FN: np.dtype(np.uint8),
    FLOAT_8_E5M2_FNUZ: np.dtype(np.uint8),
    FLOAT_8_E4M3_FNUZ: np.dtype(np.uint8),
    FLOAT_8_E8M0_FNU: np.dtype(np.uint8),
}
# The ml_dtypes type of each: imported at the first use of one of these element types or
# of an array of ml_dtypes' own (about 10 ms that most processes never need).
_NARROW = {
    BFLOAT_16: "bfloat16",
    FLOAT_8_E5M2: "float8_e5m2",
    FLOAT_8_E4M3FN: "float8_e4m3fn",
    FLOAT_8_E5M2_FNUZ: "float8_e5m2fnuz",
    FLOAT_8_E4M3_FNUZ: "float8_e4m3fnuz",
    FLOAT_8_E8M0_FNU: "float8_e8m0fnu",
}
_narrow_loaded = False  # (set once ml_dtypes was looked for)
_narrow_lock = threading.Lock()


def _load_narrow() -> None:
    """Puts ml_dtypes' types into both tables, where ml_dtypes is installed (once)."""
    global _narrow_loaded
    with _narrow_lock:
        if _narrow_loaded:
            return
        try:  # optional: a real bfloat16 / float8 dtype when ml_dtypes is installed
            import ml_dtypes
        except ImportError:  # pragma: no cover - depends on the environment
            ml_dtypes = None
        for et, name in _NARROW.items():
            if ml_dtypes is not None and hasattr(ml_dtypes, name):
                dtype = np.dtype(getattr(ml_dtypes, name))
                _DTYPES[et] = dtype
                _FROM_DTYPE.setdefault(dtype, et)
        _narrow_loaded = True


# numpy dtype -> the element type compiled code uses (signless integers, bool8).
_FROM_DTYPE: dict[np.dtype, int] = {
    np.dtype(np.bool_): BOOL_8,
    np.dtype(np.int8): INT_8,
    np.dtype(np.int16): INT_16,
    np.dtype(np.int32): INT_32,
    np.dtype(np.int64): INT_64,
    np.dtype(np.uint8): UINT_8,
    np.dtype(np.uint16): UINT_16,
    np.dtype(np.uint32): UINT_32,
    np.dtype(np.uint64): UINT_64,
    np.dtype(np.float16): FLOAT_16,
    np.dtype(np.float32): FLOAT_32,
    np.dtype(np.float64): FLOAT_64,
    np.dtype(np.complex64): COMPLEX_64,
    np.dtype(np.complex128): COMPLEX_128,
}

_NAMES: dict[int, str] = {
    BOOL_8: "i1",
    INT_4: "i4",
    INT_8: "i8",
    INT_16: "i16",
    INT_32: "i32",
    INT_64: "i64",
    SINT_8: "si8",
    SINT_16: "si16",
    SINT_32: "si32",
    SINT_64: "si64",
    UINT_8: "ui8",
    UINT_16: "ui16",
    UINT_32: "ui32",
    UINT_64: "ui64",
    FLOAT_16: "f16",
    FLOAT_32: "f32",
    FLOAT_64: "f64",
    BFLOAT_16: "bf16",
    COMPLEX_64: "complex<f32>",
    COMPLEX_128: "complex<f64>",
    FLOAT_8_E5M2: "f8E5M2",
    FLOAT_8_E4M3FN: "f8E4M3FN",
    FLOAT_8_E5M2_FNUZ: "f8E5M2FNUZ",
    FLOAT_8_E4M3_FNUZ: "f8E4M3FNUZ",
    FLOAT_8_E8M0_FNU: "f8E8M0FNU",
}


def to_numpy_dtype(element_type: int) -> np.dtype:
    """The numpy dtype for an element type; ValueError for types numpy cannot hold
    (sub-byte integers, unknown codes)."""
    element_type &= 0xFFFFFFFF
    if not _narrow_loaded and element_type in _NARROW:
        _load_narrow()
    dtype = _DTYPES.get(element_type)
    if dtype is None:
        raise ValueError(f"no numpy dtype for HAL element type 0x{element_type:08X}")
    return dtype


def from_numpy_dtype(dtype) -> int:
    """The element type compiled code expects for arrays of `dtype` (signless ints)."""
    dtype = np.dtype(dtype)
    element_type = _FROM_DTYPE.get(dtype)
    if element_type is None and not _narrow_loaded and dtype.kind == "V":
        _load_narrow()  # (an ml_dtypes array: ml_dtypes is imported already)
        element_type = _FROM_DTYPE.get(dtype)
    if element_type is None:
        raise ValueError(f"no HAL element type for numpy dtype {dtype}")
    if dtype.kind == "u":  # compiled code uses the signless form for all integers
        element_type = make_element_type(NUMERICAL_INTEGER, bit_count(element_type))
    return element_type


def element_type_name(element_type: int) -> str:
    """The MLIR-style name (`f32`, `i1`...) iree-run-module prints; hex when unknown."""
    element_type &= 0xFFFFFFFF
    name = _NAMES.get(element_type)
    if name is not None:
        return name
    if is_integer(element_type):
        return f"i{bit_count(element_type)}"
    if numerical_type(element_type) == NUMERICAL_UNKNOWN and bit_count(element_type):
        return f"*{bit_count(element_type)}"  # opaque, as iree-run-module prints it
    return f"0x{element_type:08X}"


_BY_NAME = {name: et for et, name in _NAMES.items()}


def element_type_from_name(name: str) -> int | None:
    """The element type for a printed name (`bf16`, `f8E4M3FN`, `si32`, `i4`...), or None.
    (`i1` is the 8-bit boolean, as iree-run-module and compiled code store it.)"""
    et = _BY_NAME.get(name)
    if et is None and name.startswith("*") and name[1:].isdigit() and 0 < int(name[1:]) < 256:
        return make_element_type(NUMERICAL_UNKNOWN, int(name[1:]))  # opaque `*32`
    if et is None and name.startswith(("i", "si", "ui")):
        kind = NUMERICAL_INTEGER_SIGNED if name[0] == "s" else (
            NUMERICAL_INTEGER_UNSIGNED if name[0] == "u" else NUMERICAL_INTEGER)
        digits = name.lstrip("siu")
        if digits.isdigit() and 0 < int(digits) < 256:
            et = make_element_type(kind, int(digits))
    return et


def has_exact_dtype(element_type: int) -> bool:
    """Whether `to_numpy_dtype` names this element type exactly: False for bf16 and the
    f8 types without ml_dtypes (their bits come back as uints), signed/unsigned integer
    types (compiled code's arrays read as signless) and opaque types."""
    try:
        dtype = to_numpy_dtype(element_type)
        return from_numpy_dtype(dtype) == element_type & 0xFFFFFFFF
    except ValueError:
        return False

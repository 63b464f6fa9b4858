"""`--input=SPEC` parsing, compatible with `iree-run-module` 3.13.

The rules below were established by running the real tool (see tests/tools/test_io_specs.py,
which checks them differentially); nothing here is derived from IREE sources.

How a SPEC is read depends on the calling-convention type of the argument it feeds:

* `i`/`I`/`f`/`F` (i32/i64/f32/f64 scalar): the trimmed text is parsed like C
  `strtoll(s, 0)` / `strtof` / `strtod`: the longest valid *prefix* counts (`5abc` -> 5,
  `1.5` as i32 -> 1, `0x10` -> 16, `010` -> 8), nothing parsed -> INVALID_ARGUMENT. An i32
  is parsed as i64 then wrapped to 32 bits. Texts longer than 15 characters (integers of
  32 bits or fewer) or 31 characters (i64, floats) are rejected whatever they hold. A spec starting with `@`/`+` is a file: a
  non-`.npy` name is UNIMPLEMENTED, an `.npy` one is a signature mismatch (npy -> ref).
* `r` (ref): `(null)` -> None; `@FILE.npy` -> the first array of a numpy file, `+FILE.npy`
  the next one, `*FILE.npy` every one left (one argument each); `&SPEC` -> the
  `hal.buffer` of that view (a `StorageInput`); otherwise `[SHAPE x]TYPE[=DATA]` where
  SHAPE is `x`-separated dims (`4x2xf32`, `f32` or `xf32` is rank 0, needs an `x` or `=`).
  DATA: empty -> zeros; `@FILE`/`+FILE` -> raw little-endian bytes (a prefix of the file);
  else tokens split on whitespace, `,`, `[` and `]`: one token -> splat, else exactly one
  token per element.

Element types: `i`N (signless), `si`N, `ui`N, `f16`/`f32`/`f64`, `bf16` and the f8 types
(`f8E5M2`, `f8E4M3FN`, `f8E5M2FNUZ`, `f8E4M3FNUZ`, `f8E8M0FNU`) have value parsers;
every other type with a byte-multiple size (`i1`, `cf64`, `*16`, `bf8`, `f8`...) takes one
hex token of exactly 2*bytes digits per element (a bad hex digit counts as 0). `i1` is one
byte per element.

Results are `ParsedInput(value, vm_type, element_type)`: for refs `value` is a `HalArray`
(an `np.ndarray` subclass carrying the IREE element type name; bf16 is stored as uint16
bits, opaque types as `V<bytes>`), or None; for scalars a Python int/float with
`vm_type` in {"i32", "i64", "f32", "f64"}.
"""

from __future__ import annotations

import ast
import dataclasses
import math
import os
import re
from itertools import compress

import numpy as np

from runtime_support.tools import narrow_floats
from runtime_support.errors import StatusCode
from runtime_support.tools.c_numbers import MAX_LEN_32, MAX_LEN_64, strtof, strtoll, strtoull
from runtime_support.vm.numerics import wrap_int


class SpecError(Exception):
    """A SPEC that iree-run-module would reject; carries an IREE status code."""

    def __init__(self, code: StatusCode, message: str = "") -> None:
        self.code = code
        self.message = message
        super().__init__(f"{code.name}; {message}" if message else code.name)


# --------------------------------------------------------------------------- element types


@dataclasses.dataclass(frozen=True)
class ElementType:
    """An IREE HAL element type: `kind` in {"i", "si", "ui", "f", "bf", "cf", "*", named}."""

    name: str  # canonical spelling as iree-run-module prints it: "f32", "si8", "*16"
    kind: str
    bits: int

    @property
    def byte_size(self) -> int:
        return (self.bits + 7) // 8

    @property
    def has_value_parser(self) -> bool:
        if self.kind in ("i", "si", "ui"):
            return self.bits in (8, 16, 32, 64)
        if self.kind == "f":
            return self.bits in (16, 32, 64)
        if self.kind == "bf":
            return self.bits == 16
        return self.kind == "f8"

    @property
    def storage_dtype(self) -> np.dtype:
        """The numpy dtype used to hold the element bytes."""
        if self.kind in ("i", "si") and self.bits in (8, 16, 32, 64):
            return np.dtype(f"<i{self.bits // 8}")
        if self.kind == "ui" and self.bits in (8, 16, 32, 64):
            return np.dtype(f"<u{self.bits // 8}")
        if self.kind == "i" and self.bits == 1:
            return np.dtype(np.bool_)
        if self.kind == "f" and self.bits in (16, 32, 64):
            return np.dtype(f"<f{self.bits // 8}")
        if self.kind == "bf" and self.bits == 16:
            return np.dtype("<u2")
        if self.kind == "f8":
            return np.dtype("u1")
        if self.kind == "cf" and self.bits in (64, 128):
            return np.dtype(f"<c{self.bits // 8}")
        return np.dtype(f"V{self.byte_size}")


# Named float types iree-run-module accepts by exact spelling. The 8-bit ones parse and
# print as values (runtime_support.tools.narrow_floats); the sub-byte ones are not supported.
_NAMED_TYPES = {name: 8 for name in narrow_floats.NAMES if name != "bf16"}
_SUB_BYTE_FLOATS = ("f4E2M1FN", "f6E2M3FN", "f6E3M2FN")


def parse_element_type(text: str) -> ElementType:
    """`f32`, `si8`, `bf16`, `i1`, `cf64`, `*16`, `f8E4M3FN`... (iree-run-module spelling)."""
    if text in _NAMED_TYPES:
        return ElementType(text, "f8", 8)
    if text in _SUB_BYTE_FLOATS:
        raise SpecError(
            StatusCode.UNIMPLEMENTED,
            f"element type '{text}' is not supported by pyree-run",
        )
    for prefix in ("si", "ui", "bf", "cf", "i", "f", "*"):
        if text.startswith(prefix):
            break
    else:
        raise SpecError(
            StatusCode.INVALID_ARGUMENT, f"unhandled element type prefix in '{text}'"
        )
    m = re.match(r"\d+", text[len(prefix) :])
    bits = int(m.group(0)) if m else 0
    if bits <= 0 or bits > 255:
        raise SpecError(
            StatusCode.INVALID_ARGUMENT, f"out of range bit count in '{text}'"
        )
    if bits % 8 != 0 and not (prefix == "i" and bits == 1):
        raise SpecError(
            StatusCode.UNIMPLEMENTED,
            f"sub-byte element type '{text}' is not supported by pyree-run",
        )
    return ElementType(f"{prefix}{bits}", {"*": "*"}.get(prefix, prefix), bits)


def element_type_for_dtype(dtype: np.dtype) -> ElementType:
    """The element type iree-run-module gives an npy array of this dtype (ints are signed
    `si`N / `ui`N, bool is i1, void is opaque)."""
    dtype = np.dtype(dtype)
    if dtype.byteorder == ">":
        raise SpecError(
            StatusCode.UNIMPLEMENTED, f"big-endian data type '{dtype.str}' unsupported"
        )
    k = dtype.kind
    bits = dtype.itemsize * 8
    if k == "b":
        return ElementType("i1", "i", 1)
    if k == "i":
        return ElementType(f"si{bits}", "si", bits)
    if k == "u":
        return ElementType(f"ui{bits}", "ui", bits)
    if k == "f":
        return ElementType(f"f{bits}", "f", bits)
    if k == "c":
        return ElementType(f"cf{bits}", "cf", bits)
    if k == "V":
        return ElementType(f"*{bits}", "*", bits)
    raise SpecError(StatusCode.UNIMPLEMENTED, f"unsupported data type {k}")


class HalArray(np.ndarray):
    """A numpy array that remembers the IREE element type it stands for.

    Use `HalArray.wrap(array, "si32")`. Plain numpy operations keep the attribute.
    """

    element_type: str

    @classmethod
    def wrap(cls, array: np.ndarray, element_type: str | ElementType) -> "HalArray":
        out = np.asarray(array).view(cls)
        out.element_type = (
            element_type.name if isinstance(element_type, ElementType) else element_type
        )
        return out

    def __array_finalize__(self, obj) -> None:  # noqa: D105
        self.element_type = getattr(obj, "element_type", None)


@dataclasses.dataclass
class ParsedInput:
    value: object  # HalArray | None | int | float
    vm_type: str  # "ref", "i32", "i64", "f32", "f64"
    element_type: ElementType | None = None


_wrap = wrap_int


def bf16_bits_to_float(bits: np.ndarray) -> np.ndarray:
    """bf16 bit patterns (uint16) -> float32 values."""
    return narrow_floats.to_float32(np.asarray(bits, dtype="<u2"), "bf16")


# ------------------------------------------------------------------------ scalar inputs


def parse_scalar(text: str, vm_type: str) -> int | float:
    """Parses a scalar argument of VM type i32/i64/f32/f64 (text already trimmed)."""
    if vm_type == "i32":
        v = strtoll(text, MAX_LEN_32)
        if v is not None:
            return _wrap(v, 32, True)
    elif vm_type == "i64":
        v = strtoll(text)
        if v is not None:
            return v
    elif vm_type in ("f32", "f64"):
        f = strtof(text, 32 if vm_type == "f32" else 64)
        if f is not None:
            return f
    else:
        raise ValueError(f"not a scalar VM type: {vm_type!r}")
    raise SpecError(StatusCode.INVALID_ARGUMENT, f"parsing value `{text}` as {vm_type}")


# ------------------------------------------------------------------------- tensor inputs


def _parse_int_element(tok: str, et: ElementType) -> int | None:
    bits, kind = et.bits, et.kind
    if bits == 64:
        return strtoull(tok) if kind == "ui" else strtoll(tok)
    v = strtoll(tok, MAX_LEN_32)
    if v is None:
        return None
    if kind == "ui":
        v = _wrap(v, 32, False)
        return v if v <= (1 << bits) - 1 else None
    v = _wrap(v, 32, True)
    if bits == 32:
        return v
    if kind == "si":
        return _wrap(v, bits, True) if v <= (1 << (bits - 1)) - 1 else None
    # Signless: accepts the union of the signed and unsigned ranges.
    return _wrap(v, bits, True) if -(1 << (bits - 1)) <= v <= (1 << bits) - 1 else None


def _hex_value(tok: str, nbytes: int) -> bytes:
    if len(tok) != 2 * nbytes:
        raise SpecError(
            StatusCode.INVALID_ARGUMENT,
            f"binary hex element count mismatch: buffer length={len(tok)} < expected={2 * nbytes}",
        )
    nib = [int(c, 16) if c in "0123456789abcdefABCDEF" else 0 for c in tok]
    return bytes((nib[i] << 4) | nib[i + 1] for i in range(0, len(nib), 2))


def _parse_element(tok: str, et: ElementType):
    """One element -> a value storable in `et.storage_dtype` (or raw bytes)."""
    if not et.has_value_parser:
        return _hex_value(tok, et.byte_size)
    if et.kind in ("i", "si", "ui"):
        v = _parse_int_element(tok, et)
    else:
        v = strtof(tok, 64 if et.bits == 64 else 32)
        if v is not None and (et.kind in ("bf", "f8") or et.name == "f16"):
            v = narrow_floats.from_float32(v, et.name)  # bits, narrowed as IREE narrows
    if v is None:
        raise SpecError(StatusCode.INVALID_ARGUMENT)
    return v


_TOKEN_SPLIT = re.compile(r"[\s,\[\]]+")


# ---------------------------------------------------------- text elements, vectorised
#
# Element text is converted in bulk: the spellings below go through Python's own int()
# and float() (exact: correctly rounded) into numpy arrays, with iree-run-module's range
# and rounding rules applied to whole arrays. Every other token (hex, octal, inf/nan,
# prefixes followed by junk, too long, values near a rounding hazard) goes through
# `_parse_element`, the element-by-element reference, on its own.

_FAST_INT = re.compile(r"[+-]?(?:0|[1-9][0-9]{0,17})")  # decimal; fits int64
_FAST_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_ZERO_FLOAT = re.compile(r"[+-]?(?:0+\.?0*|\.0+)(?:[eE][+-]?[0-9]+)?")
_NOT_HEX = re.compile(r"[^0-9a-fA-F]")
_F32_MIN_NORMAL = 2.0**-126
_F32_MAX = float(np.finfo(np.float32).max)
_F64_MIN_NORMAL = 2.0**-1022


def _fast_mask(tokens: list[str], pattern: re.Pattern, max_len: int) -> np.ndarray:
    """Per token: does it take the vectorised path (matches `pattern`, short enough)?"""
    n = len(tokens)
    if max(map(len, tokens)) <= max_len and all(map(pattern.fullmatch, tokens)):
        return np.ones(n, dtype=bool)
    return np.fromiter(
        (len(t) <= max_len and pattern.fullmatch(t) is not None for t in tokens), bool, n
    )


def _int_elements(tokens: list[str], et: ElementType) -> tuple[np.ndarray, np.ndarray]:
    """(values in et's storage dtype, mask of tokens left to `_parse_element`), with
    `_parse_int_element`'s rules: parsed as int64, narrower types through an i32 first."""
    bits, kind, dtype = et.bits, et.kind, et.storage_dtype
    fast = _fast_mask(tokens, _FAST_INT, MAX_LEN_32 if bits < 64 else MAX_LEN_64)
    v = np.zeros(len(tokens), dtype=np.int64)
    v[fast] = np.fromiter(map(int, compress(tokens, fast)), np.int64, int(fast.sum()))
    if bits == 64:
        return v.astype(dtype), ~fast
    if kind == "ui":
        v = v.astype(np.uint32).astype(np.int64)
        ok = v <= (1 << bits) - 1
    else:
        v = v.astype(np.int32).astype(np.int64)
        if bits == 32 or kind == "si":
            ok = v <= (1 << (bits - 1)) - 1
        else:  # signless: the union of the signed and unsigned ranges
            ok = (v >= -(1 << (bits - 1))) & (v <= (1 << bits) - 1)
    if not ok[fast].all():
        raise SpecError(StatusCode.INVALID_ARGUMENT)
    return v.astype(dtype), ~fast


def _float_elements(tokens: list[str], et: ElementType) -> tuple[np.ndarray, np.ndarray]:
    """(float64 values, mask of tokens left to `_parse_element`): f64 elements are
    strtod's values; all others strtof's, i.e. the float64 rounded to float32, which is
    exact unless the float64 lies on a float32 rounding midpoint, below the normal range
    or past the largest float32 (left to `_parse_element`, as are underflows to zero)."""
    fast = _fast_mask(tokens, _FAST_FLOAT, MAX_LEN_64)
    r = np.zeros(len(tokens), dtype=np.float64)
    r[fast] = np.fromiter(map(float, compress(tokens, fast)), np.float64, int(fast.sum()))
    a = np.abs(r)
    if et.bits == 64:
        hazard = (a < _F64_MIN_NORMAL) | np.isinf(a)
    else:
        midpoint = (r.view(np.uint64) & ((1 << 29) - 1)) == (1 << 28)
        hazard = (a < _F32_MIN_NORMAL) | (a > _F32_MAX) | midpoint
        with np.errstate(over="ignore"):  # (past the largest float32: left out above)
            r = r.astype(np.float32).astype(np.float64)
    # Zeros are exact unless the text is not zero (an underflow: an error to report).
    zero_ok = np.zeros(len(tokens), dtype=bool)
    for i in np.flatnonzero(fast & (r == 0)):
        zero_ok[i] = _ZERO_FLOAT.fullmatch(tokens[i]) is not None
    slow = ~fast | (hazard & ~zero_ok)
    return r, slow


def _narrowed(f32: np.ndarray, name: str) -> np.ndarray:
    """narrow_floats.from_float32 over an array of float32 values: bf16 and f16 in their
    normal range by nearest-even rounding on whole arrays (the rule IREE follows there),
    every other value by the scalar rule, each distinct value once."""
    f32 = f32.astype(np.float32)
    storage = np.dtype("u1") if name in _NAMED_TYPES else np.dtype("<u2")
    out = np.zeros(f32.shape, dtype=storage)
    scalar = np.ones(f32.shape, dtype=bool)
    a = np.abs(f32)
    if name == "bf16":
        u = f32.view(np.uint32)
        scalar = ~np.isfinite(f32) | (a < _F32_MIN_NORMAL)
        with np.errstate(over="ignore"):
            out[~scalar] = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16)[~scalar]
    elif name == "f16":
        scalar = ~((a >= 2.0**-14) & (a < 65536.0))
        with np.errstate(over="ignore"):  # (65520 and up: inf, as IREE rounds)
            out[~scalar] = f32[~scalar].astype(np.float16).view(np.uint16)
    if scalar.any():
        uniq, inverse = np.unique(f32[scalar].view(np.uint32), return_inverse=True)
        table = [narrow_floats.from_float32(float(x), name) for x in uniq.view(np.float32)]
        out[scalar] = np.array(table, dtype=storage)[inverse.reshape(-1)]
    return out


def _hex_elements(tokens: list[str], et: ElementType) -> np.ndarray:
    """Opaque elements: `_hex_value` over every token, as one bytes.fromhex."""
    width = 2 * et.byte_size
    if any(len(t) != width for t in tokens):
        _hex_value(next(t for t in tokens if len(t) != width), et.byte_size)  # raises
    raw = bytes.fromhex(_NOT_HEX.sub("0", "".join(tokens)))
    return np.frombuffer(raw, dtype=et.storage_dtype).copy()


def _fill_bytes(arr: np.ndarray, one: np.ndarray) -> None:
    """Every element of `arr` set to the bytes of `one[0]` (as raw bytes: an i1 byte
    other than 0/1 stays what the text gave)."""
    raw = np.dtype((np.void, arr.dtype.itemsize))
    arr.reshape(-1).view(raw)[...] = one[:1].view(raw)[0]


def element_values(tokens: list[str], et: ElementType) -> np.ndarray:
    """The elements the text tokens stand for, as one flat array in et's storage dtype
    (the same values `_parse_element` gives one by one, which handles what the
    vectorised paths leave)."""
    if not tokens:
        return np.zeros(0, dtype=et.storage_dtype)
    if not et.has_value_parser:
        return _hex_elements(tokens, et)
    if et.kind in ("i", "si", "ui"):
        values, slow = _int_elements(tokens, et)
    else:
        values, slow = _float_elements(tokens, et)
        if et.kind in ("bf", "f8") or et.name == "f16":  # stored as narrowed bits
            values = _narrowed(np.where(slow, 0.0, values), et.name)
        else:
            values = values.astype(et.storage_dtype)
    for i in np.flatnonzero(slow):
        v = _parse_element(tokens[i], et)
        values[i] = v
    return values if et.name != "f16" else values.view(np.float16)


class InputFiles:
    """The files one list of SPECs reads, by verbatim path, as iree-run-module keeps them
    per list (its inputs, then its expected outputs): `@PATH` reads PATH from its start,
    `+PATH` (and `*PATH`) go on where the last read of PATH stopped (from the start the
    first time), so several inputs can come from one file in turn. Use as a context
    manager (the files close at its end)."""

    def __init__(self) -> None:
        self._files: dict = {}

    def open(self, path: str, append: bool):
        f = self._files.get(path)
        if f is None:
            try:
                f = open(path, "rb")
            except (OSError, ValueError):  # ValueError: a NUL or lone surrogate in it
                raise SpecError(
                    StatusCode.UNKNOWN, f"unable to open file `{path}` with mode 2"
                ) from None
            self._files[path] = f
        elif not append:
            f.seek(0)
        return f

    def close(self) -> None:
        for f in self._files.values():
            f.close()
        self._files.clear()

    def __enter__(self) -> "InputFiles":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _read_exactly(f, nbytes: int, context: str = "") -> bytes:
    here = f.tell()
    end = f.seek(0, os.SEEK_END)
    f.seek(here)
    data = f.read(nbytes) if nbytes <= end - here else b""  # (no huge buffer for a lie)
    if len(data) < nbytes:
        raise SpecError(
            StatusCode.OUT_OF_RANGE,
            "end-of-file encountered during read" + (f"; {context}" if context else ""),
        )
    return data


def _at_end(f) -> bool:
    here = f.tell()
    end = f.seek(0, os.SEEK_END)
    f.seek(here)
    return here >= end


# Element and byte counts are iree_device_size_t (64-bit unsigned) in iree-run-module.
_DEVICE_SIZE_LIMIT = 1 << 64
_ECHO_MAX = 40  # characters of a user's number echoed into a message


def _clip(text: str) -> str:
    """`text` for a message: a huge number or shape is cut short, not echoed in full."""
    return text if len(text) <= _ECHO_MAX else text[:_ECHO_MAX] + "..."


def _parse_shape(text: str) -> tuple[int, ...]:
    """`4x2` -> (4, 2). Each dim is read as iree-run-module reads it: C strtoll base 0
    over the longest prefix (`0X10` is 16, `010` is 8, `2abc` is 2), at most 31
    characters, within int64 and not negative."""
    if text == "":
        return ()
    parts = text.split("x")
    if any(p == "" for p in parts):
        raise SpecError(
            StatusCode.INVALID_ARGUMENT, f"invalid shape specification: '{_clip(text)}'"
        )
    dims = []
    for i, p in enumerate(parts):
        d = strtoll(p)
        if d is None or d < 0:
            raise SpecError(
                StatusCode.INVALID_ARGUMENT,
                f"shape[{i}] invalid value '{_clip(p)}' of '{_clip(text)}'",
            )
        dims.append(d)
    return tuple(dims)


def _check_byte_count(shape: tuple[int, ...], byte_size: int) -> int:
    """The bytes a view of `shape` holds; OUT_OF_RANGE, as iree-run-module says, where
    its element count or byte count does not fit a device size (an empty shape never
    overflows)."""
    if 0 in shape:
        return 0
    count = 1
    for i, d in enumerate(shape):
        count *= d
        if count >= _DEVICE_SIZE_LIMIT:
            raise SpecError(
                StatusCode.OUT_OF_RANGE,
                f"shape element count overflows device size at dimension {i}",
            )
    if count * byte_size >= _DEVICE_SIZE_LIMIT:
        raise SpecError(StatusCode.OUT_OF_RANGE, "packed byte count overflows device size")
    return count * byte_size


def _allocated(make, shape: tuple[int, ...], nbytes: int):
    """`make()`, an array of `shape`; RESOURCE_EXHAUSTED where memory runs out (IREE's
    allocator fails the same request) or numpy cannot hold the shape at all (dims past
    its index range, even around a zero)."""
    try:
        return make()
    except (MemoryError, ValueError, OverflowError):
        shape_text = _clip("x".join(map(str, shape)))
        raise SpecError(
            StatusCode.RESOURCE_EXHAUSTED,
            f"cannot allocate {nbytes} bytes for a view of shape {shape_text}",
        ) from None


def parse_buffer_view(text: str, files: InputFiles | None = None) -> HalArray:
    """`[SHAPEx]TYPE[=DATA]` -> HalArray (the text is the ref SPEC, trimmed); `files`:
    where `=@PATH`/`=+PATH` data is read from (a private InputFiles when None). Inline
    data may come quoted (`"2xf32=1 2"`): one `"` at each end is dropped, as IREE does."""
    head, eq, data = text.partition("=")
    if not data.strip()[:1] in ("@", "+"):
        text = text.strip()
        text = text[1:] if text.startswith('"') else text
        text = text[:-1] if text.endswith('"') else text
        head, eq, data = text.partition("=")
    if "x" in head:
        shape_text, _, type_text = head.rpartition("x")
    else:
        shape_text, type_text = "", head
    shape = _parse_shape(shape_text)
    et = parse_element_type(type_text)
    nbytes = _check_byte_count(shape, et.byte_size)
    count = math.prod(shape)
    dtype = et.storage_dtype
    data = data.strip()
    if not data:
        arr = _allocated(lambda: np.zeros(shape, dtype=dtype), shape, nbytes)
    elif data[0] in "@+":
        with InputFiles() as own:
            f = (files or own).open(data[1:], append=data[0] == "+")
            raw = _read_exactly(f, nbytes)
        arr = _allocated(
            lambda: np.frombuffer(raw, dtype=dtype).reshape(shape).copy(), shape, nbytes
        )
    else:
        tokens = [t for t in _TOKEN_SPLIT.split(data) if t]
        if len(tokens) == 1 and count != 0:  # a splat (allocated first, as in IREE)
            arr = _allocated(lambda: np.empty(shape, dtype=dtype), shape, nbytes)
            _fill_bytes(arr, element_values(tokens, et))
        elif len(tokens) > count:
            raise SpecError(
                StatusCode.OUT_OF_RANGE,
                f"output data overflow: element_capacity={count} < dst_i={count}",
            )
        else:
            values = element_values(tokens, et)
            if len(values) < count:
                raise SpecError(
                    StatusCode.OUT_OF_RANGE,
                    f"input data string underflow: dst_i={len(values)} < element_capacity={count}",
                )
            arr = values.reshape(shape)
    return HalArray.wrap(arr, et)


def load_npy(path: str) -> HalArray:
    """The first array of a numpy .npy file, as iree-run-module reads it."""
    with InputFiles() as files:
        return read_npy(files.open(path, append=False))


_NPY_MAGIC = b"\x93NUMPY"


def read_npy(f) -> HalArray:
    """The next array of an open .npy stream (several may follow one another), with
    iree-run-module's statuses for what it cannot read."""
    if _at_end(f):
        raise SpecError(StatusCode.OUT_OF_RANGE, "end-of-file")
    prefix = _read_exactly(f, 8, "unable to read entire header prefix")
    if prefix[:6] != _NPY_MAGIC:
        raise SpecError(StatusCode.INVALID_ARGUMENT, "npy header magic mismatch")
    major, minor = prefix[6], prefix[7]
    if major == 0 or major > 3:
        raise SpecError(StatusCode.UNIMPLEMENTED, f"npy version {major}.{minor} not supported")
    width = 2 if major == 1 else 4
    length = int.from_bytes(
        _read_exactly(
            f, width, f"failed to read version {major}.{minor} {width}-byte header length"
        ),
        "little",
    )
    header = _read_exactly(f, length, f"failed to read header string of {length} bytes")
    try:  # a Python dict literal: {'descr': '<f4', 'fortran_order': False, 'shape': (2,)}
        fields = ast.literal_eval(header.decode("latin-1").strip())
        dtype = np.lib.format.descr_to_dtype(fields["descr"])
        fortran = bool(fields["fortran_order"])
        shape = tuple(int(d) for d in fields["shape"])
    except (ValueError, SyntaxError, KeyError, TypeError, MemoryError, RecursionError):
        raise SpecError(StatusCode.INVALID_ARGUMENT, "malformed header dict") from None
    for i, d in enumerate(shape):
        if not 0 <= d < _DEVICE_SIZE_LIMIT:
            raise SpecError(
                StatusCode.INVALID_ARGUMENT, f"invalid dimension {i} value {_clip(str(d))}"
            )
    if dtype.byteorder == ">":
        raise SpecError(
            StatusCode.UNIMPLEMENTED, f"big-endian data type '{dtype.str}' unsupported"
        )
    if fortran:
        raise SpecError(StatusCode.UNIMPLEMENTED, "fortran order arrays not supported")
    if dtype.hasobject:
        raise SpecError(StatusCode.UNIMPLEMENTED, f"unsupported data type {dtype.kind}")
    et = element_type_for_dtype(dtype)
    nbytes = _check_byte_count(shape, dtype.itemsize)
    raw = _read_exactly(f, nbytes, f"failed to read npy contents of {nbytes} bytes")
    storage = et.storage_dtype if et.storage_dtype.itemsize == dtype.itemsize else dtype
    arr = _allocated(
        lambda: np.frombuffer(raw, dtype=storage).reshape(shape).copy(), shape, nbytes
    )
    return HalArray.wrap(arr, et)


_CCONV_TO_VM = {"i": "i32", "I": "i64", "f": "f32", "F": "f64", "r": "ref"}


_VM_TO_CCONV = {v: k for k, v in _CCONV_TO_VM.items()}


@dataclasses.dataclass(frozen=True)
class StorageInput:
    """`--input=&SPEC`: the buffer (`!hal.buffer`, no shape or type) holding the view
    SPEC describes."""

    array: "HalArray"


def parse_input(spec: str, arg_type: str = "r") -> ParsedInput:
    """Parses one `--input` SPEC for an argument of calling-convention type `arg_type`
    ("i", "I", "f", "F", "r", or the names "i32", "i64", "f32", "f64", "ref")."""
    vm_type = _CCONV_TO_VM.get(arg_type, arg_type)
    if vm_type not in _VM_TO_CCONV:
        raise ValueError(f"unknown argument type {arg_type!r}")
    with InputFiles() as files:
        (value,) = _parse_spec(spec.strip(), [vm_type], None, files)
    if vm_type != "ref":
        return ParsedInput(value, vm_type)
    et = None if value is None else parse_element_type(value.element_type)
    return ParsedInput(value, "ref", et)


def parse_inputs(specs, types, guess=None) -> list:
    """Parses a list of SPECs as iree-run-module parses its `--input` list (or its
    `--expected_output` list) for VM types `types` ("i32", "i64", "f32", "f64", "ref"),
    one type consumed per value: `*FILE.npy` gives one value per array left in FILE,
    files are shared along the list (InputFiles: `+FILE` goes on reading). With `types`
    None, each SPEC's type is `guess(spec)`. A failure is a SpecError whose `spec` is
    the trimmed SPEC it came from."""
    remaining = None if types is None else list(types)
    values: list = []
    with InputFiles() as files:
        for spec in specs:
            text = spec.strip()
            try:
                values += _parse_spec(text, remaining, guess, files)
            except SpecError as e:
                e.spec = text
                raise
    return values


def _parse_spec(text: str, remaining: list | None, guess, files: InputFiles) -> list:
    """The values of one trimmed SPEC, consuming their types from `remaining` (None:
    `guess(text)` is the type), in iree-run-module's order of checks."""

    def consume_any() -> str:
        if remaining is None:
            return guess(text)
        if not remaining:
            raise SpecError(StatusCode.INVALID_ARGUMENT, "function expected fewer input values")
        return remaining.pop(0)

    def consume_ref() -> None:
        vm_type = consume_any()
        if vm_type != "ref":
            raise SpecError(
                StatusCode.INVALID_ARGUMENT,
                f"function signature mismatch: expected cconv type `r` but provided type "
                f"`{_VM_TO_CCONV[vm_type]}`",
            )

    if not text:
        raise SpecError(StatusCode.INVALID_ARGUMENT, "no value specified for input")
    if text in ("(null)", "(ignored)"):  # a null ref, or zero for a scalar argument
        vm_type = consume_any()
        return [None if vm_type == "ref" else 0.0 if vm_type[0] == "f" else 0]
    if text[0] in "@+*":  # `@` from the start, `+` on from the last read, `*` all left
        path = text[1:]
        if not path.endswith(".npy"):
            raise SpecError(
                StatusCode.UNIMPLEMENTED,
                "only numpy (.npy) files are supported for metadata-less variant I/O",
            )
        f = files.open(path, append=text[0] != "@")
        if text[0] != "*":
            consume_ref()
            return [read_npy(f)]
        values = []
        while not _at_end(f):
            consume_ref()
            values.append(read_npy(f))
        return values
    if text[0] == "&":  # the storage of a view: a !hal.buffer argument
        consume_ref()
        return [StorageInput(parse_buffer_view(text[1:], files))]
    if remaining is None:
        is_ref = guess(text) == "ref"
    else:
        is_ref = bool(remaining) and remaining[0] == "ref"
    if not is_ref:
        return [parse_scalar(text, consume_any())]
    consume_ref()
    if "=" not in text and "x" not in text:
        raise SpecError(
            StatusCode.INVALID_ARGUMENT,
            "invalid tensor specification, requires at least a shape/type (`4x2xf32=...`)",
        )
    return [parse_buffer_view(text, files)]

"""Export ABI: `iree.abi.declaration` strings and numpy <-> VM value marshalling.

A declaration looks like
    sync func @mul(%input0: tensor<4xf32>, %input1: i32) -> (%output0: tensor<?xf32>)
Arguments are checked (count, rank, static dims, dtype) before anything runs, so a wrong
call raises `TypeError`/`ValueError` naming the argument and no kernel is launched.
"""

from __future__ import annotations

import ctypes
import re
from dataclasses import dataclass

import numpy as np

from runtime_support.hal import element_types
from runtime_support.hal.buffer import (
    USAGE_DEFAULT,
    Allocation,
    buffer_copy_of,
    buffer_copy_recycled,
)
from runtime_support.hal.buffer_view import HalBufferView

_NARROW_BITS = {"i8": 8, "i16": 16}
_SCALARS = {"i1", "i8", "i16", "i32", "i64", "index", "f16", "bf16", "f32", "f64"}

# MLIR element type name -> HAL element type code (hal-abi.md §B.1).
_ELEMENT_TYPES = {
    "i1": 0x13000008,
    "i8": 0x10000008,
    "si8": 0x11000008,
    "ui8": 0x12000008,
    "i16": 0x10000010,
    "si16": 0x11000010,
    "ui16": 0x12000010,
    "i32": 0x10000020,
    "si32": 0x11000020,
    "ui32": 0x12000020,
    "i64": 0x10000040,
    "si64": 0x11000040,
    "ui64": 0x12000040,
    "index": 0x10000040,
    "f16": 0x21000010,
    "f32": 0x21000020,
    "f64": 0x21000040,
    "bf16": 0x22000010,
    "complex<f32>": 0x23000040,
    "complex<f64>": 0x23000080,
    "f8E5M2": element_types.FLOAT_8_E5M2,
    "f8E4M3FN": element_types.FLOAT_8_E4M3FN,
    "f8E5M2FNUZ": element_types.FLOAT_8_E5M2_FNUZ,
    "f8E4M3FNUZ": element_types.FLOAT_8_E4M3_FNUZ,
    "f8E8M0FNU": element_types.FLOAT_8_E8M0_FNU,
}


@dataclass(frozen=True)
class TensorType:
    shape: tuple[int | None, ...]  # None = dynamic
    element: str
    element_type: int | None
    # `iree.abi.affinity`'s device (`device_b` in `#hal.device.promise<@device_b>`): the
    # device the module expects the value on; None where the declaration names none.
    affinity: str | None = None

    def describe(self) -> str:
        dims = "x".join("?" if d is None else str(d) for d in self.shape)
        return f"tensor<{dims}{'x' if dims else ''}{self.element}>"


@dataclass(frozen=True)
class ScalarType:
    name: str


@dataclass(frozen=True)
class OpaqueType:
    text: str


ArgType = TensorType | ScalarType | OpaqueType


@dataclass(frozen=True)
class Declaration:
    is_async: bool
    name: str
    arguments: tuple[tuple[str, ArgType], ...]
    results: tuple[tuple[str, ArgType], ...]


def _split_top(text: str) -> list[str]:
    """Splits on commas not nested in <>, (), []."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    tail = "".join(cur).strip()
    if tail:
        parts.append(tail)
    return parts


# A device named by an argument's or result's attributes (`{iree.abi.affinity =
# #hal.device.promise<@device_b>}`; `#hal.device.affinity<@d, [0]>` names a queue too).
_AFFINITY_RE = re.compile(r"iree\.abi\.affinity\s*=\s*#hal\.device\.(?:promise|affinity)<@([\w$.-]+)")


def _split_attributes(text: str) -> tuple[str, str]:
    """`TYPE {attrs}` -> (TYPE, attrs); a type without a trailing attribute dict -> (TYPE, "")."""
    if not text.endswith("}"):
        return text, ""
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        if text[i] in ")>]}":
            depth += 1
        elif text[i] in "(<[{":
            depth -= 1
            if depth == 0:
                return text[:i].rstrip(), text[i:]
    return text, ""


def parse_type(text: str) -> ArgType:
    text, attributes = _split_attributes(text.strip())
    m = re.fullmatch(r"tensor<(.*)>", text)
    if m:
        body = m.group(1)
        # Split the leading `AxBx` dims off the element type (which may itself hold x).
        dims: list[int | None] = []
        rest = body
        while True:
            dm = re.match(r"(\?|\d+)x", rest)
            if not dm:
                break
            dims.append(None if dm.group(1) == "?" else int(dm.group(1)))
            rest = rest[dm.end() :]
        element = rest.split(",")[0].strip()  # drop encodings
        affinity = _AFFINITY_RE.search(attributes)
        return TensorType(
            tuple(dims), element, _ELEMENT_TYPES.get(element), affinity and affinity.group(1)
        )
    if text in _SCALARS:
        return ScalarType(text)
    return OpaqueType(text)


def _parse_list(text: str) -> tuple[tuple[str, ArgType], ...]:
    out = []
    for i, part in enumerate(_split_top(text)):
        if ":" in part and part.startswith("%"):
            name, _, ty = part.partition(":")
            out.append((name.strip().lstrip("%"), parse_type(ty)))
        else:
            out.append((f"arg{i}", parse_type(part)))
    return tuple(out)


def _closing_paren(text: str, start: int) -> int:
    depth = 0
    for i in range(start, len(text)):
        if text[i] in "(<[{":
            depth += 1
        elif text[i] in ")>]}":
            depth -= 1
            if depth == 0:
                return i
    raise ValueError("unbalanced parentheses")


def _symbol_end(text: str, start: int, name: str | None) -> int:
    """End of the symbol name at `start` (just after `@`): quoted, the known export name, or
    a plain run up to `(`. Export names are untrusted and may hold any character."""
    if text.startswith('"', start):
        i = start + 1
        while i < len(text) and text[i] != '"':
            i += 2 if text[i] == "\\" else 1
        return i + 1
    if name is not None and text.startswith(name + "(", start):
        return start + len(name)
    m = re.compile(r"[^(\s]+").match(text, start)
    if m is None:
        raise ValueError("no function name")
    return m.end()


def parse_declaration(text: str | None, name: str | None = None) -> Declaration | None:
    """The parsed declaration, or None when there is none or it cannot be read.

    `name`, the export's VM name, lets a name with parentheses or spaces be skipped whole.
    """
    if not text:
        return None
    m = re.match(r"\s*(sync|async)\s+func\s+@", text)
    if not m:
        return None
    try:
        end = _symbol_end(text, m.end(), name)
        if not text.startswith("(", end):
            return None
        close = _closing_paren(text, end)
        args_text = text[end + 1 : close]
        rest = text[close + 1 :].strip()
        results_text = ""
        if rest.startswith("->"):
            rest = rest[2:].strip()
            if rest.startswith("("):
                results_text = rest[1 : _closing_paren(rest, 0)]
            else:
                results_text = rest
        return Declaration(
            m.group(1) == "async",
            text[m.end() : end],
            _parse_list(args_text),
            _parse_list(results_text),
        )
    except (ValueError, IndexError):
        return None


# -- marshalling ---------------------------------------------------------------------


def _dtype_matches(array: np.ndarray, element: str) -> bool:
    want = element_types.to_numpy_dtype(_ELEMENT_TYPES[element]) if element in _ELEMENT_TYPES else None
    if want is None:
        return True
    if element == "i1":
        return array.dtype == np.bool_ or array.dtype in (np.int8, np.uint8)
    if np.dtype(want).kind in "iu" and array.dtype.kind in "iu":
        return array.dtype.itemsize == np.dtype(want).itemsize
    return array.dtype == want


def to_buffer_view(value, name: str, ty: ArgType | None, device) -> HalBufferView:
    """A numpy array (or buffer view) -> a new buffer view on `device`."""
    if isinstance(value, HalBufferView):
        return value
    tagged = _tagged_element_type(value, name)
    array = np.asarray(value)
    if array.dtype == object:
        raise TypeError(f"argument {name!r}: cannot convert {type(value).__name__} to a tensor")
    if not array.dtype.isnative:  # the device is little-endian: pass values, not bytes
        array = array.astype(array.dtype.newbyteorder("="))
    element_type = tagged
    if isinstance(ty, TensorType):
        if array.ndim != len(ty.shape):
            raise ValueError(
                f"argument {name!r}: expected {ty.describe()} (rank {len(ty.shape)}), "
                f"got an array of shape {array.shape}"
            )
        for i, (want, got) in enumerate(zip(ty.shape, array.shape)):
            if want is not None and want != got:
                raise ValueError(
                    f"argument {name!r}: expected {ty.describe()}, dimension {i} is {got}"
                )
        if tagged is not None:  # bits of a named IREE type (bf16 read by pyree-run...)
            if ty.element_type is not None and not element_types.is_compatible(
                tagged, ty.element_type
            ):
                raise TypeError(
                    f"argument {name!r}: expected element type {ty.element}, got "
                    f"{element_types.element_type_name(tagged)}"
                )
        elif not _dtype_matches(array, ty.element):
            raise TypeError(
                f"argument {name!r}: expected element type {ty.element}, got dtype {array.dtype}"
            )
        else:
            element_type = ty.element_type
        if ty.element == "i1" and array.dtype != np.bool_:
            array = array.astype(np.bool_)
    allocator = device.allocator if device is not None else None
    return HalBufferView.from_numpy(array, allocator, element_type=element_type)


def _tagged_element_type(value, name: str) -> int | None:
    """The element type an array says it holds (`io_specs.HalArray.element_type`, e.g.
    bf16 bits in a uint16 array), or None for a plain array."""
    tag = getattr(value, "element_type", None)
    if not isinstance(tag, str):
        return None
    et = element_types.element_type_from_name(tag)
    if et is None:  # e.g. `cf64`: the dtype itself says enough
        return None
    if element_types.byte_count(et) != np.asarray(value).dtype.itemsize:
        raise TypeError(f"argument {name!r}: cannot pass an array of element type {tag}")
    return et


def to_scalar(value, name: str, code: str):
    """A Python/numpy scalar -> the VM value for cconv code i/I/f/F."""
    if isinstance(value, np.ndarray):
        if value.ndim != 0:
            raise ValueError(f"argument {name!r}: expected a scalar, got shape {value.shape}")
        value = value.item()
    if isinstance(value, np.generic):
        value = value.item()
    if code in ("i", "I"):
        if isinstance(value, bool):
            value = int(value)
        if not isinstance(value, int):
            raise TypeError(f"argument {name!r}: expected an integer, got {type(value).__name__}")
        bits = 32 if code == "i" else 64
        value &= (1 << bits) - 1
        return value - (1 << bits) if value >> (bits - 1) else value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"argument {name!r}: expected a number, got {type(value).__name__}")
    value = float(value)
    if code == "f":
        return float(np.float32(value))
    return value


def from_vm(value, ty: ArgType | None):
    """A VM result -> numpy array / Python scalar / list."""
    if isinstance(value, HalBufferView):
        array = value.to_numpy()
        name = element_types.element_type_name(value.element_type)
        if not element_types.has_exact_dtype(value.element_type) and not name.startswith("0x"):
            # bf16/f8 bits without ml_dtypes, si/ui/opaque types: say what they hold.
            from runtime_support.tools.io_specs import HalArray

            return HalArray.wrap(array, name)
        return array
    from runtime_support.vm.list import VMList

    if isinstance(value, VMList):
        return [from_vm(v, None) for v in value.to_list()]
    if isinstance(ty, ScalarType) and isinstance(value, int):
        if ty.name == "i1":
            return bool(value & 1)
        bits = _NARROW_BITS.get(ty.name)
        if bits:  # i8/i16 travel in i32 registers; the upper bits are not part of the value
            value &= (1 << bits) - 1
            return value - (1 << bits) if value >> (bits - 1) else value
    return value


# -- the per-call fast paths ---------------------------------------------------------
#
# Everything an export's declaration fixes (shape, accepted dtypes, element type) is
# worked out once per export at load time; a call then only compares. Anything off the
# fast path (other dtypes, non-contiguous arrays, lists, dynamic dims) takes the general,
# fully checked path above, so errors and results are the same either way.


def _exact_dtypes(element: str) -> frozenset:
    """The numpy dtypes whose bytes pass unchanged for `element` (what _dtype_matches
    accepts, minus the conversions: i1 from integer arrays goes the general way)."""
    code = _ELEMENT_TYPES.get(element)
    want = element_types.to_numpy_dtype(code) if code is not None else None
    if want is None:
        return frozenset()
    want = np.dtype(want)
    if element == "i1":
        return frozenset({np.dtype(np.bool_)})
    if want.kind in "iu":  # signless: either signedness, native byte order
        return frozenset({np.dtype(f"i{want.itemsize}"), np.dtype(f"u{want.itemsize}")})
    return frozenset({want})


_ELEMENT_NAMES = {code: name for name, code in reversed(_ELEMENT_TYPES.items())}


def observed_argument(value) -> TensorType | None:
    """The static tensor type a call's undeclared argument had, as a hint to specialize
    the export by (tensor_argument, its general path the undeclared converter): a
    C-ordered native numpy array, of rank 1 or more, whose dtype the undeclared converter
    gives the element type every dtype of that type's fast path gets too. Else None."""
    if type(value) is not np.ndarray or not value.ndim or not value.flags.c_contiguous:
        return None
    dtype = value.dtype
    try:
        element_type = element_types.from_numpy_dtype(dtype) if dtype.isnative else None
    except ValueError:
        return None
    element = _ELEMENT_NAMES.get(element_type)
    if element is None or any(
        element_types.from_numpy_dtype(d) != element_type for d in _exact_dtypes(element)
    ):
        return None
    return TensorType(tuple(value.shape), element, element_type)


def observed_result(value) -> TensorType | None:
    """The static tensor type of a result buffer view, as a hint (tensor_result: a view
    that differs goes to view_to_numpy); None for anything else."""
    if type(value) is not HalBufferView or value.encoding_type != _DENSE:
        return None
    element_type = value.element_type & 0xFFFFFFFF
    element = _ELEMENT_NAMES.get(element_type)
    if element is None or not _whole_byte_dtype(element_type):
        return None
    return TensorType(tuple(value.shape), element, element_type)


def tensor_argument(name: str, ty: TensorType | None, device, general=None):
    """A converter for one tensor argument: numpy array -> a new buffer view on `device`.

    Arrays that match the declaration exactly (dtype, static shape, C order) take the fast
    path: one aligned copy, no checks left to make. Everything else goes to `general`
    (by default `to_buffer_view`, which checks and converts or raises)."""
    allocator = device.allocator if device is not None else None
    if general is None:

        def general(value):
            return to_buffer_view(value, name, ty, device)

    if not getattr(allocator, "host_memory", True):
        return general  # device memory (cuda): allocator.allocate_copy uploads each array
    if ty is None and allocator is not None:
        return _undeclared_argument(allocator, general)
    if not isinstance(ty, TensorType) or ty.element_type is None:
        return general
    dtypes = _exact_dtypes(ty.element)
    if not dtypes or allocator is None:
        return general
    if None in ty.shape:
        return _dynamic_argument(ty, dtypes, allocator, general)
    shape = tuple(ty.shape)
    element_type = ty.element_type & 0xFFFFFFFF
    ndarray, trusted, copy = np.ndarray, HalBufferView.trusted, buffer_copy_of
    first = min(dtypes, key=str)  # what arrays mostly carry: an identity test first

    count = 1
    for d in shape:
        count *= d
    nbytes = count * element_types.byte_count(ty.element_type)
    # Copies an earlier call gave back (give_back below), exclusively ours: (view, writer),
    # `writer` a byte memoryview over the copy's storage (see _writer).
    spare: list = []
    pop = spare.pop
    small = nbytes <= 4096

    def convert(value):
        if (
            type(value) is ndarray
            and ((dtype := value.dtype) is first or dtype in dtypes)
            and value.shape == shape
            and value.flags.c_contiguous
        ):
            if spare:
                try:
                    view, writer = pop()
                except IndexError:  # (another thread took it)
                    pass
                else:  # a fresh copy as far as anything can tell: nothing else reaches it
                    if small:  # (through bytes: one memcpy more, less call overhead)
                        writer[:] = value.tobytes()
                    else:
                        _refill(writer, value)
                    allocator.bytes_allocated += nbytes
                    return view
            buffer = copy(value, USAGE_DEFAULT, allocator)
            allocator.bytes_allocated += buffer.length
            return trusted(buffer, shape, element_type)
        return general(value)

    # (Views this fast path makes share `shape`, the object: give_back tells them from
    # the general path's by it, which a rank-0 shape, the one empty tuple, cannot.)
    if shape and 0 < nbytes <= _SPARE_MAX and element_types.bit_count(ty.element_type) % 8 == 0:
        home: list = [None]  # the last entry given back: its writer is made once

        def give_back(view):
            """After a call that the translator proved keeps no reference to this
            argument (Export.unkept_arguments): its copy, when this fast path made it,
            is the next call's to refill (one spare at most)."""
            if view.shape is shape and not spare:
                entry = home[0]
                if entry is None or entry[0] is not view:
                    entry = home[0] = (view, _writer(view))
                spare.append(entry)

        convert.spare = spare
        convert.shape = shape
        convert.give_back = give_back
    return convert


# Argument copies up to this size are reused by the next call when nothing kept them
# (their allocation costs as much as the copy); larger ones are not held between calls.
_SPARE_MAX = 1 << 16


def _refill(target: memoryview, value: np.ndarray) -> None:
    """Copies a C-contiguous array's bytes into the byte memoryview `target` (as many)."""
    try:  # memoryview slice assignment: one memcpy, no numpy dispatch
        target[:] = memoryview(value).cast("B")
    except (TypeError, ValueError, NotImplementedError):  # formats memoryview lacks
        target[:] = value.tobytes()


def _writer(view: HalBufferView) -> memoryview:
    """A writable byte memoryview over an argument copy's storage, kept beside the view in
    its spare entry so a refill is one slice assignment. It reaches the memory through a
    ctypes array at its address (holding no reference to the storage, which the
    recycled-storage pool of hal/buffer.py counts); the view beside it in the entry (or in
    the refilling caller's local) keeps the storage alive while it is used."""
    buffer = view.buffer
    return memoryview((ctypes.c_char * buffer.length).from_address(buffer.address)).cast("B")


def _dynamic_argument(ty: TensorType, dtypes: frozenset, allocator, general):
    """The converter for a declared tensor with dynamic dims: an array of the declared
    rank, static dims and an exact dtype, in C order, goes as a view of its own shape
    (what the general path makes of it, without its checks and conversions).

    Like the static converter's, a copy the last call gave back (`give_back`, for
    arguments the translator proved unkept) is the next call's to refill, where that
    call's array has the same shape (dynamic-shape programs are mostly called with the
    shapes of the call before)."""
    rank = len(ty.shape)
    static = tuple((i, d) for i, d in enumerate(ty.shape) if d is not None)
    element_type = ty.element_type & 0xFFFFFFFF
    whole = element_types.bit_count(ty.element_type) % 8 == 0  # (bytes a writer can refill)
    ndarray, trusted, recycled = np.ndarray, HalBufferView.trusted, buffer_copy_recycled
    first = min(dtypes, key=str)
    spare: list = []  # at most one (view, writer): see the static converter
    pop = spare.pop
    made: list = [None]  # the shape tuple of the last view made here (give_back's test)

    def convert(value):
        if (
            type(value) is ndarray
            and ((dtype := value.dtype) is first or dtype in dtypes)
            and value.ndim == rank
            and value.flags.c_contiguous
        ):
            dims = value.shape
            for i, d in static:
                if dims[i] != d:
                    return general(value)
            if spare:
                try:
                    view, writer = pop()
                except IndexError:  # (another thread took it)
                    pass
                else:
                    if view.shape == dims:  # (else dropped: the next copy may be kept)
                        if len(writer) <= 4096:
                            writer[:] = value.tobytes()
                        else:
                            _refill(writer, value)
                        allocator.bytes_allocated += len(writer)
                        return view
            nbytes = value.nbytes
            if 0 < nbytes <= _SPARE_MAX and whole:
                buffer = buffer_copy_of(value, USAGE_DEFAULT, allocator)  # (may be kept)
                made[0] = dims
            else:
                buffer = recycled(value, USAGE_DEFAULT, allocator)
            allocator.bytes_allocated += buffer.length
            return trusted(buffer, dims, element_type)
        return general(value)

    if whole:
        home: list = [None]  # the last entry given back: its writer is made once

        def give_back(view):
            """After a call that kept no reference to this argument
            (Export.unkept_arguments): its copy, when this converter made it for reuse
            (its shape the very tuple it was made with), is the next call's to refill."""
            if view.shape is made[0] and not spare:
                entry = home[0]
                if entry is None or entry[0] is not view:
                    entry = home[0] = (view, _writer(view))
                spare.append(entry)

        convert.spare = spare
        convert.give_back = give_back
    return convert


def _undeclared_argument(allocator, general):
    """The converter for a ref argument with no declared type (iree-turbine exports carry
    no ABI declaration): a C-ordered, native-endian array goes as a view of its own shape
    and element type, like the general path makes it."""
    ndarray, trusted, copy = np.ndarray, HalBufferView.trusted, buffer_copy_recycled
    element_of: dict = {}  # dtype -> HAL element type, or None (general path)

    def convert(value):
        if type(value) is ndarray and value.flags.c_contiguous:
            dtype = value.dtype
            element_type = element_of.get(dtype, 0)
            if element_type == 0:
                try:
                    element_type = element_types.from_numpy_dtype(dtype) if dtype.isnative else None
                except ValueError:
                    element_type = None
                element_of[dtype] = element_type
            if element_type is not None:
                buffer = copy(value, USAGE_DEFAULT, allocator)
                allocator.bytes_allocated += buffer.length
                return trusted(buffer, value.shape, element_type)
        return general(value)

    return convert


def view_to_numpy(view: HalBufferView, exclusive: bool = False):
    """A result buffer view -> a numpy array the caller owns.

    Zero-copy only when `exclusive`: the translator proved that the call allocated the
    view's buffer and stored it nowhere else (Export.fresh_results, from
    translator/analyses/ownership.py), and the storage is this runtime's own (not
    borrowed host memory, rodata or a parameter file) and not a small part of a larger
    allocation (the array would keep all of it alive). The array then keeps the storage
    alive and is the only way to reach it. Otherwise the contents are copied, as
    iree.runtime's numpy results always are.
    """
    buffer = view.buffer
    allocation = buffer.allocation
    if type(allocation) is not Allocation:  # device memory (cuda): downloaded into a copy
        return from_vm(view, None)
    if view.encoding_type == _DENSE:
        dtype = _RESULT_DTYPES.get(view.element_type)
        if dtype is None:
            dtype = _RESULT_DTYPES[view.element_type] = _whole_byte_dtype(view.element_type)
        if dtype:
            shape = view.shape
            count = 1
            for d in shape:
                count *= d
            nbytes = count * dtype.itemsize
            if buffer.length == nbytes:
                return _result_array(allocation, buffer.offset, nbytes, dtype, shape, exclusive)
    return from_vm(view, None)


def _result_array(allocation, start: int, nbytes: int, dtype, shape: tuple, exclusive: bool):
    """The `nbytes` of `allocation` from `start` as a `dtype` array of `shape`: the
    storage itself where `exclusive` and nothing else can reach it (no owner, writable,
    preserved once, and not a small piece of a big arena, which the array would pin
    whole), else a copy (what from_vm makes, without its layers)."""
    storage = allocation.array
    size = storage.shape[0]
    if start == 0 and size == nbytes:  # the whole allocation
        out = storage.view(dtype)
    else:
        out = storage[start : start + nbytes].view(dtype)
        exclusive = exclusive and size <= 2 * nbytes + 4096
    if len(shape) != 1:
        out = out.reshape(shape)
    if exclusive and allocation.owner is None and not allocation.readonly and (
        allocation.preserve_count == 1
    ):
        return out
    return out.copy()


def tensor_result(ty: ArgType | None, exclusive: bool = False):
    """The converter of one result buffer view to numpy: `view_to_numpy(view,
    exclusive)`, specialized when the declaration fixes the shape and a numpy dtype
    (nothing left to look up or multiply per call). It makes the same array by the same
    rules; a view that is not what was declared goes to `view_to_numpy`."""
    if not isinstance(ty, TensorType) or ty.element_type is None:
        if exclusive:
            return _exclusive_view_to_numpy
        return view_to_numpy
    element_type = ty.element_type & 0xFFFFFFFF
    dtype = _whole_byte_dtype(element_type)
    if not dtype:
        return _exclusive_view_to_numpy if exclusive else view_to_numpy
    if None in ty.shape:
        return _dynamic_result(dtype, element_type, len(ty.shape), exclusive)
    shape = tuple(ty.shape)
    count = 1
    for d in shape:
        count *= d
    nbytes = count * dtype.itemsize

    def to_numpy(view):
        buffer = view.buffer
        allocation = buffer.allocation
        if not (
            type(allocation) is Allocation
            and view.shape == shape
            and view.element_type == element_type
            and view.encoding_type == _DENSE
            and buffer.length == nbytes
        ):
            return view_to_numpy(view, exclusive)
        return _result_array(allocation, buffer.offset, nbytes, dtype, shape, exclusive)

    to_numpy.shape, to_numpy.element_type, to_numpy.nbytes = shape, element_type, nbytes
    to_numpy.dtype, to_numpy.exclusive = dtype, exclusive
    return to_numpy


def _dynamic_result(dtype, element_type: int, rank: int, exclusive: bool):
    """`tensor_result` for a declared tensor with dynamic dims: the same array
    `view_to_numpy(view, exclusive)` makes, with the dtype and rank looked up once; a view
    not of the declared rank and element type goes to `view_to_numpy`."""
    itemsize = dtype.itemsize

    def to_numpy(view):
        buffer = view.buffer
        allocation = buffer.allocation
        shape = view.shape
        if not (
            type(allocation) is Allocation
            and len(shape) == rank
            and view.element_type == element_type
            and view.encoding_type == _DENSE
        ):
            return view_to_numpy(view, exclusive)
        nbytes = itemsize
        for d in shape:
            nbytes *= d
        if buffer.length != nbytes:
            return view_to_numpy(view, exclusive)
        return _result_array(allocation, buffer.offset, nbytes, dtype, shape, exclusive)

    return to_numpy


def _exclusive_view_to_numpy(view: HalBufferView):
    """`view_to_numpy(view, True)`: the converter of a fresh result with nothing
    declared to specialize by."""
    return view_to_numpy(view, True)


_DENSE = element_types.ENCODING_DENSE_ROW_MAJOR
_RESULT_DTYPES: dict = {}  # element type -> numpy dtype, or False (copy path only)


def _whole_byte_dtype(element_type: int):
    """The numpy dtype of a whole-byte element type that numpy holds exactly, else False
    (sub-byte, unknown, or typed like si16/bf16: those come back tagged, see from_vm)."""
    if element_types.bit_count(element_type) % 8 or not element_types.has_exact_dtype(element_type):
        return False
    try:
        return element_types.to_numpy_dtype(element_type)
    except ValueError:
        return False

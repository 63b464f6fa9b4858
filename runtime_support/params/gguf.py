"""GGUF (v2 and v3) files: the tensors' raw bytes as parameters.

    u32 magic 'GGUF', u32 version, u64 tensor_count, u64 kv_count,
    kv pairs (string key, u32 value type, value), tensor infos (string name,
    u32 n_dims, u64 dims[n_dims], u32 ggml type, u64 offset), padding to the alignment
    (`general.alignment`, a u32 kv, default 32), tensor data.

Strings are a u64 length then bytes. Tensor offsets are relative to the aligned start of
the tensor data. The format stores no tensor sizes, so a tensor's byte length comes from
its dims and ggml type (block size / bytes per block); unknown types are UNIMPLEMENTED.
As in IREE (iree/io/formats/gguf): a bad magic is INVALID_ARGUMENT, an unsupported
version UNIMPLEMENTED, a truncated header OUT_OF_RANGE, a tensor outside the data
INVALID_ARGUMENT.
"""

from __future__ import annotations

import struct

import numpy as np

from ..errors import StatusCode
from .files import (
    CopyBudget,
    Cursor,
    MappedFile,
    check_count,
    decode_key,
    file_error,
    key_label,
)
from .entry import ParameterEntry

MAGIC = 0x46554747  # b"GGUF"
DEFAULT_ALIGNMENT = 32

# ggml type -> (elements per block, bytes per block): the table IREE 3.13 knows
# (ggml's original numbering, where 16-18 are I8/I16/I32; QK_K = 256).
GGML_TYPES = {
    0: (1, 4),  # F32
    1: (1, 2),  # F16
    2: (32, 18),  # Q4_0
    3: (32, 20),  # Q4_1
    6: (32, 22),  # Q5_0
    7: (32, 24),  # Q5_1
    8: (32, 34),  # Q8_0
    9: (32, 36),  # Q8_1
    10: (256, 84),  # Q2_K
    11: (256, 110),  # Q3_K
    12: (256, 144),  # Q4_K
    13: (256, 176),  # Q5_K
    14: (256, 210),  # Q6_K
    15: (256, 292),  # Q8_K
    16: (1, 1),  # I8
    17: (1, 2),  # I16
    18: (1, 4),  # I32
}

# Metadata value types: fixed sizes (8 STRING and 9 ARRAY are variable).
_VALUE_SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
_STRING, _ARRAY, _UINT32 = 8, 9, 4
_U32 = struct.Struct("<I")
_ALIGNMENT_KEY = b"general.alignment"
_LABEL_BYTES = 256  # of a skipped key, decoded for messages


def _string(cur: Cursor, what: str) -> memoryview:
    """A string's bytes, in place (the caller copies only what it keeps)."""
    return cur.slice(cur.u64(f"{what} length"), what)


def _skip_strings(cur: Cursor, count: int, what: str) -> None:
    """Skips `count` strings. A run of empty strings (what a sparse file's zeros read
    as) is skipped in one step, so a huge count over zeros costs no Python loop."""
    i = 0
    while i < count:
        length = cur.u64(f"{what}[{i}] length")
        if length:
            cur.skip(length, f"{what}[{i}]")
            i += 1
            continue
        # Count the zero u64s that follow, in growing chunks (cost linear in the run).
        room = min(count - i - 1, cur.remaining // 8)
        run, chunk = 0, 16
        while run < room:
            n = min(room - run, chunk)
            lengths = np.frombuffer(cur.view, "<u8", n, cur.pos + 8 * run)
            nonzero = np.flatnonzero(lengths)
            if nonzero.size:
                run += int(nonzero[0])
                break
            run += n
            chunk *= 2
        cur.skip(8 * run, f"{what}[{i + 1}:{i + 1 + run}]")
        i += run + 1


def _skip_value(cur: Cursor, value_type: int, what: str, *, in_array: bool = False) -> None:
    size = _VALUE_SIZES.get(value_type)
    if size is not None:
        cur.skip(size, what)
    elif value_type == _STRING:
        cur.skip(cur.u64(f"{what} length"), what)
    elif value_type == _ARRAY and not in_array:
        element_type = cur.u32(f"{what} array type")
        count = cur.u64(f"{what} array length")
        size = _VALUE_SIZES.get(element_type)
        if size is not None:
            cur.skip(count * size, f"{what} array of {count}")
        elif element_type == _STRING:
            check_count(cur.path, f"{what} array", count, 8, cur.remaining, capped=False)
            _skip_strings(cur, count, what)
        elif element_type == _ARRAY:
            raise file_error(
                StatusCode.INVALID_ARGUMENT, cur.path, f"{what}: nested arrays not supported"
            )
        else:
            raise file_error(
                StatusCode.INVALID_ARGUMENT,
                cur.path,
                f"{what}: unsupported metadata array element type {element_type}",
            )
    else:
        raise file_error(
            StatusCode.INVALID_ARGUMENT,
            cur.path,
            f"{what}: unsupported metadata value type {value_type}",
        )


def _tensor_infos(cur: Cursor, count: int, keys: CopyBudget):
    """(index, name, (dims offset, dims count), ggml type, offset) per tensor."""
    for i in range(count):
        name = keys.key(_string(cur, f"tensor {i} name"), f"tensor {i} name")
        n_dims = cur.u32(f"tensor {i} dimension count")
        dims_at = cur.need(8 * n_dims, f"tensor {i} dimensions")
        ggml_type = cur.u32(f"tensor {i} type")
        offset = cur.u64(f"tensor {i} offset")
        yield i, name, (dims_at, n_dims), ggml_type, offset


def element_count(dims, limit: int) -> int:
    """The product of `dims`, or `limit + 1` as soon as it passes `limit`: the product
    never grows past `limit * 2**64`, so many huge dims cost linear time (IREE 3.13 wraps
    the product at 64 bits instead; we refuse what does not fit). A 0 anywhere makes 0.
    """
    if 0 in dims:
        return 0
    count = 1
    for d in dims:
        count *= int(d)
        if count > limit:
            return limit + 1
    return count


def parse_gguf(file: MappedFile) -> list[ParameterEntry]:
    path, size = file.path, file.size
    cur = Cursor(path, file.view)
    magic = cur.u32("magic")
    if magic != MAGIC:
        raise file_error(
            StatusCode.INVALID_ARGUMENT,
            path,
            f"GGUF file magic missing or invalid {magic:08X}; expected {MAGIC:08X}",
        )
    version = cur.u32("version")
    if not 2 <= version <= 3:
        raise file_error(
            StatusCode.UNIMPLEMENTED,
            path,
            f"GGUF format version {version} is unsupported; expected version 2-3",
        )
    tensor_count = cur.u64("tensor count")
    kv_count = cur.u64("metadata kv count")
    if tensor_count == 0:
        return []
    # A kv pair takes >= 13 bytes (key length, type, a u8); a tensor info >= 24.
    check_count(path, "metadata kv count", kv_count, 13, cur.remaining)
    keys = CopyBudget(path)
    alignment = DEFAULT_ALIGNMENT
    for i in range(kv_count):
        key = _string(cur, f"metadata kv {i} key")
        value_type = cur.u32(f"metadata kv {i} type")
        if key == _ALIGNMENT_KEY:
            if value_type != _UINT32:
                raise file_error(
                    StatusCode.INVALID_ARGUMENT,
                    path,
                    "general.alignment metadata value must be uint32",
                )
            alignment = cur.u32("general.alignment")
            if alignment == 0:
                raise file_error(
                    StatusCode.INVALID_ARGUMENT, path, "general.alignment must not be 0"
                )
        else:
            # The key is copied only for the message, and only its first bytes.
            label = key_label(decode_key(key[:_LABEL_BYTES]))
            _skip_value(cur, value_type, f"metadata kv {i} ({label})")
    check_count(path, "tensor count", tensor_count, 24, cur.remaining)
    # Two passes: the data starts after the (variable-length) tensor infos.
    infos = list(_tensor_infos(cur, tensor_count, keys))
    data_offset = -(-cur.pos // alignment) * alignment
    data_size = size - data_offset
    if data_size < 0:
        raise file_error(
            StatusCode.OUT_OF_RANGE,
            path,
            f"tensor data would start at offset {data_offset}, past the end of the "
            f"{size}-byte file",
        )
    entries = []
    for i, name, (dims_at, n_dims), ggml_type, offset in infos:
        label = f"tensor {i} ({key_label(name)})"
        traits = GGML_TYPES.get(ggml_type)
        if traits is None:
            raise file_error(
                StatusCode.UNIMPLEMENTED,
                path,
                f"{label}: GGML tensor type {ggml_type} not supported",
            )
        block, block_bytes = traits
        if n_dims <= 16:  # the usual case: a few dims, cheaper unpacked than as an array
            dims = struct.unpack_from(f"<{n_dims}Q", file.view, dims_at)
        else:
            dims = np.frombuffer(file.view, "<u8", n_dims, dims_at)  # a view, not a copy
        count = element_count(dims, data_size * block)
        length = count * block_bytes // block
        if offset + length > data_size:
            end = offset + length if count <= data_size * block else "past the data"
            raise file_error(
                StatusCode.INVALID_ARGUMENT,
                path,
                f"{label}: entry has data offsets outside of the available "
                f"data (begin={offset}, end={end}, available={data_size})",
            )
        entries.append(
            ParameterEntry(name, length, file=file, offset=data_offset + offset, source=path)
        )
    return entries


def gguf_bytes(tensors: dict, *, alignment: int | None = None, version: int = 3, kv=None):
    """A GGUF file holding numpy arrays (F32/F16/I8/I16/I32; tests and examples).

    `kv` adds extra metadata pairs: {key: (value_type, raw value bytes)}.
    """
    types = {"float32": 0, "float16": 1, "int8": 16, "int16": 17, "int32": 18}

    def string(s: str) -> bytes:
        raw = s.encode()
        return struct.pack("<Q", len(raw)) + raw

    pairs = dict(kv or {})
    if alignment is not None:
        pairs["general.alignment"] = (_UINT32, _U32.pack(alignment))
    align = alignment or DEFAULT_ALIGNMENT
    out = bytearray(struct.pack("<IIQQ", MAGIC, version, len(tensors), len(pairs)))
    for key, (value_type, raw) in pairs.items():
        out += string(key) + _U32.pack(value_type) + raw
    data = bytearray()
    for name, value in tensors.items():
        arr = np.ascontiguousarray(value)
        data += bytes(-len(data) % align)
        dims = arr.shape[::-1]  # ggml lists the fastest-varying dimension first
        out += string(name) + _U32.pack(len(dims))
        out += struct.pack(f"<{len(dims)}Q", *dims)
        out += _U32.pack(types[arr.dtype.name]) + struct.pack("<Q", len(data))
        data += arr.tobytes()
    out += bytes(-len(out) % align)
    return bytes(out + data)

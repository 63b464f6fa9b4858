"""`.safetensors` files: u64 LE header length, a JSON header, then the tensor data.

    {"NAME": {"dtype": "F32", "shape": [2, 3], "data_offsets": [BEGIN, END]}, ...,
     "__metadata__": {...}}

Offsets are relative to the end of the header. Like IREE's parser
(iree/io/formats/safetensors) only `data_offsets` is used (the bytes are the parameter;
dtype and shape are the program's business) and `__metadata__` is ignored. A key
repeated in the header keeps its first entry, as in IREE. A header that
is not a JSON object of objects, or offsets that are not two integers with
`BEGIN <= END <= data size`, are INVALID_ARGUMENT; a header running past the file is
OUT_OF_RANGE.
"""

from __future__ import annotations

import json
import struct

from ..errors import StatusCode
from .files import MappedFile, check_count, file_error, key_label
from .entry import ParameterEntry

_U64 = struct.Struct("<Q")

# The header is decoded into Python objects, so its size is capped before anything is
# allocated: the safetensors library's own limit (MAX_HEADER_SIZE, 100 MB).
MAX_HEADER_BYTES = 100_000_000


def _first_wins(pairs: list) -> dict:
    """object_pairs_hook: a key repeated in one JSON object keeps its FIRST value, as
    IREE 3.13's in-place parser reads it (json.loads alone keeps the last)."""
    out: dict = {}
    for key, value in pairs:
        out.setdefault(key, value)
    return out


def _offsets(value):
    """(begin, end) from a `data_offsets` value, or None unless it is two integers."""
    if isinstance(value, list) and len(value) == 2 and all(type(v) is int for v in value):
        return value
    return None


def _show(value) -> str:
    """An int from the header for a message: digits only while they are few."""
    return str(value) if -(1 << 64) < value < (1 << 64) else f"<{value.bit_length()}-bit value>"


def parse_safetensors(file: MappedFile) -> list[ParameterEntry]:
    path, view, size = file.path, file.view, file.size
    if size < _U64.size:
        raise file_error(
            StatusCode.INVALID_ARGUMENT,
            path,
            f"not enough bytes for a safetensors header length ({size} bytes)",
        )
    (header_length,) = _U64.unpack_from(view, 0)
    if header_length > size - _U64.size:
        raise file_error(
            StatusCode.OUT_OF_RANGE,
            path,
            f"safetensors header of {header_length} bytes runs past the end of the "
            f"{size}-byte file",
        )
    if header_length > MAX_HEADER_BYTES:
        raise file_error(
            StatusCode.RESOURCE_EXHAUSTED,
            path,
            f"safetensors header of {header_length} bytes is larger than the "
            f"{MAX_HEADER_BYTES}-byte limit (the safetensors library's)",
        )
    data_base = _U64.size + header_length
    data_size = size - data_base
    try:
        # str() decodes straight from the mapping: no bytes copy of the header.
        text = str(view[_U64.size : data_base], "utf-8")
        header = json.loads(text, object_pairs_hook=_first_wins)
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise file_error(
            StatusCode.INVALID_ARGUMENT, path, f"safetensors header is not valid JSON: {e}"
        ) from None
    except MemoryError:
        raise file_error(
            StatusCode.RESOURCE_EXHAUSTED,
            path,
            f"out of memory decoding the {header_length}-byte safetensors header",
        ) from None
    if not isinstance(header, dict):
        raise file_error(
            StatusCode.INVALID_ARGUMENT,
            path,
            f"safetensors header must be a JSON object, got {type(header).__name__}",
        )
    check_count(path, "tensor count", len(header), 1, header_length)
    entries = []
    for key, info in header.items():
        if key == "__metadata__":
            continue
        label = f"tensor {key_label(key)}"
        if not isinstance(info, dict):
            raise file_error(
                StatusCode.INVALID_ARGUMENT,
                path,
                f"{label}: header entry must be an object, got {type(info).__name__}",
            )
        offsets = _offsets(info.get("data_offsets"))
        if offsets is None:
            raise file_error(
                StatusCode.INVALID_ARGUMENT,
                path,
                f"{label}: failed to parse entry data offsets (expected two integers, "
                f"got {type(info.get('data_offsets')).__name__})",
            )
        begin, end = offsets
        if begin < 0 or begin > end or end > data_size:
            raise file_error(
                StatusCode.INVALID_ARGUMENT,
                path,
                f"{label}: entry has data offsets outside of the available data "
                f"(begin={_show(begin)}, end={_show(end)}, available={data_size})",
            )
        entries.append(
            ParameterEntry(key, end - begin, file=file, offset=data_base + begin, source=path)
        )
    return entries


def safetensors_bytes(tensors: dict, metadata: dict | None = None) -> bytes:
    """A .safetensors file holding numpy arrays (tests and examples)."""
    import numpy as np

    names = {
        "float64": "F64",
        "float32": "F32",
        "float16": "F16",
        "int64": "I64",
        "int32": "I32",
        "int16": "I16",
        "int8": "I8",
        "uint64": "U64",
        "uint32": "U32",
        "uint16": "U16",
        "uint8": "U8",
        "bool": "BOOL",
    }
    header: dict = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    data = bytearray()
    for key, value in tensors.items():
        arr = np.ascontiguousarray(value)
        header[key] = {
            "dtype": names[arr.dtype.name],
            "shape": list(arr.shape),
            "data_offsets": [len(data), len(data) + arr.nbytes],
        }
        data += arr.tobytes()
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return _U64.pack(len(text)) + text + bytes(data)

"""`.safetensors` files: u64 LE header length, a JSON header, then the tensor data.

    {"NAME": {"dtype": "F32", "shape": [2, 3], "data_offsets": [BEGIN, END]}, ...,
     "__metadata__": {...}}

Offsets are relative to the end of the header. Like IREE's parser
(iree/io/formats/safetensors) only `data_offsets` is used (the bytes are the parameter;
dtype and shape are the program's business) and `__metadata__` is ignored. A header that
is not a JSON object of objects, or offsets that are not two integers with
`BEGIN <= END <= data size`, are INVALID_ARGUMENT; a header running past the file is
OUT_OF_RANGE.
"""

from __future__ import annotations

import json
import struct

from ..errors import StatusCode
from .files import MappedFile, file_error
from .index import ParameterEntry

_U64 = struct.Struct("<Q")


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
    data_base = _U64.size + header_length
    data_size = size - data_base
    raw = bytes(view[_U64.size : data_base])
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise file_error(
            StatusCode.INVALID_ARGUMENT, path, f"safetensors header is not valid JSON: {e}"
        ) from None
    if not isinstance(header, dict):
        raise file_error(
            StatusCode.INVALID_ARGUMENT,
            path,
            f"safetensors header must be a JSON object, got {type(header).__name__}",
        )
    entries = []
    for key, info in header.items():
        if key == "__metadata__":
            continue
        if not isinstance(info, dict):
            raise file_error(
                StatusCode.INVALID_ARGUMENT,
                path,
                f"tensor '{key}': header entry must be an object, got {type(info).__name__}",
            )
        offsets = info.get("data_offsets")
        if (
            not isinstance(offsets, list)
            or len(offsets) != 2
            or not all(type(v) is int for v in offsets)
        ):
            raise file_error(
                StatusCode.INVALID_ARGUMENT,
                path,
                f"tensor '{key}': failed to parse entry data offsets `{offsets!r}`",
            )
        begin, end = offsets
        if begin < 0 or begin > end or end > data_size:
            raise file_error(
                StatusCode.INVALID_ARGUMENT,
                path,
                f"tensor '{key}': entry has data offsets outside of the available data "
                f"(begin={begin}, end={end}, available={data_size})",
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

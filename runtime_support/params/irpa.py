"""IREE parameter archives (`.irpa`, hal-abi.md §G.2): reader and a small writer.

Layout (packed, little-endian; offsets relative to the archive header, which is at file
offset 0 or at `next_header_offset` of the previous archive in a chain):

    header (88 bytes)  magic 'IRPA', version 0.0, header_size 88, next_header_offset,
                       flags, entry_count, entry/metadata/storage segments (offset, length)
    entries            each 16-byte aligned: 60-byte common header + type-specific tail
                       SKIP 0 | SPLAT 1 (u64 length, u8 pattern[16], u8 pattern_length)
                       DATA 2 (u64 storage_offset, u64 storage_length) | EXTERNAL 3
    metadata segment   entry names (no NUL) and metadata blobs
    storage segment    parameter bytes

The reader checks what IREE's parser (iree/io/formats/irpa/irpa_parser.c) checks, with
the same status codes: bad magic / short header -> INVALID_ARGUMENT, unsupported version
or entry type -> UNIMPLEMENTED, any range outside its file or segment -> OUT_OF_RANGE.
EXTERNAL entries are UNIMPLEMENTED, as in IREE 3.13.
"""

from __future__ import annotations

import os
import struct
from typing import Mapping, NamedTuple

import numpy as np

from ..errors import StatusCode
from .files import CopyBudget, MappedFile, check_count, file_error, key_label
from .entry import ParameterEntry

MAGIC = 0x41505249  # b"IRPA"
HEADER = struct.Struct("<IHHQQQQQQQQQQ")  # 88 bytes
PREFIX = struct.Struct("<IHHQQ")  # magic, version major/minor, header_size, next_header
ENTRY_HEADER = struct.Struct("<QIQQQQQQ")  # 60 bytes
SPLAT_TAIL = struct.Struct("<Q16sB")  # 25 bytes -> entry_size 85
DATA_TAIL = struct.Struct("<QQ")  # 16 bytes -> entry_size 76
EXTERNAL_TAIL = struct.Struct("<QQQQ")  # 32 bytes -> entry_size 92
ENTRY_ALIGNMENT = 16

TYPE_SKIP, TYPE_SPLAT, TYPE_DATA, TYPE_EXTERNAL = 0, 1, 2, 3
_TYPE_NAMES = {0: "SKIP", 1: "SPLAT", 2: "DATA", 3: "EXTERNAL"}

assert HEADER.size == 88 and ENTRY_HEADER.size == 60


def _align(value: int, alignment: int) -> int:
    return -(-value // alignment) * alignment


def parse_irpa(file: MappedFile) -> list[ParameterEntry]:
    """All entries of every archive chained in `file`, in file order."""
    path, view, size = file.path, file.view, file.size
    entries: list[ParameterEntry] = []
    base = 0
    archive = 0
    while True:
        where = f"archive {archive} at offset {base}" if archive else "archive header"
        if size < base + PREFIX.size:
            raise file_error(
                StatusCode.INVALID_ARGUMENT,
                path,
                f"not enough bytes for a valid IRPA header ({where}); file may be empty or "
                f"truncated ({size} bytes)",
            )
        magic, major, minor, header_size, next_header = PREFIX.unpack_from(view, base)
        if magic != MAGIC:
            raise file_error(
                StatusCode.INVALID_ARGUMENT,
                path,
                f"IRPA file magic missing or invalid {magic:08X}; expected {MAGIC:08X} ({where})",
            )
        if base + header_size > size:
            raise file_error(
                StatusCode.OUT_OF_RANGE,
                path,
                f"file buffer underrun parsing header of reported size {header_size} "
                f"({where}; only {size - base} bytes available)",
            )
        if next_header and size < base + next_header + PREFIX.size:
            raise file_error(
                StatusCode.OUT_OF_RANGE,
                path,
                f"file buffer underrun verifying linked header at offset {base + next_header} "
                f"(only {size} bytes available)",
            )
        if major != 0 or minor > 0:
            raise file_error(
                StatusCode.UNIMPLEMENTED,
                path,
                f"IRPA version {major}.{minor} not supported (this runtime reads 0.0)",
            )
        if header_size != HEADER.size:
            raise file_error(
                StatusCode.INVALID_ARGUMENT,
                path,
                f"IRPA v0 header expected to be exactly {HEADER.size} bytes but was reported "
                f"as {header_size} ({where})",
            )
        entries.extend(_parse_v0(file, base, where))
        if next_header == 0:
            return entries
        base += next_header  # strictly increasing and bounded by the file: terminates
        archive += 1


def _parse_v0(file: MappedFile, base: int, where: str) -> list[ParameterEntry]:
    path, view, size = file.path, file.view, file.size
    (
        _magic,
        _major,
        _minor,
        _header_size,
        _next,
        _flags,
        entry_count,
        entry_offset,
        entry_length,
        metadata_offset,
        metadata_length,
        storage_offset,
        storage_length,
    ) = HEADER.unpack_from(view, base)
    for name, off, length in (
        ("entry segment", entry_offset, entry_length),
        ("metadata segment", metadata_offset, metadata_length),
        ("storage segment", storage_offset, storage_length),
    ):
        if length and base + off + length > size:
            raise file_error(
                StatusCode.OUT_OF_RANGE,
                path,
                f"{name} [{base + off}, {base + off + length}) out of range of the "
                f"{size}-byte file ({where})",
            )

    copies = CopyBudget(path)

    def metadata_range(i: int, what: str, off: int, length: int) -> memoryview:
        """A zero-copy view of `[off, off + length)` of the metadata segment."""
        if not length:
            return view[0:0]
        if off + length > metadata_length:
            raise file_error(
                StatusCode.OUT_OF_RANGE,
                path,
                f"entry {i}: {what} reference [{off}, {off + length}) out of range of the "
                f"{metadata_length}-byte metadata segment ({where})",
            )
        start = base + metadata_offset + off
        return view[start : start + length]

    # Each entry takes at least the 60-byte common header.
    check_count(path, f"entry count ({where})", entry_count, ENTRY_HEADER.size, entry_length)
    out = []
    pos = base + entry_offset
    remaining = entry_length
    for i in range(entry_count):
        if remaining < ENTRY_HEADER.size:
            raise file_error(
                StatusCode.OUT_OF_RANGE,
                path,
                f"entry table truncated at entry {i} of {entry_count}; insufficient bytes for "
                f"the base entry header ({where})",
            )
        (
            entry_size,
            entry_type,
            _entry_flags,
            name_offset,
            name_length,
            meta_offset,
            meta_length,
            _min_alignment,
        ) = ENTRY_HEADER.unpack_from(view, pos)
        if entry_size < ENTRY_HEADER.size or remaining < entry_size:
            raise file_error(
                StatusCode.OUT_OF_RANGE,
                path,
                f"entry table truncated at entry {i}: entry size {entry_size} with "
                f"{remaining} bytes left in the entry segment ({where})",
            )
        key = copies.key(metadata_range(i, "name", name_offset, name_length), f"entry {i}")
        label = f"entry {i} ({key_label(key)})"
        metadata = copies.blob(metadata_range(i, "metadata", meta_offset, meta_length), label)
        tail = pos + ENTRY_HEADER.size
        if entry_type == TYPE_SKIP:
            pass
        elif entry_type == TYPE_SPLAT:
            if entry_size < ENTRY_HEADER.size + SPLAT_TAIL.size:
                raise file_error(
                    StatusCode.OUT_OF_RANGE, path, f"{label}: splat entry length underflow"
                )
            length, pattern, pattern_length = SPLAT_TAIL.unpack_from(view, tail)
            if not 1 <= pattern_length <= 16:
                raise file_error(
                    StatusCode.INVALID_ARGUMENT,
                    path,
                    f"{label}: splat pattern length {pattern_length} out of bounds [1, 16]",
                )
            out.append(
                ParameterEntry(
                    key,
                    length,
                    pattern=pattern[:pattern_length],
                    metadata=metadata,
                    source=path,
                )
            )
        elif entry_type == TYPE_DATA:
            if entry_size < ENTRY_HEADER.size + DATA_TAIL.size:
                raise file_error(
                    StatusCode.OUT_OF_RANGE, path, f"{label}: data entry length underflow"
                )
            data_offset, data_length = DATA_TAIL.unpack_from(view, tail)
            absolute = 0
            if data_length:
                if data_offset + data_length > storage_length:
                    raise file_error(
                        StatusCode.OUT_OF_RANGE,
                        path,
                        f"{label}: storage reference [{data_offset}, "
                        f"{data_offset + data_length}) out of range of the "
                        f"{storage_length}-byte storage segment ({where})",
                    )
                absolute = base + storage_offset + data_offset
            out.append(
                ParameterEntry(
                    key, data_length, file=file, offset=absolute, metadata=metadata, source=path
                )
            )
        else:
            raise file_error(
                StatusCode.UNIMPLEMENTED,
                path,
                f"{label}: parser does not support entry type "
                f"{_TYPE_NAMES.get(entry_type, entry_type)} ({entry_type})",
            )
        step = _align(entry_size, ENTRY_ALIGNMENT)
        pos += step
        remaining -= step
    return out


# -- writer ---------------------------------------------------------------------------


class Splat(NamedTuple):
    """A splat parameter for `write_irpa`: `pattern` (1, 2, 4, 8 or 16 bytes) repeated
    over `length` bytes."""

    pattern: bytes
    length: int

    @classmethod
    def of(cls, value, count: int) -> "Splat":
        """`count` elements equal to the numpy scalar `value` (e.g. np.float32(1.5))."""
        arr = np.asarray(value)
        return cls(arr.tobytes(), count * arr.dtype.itemsize)


DATA_ALIGNMENT = 64


def irpa_bytes(entries: Mapping[str, object], *, metadata: Mapping[str, bytes] | None = None):
    """An archive holding `entries` (name -> bytes-like / numpy array / Splat) as bytes.

    DATA entries are stored 64-byte aligned (minimum_alignment 64) in insertion order;
    splats take no storage.
    """
    metadata = dict(metadata or {})
    names = bytearray()
    records = []  # (type, name_ref, meta_ref, payload)
    storage = bytearray()
    for key, value in entries.items():
        raw_key = key.encode("utf-8", errors="surrogateescape")
        name_ref = (len(names), len(raw_key))
        names += raw_key
        blob = metadata.get(key, b"")
        meta_ref = (len(names), len(blob)) if blob else (0, 0)
        names += blob
        if isinstance(value, Splat):
            pattern = bytes(value.pattern)
            if len(pattern) not in (1, 2, 4, 8, 16):
                raise ValueError(f"{key}: splat pattern must be 1, 2, 4, 8 or 16 bytes")
            records.append((TYPE_SPLAT, name_ref, meta_ref, (value.length, pattern)))
        else:
            data = memoryview(
                np.ascontiguousarray(value) if isinstance(value, np.ndarray) else value
            )
            data = data.cast("B")
            storage += bytes(_align(len(storage), DATA_ALIGNMENT) - len(storage))
            records.append((TYPE_DATA, name_ref, meta_ref, (len(storage), data.nbytes)))
            storage += data
    entry_segment = bytearray()
    for entry_type, (name_off, name_len), (meta_off, meta_len), payload in records:
        if entry_type == TYPE_SPLAT:
            length, pattern = payload
            tail = SPLAT_TAIL.pack(length, pattern.ljust(16, b"\0"), len(pattern))
            min_alignment = 0
        else:
            tail = DATA_TAIL.pack(*payload)
            min_alignment = DATA_ALIGNMENT
        size = ENTRY_HEADER.size + len(tail)
        entry_segment += ENTRY_HEADER.pack(
            size, entry_type, 0, name_off, name_len, meta_off, meta_len, min_alignment
        )
        entry_segment += tail
        entry_segment += bytes(_align(size, ENTRY_ALIGNMENT) - size)
    entry_offset = _align(HEADER.size, ENTRY_ALIGNMENT)
    metadata_offset = entry_offset + len(entry_segment)
    storage_offset = _align(metadata_offset + len(names), DATA_ALIGNMENT)
    header = HEADER.pack(
        MAGIC,
        0,
        0,
        HEADER.size,
        0,
        0,
        len(records),
        entry_offset,
        len(entry_segment),
        metadata_offset,
        len(names),
        storage_offset,
        len(storage),
    )
    out = bytearray(header)
    out += bytes(entry_offset - len(out))
    out += entry_segment
    out += names
    out += bytes(storage_offset - len(out))
    out += storage
    return bytes(out)


def write_irpa(path, entries: Mapping[str, object], **kwargs) -> str:
    """Writes `irpa_bytes(entries)` to `path`; returns the path."""
    path = os.fspath(path)
    with open(path, "wb") as f:
        f.write(irpa_bytes(entries, **kwargs))
    return path


__all__ = ["parse_irpa", "irpa_bytes", "write_irpa", "Splat"]

"""The .vmfb container: an optional ZIP local header, a size-prefixed FlatBuffer, rodata.

Layouts (vmfb-format.md §1):

    polyglot ZIP:  [ZIP local header, p = 30 + n + m bytes][u32 L][FlatBuffer L bytes]...
    bare:          [u32 L][FlatBuffer L bytes]...

External rodata segments are addressed relative to
`rodata_base = align_up(fb_start + L, 64)`, where `fb_start = p + 4`.
Only the local header is read: the ZIP central directory is never consulted (the
runtime does not either).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from translator.errors import InvalidModuleError

ZIP_LOCAL_MAGIC = b"PK\x03\x04"
ZIP_LOCAL_HEADER_SIZE = 30
FILE_IDENTIFIER = b"IREE"
MIN_FLATBUFFER_SIZE = 16
RODATA_ALIGNMENT = 64


def align_up(value: int, alignment: int) -> int:
    return (value + alignment - 1) // alignment * alignment


@dataclass(frozen=True)
class Container:
    """Where the pieces of a .vmfb lie; all offsets are absolute file offsets."""

    data: memoryview  # the whole file
    flatbuffer: memoryview  # FlatBuffer bytes [0, size), without the size prefix
    fb_start: int  # file offset of FlatBuffer byte 0
    size: int  # L, the size prefix
    rodata_base: int  # file offset that external_data_offset is relative to
    zip_header_size: int  # p: 0 for the bare layout

    @property
    def file_size(self) -> int:
        return len(self.data)

    @property
    def is_zip(self) -> bool:
        return self.zip_header_size > 0


def as_byte_view(data: bytes | bytearray | memoryview) -> memoryview:
    """A flat, read-only unsigned-byte view of data (zero-copy where possible)."""
    view = data if isinstance(data, memoryview) else memoryview(data)
    if not view.c_contiguous:
        view = memoryview(view.tobytes())
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    return view.toreadonly()


def parse_container(data: bytes | bytearray | memoryview) -> Container:
    view = as_byte_view(data)
    file_size = len(view)
    if file_size < 4:
        raise InvalidModuleError(
            f"file too small ({file_size} bytes) for a module", offset=0
        )

    p = 0
    if view[:4] == ZIP_LOCAL_MAGIC:
        if file_size < ZIP_LOCAL_HEADER_SIZE:
            raise InvalidModuleError(
                f"truncated ZIP local file header ({file_size} of "
                f"{ZIP_LOCAL_HEADER_SIZE} bytes)",
                offset=0,
            )
        name_len, extra_len = struct.unpack_from("<HH", view, 26)
        p = ZIP_LOCAL_HEADER_SIZE + name_len + extra_len
        if p + 4 > file_size:
            raise InvalidModuleError(
                f"ZIP local file header ({p} bytes) leaves no room for the FlatBuffer size "
                f"prefix in a {file_size}-byte file",
                offset=26,
            )

    (size,) = struct.unpack_from("<I", view, p)
    fb_start = p + 4
    if size > file_size - fb_start:
        raise InvalidModuleError(
            f"FlatBuffer size prefix {size} exceeds the {file_size - fb_start} bytes left "
            f"in the file",
            offset=p,
        )
    if size < MIN_FLATBUFFER_SIZE:
        raise InvalidModuleError(
            f"FlatBuffer size prefix {size} is below the minimum of {MIN_FLATBUFFER_SIZE} "
            f"bytes",
            offset=p,
        )
    ident = bytes(view[fb_start + 4 : fb_start + 8])
    if ident != FILE_IDENTIFIER:
        raise InvalidModuleError(
            f"FlatBuffer file identifier is {ident!r}, expected {FILE_IDENTIFIER!r}",
            offset=fb_start + 4,
        )
    return Container(
        data=view,
        flatbuffer=view[fb_start : fb_start + size],
        fb_start=fb_start,
        size=size,
        rodata_base=align_up(fb_start + size, RODATA_ALIGNMENT),
        zip_header_size=p,
    )

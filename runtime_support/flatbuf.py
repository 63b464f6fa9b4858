"""Bounds-checked FlatBuffer table access on top of the `flatbuffers` runtime.

The `flatbuffers` PyPI package decodes vtables and fields but verifies nothing: a bad
offset reads garbage or raises `struct.error`. Here every position is checked against
the buffer *before* the library is asked to read it, so a malformed module can only
produce a typed error that names the absolute file offset of the problem: the vmfb reader's
`translator.flatbuf.FlatBuffer` raises `InvalidModuleError`; executable readers in
runtime_support (CUDA's `cuda-nvptx-fb`) raise `LoaderError`.

Checks (the same ones flatcc's verifier makes, which the IREE runtime runs at load):
- a table is 4-aligned with its `soffset` inside the buffer; its vtable is 2-aligned,
  at least 4 bytes, even-sized and inside the buffer; the table's inline size fits;
- a present field lies inside the table's inline bytes;
- a reference (`uoffset`) field is 4-aligned and its target lies inside the buffer;
- a string or vector header is 4-aligned; `count * element_size` fits in the buffer
  *before* anything is allocated; a string's NUL terminator is present;
- a union's member is dereferenced only when its tag is not NONE; a union vector's tag
  and value vectors have the same length.

Positions are FlatBuffer-relative (byte 0 = the root offset); `FlatBuffer.base` turns
them into absolute file offsets for error messages.
"""

from __future__ import annotations

import struct

from flatbuffers import encode
from flatbuffers import number_types as N
from flatbuffers.table import Table as _FbTable

from runtime_support.errors import LoaderError

__all__ = ["FlatBuffer", "Table"]

_UOFFSET = N.UOffsetTFlags
_SOFFSET = N.SOffsetTFlags
_VOFFSET = N.VOffsetTFlags

# Scalar kinds by short name: the `flatbuffers` number-type flags.
SCALARS = {
    "u8": N.Uint8Flags,
    "i8": N.Int8Flags,
    "u16": N.Uint16Flags,
    "i16": N.Int16Flags,
    "u32": N.Uint32Flags,
    "i32": N.Int32Flags,
    "u64": N.Uint64Flags,
    "i64": N.Int64Flags,
    "f32": N.Float32Flags,
    "f64": N.Float64Flags,
}


class FlatBuffer:
    """One FlatBuffer: a byte view plus the absolute file offset of its byte 0."""

    __slots__ = ("buf", "size", "base")

    def __init__(self, buf: memoryview, base: int = 0) -> None:
        self.buf = buf
        self.size = len(buf)
        self.base = base

    # -- errors and checks ---------------------------------------------------------------

    def error(self, reason: str, pos: int) -> Exception:
        """The error to raise for a malformed buffer; subclasses choose the type."""
        return LoaderError(f"{reason} (at byte {self.base + pos})")

    def check(self, pos: int, length: int, what: str, align: int = 1) -> None:
        """Raises unless [pos, pos + length) lies in the buffer and pos is aligned."""
        if pos < 0 or length < 0 or pos + length > self.size:
            raise self.error(
                f"{what} at [{pos}, {pos + length}) lies outside the FlatBuffer "
                f"({self.size} bytes)",
                max(0, min(pos, self.size)),
            )
        if align > 1 and pos % align:
            raise self.error(f"{what} is not {align}-byte aligned", pos)

    def get(self, flags, pos: int, what: str):
        """A checked scalar read of `flags` (a `flatbuffers.number_types` class)."""
        self.check(pos, flags.bytewidth, what)
        return encode.Get(flags.packer_type, self.buf, pos)

    def deref(self, pos: int, what: str) -> int:
        """Follows the `uoffset` stored at pos; returns the (checked) target position."""
        self.check(pos, 4, f"offset to {what}", align=4)
        target = pos + encode.Get(_UOFFSET.packer_type, self.buf, pos)
        if target >= self.size:
            raise self.error(
                f"{what} offset points to {target}, past the end of the FlatBuffer "
                f"({self.size} bytes)",
                pos,
            )
        return target

    # -- entry points --------------------------------------------------------------------

    def root(self, name: str = "root table") -> "Table":
        return Table(self, self.deref(0, name), name)

    def string_at(self, pos: int, what: str) -> str:
        """Decodes the string whose header is at pos (never raises on bad UTF-8)."""
        return bytes(self.bytes_at(pos, what, nul=True)).decode("utf-8", "replace")

    def bytes_at(self, pos: int, what: str, nul: bool = False) -> memoryview:
        self.check(pos, 4, f"{what} length", align=4)
        n = encode.Get(_UOFFSET.packer_type, self.buf, pos)
        start = pos + 4
        if n + (1 if nul else 0) > self.size - start:
            raise self.error(
                f"{what} of {n} bytes at {start} runs past the end of the FlatBuffer "
                f"({self.size} bytes)",
                pos,
            )
        if nul and self.buf[start + n] != 0:
            raise self.error(f"{what} is not NUL-terminated", start + n)
        return self.buf[start : start + n]

    def vector_at(self, pos: int, elem_size: int, what: str) -> tuple[int, int]:
        """Checks the vector header at pos; returns (first element position, count)."""
        self.check(pos, 4, f"{what} length", align=4)
        count = encode.Get(_UOFFSET.packer_type, self.buf, pos)
        start = pos + 4
        if count * elem_size > self.size - start:
            raise self.error(
                f"{what} claims {count} elements of {elem_size} bytes at {start}, more "
                f"than the FlatBuffer holds ({self.size} bytes)",
                pos,
            )
        return start, count


class Table:
    """A checked view of one FlatBuffer table.

    Field accessors take the schema field id (declaration order; a union takes two ids)
    and return the default (or None for reference fields) when the field is absent.
    """

    __slots__ = ("fb", "pos", "name", "_t", "_vt", "_vt_size", "_size")

    def __init__(self, fb: FlatBuffer, pos: int, name: str) -> None:
        self.fb = fb
        self.pos = pos
        self.name = name
        fb.check(pos, 4, f"{name} table", align=4)
        self._t = _FbTable(fb.buf, pos)
        vt = pos - self._t.Get(_SOFFSET, pos)
        if vt < 0 or vt + 4 > fb.size:
            raise fb.error(
                f"{name} vtable position {vt} lies outside the FlatBuffer", pos
            )
        if vt % 2:
            raise fb.error(f"{name} vtable is not 2-byte aligned", vt)
        vt_size = self._t.Get(_VOFFSET, vt)
        size = self._t.Get(_VOFFSET, vt + 2)
        if vt_size < 4 or vt_size % 2 or vt + vt_size > fb.size:
            raise fb.error(f"{name} vtable has a bad size {vt_size}", vt)
        if size < 4 or pos + size > fb.size:
            raise fb.error(f"{name} table has a bad inline size {size}", vt + 2)
        self._vt = vt
        self._vt_size = vt_size
        self._size = size

    def __repr__(self) -> str:
        return f"Table({self.name} @ {self.fb.base + self.pos})"

    # -- fields --------------------------------------------------------------------------

    def _field(self, fid: int, width: int) -> int:
        """Position of field fid (checked to fit in the table), or 0 when absent."""
        off = self._t.Offset(
            4 + 2 * fid
        )  # vtable already checked: the read is in bounds
        if off == 0:
            return 0
        if off + width > self._size:
            raise self.fb.error(
                f"{self.name} field {fid} at table offset {off} lies outside the table "
                f"({self._size} bytes)",
                self._vt + 4 + 2 * fid,
            )
        return self.pos + off

    def has(self, fid: int) -> bool:
        return self._t.Offset(4 + 2 * fid) != 0

    def scalar(self, fid: int, kind: str, default=0):
        flags = SCALARS[kind]
        p = self._field(fid, flags.bytewidth)
        if not p:
            return default
        return self._t.Get(flags, p)

    def u8(self, fid: int, default: int = 0) -> int:
        return self.scalar(fid, "u8", default)

    def u32(self, fid: int, default: int = 0) -> int:
        return self.scalar(fid, "u32", default)

    def i32(self, fid: int, default: int = 0) -> int:
        return self.scalar(fid, "i32", default)

    def u64(self, fid: int, default: int = 0) -> int:
        return self.scalar(fid, "u64", default)

    def _target(self, fid: int, what: str) -> int | None:
        p = self._field(fid, 4)
        if not p:
            return None
        return self.fb.deref(p, what)

    def _what(self, fid: int, kind: str) -> str:
        return f"{self.name} field {fid} ({kind})"

    def string(self, fid: int, default: str | None = None) -> str | None:
        what = self._what(fid, "string")
        t = self._target(fid, what)
        return default if t is None else self.fb.string_at(t, what)

    def string_bytes(self, fid: int) -> memoryview | None:
        """A string field's raw bytes (it may hold binary data), or None when absent."""
        what = self._what(fid, "string")
        t = self._target(fid, what)
        return None if t is None else self.fb.bytes_at(t, what, nul=True)

    def inline_struct(self, fid: int, st: struct.Struct) -> tuple | None:
        """A struct stored inline in the table, unpacked, or None when absent."""
        p = self._field(fid, st.size)
        return None if not p else st.unpack_from(self.fb.buf, p)

    def bytes(self, fid: int) -> memoryview | None:
        """A `[ubyte]` vector as a zero-copy memoryview, or None when absent."""
        what = self._what(fid, "byte vector")
        t = self._target(fid, what)
        return None if t is None else self.fb.bytes_at(t, what)

    def bytes_with_pos(self, fid: int) -> tuple[int, memoryview] | None:
        """(FlatBuffer position of the first byte, view) of a `[ubyte]` vector."""
        what = self._what(fid, "byte vector")
        t = self._target(fid, what)
        if t is None:
            return None
        return t + 4, self.fb.bytes_at(t, what)

    def table(self, fid: int, name: str) -> "Table | None":
        t = self._target(fid, name)
        return None if t is None else Table(self.fb, t, name)

    def _vector(self, fid: int, elem_size: int, what: str) -> tuple[int, int] | None:
        t = self._target(fid, what)
        return None if t is None else self.fb.vector_at(t, elem_size, what)

    def vector_of_tables(self, fid: int, name: str) -> "list[Table] | None":
        v = self._vector(fid, 4, f"{name} vector")
        if v is None:
            return None
        start, count = v
        return [
            Table(self.fb, self.fb.deref(start + 4 * i, f"{name}[{i}]"), f"{name}[{i}]")
            for i in range(count)
        ]

    def vector_of_strings(self, fid: int, name: str) -> list[str] | None:
        v = self._vector(fid, 4, f"{name} vector")
        if v is None:
            return None
        start, count = v
        out = []
        for i in range(count):
            what = f"{name}[{i}]"
            out.append(self.fb.string_at(self.fb.deref(start + 4 * i, what), what))
        return out

    def scalar_vector(self, fid: int, kind: str, name: str) -> list | None:
        flags = SCALARS[kind]
        v = self._vector(fid, flags.bytewidth, f"{name} vector")
        if v is None:
            return None
        start, count = v
        return [self._t.Get(flags, start + flags.bytewidth * i) for i in range(count)]

    def struct_vector(
        self, fid: int, struct_size: int, name: str = ""
    ) -> memoryview | None:
        """A vector of inline structs as one checked view of count * struct_size bytes."""
        v = self._vector(
            fid, struct_size, f"{name or self._what(fid, 'struct')} vector"
        )
        if v is None:
            return None
        start, count = v
        return self.fb.buf[start : start + count * struct_size]

    def struct_vector_unpack(
        self, fid: int, st: struct.Struct, name: str = ""
    ) -> list | None:
        raw = self.struct_vector(fid, st.size, name)
        return None if raw is None else list(st.iter_unpack(raw))

    def union(self, type_fid: int, name: str) -> tuple[int, "Table | None"]:
        """(tag, member table); the member is read only when the tag is not NONE.

        The value field id is type_fid + 1.
        """
        tag = self.u8(type_fid, 0)
        if tag == 0:
            return 0, None
        member = self.table(type_fid + 1, name)
        if member is None:
            raise self.fb.error(f"{name} union has type {tag} but no value", self.pos)
        return tag, member

    def union_vector(
        self, type_fid: int, name: str
    ) -> list[tuple[int, "Table | None"]] | None:
        """[(tag, member table or None for NONE)]; values are at field type_fid + 1."""
        tags_v = self._vector(type_fid, 1, f"{name} type vector")
        vals_v = self._vector(type_fid + 1, 4, f"{name} vector")
        if tags_v is None and vals_v is None:
            return None
        if tags_v is None or vals_v is None or tags_v[1] != vals_v[1]:
            raise self.fb.error(
                f"{name} union vector has mismatched type and value vectors", self.pos
            )
        tstart, count = tags_v
        vstart = vals_v[0]
        out: list[tuple[int, Table | None]] = []
        for i in range(count):
            tag = self.fb.buf[tstart + i]
            if tag == 0:
                out.append((0, None))
                continue
            what = f"{name}[{i}]"
            out.append((tag, Table(self.fb, self.fb.deref(vstart + 4 * i, what), what)))
        return out

"""`!vm.buffer`: a byte buffer, mutable (bytearray-backed) or read-only (rodata view).

Semantics (vm-bytecode.md §5.3, checked against IREE 3.13 by tests/runtime/test_vm_buffer_list.py):

* `load_*`, `store_*` and `fill_*` take ELEMENT offsets and counts (byte offset =
  index x access width); `copy`, `compare`, `clone` and `hash` take BYTE offsets/lengths.
* Any access outside [0, length) -> VMError(OUT_OF_RANGE).  Negative offsets/lengths are
  out of range (IREE treats them as huge unsigned values).
* Writes to a read-only buffer (rodata) -> VMError(PERMISSION_DENIED).
* A null buffer passed to one of the module-level `buffer_*` functions (the form generated
  code calls) -> VMError(INVALID_ARGUMENT).
* `hash` is SipHash-2-4 with key bytes 00..0F, returned as a signed i64.

Values follow ARCHITECTURE.md: integer loads return signed Python ints (i8/i16 loads
zero- or sign-extend into an i32), f32 loads return floats exactly representable in
float32.  Stores keep the low bits of the value.

Raw bytes for HAL code: `buf.data` is a flat memoryview (format "B"), read-only when
`buf.readonly`; `buf.address` gives its host address (for native calls).  Wrapping is
zero-copy both ways: `VMBuffer(memoryview_or_bytearray, readonly=...)`.

Hot paths index cached native-endian memoryview casts (little-endian hosts only; this
module refuses to import on a big-endian host).
"""

from __future__ import annotations

import struct
import sys

from runtime_support.errors import StatusCode, VMError
from runtime_support.vm.numerics import wrap_i32, wrap_i64
from runtime_support.vm.limits import allocating
from runtime_support.vm.refs import register_ref_type

if sys.byteorder != "little":  # pragma: no cover
    raise ImportError("runtime_support.vm.buffer assumes a little-endian host")

__all__ = ["VMBuffer", "siphash24", "DEFAULT_ALIGNMENT"]

#: Alignment of buffers allocated with alignment 0.
DEFAULT_ALIGNMENT = 16

_SIPHASH_KEY = bytes(range(16))

# Per-width view attributes, created lazily by __getattr__ on first use.
_VIEW_FORMATS = {
    "_v_b": ("b", 1),
    "_v_H": ("H", 2),
    "_v_h": ("h", 2),
    "_v_i": ("i", 4),
    "_v_q": ("q", 8),
    "_v_f": ("f", 4),
    "_v_d": ("d", 8),
}

_FILL_COPY_BYTES = 1 << 16  # fills up to this size build their bytes (fast); larger ones write in place
_P16 = struct.Struct("<H").pack
_P32 = struct.Struct("<i").pack
_P64 = struct.Struct("<q").pack
_PD = struct.Struct("<d").pack


def _oob(what: str, offset: int, length: int, size: int) -> VMError:
    return VMError(
        StatusCode.OUT_OF_RANGE,
        f"{what}: range [{offset}, {offset + length}) (bytes) out of bounds of a "
        f"{size}-byte buffer",
    )


def _oob_elem(what: str, index: int, width: int, size: int) -> VMError:
    return VMError(
        StatusCode.OUT_OF_RANGE,
        f"{what}: element {index} ({width}-byte) out of bounds of a {size}-byte buffer",
    )


def _readonly(what: str) -> VMError:
    return VMError(StatusCode.PERMISSION_DENIED, f"{what}: buffer is read-only")


def _null(what: str) -> VMError:
    return VMError(StatusCode.INVALID_ARGUMENT, f"{what}: null buffer")


class VMBuffer:
    """A `!vm.buffer`.  `data` is a flat byte memoryview; `readonly` forbids VM stores."""

    # No __slots__: the typed views are attached lazily as instance attributes.

    def __init__(self, data=None, readonly: bool | None = None):
        if data is None:
            data = bytearray()
        mv = data if isinstance(data, memoryview) else memoryview(data)
        if mv.format != "B" or mv.ndim != 1:
            mv = mv.cast("B")
        if readonly is None:
            readonly = mv.readonly
        if readonly and not mv.readonly:
            mv = mv.toreadonly()
        self.data: memoryview = mv
        self.readonly: bool = bool(readonly)
        self.length: int = mv.nbytes

    # -- construction ------------------------------------------------------------------

    @classmethod
    def alloc(cls, length: int, alignment: int = 0) -> "VMBuffer":
        """A zero-filled mutable buffer (`vm.buffer.alloc`)."""
        if length < 0:
            raise VMError(
                StatusCode.OUT_OF_RANGE, f"buffer.alloc: negative length {length}"
            )
        if alignment < 0 or (alignment & (alignment - 1)):
            raise VMError(
                StatusCode.INVALID_ARGUMENT,
                f"buffer.alloc: alignment {alignment} is not a power of two",
            )
        alignment = max(alignment, DEFAULT_ALIGNMENT)
        with allocating("buffer.alloc", length, f"{length}-byte !vm.buffer"):
            raw = bytearray(length)
            if length and _address_of(raw) % alignment:
                raw = bytearray(length + alignment)
                pad = -_address_of(raw) % alignment
                return cls(memoryview(raw)[pad : pad + length])
        return cls(raw)

    @classmethod
    def wrap(cls, data, readonly: bool | None = None) -> "VMBuffer":
        """Zero-copy wrap of a bytes-like object (bytes are read-only)."""
        return cls(data, readonly)

    def clone(self, offset: int = 0, length: int | None = None, alignment: int = 0):
        """`vm.buffer.clone`: a new mutable buffer with a copy of bytes [offset, +length)."""
        if length is None:
            length = self.length - offset
        if offset < 0 or length < 0 or offset + length > self.length:
            raise _oob("buffer.clone", offset, length, self.length)
        out = VMBuffer.alloc(length, alignment)
        out.data[:] = self.data[offset : offset + length]
        return out

    # -- raw access --------------------------------------------------------------------

    def __len__(self) -> int:
        return self.length

    def __repr__(self) -> str:
        kind = "ro" if self.readonly else "rw"
        return f"<VMBuffer {self.length} bytes {kind}>"

    @property
    def address(self) -> int:
        """Host address of byte 0 (0 for an empty buffer)."""
        if not self.length:
            return 0
        import numpy as np

        return int(np.frombuffer(self.data, dtype=np.uint8).ctypes.data)

    def tobytes(self, offset: int = 0, length: int | None = None) -> bytes:
        if length is None:
            length = self.length - offset
        if offset < 0 or length < 0 or offset + length > self.length:
            raise _oob("buffer read", offset, length, self.length)
        return self.data[offset : offset + length].tobytes()

    def __getattr__(self, name):
        spec = _VIEW_FORMATS.get(name)
        if spec is None:
            raise AttributeError(name)
        fmt, width = spec
        n = self.length - self.length % width
        view = self.data[:n].cast(fmt)
        setattr(self, name, view)
        return view

    # -- loads (element offsets) -------------------------------------------------------

    def load_i8u(self, index: int) -> int:
        if index >= 0:
            try:
                return self.data[index]
            except IndexError:
                pass
        raise _oob_elem("buffer.load.i8.u", index, 1, self.length)

    def load_i8s(self, index: int) -> int:
        if index >= 0:
            try:
                return self._v_b[index]
            except IndexError:
                pass
        raise _oob_elem("buffer.load.i8.s", index, 1, self.length)

    def load_i16u(self, index: int) -> int:
        if index >= 0:
            try:
                return self._v_H[index]
            except IndexError:
                pass
        raise _oob_elem("buffer.load.i16.u", index, 2, self.length)

    def load_i16s(self, index: int) -> int:
        if index >= 0:
            try:
                return self._v_h[index]
            except IndexError:
                pass
        raise _oob_elem("buffer.load.i16.s", index, 2, self.length)

    def load_i32(self, index: int) -> int:
        if index >= 0:
            try:
                return self._v_i[index]
            except IndexError:
                pass
        raise _oob_elem("buffer.load.i32", index, 4, self.length)

    def load_i64(self, index: int) -> int:
        if index >= 0:
            try:
                return self._v_q[index]
            except IndexError:
                pass
        raise _oob_elem("buffer.load.i64", index, 8, self.length)

    def load_f32(self, index: int) -> float:
        if index >= 0:
            try:
                return self._v_f[index]
            except IndexError:
                pass
        raise _oob_elem("buffer.load.f32", index, 4, self.length)

    def load_f64(self, index: int) -> float:
        if index >= 0:
            try:
                return self._v_d[index]
            except IndexError:
                pass
        raise _oob_elem("buffer.load.f64", index, 8, self.length)

    # -- stores (element offsets; low bits of the value) -------------------------------

    def store_i8(self, index: int, value: int) -> None:
        if self.readonly:
            raise _readonly("buffer.store.i8")
        if index >= 0:
            try:
                self.data[index] = value & 0xFF
                return
            except IndexError:
                pass
        raise _oob_elem("buffer.store.i8", index, 1, self.length)

    def store_i16(self, index: int, value: int) -> None:
        if self.readonly:
            raise _readonly("buffer.store.i16")
        if index >= 0:
            try:
                self._v_H[index] = value & 0xFFFF
                return
            except IndexError:
                pass
        raise _oob_elem("buffer.store.i16", index, 2, self.length)

    def store_i32(self, index: int, value: int) -> None:
        if self.readonly:
            raise _readonly("buffer.store.i32")
        if index >= 0:
            try:
                self._v_i[index] = value
                return
            except IndexError:
                pass
            except (ValueError, TypeError):
                self._v_i[index] = ((value + 0x80000000) & 0xFFFFFFFF) - 0x80000000
                return
        raise _oob_elem("buffer.store.i32", index, 4, self.length)

    def store_i64(self, index: int, value: int) -> None:
        if self.readonly:
            raise _readonly("buffer.store.i64")
        if index >= 0:
            try:
                self._v_q[index] = value
                return
            except IndexError:
                pass
            except (ValueError, TypeError, OverflowError):
                self._v_q[index] = ((value + (1 << 63)) & ((1 << 64) - 1)) - (1 << 63)
                return
        raise _oob_elem("buffer.store.i64", index, 8, self.length)

    def store_f32(self, index: int, value: float) -> None:
        if self.readonly:
            raise _readonly("buffer.store.f32")
        if index >= 0:
            try:
                self._v_f[index] = value
                return
            except IndexError:
                pass
        raise _oob_elem("buffer.store.f32", index, 4, self.length)

    def store_f64(self, index: int, value: float) -> None:
        if self.readonly:
            raise _readonly("buffer.store.f64")
        if index >= 0:
            try:
                self._v_d[index] = value
                return
            except IndexError:
                pass
        raise _oob_elem("buffer.store.f64", index, 8, self.length)

    # -- fills (element offset and count) ----------------------------------------------

    def _fill(
        self, what: str, index: int, count: int, width: int, pattern: bytes
    ) -> None:
        if self.readonly:
            raise _readonly(what)
        start = index * width
        end = start + count * width
        if index < 0 or count < 0 or end > self.length:
            raise _oob(what, start, count * width, self.length)
        if end - start <= _FILL_COPY_BYTES:
            self.data[start:end] = pattern * count
            return
        # A large fill is written in place: a pattern * count copy as big as the buffer
        # could fail where the buffer itself was allocated (IREE fills in place too).
        import numpy as np

        region = np.frombuffer(self.data, dtype=np.uint8, count=end - start, offset=start)
        region.reshape(count, width)[:] = np.frombuffer(pattern, dtype=np.uint8)

    def fill_i8(self, index: int, count: int, value: int) -> None:
        self._fill("buffer.fill.i8", index, count, 1, bytes((value & 0xFF,)))

    def fill_i16(self, index: int, count: int, value: int) -> None:
        self._fill("buffer.fill.i16", index, count, 2, _P16(value & 0xFFFF))

    def fill_i32(self, index: int, count: int, value: int) -> None:
        self._fill("buffer.fill.i32", index, count, 4, _P32(_w32(value)))

    def fill_i64(self, index: int, count: int, value: int) -> None:
        self._fill("buffer.fill.i64", index, count, 8, _P64(_w64(value)))

    def fill_f32(self, index: int, count: int, value: float) -> None:
        self._fill("buffer.fill.f32", index, count, 4, _pack_f32(value))

    def fill_f64(self, index: int, count: int, value: float) -> None:
        self._fill("buffer.fill.f64", index, count, 8, _PD(value))

    # -- byte-range ops ----------------------------------------------------------------

    def copy(self, src_offset: int, target: "VMBuffer", dst_offset: int, length: int):
        """`vm.buffer.copy`: bytes self[src_offset:+length] -> target[dst_offset:+length]
        (overlap-safe)."""
        if src_offset < 0 or length < 0 or src_offset + length > self.length:
            raise _oob("buffer.copy source", src_offset, length, self.length)
        if target.readonly:
            raise _readonly("buffer.copy")
        if dst_offset < 0 or dst_offset + length > target.length:
            raise _oob("buffer.copy target", dst_offset, length, target.length)
        target.data[dst_offset : dst_offset + length] = self.data[
            src_offset : src_offset + length
        ]

    def compare(
        self, offset: int, other: "VMBuffer", other_offset: int, length: int
    ) -> int:
        """`vm.buffer.compare`: 1 if the two byte ranges are equal, else 0."""
        if offset < 0 or length < 0 or offset + length > self.length:
            raise _oob("buffer.compare lhs", offset, length, self.length)
        if other_offset < 0 or other_offset + length > other.length:
            raise _oob("buffer.compare rhs", other_offset, length, other.length)
        a = self.data[offset : offset + length]
        b = other.data[other_offset : other_offset + length]
        return 1 if a == b else 0

    def hash(self, offset: int = 0, length: int | None = None) -> int:
        """`vm.buffer.hash`: SipHash-2-4 (key 00..0F) of a byte range, as a signed i64."""
        if length is None:
            length = self.length - offset
        if offset < 0 or length < 0 or offset + length > self.length:
            raise _oob("buffer.hash", offset, length, self.length)
        h = siphash24(_SIPHASH_KEY, self.data[offset : offset + length])
        return h - (1 << 64) if h >= (1 << 63) else h


register_ref_type("!vm.buffer", VMBuffer)


_w32, _w64 = wrap_i32, wrap_i64


_pack_native_f = struct.Struct("f").pack  # C cast: no OverflowError for large doubles


def _pack_f32(v: float) -> bytes:
    return _pack_native_f(v)


def _address_of(raw: bytearray) -> int:
    import ctypes

    return ctypes.addressof(ctypes.c_char.from_buffer(raw))


# --------------------------------------------------------------------------------------
# SipHash-2-4 (Aumasson & Bernstein), written from the paper's description.

_M64 = 0xFFFFFFFFFFFFFFFF


def siphash24(key: bytes, data) -> int:
    """SipHash-2-4 of `data` (bytes-like) under a 16-byte key; unsigned 64-bit result."""
    k0, k1 = struct.unpack("<QQ", bytes(key))
    v0 = k0 ^ 0x736F6D6570736575
    v1 = k1 ^ 0x646F72616E646F6D
    v2 = k0 ^ 0x6C7967656E657261
    v3 = k1 ^ 0x7465646279746573
    data = bytes(data)
    n = len(data)
    tail = n & ~7
    words = struct.unpack_from(f"<{n >> 3}Q", data) if n >= 8 else ()
    last = (n & 0xFF) << 56
    rest = data[tail:]
    for i, b in enumerate(rest):
        last |= b << (8 * i)

    def rounds(v0, v1, v2, v3, count):
        for _ in range(count):
            v0 = (v0 + v1) & _M64
            v1 = ((v1 << 13) | (v1 >> 51)) & _M64
            v1 ^= v0
            v0 = ((v0 << 32) | (v0 >> 32)) & _M64
            v2 = (v2 + v3) & _M64
            v3 = ((v3 << 16) | (v3 >> 48)) & _M64
            v3 ^= v2
            v0 = (v0 + v3) & _M64
            v3 = ((v3 << 21) | (v3 >> 43)) & _M64
            v3 ^= v0
            v2 = (v2 + v1) & _M64
            v1 = ((v1 << 17) | (v1 >> 47)) & _M64
            v1 ^= v2
            v2 = ((v2 << 32) | (v2 >> 32)) & _M64
        return v0, v1, v2, v3

    for m in (*words, last):
        v3 ^= m
        v0, v1, v2, v3 = rounds(v0, v1, v2, v3, 2)
        v0 ^= m
    v2 ^= 0xFF
    v0, v1, v2, v3 = rounds(v0, v1, v2, v3, 4)
    return v0 ^ v1 ^ v2 ^ v3


# --------------------------------------------------------------------------------------
# Module-level forms of the VM ops, with the null check (INVALID_ARGUMENT).


def buffer_alloc(length: int, alignment: int = 0) -> VMBuffer:
    return VMBuffer.alloc(length, alignment)


def buffer_clone(src, offset: int, length: int, alignment: int = 0) -> VMBuffer:
    if src is None:
        raise _null("buffer.clone")
    return src.clone(offset, length, alignment)


def buffer_length(buf) -> int:
    if buf is None:
        raise _null("buffer.length")
    return buf.length


def buffer_copy(src, src_offset: int, dst, dst_offset: int, length: int) -> None:
    if src is None or dst is None:
        raise _null("buffer.copy")
    src.copy(src_offset, dst, dst_offset, length)


def buffer_compare(lhs, lhs_offset: int, rhs, rhs_offset: int, length: int) -> int:
    if lhs is None or rhs is None:
        raise _null("buffer.compare")
    return lhs.compare(lhs_offset, rhs, rhs_offset, length)


def buffer_hash(buf, offset: int, length: int) -> int:
    if buf is None:
        raise _null("buffer.hash")
    return buf.hash(offset, length)


def _make_op(method_name: str, mnemonic: str):
    method = getattr(VMBuffer, method_name)
    kind = mnemonic.split(".")[1]

    # Fixed arities (no *args packing): these sit on hot paths of generated code.
    if kind == "load":

        def op(buf, index):
            if buf is None:
                raise _null(mnemonic)
            return method(buf, index)

    elif kind == "store":

        def op(buf, index, value):
            if buf is None:
                raise _null(mnemonic)
            method(buf, index, value)

    else:

        def op(buf, index, count, value):
            if buf is None:
                raise _null(mnemonic)
            method(buf, index, count, value)

    op.__name__ = mnemonic.replace(".", "_")
    op.__qualname__ = op.__name__
    op.__doc__ = (
        f"`vm.{mnemonic}` on a possibly-null buffer (see VMBuffer.{method_name})."
    )
    return op


buffer_load_i8_u = _make_op("load_i8u", "buffer.load.i8.u")
buffer_load_i8_s = _make_op("load_i8s", "buffer.load.i8.s")
buffer_load_i16_u = _make_op("load_i16u", "buffer.load.i16.u")
buffer_load_i16_s = _make_op("load_i16s", "buffer.load.i16.s")
buffer_load_i32 = _make_op("load_i32", "buffer.load.i32")
buffer_load_i64 = _make_op("load_i64", "buffer.load.i64")
buffer_load_f32 = _make_op("load_f32", "buffer.load.f32")
buffer_load_f64 = _make_op("load_f64", "buffer.load.f64")
buffer_store_i8 = _make_op("store_i8", "buffer.store.i8")
buffer_store_i16 = _make_op("store_i16", "buffer.store.i16")
buffer_store_i32 = _make_op("store_i32", "buffer.store.i32")
buffer_store_i64 = _make_op("store_i64", "buffer.store.i64")
buffer_store_f32 = _make_op("store_f32", "buffer.store.f32")
buffer_store_f64 = _make_op("store_f64", "buffer.store.f64")
buffer_fill_i8 = _make_op("fill_i8", "buffer.fill.i8")
buffer_fill_i16 = _make_op("fill_i16", "buffer.fill.i16")
buffer_fill_i32 = _make_op("fill_i32", "buffer.fill.i32")
buffer_fill_i64 = _make_op("fill_i64", "buffer.fill.i64")
buffer_fill_f32 = _make_op("fill_f32", "buffer.fill.f32")
buffer_fill_f64 = _make_op("fill_f64", "buffer.fill.f64")

#: VM mnemonic -> module-level op (first argument the buffer, or None).
BUFFER_OPS = {
    "buffer.alloc": buffer_alloc,
    "buffer.clone": buffer_clone,
    "buffer.length": buffer_length,
    "buffer.copy": buffer_copy,
    "buffer.compare": buffer_compare,
    "buffer.hash": buffer_hash,
    **{
        f.__name__.replace("_", "."): f
        for f in (
            buffer_load_i8_u, buffer_load_i8_s, buffer_load_i16_u, buffer_load_i16_s,
            buffer_load_i32, buffer_load_i64, buffer_load_f32, buffer_load_f64,
            buffer_store_i8, buffer_store_i16, buffer_store_i32, buffer_store_i64,
            buffer_store_f32, buffer_store_f64,
            buffer_fill_i8, buffer_fill_i16, buffer_fill_i32, buffer_fill_i64,
            buffer_fill_f32, buffer_fill_f64,
        )
    },
}  # fmt: skip

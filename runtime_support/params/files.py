"""Memory-mapped parameter files and the typed errors the archive readers raise.

Every reader works on a `MappedFile`: the whole file mapped once (read-only by default,
shared-writable when opened for `io_parameters.scatter`), handed out as zero-copy
memoryview slices. Readers treat every offset and length they find in a file as untrusted
and check it with `Cursor` / `check_range` before touching the bytes, so a corrupt file
raises `VMError` (never `struct.error` or `IndexError`).
"""

from __future__ import annotations

import mmap
import os
import struct

from ..errors import StatusCode, VMError, quote_name


def file_error(code: StatusCode, path: str, message: str) -> VMError:
    return VMError(code, f"{path}: {message}")


class MappedFile:
    """One parameter file mapped into memory.

    `view` is a flat byte memoryview of the whole file (read-only unless `writable`).
    A read-only file is mapped with ACCESS_READ; a writable one with ACCESS_WRITE
    (writes go to the file).
    """

    def __init__(self, path, *, writable: bool = False) -> None:
        self.path = os.fspath(path)
        self.writable = bool(writable)
        try:
            f = open(self.path, "r+b" if writable else "rb")
        except FileNotFoundError:
            raise VMError(StatusCode.NOT_FOUND, f"failed to open file '{self.path}'") from None
        except PermissionError:
            raise VMError(
                StatusCode.PERMISSION_DENIED,
                f"failed to open file '{self.path}' for "
                f"{'reading and writing' if writable else 'reading'}: permission denied",
            ) from None
        except OSError as e:
            raise VMError(
                StatusCode.INVALID_ARGUMENT, f"failed to open file '{self.path}': {e.strerror}"
            ) from None
        with f:
            try:
                size = os.fstat(f.fileno()).st_size
                if size == 0:
                    self._mmap = None
                    self.view = memoryview(bytearray() if writable else b"")
                else:
                    access = mmap.ACCESS_WRITE if writable else mmap.ACCESS_READ
                    self._mmap = mmap.mmap(f.fileno(), size, access=access)
                    self.view = memoryview(self._mmap)
            except (OSError, ValueError) as e:
                raise VMError(
                    StatusCode.INVALID_ARGUMENT, f"failed to map file '{self.path}': {e}"
                ) from None
        self.size = self.view.nbytes

    def __repr__(self) -> str:
        mode = "rw" if self.writable else "ro"
        return f"<MappedFile {self.path!r} {self.size} bytes {mode}>"

    def slice(self, offset: int, length: int) -> memoryview:
        """Zero-copy `[offset, offset + length)` (OUT_OF_RANGE when outside the file)."""
        check_range(self.path, "file range", offset, length, self.size)
        return self.view[offset : offset + length]

    def flush(self) -> None:
        if self._mmap is not None and self.writable:
            self._mmap.flush()


def check_range(path: str, what: str, offset: int, length: int, limit: int) -> None:
    """OUT_OF_RANGE unless `0 <= offset`, `0 <= length` and `offset + length <= limit`."""
    if offset < 0 or length < 0 or offset + length > limit:
        raise file_error(
            StatusCode.OUT_OF_RANGE,
            path,
            f"{what} [{offset}, {offset + length}) (offset {offset}, length {length}) is out "
            f"of bounds of {limit} bytes",
        )


class Cursor:
    """Sequential little-endian reads over `view[start:end]`, bounds-checked."""

    def __init__(self, path: str, view: memoryview, start: int = 0, end: int | None = None):
        self.path = path
        self.view = view
        self.pos = start
        self.end = view.nbytes if end is None else end

    @property
    def remaining(self) -> int:
        return self.end - self.pos

    def need(self, length: int, what: str) -> int:
        if length < 0 or length > self.end - self.pos:
            raise file_error(
                StatusCode.OUT_OF_RANGE,
                self.path,
                f"truncated: {what} needs {length} bytes at offset {self.pos} but only "
                f"{max(0, self.end - self.pos)} remain",
            )
        pos = self.pos
        self.pos += length
        return pos

    def unpack(self, fmt: struct.Struct, what: str) -> tuple:
        return fmt.unpack_from(self.view, self.need(fmt.size, what))

    def u32(self, what: str) -> int:
        return _U32.unpack_from(self.view, self.need(4, what))[0]

    def u64(self, what: str) -> int:
        return _U64.unpack_from(self.view, self.need(8, what))[0]

    def slice(self, length: int, what: str) -> memoryview:
        """Zero-copy view of the next `length` bytes."""
        pos = self.need(length, what)
        return self.view[pos : pos + length]

    def skip(self, length: int, what: str) -> None:
        self.need(length, what)


_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")


def decode_key(raw) -> str:
    """Parameter keys are byte strings; non-UTF-8 bytes survive as surrogate escapes so
    a key from a module matches the same bytes in an archive. `raw` may be a memoryview
    (decoded in place, no bytes copy)."""
    return str(raw, "utf-8", "surrogateescape")


def key_label(key: str) -> str:
    """A key as an error message shows it: quoted and escaped by the project's one
    name quoter (a key may hold terminal control codes), cut short when very long."""
    if len(key) <= _LABEL_CHARS:
        return quote_name(key)
    return quote_name(key[:_LABEL_CHARS]) + f"... ({len(key)} characters)"


_LABEL_CHARS = 200

# Bounds on what one archive may make us allocate. A file is mapped, so its bytes cost
# nothing until read; but every entry becomes Python objects (hundreds of bytes each)
# and every key and metadata blob a Python copy. Without bounds a small sparse file, or
# many entries naming one long range, would cost memory the file never stored. IREE
# keeps views into the mapping and needs no such bounds; real archives sit far below.
MAX_ENTRIES = 1 << 18  # entries (tensors, kv pairs) one file may declare
MAX_COPIED_BYTES = 64 << 20  # keys + metadata blobs copied out of one file, together


def check_count(
    path: str,
    what: str,
    count: int,
    min_size: int,
    available: int,
    *,
    capped: bool = True,
) -> None:
    """A count read from a file: OUT_OF_RANGE when `count` records of at least
    `min_size` bytes cannot fit in `available` bytes (a claim past the file), then, if
    the records become objects (`capped`), RESOURCE_EXHAUSTED above MAX_ENTRIES.
    Checked before any loop over the records."""
    if count * min_size > available:
        raise file_error(
            StatusCode.OUT_OF_RANGE,
            path,
            f"truncated: {what} of {count} needs at least {min_size} bytes each but only "
            f"{available} bytes remain",
        )
    if capped and count > MAX_ENTRIES:
        raise file_error(
            StatusCode.RESOURCE_EXHAUSTED,
            path,
            f"{what} of {count} is more than the {MAX_ENTRIES} entries one archive may hold",
        )


class CopyBudget:
    """What one file's parse may copy out of the mapping (keys, metadata blobs)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.left = MAX_COPIED_BYTES

    def take(self, length: int, what: str) -> None:
        self.left -= length
        if self.left < 0:
            raise file_error(
                StatusCode.RESOURCE_EXHAUSTED,
                self.path,
                f"{what}: the archive's keys and metadata take more than "
                f"{MAX_COPIED_BYTES} bytes",
            )

    def key(self, raw: memoryview, what: str) -> str:
        self.take(raw.nbytes, what)
        return decode_key(raw)

    def blob(self, raw: memoryview, what: str) -> bytes:
        self.take(raw.nbytes, what)
        return bytes(raw)

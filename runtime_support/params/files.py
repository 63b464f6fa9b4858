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

from ..errors import StatusCode, VMError


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

    def bytes(self, length: int, what: str) -> bytes:
        pos = self.need(length, what)
        return bytes(self.view[pos : pos + length])

    def skip(self, length: int, what: str) -> None:
        self.need(length, what)


_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")


def decode_key(raw: bytes) -> str:
    """Parameter keys are byte strings; non-UTF-8 bytes survive as surrogate escapes so
    a key from a module matches the same bytes in an archive."""
    return raw.decode("utf-8", errors="surrogateescape")

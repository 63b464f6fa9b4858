"""One parameter of an archive: file-backed bytes or a splat pattern.

A leaf the format readers (irpa, safetensors, gguf) and the index both import:
the index dispatches to the readers, the readers build entries.
"""

from __future__ import annotations

import numpy as np

from ..errors import StatusCode, VMError, one_line
from .files import MappedFile, key_label

class ParameterEntry:
    """One parameter. `file` is None for a splat (`pattern` repeated over `length`)."""

    __slots__ = ("key", "length", "file", "offset", "pattern", "metadata", "source")

    def __init__(
        self,
        key: str,
        length: int,
        *,
        file: MappedFile | None = None,
        offset: int = 0,
        pattern: bytes | None = None,
        metadata: bytes = b"",
        source: str = "",
    ) -> None:
        if (file is None) == (pattern is None):
            raise ValueError("a parameter entry has either a file or a splat pattern")
        if length < 0 or offset < 0:
            raise ValueError(f"parameter {key!r}: negative length or offset")
        if file is not None:
            # Readers check this with a typed error; this guards direct construction.
            if offset + length > file.size:
                raise VMError(
                    StatusCode.OUT_OF_RANGE,
                    f"{file.path}: parameter {key_label(key)} data [{offset}, "
                    f"{offset + length}) is out of bounds of the {file.size}-byte file",
                )
        elif not pattern:
            raise ValueError(f"parameter {key!r}: empty splat pattern")
        self.key = key
        self.length = length
        self.file = file
        self.offset = offset
        self.pattern = pattern
        self.metadata = metadata
        self.source = source or (file.path if file is not None else "")

    def __repr__(self) -> str:
        if self.file is None:
            return f"<ParameterEntry {self.key!r} splat {self.pattern.hex()} x {self.length}>"
        return (
            f"<ParameterEntry {self.key!r} {self.length} bytes at {self.offset} "
            f"of {self.file.path!r}>"
        )

    @property
    def is_splat(self) -> bool:
        return self.file is None

    def data(self) -> memoryview:
        """Zero-copy view of a file-backed parameter's bytes (TypeError for a splat)."""
        if self.file is None:
            raise TypeError(f"parameter {self.key!r} is a splat; it has no stored bytes")
        return self.file.view[self.offset : self.offset + self.length]

    def read(self, offset: int = 0, length: int | None = None) -> np.ndarray:
        """`[offset, offset + length)` of the parameter as uint8 (a view for file data,
        a new array for splats). Out of range -> OUT_OF_RANGE."""
        if length is None:
            length = self.length - offset
        if offset < 0 or length < 0 or offset + length > self.length:
            raise VMError(
                StatusCode.OUT_OF_RANGE,
                f"parameter `{one_line(self.key)}` range out of bounds (offset={offset}, "
                f"length={length}, size={self.length})",
            )
        if self.file is not None:
            start = self.offset + offset
            if not length:
                return np.zeros(0, np.uint8)
            return np.frombuffer(self.file.view, np.uint8, length, start)
        return splat_bytes(self.pattern, offset, length)


def splat_bytes(pattern: bytes, offset: int, length: int) -> np.ndarray:
    """Bytes `[offset, offset + length)` of `pattern` repeated forever."""
    n = len(pattern)
    if length == 0:
        return np.zeros(0, np.uint8)
    start = offset % n
    reps = -(-(start + length) // n)
    return np.tile(np.frombuffer(pattern, np.uint8), reps)[start : start + length].copy()

"""HalFile: a `!hal.file` over host memory (`hal.ex.file.from_memory`)."""

from __future__ import annotations

import numpy as np

from ..errors import StatusCode, VMError

ACCESS_READ = 1
ACCESS_WRITE = 2


class HalFile:
    """A read-only file over `memory` (a buffer-protocol object; kept alive)."""

    def __init__(self, memory, access: int = ACCESS_READ, *, owner=None) -> None:
        self._view = memoryview(memory).cast("B")
        self.owner = owner
        self.access = access

    def __repr__(self) -> str:
        return f"<HalFile {self.length} bytes>"

    @property
    def length(self) -> int:
        return self._view.nbytes

    @property
    def readonly(self) -> bool:
        return not self.access & ACCESS_WRITE

    def _check(self, offset: int, length: int, what: str) -> None:
        if offset < 0 or length < 0 or offset + length > self.length:
            raise VMError(
                StatusCode.OUT_OF_RANGE,
                f"{what}: file range [{offset}, {offset + length}) out of bounds of "
                f"{self.length} bytes",
            )

    def read(self, offset: int, length: int) -> np.ndarray:
        """A uint8 view of `[offset, offset + length)`."""
        self._check(offset, length, "file read")
        return (
            np.frombuffer(self._view, np.uint8, length, offset) if length else np.zeros(0, np.uint8)
        )

    def write(self, offset: int, data) -> None:
        if self.readonly:
            raise VMError(StatusCode.PERMISSION_DENIED, "file write: the file is read-only")
        src = memoryview(data).cast("B")
        self._check(offset, src.nbytes, "file write")
        self._view[offset : offset + src.nbytes] = src

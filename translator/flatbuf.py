"""The vmfb's FlatBuffer reader: `runtime_support.flatbuf`'s checked reader, raising
`InvalidModuleError` with the absolute file offset of the problem."""

from __future__ import annotations

from runtime_support.flatbuf import SCALARS, Table
from runtime_support.flatbuf import FlatBuffer as _CheckedFlatBuffer
from translator.errors import InvalidModuleError

__all__ = ["FlatBuffer", "Table", "SCALARS"]


class FlatBuffer(_CheckedFlatBuffer):
    __slots__ = ()

    def error(self, reason: str, pos: int) -> InvalidModuleError:
        return InvalidModuleError(reason, offset=self.base + pos)

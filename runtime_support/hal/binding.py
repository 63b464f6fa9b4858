"""A command's buffer argument and a binding-table entry.

A leaf of plain types: the command buffer records them and the plan compiler
(plan.py, which the command buffer calls) reads them.
"""

from __future__ import annotations

from typing import NamedTuple

from .buffer import HalBuffer


class BufferRef(NamedTuple):
    """A command's buffer argument: a buffer, or a binding-table slot if buffer is None."""

    buffer: HalBuffer | None
    slot: int
    offset: int
    length: int


class Binding(NamedTuple):
    """One binding-table entry (queue.execute.indirect span element)."""

    buffer: HalBuffer | None
    offset: int
    length: int

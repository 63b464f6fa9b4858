"""The operands of the `vmvx` module's imports: IREE's `MAP_BUFFER_2D_*` mapping of a
`!vm.buffer` with an element offset and element strides (`Operand`), and the DAZ read of
an f32 operand (`daz`). Both the element ops (modules/vmvx.py) and the ukernels
(modules/vmvx_ukernels.py) map their operands here; a leaf, so that neither imports the
other for them.

An operand is mapped as IREE maps it: sizes and strides+1 must fit 32 bits, else
INVALID_ARGUMENT "buffer overflow for NAME"; the span (size0-1)*stride0 +
(size1-1)*stride1 + 1 elements from the offset, computed modulo 2**64, must lie in the
buffer, else OUT_OF_RANGE; an output needs a mutable buffer, else PERMISSION_DENIED.
Beyond IREE, every element a loop would touch must lie in the buffer, and a tile whose
zero or overlapping strides make it more than 2**24 elements and more than its buffer
holds is RESOURCE_EXHAUSTED (modules/vmvx.py's docstring says why).
"""

from __future__ import annotations

import numpy as np

from ..errors import StatusCode, VMError
from ..vm.buffer import VMBuffer

M64 = (1 << 64) - 1
_HIGH32 = 0xFFFFFFFF00000000
_TINY32 = np.float32(2.0**-126)
# Elements an operand whose strides revisit elements (zero or overlapping strides) may
# span beyond its buffer's own element count: every one costs an index (8 bytes).
_MAX_REPEATED = 1 << 24
_DTYPES = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def daz(x):
    """DAZ: a denormal operand reads as a zero of its sign."""
    return np.where(np.abs(x) < _TINY32, x * np.float32(0), x)


def signed64(v: int) -> int:
    """`v` (taken modulo 2**64) as a signed 64-bit value."""
    return v - (1 << 64) if v >> 63 else v


class Operand:
    """One mapped 2-D operand: its elements as a flat numpy view and the element indices
    (relative to that view) the row-major loop visits."""

    __slots__ = ("array", "index", "flat_start", "buffer")

    def __init__(self, where, name, buf, elem, offset, s0, s1, size0, size1, write):
        overflow = 0
        size0, size1, s0, s1 = size0 & M64, size1 & M64, s0 & M64, s1 & M64
        overflow |= (size0 & _HIGH32) | (size1 & _HIGH32)
        overflow |= ((s0 + 1) & _HIGH32) | ((s1 + 1) & _HIGH32)
        last = ((size0 - 1) * s0 + (size1 - 1) * s1) & M64
        length = ((last + 1) * elem) & M64
        byte_offset = (elem * (offset & M64)) & M64
        if overflow:
            raise VMError(StatusCode.INVALID_ARGUMENT, f"{where}: buffer overflow for {name}")
        if not isinstance(buf, VMBuffer):
            what = "null" if buf is None else type(buf).__name__
            raise VMError(
                StatusCode.INVALID_ARGUMENT, f"{where}: argument '{name}' is {what}; expected !vm.buffer"
            )
        if write and buf.readonly:
            raise VMError(
                StatusCode.PERMISSION_DENIED,
                f"{where}: {name}: buffer is read-only and cannot be mapped for mutation",
            )
        byte_offset &= ~(elem - 1)
        length &= ~(elem - 1)
        end = (byte_offset + length) & M64
        if end > buf.length or byte_offset > buf.length:
            raise VMError(
                StatusCode.OUT_OF_RANGE,
                f"{where}: {name}: out-of-bounds access (offset={byte_offset}, length={length}, "
                f"buffer length={buf.length})",
            )
        count = (buf.length - byte_offset) // elem
        elements = size0 * size1
        if elements > max(count, _MAX_REPEATED):
            # (only strides that revisit elements get here: a zero or overlapping stride)
            raise VMError(
                StatusCode.RESOURCE_EXHAUSTED,
                f"{where}: {name}: a {size0}x{size1} tile ({elements} elements) with strides "
                f"({signed64(s0)}, {signed64(s1)}) revisits the {count} elements its buffer "
                f"holds from the offset; pyree maps at most {max(count, _MAX_REPEATED)} "
                f"elements per operand (IREE would loop over all {elements})",
            )
        if elements:
            rows = np.arange(size0, dtype=np.int64)[:, None] * signed64(s0)
            cols = np.arange(size1, dtype=np.int64)[None, :] * signed64(s1)
            index = rows + cols
        else:  # (an empty tile: no index per row or column of the other size)
            index = np.empty((size0, size1), np.int64)
        if index.size and (index.min() < 0 or index.max() >= count):
            raise VMError(
                StatusCode.OUT_OF_RANGE,
                f"{where}: {name}: its strides ({signed64(s0)}, {signed64(s1)}) reach "
                f"outside the {buf.length}-byte buffer",
            )
        self.buffer = buf
        dtype = _DTYPES[elem]
        self.array = np.frombuffer(buf.data, dtype, count, byte_offset) if count else np.zeros(0, dtype)
        self.index = index

    def addresses(self, elem: int) -> np.ndarray:
        """Host address of each element the loop visits, in loop order."""
        base = self.array.__array_interface__["data"][0]
        return base + self.index.ravel() * elem


__all__ = ["M64", "Operand", "daz", "signed64"]

"""HalBufferView: a buffer with a shape, an element type and an encoding."""

from __future__ import annotations

import numpy as np

import runtime_support.hal.element_types as element_types
from .buffer import Allocation, HalBuffer, USAGE_DEFAULT

_DENSE = element_types.ENCODING_DENSE_ROW_MAJOR


class HalBufferView:
    """A `!hal.buffer_view`. The shape is a tuple of ints."""

    __slots__ = ("buffer", "shape", "element_type", "encoding_type", "__weakref__")

    def __init__(
        self,
        buffer: HalBuffer,
        shape,
        element_type: int,
        encoding_type: int = element_types.ENCODING_DENSE_ROW_MAJOR,
    ) -> None:
        self.buffer = buffer
        self.shape = tuple(map(int, shape))  # (a generator here costs ~1 us per view)
        self.element_type = element_type & 0xFFFFFFFF
        self.encoding_type = encoding_type & 0xFFFFFFFF

    @classmethod
    def trusted(cls, buffer: HalBuffer, shape: tuple, element_type: int) -> "HalBufferView":
        """A dense row-major view from values already known to be well formed (a tuple of
        Python ints, a u32 element type): the per-call path of export arguments."""
        view = cls.__new__(cls)
        view.buffer = buffer
        view.shape = shape
        view.element_type = element_type
        view.encoding_type = _DENSE
        return view

    def __repr__(self) -> str:
        dims = "x".join(str(d) for d in self.shape)
        name = element_types.element_type_name(self.element_type)
        return f"<HalBufferView {dims}{'x' if dims else ''}{name}>"

    @property
    def rank(self) -> int:
        return len(self.shape)

    def dim(self, index: int) -> int:
        """Dimension `index`; 0 when out of range (as the C runtime answers)."""
        return self.shape[index] if 0 <= index < len(self.shape) else 0

    @property
    def element_count(self) -> int:
        count = 1
        for d in self.shape:
            count *= d
        return count

    @property
    def byte_length(self) -> int:
        """Bytes the dense contents occupy (sub-byte types packed)."""
        return (self.element_count * element_types.bit_count(self.element_type) + 7) // 8

    @property
    def dtype(self) -> np.dtype:
        return element_types.to_numpy_dtype(self.element_type)

    def numpy_view(self) -> np.ndarray:
        """Zero-copy numpy array over the buffer contents (dense row-major)."""
        return self.buffer.numpy_view(self.dtype, self.shape)

    def to_numpy(self) -> np.ndarray:
        """A copy of the contents as a numpy array."""
        return self.numpy_view().copy()

    @classmethod
    def from_numpy(
        cls, array, allocator=None, *, element_type: int | None = None, usage: int = USAGE_DEFAULT
    ) -> "HalBufferView":
        """A new view holding a copy of `array` (dense row-major). The copy is never the
        caller's memory: see Allocation.copy_of."""
        array = np.asarray(array)
        if not array.flags.c_contiguous:  # (ascontiguousarray would make 0-d arrays 1-d)
            array = array.copy(order="C")
        if element_type is None:
            element_type = element_types.from_numpy_dtype(array.dtype)
        if allocator is not None:
            buffer = allocator.allocate_copy(array, 0, usage)
        else:
            buffer = HalBuffer.over(Allocation.copy_of(array), 0, usage)
        return cls(buffer, array.shape, element_type, _DENSE)

"""HalAllocator: the local CPU device's heap allocator (host memory)."""

from __future__ import annotations

from ..errors import StatusCode, VMError
from .buffer import (
    USAGE_SHARING_IMMUTABLE,
    WHOLE_BUFFER,
    Allocation,
    HalBuffer,
    buffer_copy_of,
    fresh_buffer,
)


class HalAllocator:
    """A `!hal.allocator`. Buffers are 64-byte aligned, zero-filled host memory."""

    def __init__(self, device=None) -> None:
        self.device = device
        self.bytes_allocated = 0

    def __repr__(self) -> str:
        return f"<HalAllocator of {self.device!r}>"

    def allocate(self, memory_types: int, usage: int, size: int) -> HalBuffer:
        if size < 0:
            raise VMError(StatusCode.INVALID_ARGUMENT, f"allocation size {size} is negative")
        buffer = fresh_buffer(size, memory_types, usage, self)
        self.bytes_allocated += size
        return buffer

    # queue.alloca: host memory has no stream order, so the same allocation.
    allocate_async = allocate

    def allocate_copy(self, array, memory_types: int, usage: int) -> HalBuffer:
        """A new buffer holding a copy of a C-contiguous numpy array's bytes (what
        iree.runtime's `allocate_buffer_copy` does; see Allocation.copy_of for why numpy
        arguments are copied rather than imported)."""
        if memory_types:
            buffer = HalBuffer.over(Allocation.copy_of(array), memory_types, usage, self)
        else:
            buffer = buffer_copy_of(array, usage, self)
        self.bytes_allocated += buffer.length
        return buffer

    def import_host(
        self,
        memory,
        readonly: bool,
        memory_types: int,
        usage: int,
        offset: int = 0,
        length: int = WHOLE_BUFFER,
        *,
        owner=None,
    ) -> HalBuffer | None:
        """Zero-copy import of `memory[offset:offset+length]` (a buffer-protocol object).

        Out-of-range → INVALID_ARGUMENT. Returns None when the import is not allowed:
        read-only memory requires SHARING_IMMUTABLE in `usage`. A buffer is writable only
        if the memory is and `usage` lacks SHARING_IMMUTABLE.
        """
        view = memoryview(memory).cast("B")
        total = view.nbytes
        if length == WHOLE_BUFFER:
            length = total - offset
        if offset < 0 or length < 0 or offset + length > total:
            raise VMError(
                StatusCode.INVALID_ARGUMENT,
                f"import range [{offset}, {offset + length}) is out of bounds of a "
                f"{total}-byte host buffer",
            )
        immutable = bool(usage & USAGE_SHARING_IMMUTABLE)
        if readonly and not immutable:
            return None
        return HalBuffer.wrap_host(
            view[offset : offset + length],
            readonly=readonly or immutable,
            memory_types=memory_types,
            usage=usage,
            owner=memory if owner is None else owner,
            allocator=self,
        )

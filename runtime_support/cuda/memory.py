"""Device memory of the `cuda` device: allocations, `!hal.buffer`s over them, the allocator.

A `CudaBuffer` is a `HalBuffer` (so every `hal` import that takes a buffer accepts it)
whose bytes live in GPU memory: `address` is a CUdeviceptr, what kernels receive as a
binding pointer. Its byte operations go through the driver on the device's stream:

- fill / write / copy_from (what queue.fill/update/copy and command buffers do) enqueue
  cuMemsetD{8,16,32}Async / cuMemcpyHtoDAsync / cuMemcpyDtoDAsync and return at once;
- reads by the host (results, hal.buffer.load, queue.write to a file) first wait for the
  stream, then copy device -> host (cuMemcpyDtoH) into fresh host memory (staging).

Memory kinds follow IREE's cuda_allocator.c: DEVICE_LOCAL -> cuMemAlloc, HOST_LOCAL
(staging) -> page-locked host memory mapped into the device, DEVICE_LOCAL | HOST_VISIBLE
-> managed memory (cuMemAllocManaged, one address for host and GPU: what a CPU device
beside the GPU shares with it, `ManagedBuffer`), and a zero-byte request allocates 4
bytes so every buffer has a valid pointer. (IREE also prefetches managed memory to the
GPU, cuMemPrefetchAsync, a hint pycuda has no binding for: not done here.)
"""

from __future__ import annotations

import threading
import weakref

import numpy as np

from runtime_support.errors import StatusCode, VMError
from runtime_support.hal.allocator import HalAllocator
from runtime_support.hal.buffer import (
    PreserveCount,
    MEMORY_TYPE_DEVICE_LOCAL,
    MEMORY_TYPE_DEVICE_VISIBLE,
    MEMORY_TYPE_HOST_COHERENT,
    MEMORY_TYPE_HOST_LOCAL,
    MEMORY_TYPE_HOST_VISIBLE,
    USAGE_DEFAULT,
    USAGE_DISPATCH_INDIRECT_PARAMETERS,
    USAGE_DISPATCH_UNIFORM_READ,
    USAGE_SHARING_IMMUTABLE,
    WHOLE_BUFFER,
    HalBuffer,
)

# What device memory always allows besides the requested bits (no host mapping).
USAGE_CUDA = USAGE_DEFAULT | USAGE_DISPATCH_INDIRECT_PARAMETERS | USAGE_DISPATCH_UNIFORM_READ
MEMORY_TYPE_CUDA_DEVICE = MEMORY_TYPE_DEVICE_LOCAL | MEMORY_TYPE_DEVICE_VISIBLE
MEMORY_TYPE_CUDA_HOST = MEMORY_TYPE_HOST_LOCAL | MEMORY_TYPE_HOST_COHERENT | MEMORY_TYPE_DEVICE_VISIBLE

_DEVICE_LOCAL_BIT = MEMORY_TYPE_DEVICE_LOCAL & ~MEMORY_TYPE_DEVICE_VISIBLE
_MEMSET = {1: "memset_d8_async", 2: "memset_d16_async", 4: "memset_d32_async"}
# What a buffer reports besides the requested types, per allocation kind.
_REPORTED_TYPES = {
    "device": MEMORY_TYPE_CUDA_DEVICE, "async": MEMORY_TYPE_CUDA_DEVICE, "host": MEMORY_TYPE_CUDA_HOST,
    "managed": MEMORY_TYPE_CUDA_DEVICE | MEMORY_TYPE_HOST_VISIBLE | MEMORY_TYPE_HOST_COHERENT,
}


def memory_kind(memory_types: int) -> str:
    """Which driver memory a request gets (IREE's cuda_allocator.c): host-visible memory
    the device need not own (readback staging) is page-locked host memory; device-local
    and host-visible is managed; everything else device-local is cuMemAlloc'd."""
    host_visible = bool(memory_types & MEMORY_TYPE_HOST_VISIBLE)
    device_local = bool(memory_types & _DEVICE_LOCAL_BIT)
    if host_visible:
        return "managed" if device_local else "host"
    return "device"


def _free_quietly(free) -> None:
    try:
        free()
    except Exception:  # noqa: BLE001 - a collected buffer has nobody to report to
        pass


class DeviceAllocation(PreserveCount):
    """One driver allocation: its device pointer, size and preserve count.

    `handle` keeps the driver's object alive (pycuda frees cuMemAlloc'd memory and
    page-locked memory when it is released). A stream-ordered allocation has a `free`
    callable instead (cuMemFreeAsync): queue.dealloca calls it in queue order, and if the
    program never deallocates it (a result returned to the caller), it runs when the
    allocation is collected.
    """

    __slots__ = ("device", "handle", "address", "length", "kind", "preserve_count", "_finalizer", "__weakref__")

    readonly = False
    owner = None
    _lock = threading.Lock()

    def __init__(self, device, handle, address: int, length: int, kind: str, free=None) -> None:
        self.device = device
        self.handle = handle
        self.address = int(address)
        self.length = length
        self.kind = kind  # "device", "host" (page-locked, mapped), "managed" or "async" (stream-ordered)
        self.preserve_count = 1
        self._finalizer = None
        if free is not None:
            self._finalizer = weakref.finalize(self, _free_quietly, free)
            self._finalizer.atexit = False  # the driver may be gone by then

    @property
    def array(self) -> np.ndarray:
        """The host view of managed memory (HalBuffer's host methods read it)."""
        if self.kind != "managed":
            raise VMError(StatusCode.INTERNAL, f"{self.kind} memory of the cuda device has no host view")
        return self.handle

    def release(self) -> None:
        """queue.dealloca: a stream-ordered allocation is freed now, in stream order (its
        errors raised); others are freed with their last reference, as in IREE."""
        finalizer, self._finalizer = self._finalizer, None
        detached = finalizer.detach() if finalizer is not None else None
        if detached is not None:
            _, _, (free,), _ = detached
            free()


class CudaBuffer(HalBuffer):
    """A `!hal.buffer` over device memory (`[offset, offset + length)` of an allocation)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"<CudaBuffer {self.length} bytes at device 0x{self.address:x} types=0x{self.memory_types:x}>"

    @property
    def device(self):
        return self.allocation.device

    # -- stream-ordered operations (queue work, command buffers) -------------------------

    def fill(self, offset: int, length: int, pattern: int, pattern_length: int) -> None:
        if pattern_length not in _MEMSET:
            raise VMError(StatusCode.INVALID_ARGUMENT, f"fill pattern length {pattern_length} not 1, 2 or 4")
        offset, length = self.check_range(offset, length, "fill")
        if offset % pattern_length or length % pattern_length:
            raise VMError(
                StatusCode.INVALID_ARGUMENT,
                f"fill offset {offset} and length {length} must be multiples of the "
                f"pattern length {pattern_length}",
            )
        if length:
            value = pattern & ((1 << (8 * pattern_length)) - 1)
            self.device.memset(self.address + offset, value, pattern_length, length // pattern_length)

    def write(self, offset: int, data) -> None:
        source = memoryview(data).cast("B")
        offset, length = self.check_range(offset, source.nbytes, "write")
        if length:
            self.device.copy_host_to_device(self.address + offset, source)

    def copy_from(self, target_offset: int, source: HalBuffer, source_offset: int, length: int) -> None:
        source_offset, length = source.check_range(source_offset, length, "copy source")
        target_offset, _ = self.check_range(target_offset, length, "copy target")
        if not length:
            return
        if isinstance(source, CudaBuffer):
            self.device.copy_device_to_device(self.address + target_offset, source.address + source_offset, length)
        else:  # host memory (a `!vm.buffer` import, a file): uploaded
            self.device.copy_host_to_device(self.address + target_offset, source.bytes_view(source_offset, length))

    # -- host reads and writes (synchronous) ---------------------------------------------

    def bytes_view(self, offset: int = 0, length: int = WHOLE_BUFFER) -> np.ndarray:
        """A host copy of a range (after the stream's pending work): staging for reads."""
        offset, length = self.check_range(offset, length, "view")
        out = np.empty(length, np.uint8)
        if length:
            self.device.copy_device_to_host(out, self.address + offset)
        return out

    def store(self, value: int, offset: int, length: int) -> None:
        if not 1 <= length <= 4:
            raise VMError(StatusCode.INVALID_ARGUMENT, f"store length {length} not in 1..4")
        self.check_range(offset, length, "store")
        self.device.copy_host_to_device(
            self.address + offset, (value & ((1 << (8 * length)) - 1)).to_bytes(length, "little"), sync=True
        )

    def release(self) -> None:
        self.allocation.release()


class ManagedBuffer(CudaBuffer):
    """A `!hal.buffer` over managed memory, which a local (CPU) device beside the GPU uses
    too: its `address` is both the host and the device pointer.

    Who touches it decides how. Work the cuda device issues (its queue, its command
    buffers: the device's context is current on this thread) goes on the stream as for
    any CudaBuffer; anything else (a CPU queue's fill or copy, the host reading a result)
    first waits for the stream's pending work, then touches the memory directly, with no
    staging copy. Fences order whole queue operations across devices, and the cuda
    queue signals only once the GPU is done, so a CPU kernel never reads it mid-kernel.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return f"<ManagedBuffer {self.length} bytes at 0x{self.address:x} types=0x{self.memory_types:x}>"

    def _from_host(self, what: str) -> bool:
        """True when the host does this access itself (after the stream's work)."""
        device = self.device
        if device.is_current_here():
            return False
        device.synchronize(what)
        return True

    def fill(self, offset, length, pattern, pattern_length) -> None:
        if self._from_host("a host fill"):
            return HalBuffer.fill(self, offset, length, pattern, pattern_length)
        return CudaBuffer.fill(self, offset, length, pattern, pattern_length)

    def write(self, offset, data) -> None:
        if self._from_host("a host write"):
            return HalBuffer.write(self, offset, data)
        return CudaBuffer.write(self, offset, data)

    def copy_from(self, target_offset, source, source_offset, length) -> None:
        if self._from_host("a host copy"):
            return HalBuffer.copy_from(self, target_offset, source, source_offset, length)
        return CudaBuffer.copy_from(self, target_offset, source, source_offset, length)

    def bytes_view(self, offset: int = 0, length: int = WHOLE_BUFFER) -> np.ndarray:
        self.device.synchronize("a host read")
        return HalBuffer.bytes_view(self, offset, length)

    def load(self, offset: int, length: int) -> int:
        self.device.synchronize("a host read")
        return HalBuffer.load(self, offset, length)

    def store(self, value: int, offset: int, length: int) -> None:
        self.device.synchronize("a host write")
        return HalBuffer.store(self, value, offset, length)


class CudaAllocator(HalAllocator):
    """The `!hal.allocator` of a `cuda` device (every method is its own)."""

    host_memory = False  # abi.py: numpy arguments go through allocate_copy, not host storage
    # hal.allocator.select: it can allocate memory local (host) devices use too (managed).
    shares_with_host = True

    def __repr__(self) -> str:
        return f"<CudaAllocator of {self.device!r}>"

    def _buffer(self, allocation: DeviceAllocation, size: int, memory_types: int, usage: int) -> CudaBuffer:
        base = _REPORTED_TYPES[allocation.kind]
        buffer = (ManagedBuffer if allocation.kind == "managed" else CudaBuffer)(
            allocation, 0, size, memory_types=(memory_types | base), allowed_usage=usage | USAGE_CUDA, allocator=self
        )
        self.bytes_allocated += size
        return buffer

    def allocate(self, memory_types: int, usage: int, size: int) -> CudaBuffer:
        if size < 0:
            raise VMError(StatusCode.INVALID_ARGUMENT, f"allocation size {size} is negative")
        kind = memory_kind(memory_types)
        allocation = self.device.allocate(size, host=kind == "host", managed=kind == "managed")
        return self._buffer(allocation, size, memory_types, usage)

    def allocate_async(self, memory_types: int, usage: int, size: int) -> CudaBuffer:
        """queue.alloca: stream-ordered where the driver has memory pools and the memory
        is not host-visible (IREE's rule: pools give device-only memory), else as allocate."""
        if size < 0:
            raise VMError(StatusCode.INVALID_ARGUMENT, f"allocation size {size} is negative")
        if memory_types & MEMORY_TYPE_HOST_VISIBLE:
            return self.allocate(memory_types, usage, size)
        return self._buffer(self.device.allocate(size, stream_ordered=True), size, memory_types, usage)

    def allocate_copy(self, array, memory_types: int, usage: int) -> CudaBuffer:
        """A device buffer holding a copy of a C-contiguous numpy array (numpy arguments)."""
        source = memoryview(np.ascontiguousarray(array)).cast("B")
        buffer = self.allocate(memory_types | MEMORY_TYPE_DEVICE_LOCAL, usage, source.nbytes)
        if source.nbytes:
            self.device.copy_host_to_device(buffer.address, source, sync=True)
        return buffer

    def import_host(self, memory, readonly, memory_types, usage, offset=0, length=WHOLE_BUFFER, *, owner=None):
        """Host memory imported as immutable (SHARING_IMMUTABLE: constants in the module's
        rodata) is copied into a device allocation: nothing may change either copy. Writable memory would have to alias
        (IREE registers it with cuMemHostRegister), which this device does not do, so it
        answers None: a `try` import then uploads through a device allocation, as IREE's
        compiled programs do when an import is refused. Out-of-range is INVALID_ARGUMENT."""
        total = memoryview(memory).nbytes
        if length == WHOLE_BUFFER:
            length = total - offset
        if offset < 0 or length < 0 or offset + length > total:
            raise VMError(
                StatusCode.INVALID_ARGUMENT,
                f"import range [{offset}, {offset + length}) is out of bounds of a {total}-byte host buffer",
            )
        if not usage & USAGE_SHARING_IMMUTABLE:
            return None
        return self.allocate_copy(np.frombuffer(memoryview(memory).cast("B")[offset : offset + length], np.uint8), memory_types, usage)


__all__ = ["CudaAllocator", "CudaBuffer", "DeviceAllocation", "ManagedBuffer", "memory_kind"]

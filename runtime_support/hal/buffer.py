"""HalBuffer: host memory with a stable address, shared by the VM and native kernels.

A buffer is a byte range `[offset, offset + length)` of an `Allocation`. Allocations own
their storage (a 64-byte aligned numpy array) or borrow it zero-copy from host memory
(a `!vm.buffer`'s bytes); subspans share the allocation. `address` is the absolute
address of the buffer's first byte, what kernels receive as a binding pointer.
"""

from __future__ import annotations

import ctypes
import sys
import threading
from collections import deque

import numpy as np

from ..errors import StatusCode, VMError
from ..vm.limits import allocating, exhausted

# Memory types (hal-abi.md §B.3).
MEMORY_TYPE_OPTIMAL = 0x01
MEMORY_TYPE_HOST_VISIBLE = 0x02
MEMORY_TYPE_HOST_COHERENT = 0x04
MEMORY_TYPE_HOST_CACHED = 0x08
MEMORY_TYPE_HOST_LOCAL = 0x46
MEMORY_TYPE_DEVICE_VISIBLE = 0x10
MEMORY_TYPE_DEVICE_LOCAL = 0x30
# Every local-CPU buffer is host- and device-accessible, so it reports all of these.
MEMORY_TYPE_LOCAL_CPU = MEMORY_TYPE_HOST_LOCAL | MEMORY_TYPE_DEVICE_LOCAL  # 0x76

# Buffer usage (§B.4).
USAGE_TRANSFER_SOURCE = 0x1
USAGE_TRANSFER_TARGET = 0x2
USAGE_TRANSFER = 0x3
USAGE_DISPATCH_INDIRECT_PARAMETERS = 0x100
USAGE_DISPATCH_UNIFORM_READ = 0x200
USAGE_DISPATCH_STORAGE_READ = 0x400
USAGE_DISPATCH_STORAGE_WRITE = 0x800
USAGE_DISPATCH_STORAGE = 0xC00
USAGE_DISPATCH_IMAGE_READ = 0x1000
USAGE_DISPATCH_IMAGE_WRITE = 0x2000
USAGE_SHARING_EXPORT = 0x10000
USAGE_SHARING_REPLICATE = 0x20000
USAGE_SHARING_CONCURRENT = 0x40000
USAGE_SHARING_IMMUTABLE = 0x80000
USAGE_MAPPING_SCOPED = 0x1000000
USAGE_MAPPING_PERSISTENT = 0x2000000
USAGE_MAPPING_OPTIONAL = 0x4000000
USAGE_MAPPING_ACCESS_RANDOM = 0x8000000
USAGE_MAPPING_ACCESS_SEQUENTIAL_WRITE = 0x10000000
USAGE_DEFAULT = USAGE_TRANSFER | USAGE_DISPATCH_STORAGE  # 0xC03
# What host memory on the local CPU device always allows besides the requested bits.
USAGE_LOCAL_CPU = (
    USAGE_DEFAULT
    | USAGE_DISPATCH_INDIRECT_PARAMETERS
    | USAGE_DISPATCH_UNIFORM_READ
    | USAGE_MAPPING_SCOPED
    | USAGE_MAPPING_PERSISTENT
    | USAGE_MAPPING_ACCESS_RANDOM
    | USAGE_MAPPING_ACCESS_SEQUENTIAL_WRITE
)

WHOLE_BUFFER = -1
ALIGNMENT = 64

_U8 = np.dtype(np.uint8)
# Requests below this size skip the memory-limit look-up (vm/limits.py skips far larger
# ones too); a MemoryError is still RESOURCE_EXHAUSTED.
_UNCHECKED = 1 << 20


def _exported_address(
    array: np.ndarray, _addressof=ctypes.addressof, _at=ctypes.c_char.from_buffer
) -> int:
    """Address of a writable, non-empty numpy array's first byte through the buffer
    protocol (about 4x cheaper than `array.ctypes.data`)."""
    return _addressof(_at(array))


def _data_field_offset() -> int | None:
    """Where a numpy array object keeps its data pointer (`PyArrayObject.data`, the
    first field after the object header), found by looking at two arrays; None when
    this interpreter or numpy does not lay arrays out that way (ids are not addresses,
    another layout), and the buffer protocol is used instead."""
    if sys.implementation.name != "cpython":  # pragma: no cover - ids are addresses there
        return None
    probes = [np.zeros(n, np.uint8) for n in (80, 4160)]
    for offset in range(8, 72, 8):
        try:
            if all(
                ctypes.c_void_p.from_address(id(a) + offset).value == _exported_address(a)
                for a in probes
            ):
                return offset
        except (ValueError, OverflowError):  # pragma: no cover - not CPython
            return None
    return None  # pragma: no cover


_DATA_OFFSET = _data_field_offset()


if _DATA_OFFSET is not None:

    def _writable_address(array: np.ndarray, _at=ctypes.c_void_p.from_address) -> int:
        """Address of a fresh numpy array's first byte, read from the array object's
        data pointer: a new array's first buffer export (ctypes' from_buffer) makes
        numpy build and later free its buffer info, which costs more than the array."""
        return _at(id(array) + _DATA_OFFSET).value

else:  # pragma: no cover
    _writable_address = _exported_address


def aligned_empty(shape, dtype, alignment: int = ALIGNMENT) -> np.ndarray:
    """An uninitialised numpy array whose data is `alignment`-aligned (for zero-copy
    arguments: ModuleContext.wrap_array)."""
    dtype = np.dtype(dtype)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    count = 1
    for d in shape:
        count *= d
    storage = Allocation.allocate(count * dtype.itemsize, alignment, zero=False).array
    return storage.view(dtype).reshape(shape)


class PreserveCount:
    """The preserve count of an allocation (host or device memory): `preserve_count` and
    the class's `_lock` come from the class that mixes this in."""

    __slots__ = ()

    def preserve(self) -> None:
        with self._lock:
            self.preserve_count += 1

    def discard(self) -> bool:
        """Drops one owner; True if it was the last one."""
        with self._lock:
            last = self.preserve_count == 1
            if self.preserve_count > 0:
                self.preserve_count -= 1
            return last

    def is_terminal(self) -> bool:
        with self._lock:
            return self.preserve_count == 1


class Allocation(PreserveCount):
    """The storage under one or more buffers, with its preserve count.

    `array` is a 1-D uint8 numpy array over the bytes (owned or borrowed); `owner` keeps
    borrowed memory alive.
    """

    __slots__ = (
        "array",
        "owner",
        "readonly",
        "preserve_count",
        "address",  # absolute address of the first byte (a slot: read per binding)
        "__weakref__",
    )

    # One lock for every allocation's preserve count: taken only by preserve/discard (rare,
    # never nested), and a lock per allocation cost a lock object per call argument.
    _lock = threading.Lock()

    def __init__(
        self, array: np.ndarray, *, owner=None, readonly: bool = False, address: int | None = None
    ) -> None:
        self.array = array
        # numpy never moves an array's data; `array.ctypes` builds a new object per access
        # (~1 us), and every dispatch binding asks for the address.
        self.address = int(array.ctypes.data) if address is None else address
        self.owner = owner
        self.readonly = readonly
        self.preserve_count = 1

    @classmethod
    def allocate(cls, size: int, alignment: int = ALIGNMENT, *, zero: bool = True) -> "Allocation":
        """New storage of `size` bytes whose address is `alignment`-aligned, zero-filled
        unless `zero` is False (for callers that overwrite every byte at once)."""
        # np.zeros is calloc'd (pages committed on first touch); the size comes from the
        # program, so it is checked against the memory limit first (sizes under
        # _UNCHECKED never reach the limit check: limits skips them too).
        if size < _UNCHECKED:
            try:
                raw = (np.zeros if zero else np.empty)(size + alignment, _U8)
            except MemoryError:
                raise exhausted("hal.allocator.allocate", size, f"{size}-byte buffer") from None
        else:
            with allocating("hal.allocator.allocate", size, f"{size}-byte buffer"):
                raw = (np.zeros if zero else np.empty)(size + alignment, dtype=np.uint8)
        base = _writable_address(raw)
        skew = (-base) % alignment
        return cls._trusted(raw[skew : skew + size], base + skew)

    @classmethod
    def _trusted(cls, array: np.ndarray, address: int) -> "Allocation":
        """Storage this runtime just allocated (`__init__` without the keyword handling:
        a call makes several)."""
        allocation = cls.__new__(cls)
        allocation.array = array
        allocation.address = address
        allocation.owner = None
        allocation.readonly = False
        allocation.preserve_count = 1
        return allocation

    @classmethod
    def copy_of(cls, array: np.ndarray) -> "Allocation":
        """New aligned storage holding a copy of a C-contiguous array's bytes.

        This is how numpy arguments enter the VM, as iree.runtime's `allocate_buffer_copy`
        does: never the caller's memory itself, because IREE-compiled programs may write
        into argument buffers (tied operands, iree-org/iree#16168) or keep them in globals.
        """
        size = array.nbytes
        raw = np.empty(size + ALIGNMENT, _U8)
        base = _writable_address(raw)
        skew = (-base) % ALIGNMENT
        storage = raw[skew : skew + size]
        if size:
            try:  # memoryview slice assignment: one memcpy, no numpy dispatch
                memoryview(storage)[:] = memoryview(array).cast("B")
            except (TypeError, ValueError, NotImplementedError):  # formats memoryview lacks
                storage[:] = array.reshape(-1).view(np.uint8)
        return cls._trusted(storage, base + skew)

    @property
    def exclusive_owner(self) -> bool:
        """True for storage this runtime allocated itself (not borrowed host memory)."""
        return self.owner is None and not self.readonly

    @classmethod
    def wrap(cls, memory, *, readonly: bool, owner=None) -> "Allocation":
        """Zero-copy storage over a buffer-protocol object (bytes, memoryview, ...)."""
        view = memoryview(memory).cast("B")
        array = np.frombuffer(view, dtype=np.uint8) if view.nbytes else np.zeros(0, np.uint8)
        if readonly and array.flags.writeable:
            array = array.view()
            array.flags.writeable = False
        return cls(array, owner=memory if owner is None else owner, readonly=readonly)

    @property
    def length(self) -> int:
        return int(self.array.shape[0])


# Fills up to this many bytes write a bytes object (~0.4 us) rather than a numpy view
# of the pattern's type (~0.9 us).
_SMALL_FILL = 64
_PATTERN_MASKS = {1: 0xFF, 2: 0xFFFF, 4: 0xFFFFFFFF}
_FILL_DTYPES = {1: np.dtype(np.uint8), 2: np.dtype("<u2"), 4: np.dtype("<u4")}


def _range_error(what: str, offset: int, length: int, limit: int) -> VMError:
    return VMError(
        StatusCode.OUT_OF_RANGE,
        f"{what}: range [{offset}, {offset + length}) (offset {offset}, length {length}) "
        f"is out of bounds of a {limit}-byte buffer",
    )


class HalBuffer:
    """A `!hal.buffer`: `[offset, offset + length)` of an allocation."""

    __slots__ = (
        "allocation",
        "offset",
        "length",
        "memory_types",
        "allowed_usage",
        "allocator",
        # absolute address of the first byte: allocation.address + offset, both fixed for
        # the buffer's lifetime (a slot, not a property: native plans read it per binding)
        "address",
        "__weakref__",
    )

    def __init__(
        self,
        allocation: Allocation,
        offset: int = 0,
        length: int | None = None,
        *,
        memory_types: int = MEMORY_TYPE_LOCAL_CPU,
        allowed_usage: int = USAGE_LOCAL_CPU,
        allocator=None,
    ) -> None:
        if length is None:
            length = allocation.length - offset
        if offset < 0 or length < 0 or offset + length > allocation.length:
            raise _range_error("buffer", offset, length, allocation.length)
        self.allocation = allocation
        self.offset = offset
        self.length = length
        self.address = allocation.address + offset
        self.memory_types = memory_types & 0xFFFFFFFF
        self.allowed_usage = allowed_usage & 0xFFFFFFFF
        self.allocator = allocator

    def __repr__(self) -> str:
        return (
            f"<HalBuffer {self.length} bytes at 0x{self.address:x} "
            f"types=0x{self.memory_types:x} usage=0x{self.allowed_usage:x}"
            f"{' readonly' if self.readonly else ''}>"
        )

    # -- construction ---------------------------------------------------------------------

    @classmethod
    def allocate(
        cls,
        size: int,
        memory_types: int = 0,
        usage: int = 0,
        *,
        allocator=None,
        alignment: int = ALIGNMENT,
    ) -> "HalBuffer":
        """A new zero-filled buffer. It reports the requested memory types and usage plus
        everything local CPU memory supports (asserts check for required bits)."""
        if size < 0:
            raise VMError(StatusCode.INVALID_ARGUMENT, f"negative allocation size {size}")
        return cls.over(Allocation.allocate(size, alignment), memory_types, usage, allocator)

    @classmethod
    def wrap_host(
        cls,
        memory,
        *,
        readonly: bool,
        memory_types: int = 0,
        usage: int = 0,
        owner=None,
        allocator=None,
    ) -> "HalBuffer":
        """Zero-copy buffer over host memory (a buffer-protocol object). Read-only memory
        gives a read-only buffer."""
        return cls(
            Allocation.wrap(memory, readonly=readonly, owner=owner),
            memory_types=memory_types | MEMORY_TYPE_LOCAL_CPU,
            allowed_usage=usage | USAGE_LOCAL_CPU,
            allocator=allocator,
        )

    @classmethod
    def over(
        cls, allocation: Allocation, memory_types: int, usage: int, allocator=None
    ) -> "HalBuffer":
        """A buffer spanning all of a fresh `allocation` (no range to check)."""
        buffer = cls.__new__(cls)
        buffer.allocation = allocation
        buffer.offset = 0
        buffer.length = allocation.array.shape[0]
        buffer.address = allocation.address
        buffer.memory_types = (memory_types | MEMORY_TYPE_LOCAL_CPU) & 0xFFFFFFFF
        buffer.allowed_usage = (usage | USAGE_LOCAL_CPU) & 0xFFFFFFFF
        buffer.allocator = allocator
        return buffer

    def subspan(self, offset: int, length: int) -> "HalBuffer":
        """A buffer over `[offset, offset + length)` of this one, sharing storage.
        `length` -1 means to the end. Range errors are OUT_OF_RANGE."""
        offset, length = self.check_range(offset, length, "subspan")
        return type(self)(  # (a CudaBuffer's subspan is a CudaBuffer)
            self.allocation,
            self.offset + offset,
            length,
            memory_types=self.memory_types,
            allowed_usage=self.allowed_usage,
            allocator=self.allocator,
        )

    # -- properties -----------------------------------------------------------------------

    @property
    def byte_length(self) -> int:
        return self.length

    @property
    def readonly(self) -> bool:
        return self.allocation.readonly

    def check_range(self, offset: int, length: int, what: str = "buffer") -> tuple[int, int]:
        """Validates a byte range of this buffer; resolves length -1 (to the end)."""
        if length == WHOLE_BUFFER:
            length = self.length - offset
        if offset < 0 or length < 0 or offset + length > self.length:
            raise _range_error(what, offset, length, self.length)
        return offset, length

    def _check_writable(self, what: str) -> None:
        if self.allocation.readonly:
            raise VMError(StatusCode.PERMISSION_DENIED, f"{what}: buffer is read-only")

    # -- byte access ----------------------------------------------------------------------

    def bytes_view(self, offset: int = 0, length: int = WHOLE_BUFFER) -> np.ndarray:
        """A uint8 numpy view of a range (read-only if the buffer is)."""
        offset, length = self.check_range(offset, length, "view")
        start = self.offset + offset
        return self.allocation.array[start : start + length]

    def read(self, offset: int = 0, length: int = WHOLE_BUFFER) -> bytes:
        return self.bytes_view(offset, length).tobytes()

    def write(self, offset: int, data) -> None:
        src = np.frombuffer(memoryview(data).cast("B"), dtype=np.uint8)
        self._check_writable("write")
        self.bytes_view(offset, len(src))[:] = src

    def fill(self, offset: int, length: int, pattern: int, pattern_length: int) -> None:
        """Repeats the low `pattern_length` (1, 2 or 4) bytes of `pattern`, little-endian."""
        if pattern_length != 4 and pattern_length != 1 and pattern_length != 2:
            raise VMError(
                StatusCode.INVALID_ARGUMENT, f"fill pattern length {pattern_length} not 1, 2 or 4"
            )
        size = self.length  # (check_range and _check_writable, inline: a decode loop's token)
        if length == WHOLE_BUFFER:
            length = size - offset
        if offset < 0 or length < 0 or offset + length > size:
            raise _range_error("fill", offset, length, size)
        if offset % pattern_length or length % pattern_length:
            raise VMError(
                StatusCode.INVALID_ARGUMENT,
                f"fill offset {offset} and length {length} must be multiples of the "
                f"pattern length {pattern_length}",
            )
        allocation = self.allocation
        if allocation.readonly:
            raise VMError(StatusCode.PERMISSION_DENIED, "fill: buffer is read-only")
        start = self.offset + offset  # (bytes_view's slice: the range is checked above)
        value = pattern & _PATTERN_MASKS[pattern_length]
        if length <= _SMALL_FILL:  # (a token or a flag: bytes through the memoryview)
            row = value.to_bytes(pattern_length, "little")
            allocation.array.data[start : start + length] = row * (length // pattern_length)
            return
        target = allocation.array[start : start + length]
        # One scalar store per element through a little-endian view (a memset/fill loop);
        # broadcasting a (pattern_length,) row over a (-1, pattern_length) byte view is
        # 25-60x slower, and models fill megabytes per call (padding, accumulators).
        target.view(_FILL_DTYPES[pattern_length])[:] = value

    def copy_from(
        self, target_offset: int, source: "HalBuffer", source_offset: int, length: int
    ) -> None:
        """Copies `length` bytes from `source` (overlap-safe)."""
        src = source.bytes_view(source_offset, length)
        self._check_writable("copy")
        dst = self.bytes_view(target_offset, length)
        dst[:] = src.copy() if source.allocation is self.allocation else src

    def load(self, offset: int, length: int) -> int:
        """Reads `length` (1..4) bytes little-endian, zero-extended (unsigned result)."""
        if not 1 <= length <= 4:
            raise VMError(StatusCode.INVALID_ARGUMENT, f"load length {length} not in 1..4")
        if offset < 0 or offset + length > self.length:  # (bytes_view's check, inline)
            raise _range_error("view", offset, length, self.length)
        start = self.offset + offset
        if length == 1:  # (a predicate read back each loop iteration: no slice, no bytes)
            return self.allocation.array.item(start)
        return int.from_bytes(self.allocation.array[start : start + length].tobytes(), "little")

    def store(self, value: int, offset: int, length: int) -> None:
        """Writes the low `length` (1..4) bytes of `value`, little-endian."""
        if not 1 <= length <= 4:
            raise VMError(StatusCode.INVALID_ARGUMENT, f"store length {length} not in 1..4")
        target = self.bytes_view(offset, length)
        self._check_writable("store")
        target[:] = np.frombuffer(
            (value & ((1 << (8 * length)) - 1)).to_bytes(length, "little"), np.uint8
        )

    def numpy_view(self, dtype, shape, offset: int = 0) -> np.ndarray:
        """A zero-copy numpy array of `shape` x `dtype` starting at byte `offset`."""
        dtype = np.dtype(dtype)
        shape = tuple(int(d) for d in shape)
        count = 1
        for d in shape:
            count *= d
        raw = self.bytes_view(offset, count * dtype.itemsize)
        return raw.view(dtype).reshape(shape)

    # -- allocation lifetime --------------------------------------------------------------

    def preserve(self) -> None:
        self.allocation.preserve()

    def discard(self) -> bool:
        return self.allocation.discard()

    def is_terminal(self) -> bool:
        return self.allocation.is_terminal()

    def release(self) -> None:
        """queue.dealloca: host memory is freed with the last reference instead."""


# -- the per-call constructors -------------------------------------------------------------
#
# A call makes a few buffers (argument copies, queue.alloca results); these build the
# Allocation and HalBuffer in one function, with what `Allocation.allocate`/`copy_of` and
# `HalBuffer.over` would compute, minus their call layers.

_new = object.__new__
_empty, _zeros = np.empty, np.zeros
# Argument copies up to this size go through bytes (one memcpy more, but ~100 ns less
# than a memoryview cast per call); larger ones are copied once.
_BYTES_COPY_MAX = 4096


def fresh_buffer(
    size: int, memory_types: int, usage: int, allocator, contents: bytes | None = None
) -> HalBuffer:
    """`HalBuffer.over(Allocation.allocate(size), memory_types, usage, allocator)`:
    a new zero-filled buffer, or one holding `contents` (`size` bytes) where given; the
    caller has checked that `size` >= 0.

    Small storage is recycled (see `_recycled`): a program's transient buffers (one
    queue.alloca per dispatch, dead two dispatches later) cost a memset instead of a
    numpy allocation, an address look-up and a slice."""
    if 0 < size <= _RECYCLE_MAX:
        pool = _recycled.get(size)
        if pool is not None:
            try:
                entry = pool.popleft()  # (atomic: no other thread sees it from here on)
            except IndexError:  # another thread holds the only entry
                entry = None
            if entry is not None:
                storage = entry[0]
                if _count(storage) == _FREE_STORAGE and _count(storage.base) == _FREE_BASE:
                    # zero-filled again, or written over at once (no zeros first)
                    entry[2][:] = entry[3] if contents is None else contents
                    pool.append(entry)
                    allocation = _new(Allocation)
                    allocation.array = storage
                    allocation.address = address = entry[1]
                    allocation.owner = None
                    allocation.readonly = False
                    allocation.preserve_count = 1
                    buffer = _new(HalBuffer)
                    buffer.allocation = allocation
                    buffer.offset = 0
                    buffer.length = size
                    buffer.address = address
                    buffer.memory_types = (memory_types | MEMORY_TYPE_LOCAL_CPU) & 0xFFFFFFFF
                    buffer.allowed_usage = (usage | USAGE_LOCAL_CPU) & 0xFFFFFFFF
                    buffer.allocator = allocator
                    return buffer
                if len(pool) < _RECYCLE_DEPTH - 1:  # still in use, may be free next round
                    pool.append(entry)
                # (else dropped: it outlived a whole round, held by the caller or a global)
        elif len(_recycled) < _RECYCLE_SIZES:
            pool = _recycled.setdefault(size, deque(maxlen=_RECYCLE_DEPTH))
        try:
            raw = _zeros(size + ALIGNMENT, _U8)
        except MemoryError:
            raise exhausted("hal.allocator.allocate", size, f"{size}-byte buffer") from None
        buffer = _aligned_buffer(raw, size, memory_types, usage, allocator)
        if pool is None and contents is None:
            return buffer
        storage = buffer.allocation.array
        view = memoryview(storage)
        if contents is not None:
            view[:] = contents
        if pool is not None:
            try:  # (one zero source per size, shared by its entries)
                zeros = pool[0][3]
            except IndexError:
                zeros = bytes(size)
            pool.append((storage, buffer.address, view, zeros))
        return buffer
    if size >= _UNCHECKED:
        buffer = HalBuffer.over(Allocation.allocate(size), memory_types, usage, allocator)
    else:
        try:
            raw = _zeros(size + ALIGNMENT, _U8)
        except MemoryError:
            raise exhausted("hal.allocator.allocate", size, f"{size}-byte buffer") from None
        buffer = _aligned_buffer(raw, size, memory_types, usage, allocator)
    if contents is not None and size:
        memoryview(buffer.allocation.array)[:] = contents
    return buffer


# -- recycled storage ------------------------------------------------------------------------
#
# Per small size, the storage arrays of the last few fresh buffers, each entry
# (storage, address, memoryview of storage, size zero bytes). An entry is handed out
# again only when its reference counts show that nothing but the entry holds the
# storage: no Allocation (so no buffer, subspan, plan or binding table), no memoryview
# or ctypes object over it, and no numpy view of it (numpy views reference the base
# array, counted second), which includes results handed to the caller zero-copy
# (abi.view_to_numpy). The entry holds neither the buffer, its allocation nor the base
# array, so it changes none of the counts view_to_numpy decides zero-copy by.
# Recycled storage is zero-filled again, as IREE's heap buffers are (its aligned host
# allocation goes through iree_allocator_malloc, a calloc with the system allocator).

# bytes: a memset costs less than numpy's allocation up to here, whose calloc memsets too
# below glibc's mmap threshold (128 KiB): a transient of a few tens of KiB (a small CNN's
# intermediate, allocated and deallocated by each call) is ~0.5 us cheaper recycled
_RECYCLE_MAX = 1 << 16
_RECYCLE_DEPTH = 8  # entries per size
_RECYCLE_SIZES = 64  # sizes tracked (a bound on the memory kept: 64 * 8 * 64 KiB)
_recycled: dict[int, deque] = {}
_count = sys.getrefcount


def _free_counts() -> tuple[int, int]:
    """The reference counts fresh_buffer reads for an entry that nothing else holds,
    measured through the same steps (interpreters differ in what their stack holds)."""
    raw = _zeros(2 * ALIGNMENT, _U8)
    storage = raw[ALIGNMENT : ALIGNMENT + 4]
    pool = deque([(storage, 0, memoryview(storage), bytes(4))])
    del raw, storage
    entry = pool.popleft()
    storage = entry[0]
    return _count(storage), _count(storage.base)


_FREE_STORAGE, _FREE_BASE = _free_counts()


def buffer_copy_of(array: np.ndarray, usage: int, allocator) -> HalBuffer:
    """`HalBuffer.over(Allocation.copy_of(array), 0, usage, allocator)` for a
    C-contiguous array (see Allocation.copy_of for why arguments are copied)."""
    size = array.nbytes
    if size > _BYTES_COPY_MAX:
        return HalBuffer.over(Allocation.copy_of(array), 0, usage, allocator)
    buffer = _aligned_buffer(_empty(size + ALIGNMENT, _U8), size, 0, usage, allocator)
    if size:
        memoryview(buffer.allocation.array)[:] = array.tobytes()
    return buffer


def buffer_copy_recycled(array: np.ndarray, usage: int, allocator) -> HalBuffer:
    """`buffer_copy_of`, small copies in recycled storage: a fresh_buffer (which takes
    it) holding the array's bytes. For the argument copies of
    converters without spares (abi.py: dynamic shapes copy theirs per call, and a spare
    needs a fixed shape); not for copies a spare may hold: a recycled entry holds its
    storage, which changes the counts keep_spare decides by."""
    size = array.nbytes
    if size > _BYTES_COPY_MAX:
        return HalBuffer.over(Allocation.copy_of(array), 0, usage, allocator)
    return fresh_buffer(size, 0, usage, allocator, array.tobytes())


def _aligned_buffer(
    raw: np.ndarray, size: int, memory_types: int, usage: int, allocator
) -> HalBuffer:
    """A whole-allocation buffer over the first ALIGNMENT-aligned `size` bytes of `raw`
    (which has ALIGNMENT bytes to spare), built as `HalBuffer.over` would build it."""
    base = _writable_address(raw)
    skew = -base % ALIGNMENT
    allocation = _new(Allocation)
    allocation.array = raw[skew : skew + size]
    allocation.address = base + skew
    allocation.owner = None
    allocation.readonly = False
    allocation.preserve_count = 1
    buffer = _new(HalBuffer)
    buffer.allocation = allocation
    buffer.offset = 0
    buffer.length = size
    buffer.address = allocation.address
    buffer.memory_types = (memory_types | MEMORY_TYPE_LOCAL_CPU) & 0xFFFFFFFF
    buffer.allowed_usage = (usage | USAGE_LOCAL_CPU) & 0xFFFFFFFF
    buffer.allocator = allocator
    return buffer

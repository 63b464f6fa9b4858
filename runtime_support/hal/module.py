"""HalModule: the `hal` import module over local CPU devices.

One method per `hal.*` import, declared beside it with `@vm_import` (runtime_support/vm/args.py):
its full name and cconv (together they make `IMPORTS`, the table the context resolves and
the translator checks against), which arguments are which ref types and which integers are
unsigned. Arguments arrive in cconv order as ARCHITECTURE.md describes: signed ints, refs as
objects or None, variadic spans as lists (tuples for multi-item tuples). A declared ref is
checked like the C module's `check_deref`: null (unless declared `.or_null`) or the wrong
type raises VMError INVALID_ARGUMENT naming the import and the argument; a declared `U32`
arrives masked; a `TEXT` arrives as `str`.

Queue operations run through the device's `LocalQueue`: at once when their wait fence is
reached, else when it is signaled later. Their errors fail the signal fence.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..errors import StatusCode, VMError
from ..vm import args as vm_args
from ..vm.buffer import VMBuffer
from ..vm.args import (
    DEVICE,
    HOST_BYTES,
    TEXT,
    U32,
    Each,
    Ref,
    import_module,
    vm_import,
)
from ..vm.numerics import M32, wrap_i32, wrap_i64
import runtime_support.hal.element_types as element_types
from .allocator import HalAllocator
from .buffer import HalBuffer, WHOLE_BUFFER, fresh_buffer
from .buffer_view import HalBufferView
from .channel import HalChannel
from .command_buffer import CATEGORY_TRANSFER, Binding, BufferRef, HalCommandBuffer
from .device import HalDevice, LocalDevice
from .executable import HalExecutable
from .fence import REACHED, Fence, wait_all
from .file import ACCESS_READ, HalFile


# Argument kinds of the hal imports.
ALLOCATOR = Ref(HalAllocator, "!hal.allocator")
BUFFER = Ref(HalBuffer, "!hal.buffer")
BUFFER_VIEW = Ref(HalBufferView, "!hal.buffer_view")
COMMAND_BUFFER = Ref(HalCommandBuffer, "!hal.command_buffer")
EXECUTABLE = Ref(HalExecutable, "!hal.executable")
FENCE = Ref(Fence, "!hal.fence")
FILE = Ref(HalFile, "!hal.file")
CHANNEL = Ref(HalChannel, "!hal.channel")
# The wait and signal fences every queue operation takes.
QUEUE_FENCES = {"wait_fence": FENCE.or_null, "signal_fence": FENCE.or_null}


def _invalid(name: str, message: str) -> VMError:
    return vm_args.invalid("hal", name, message)


def _host_range(
    data: memoryview, offset: int, length: int, name: str, code=StatusCode.OUT_OF_RANGE
):
    total = data.nbytes
    if length == WHOLE_BUFFER:
        length = total - offset
    if offset < 0 or length < 0 or offset + length > total:
        raise VMError(
            code,
            f"hal.{name}: range [{offset}, {offset + length}) out of bounds of a "
            f"{total}-byte !vm.buffer",
        )
    return data[offset : offset + length]


def _timeout_seconds(millis: int) -> float | None:
    """An unsigned timeout in milliseconds; 0xFFFFFFFF waits forever."""
    return None if millis == M32 else millis / 1000.0


def _message(message) -> str:
    """An assert's `!vm.buffer` message as text (checked as HOST_BYTES already)."""
    return bytes(vm_args.host_view(message)[0]).decode("utf-8", errors="replace")


def _trusted_view(buffer, shape: tuple, element_type: int, encoding_type: int) -> HalBufferView:
    """HalBufferView(buffer, shape, element_type, encoding_type) from values already in
    their final form (a tuple of ints, u32 codes)."""
    view = _new_object(HalBufferView)
    view.buffer = buffer
    view.shape = shape
    view.element_type = element_type
    view.encoding_type = encoding_type
    return view


_new_object = object.__new__


def _host_memory(device) -> bool:
    """Whether `device`'s allocations are host memory (every local device's)."""
    return getattr(device.allocator, "host_memory", True)


def _reaches(user, owner) -> bool:
    """Whether `user` can use memory `owner`'s allocator makes: its own, host memory
    between local devices, or a cuda device's managed memory from a local device."""
    if user is owner:
        return True
    if _host_memory(user):
        return _host_memory(owner) or getattr(owner.allocator, "shares_with_host", False)
    return False


def _dispatch_bindings(bindings) -> list[BufferRef]:
    return [BufferRef(buffer, slot, offset, length) for _, slot, buffer, offset, length in bindings]


@import_module("hal")
class HalModule:
    """The `hal` module for a fixed list of devices."""

    # Device classes accepted as `!hal.device`.
    DEVICE_TYPES: tuple[type, ...] = (HalDevice,)

    def __init__(
        self,
        devices: Sequence[LocalDevice],
        *,
        trace_sink: Callable[[str, list[HalBufferView]], None] | None = None,
    ) -> None:
        self.devices = list(devices)
        self.trace_sink = trace_sink

    @staticmethod
    def method_name(full_name: str) -> str:
        """`hal.buffer_view.create` → `buffer_view_create`."""
        return vm_args.method_name(full_name)

    # -- hal.ex ---------------------------------------------------------------------------

    @vm_import("hal.ex.file.from_memory", "0rIirIIi_r", device=DEVICE, access=U32, buffer=HOST_BYTES)
    def ex_file_from_memory(self, device, queue_affinity, access, buffer, offset, length, flags):
        name = "ex.file.from_memory"
        data, _ = vm_args.host_view(buffer)
        if access != ACCESS_READ:
            raise VMError(
                StatusCode.PERMISSION_DENIED,
                f"hal.{name}: access 0x{access:x} not allowed; "
                "memory files are read-only (READ = 1)",
            )
        return HalFile(_host_range(data, offset, length, name), ACCESS_READ, owner=buffer)

    # -- hal.allocator --------------------------------------------------------------------

    @vm_import("hal.allocator.select", "0iiICrID_rI", from_=Each(DEVICE, at=0, suffix=".device"))
    def allocator_select(self, memory_types, buffer_usage, flags, from_):
        if not from_:
            raise _invalid("allocator.select", "no devices/queues to select from")
        # The memory is used by every listed device: the first whose allocations all of
        # them can reach. Local devices share host memory; a cuda device's own memory
        # is its alone, but it can allocate managed memory local devices reach too.
        devices = [device for device, _ in from_]
        for device, queue_affinity in from_:
            if all(_reaches(other, device) for other in devices):
                return device, queue_affinity
        names = ", ".join(dict.fromkeys(getattr(d, "identifier", repr(d)) for d in devices))
        raise VMError(
            StatusCode.UNIMPLEMENTED,
            f"hal.allocator.select: no memory all of {names} can use (only local devices "
            "and one cuda device share memory: managed memory)",
        )

    @vm_import(
        "hal.allocator.allocate", "0rIiiI_r",
        allocator=ALLOCATOR, memory_types=U32, buffer_usage=U32,
    )
    def allocator_allocate(
        self, allocator, queue_affinity, memory_types, buffer_usage, allocation_size
    ):
        if allocation_size < 0:
            raise _invalid("allocator.allocate", f"negative allocation size {allocation_size}")
        return allocator.allocate(memory_types, buffer_usage, allocation_size)

    @vm_import(
        "hal.allocator.import", "0riIiirII_r",
        allocator=ALLOCATOR, memory_types=U32, buffer_usage=U32, source=HOST_BYTES,
    )
    def allocator_import(
        self, allocator, try_, queue_affinity, memory_types, buffer_usage, source, offset, length
    ):
        data, readonly = vm_args.host_view(source)
        buffer = allocator.import_host(
            data, readonly, memory_types, buffer_usage, offset, length, owner=source
        )
        if buffer is None and not try_:
            raise VMError(
                StatusCode.PERMISSION_DENIED,
                "hal.allocator.import: source !vm.buffer is read-only; importing it requires "
                f"the SHARING_IMMUTABLE usage (0x80000), got usage 0x{buffer_usage:x}",
            )
        return buffer

    # -- hal.buffer -----------------------------------------------------------------------

    @vm_import(
        "hal.buffer.assert", "0rrrIii_v",
        buffer=BUFFER, message=HOST_BYTES, allocator=ALLOCATOR.or_null,  # allocator: not checked
        memory_types=U32, buffer_usage=U32,
    )
    def buffer_assert(self, buffer, message, allocator, minimum_length, memory_types, buffer_usage):
        if (
            buffer.length >= minimum_length
            and buffer.memory_types & memory_types == memory_types
            and buffer.allowed_usage & buffer_usage == buffer_usage
        ):
            return  # the message is decoded only for an error (it is per call otherwise)
        message = _message(message)
        if buffer.length < minimum_length:
            raise VMError(
                StatusCode.INVALID_ARGUMENT,
                f"{message} buffer byte length {buffer.length} less than expected minimum "
                f"{minimum_length}",
            )
        if buffer.memory_types & memory_types != memory_types:
            raise VMError(
                StatusCode.PERMISSION_DENIED,
                f"{message} buffer memory type is not compatible; "
                f"buffer has 0x{buffer.memory_types:x}, "
                f"operation requires 0x{memory_types:x}",
            )
        if buffer.allowed_usage & buffer_usage != buffer_usage:
            raise VMError(
                StatusCode.PERMISSION_DENIED,
                f"{message} requested usage was not specified when the buffer was allocated; "
                f"buffer allows 0x{buffer.allowed_usage:x}, operation requires "
                f"0x{buffer_usage:x}",
            )

    @vm_import("hal.buffer.allocation.preserve", "0r_v", buffer=BUFFER)
    def buffer_allocation_preserve(self, buffer):
        buffer.preserve()

    @vm_import("hal.buffer.allocation.discard", "0r_i", buffer=BUFFER)
    def buffer_allocation_discard(self, buffer):
        return int(buffer.discard())

    @vm_import("hal.buffer.allocation.is_terminal", "0r_i", buffer=BUFFER)
    def buffer_allocation_is_terminal(self, buffer):
        return int(buffer.is_terminal())

    @vm_import("hal.buffer.subspan", "0rII_r", source_buffer=BUFFER)
    def buffer_subspan(self, source_buffer, source_offset, length):
        return source_buffer.subspan(source_offset, length)

    @vm_import("hal.buffer.length", "0r_I", buffer=BUFFER)
    def buffer_length(self, buffer):
        return buffer.length

    @vm_import("hal.buffer.load", "0rIi_i", source_buffer=BUFFER)
    def buffer_load(self, source_buffer, source_offset, length):
        value = source_buffer.load(source_offset, length)  # (unsigned, under 2**32)
        return value if value < 0x80000000 else value - 0x100000000  # wrap_i32, inline

    @vm_import("hal.buffer.store", "0irIi_v", target_buffer=BUFFER)
    def buffer_store(self, value, target_buffer, target_offset, length):
        target_buffer.store(value, target_offset, length)

    # -- hal.buffer_view ------------------------------------------------------------------

    @vm_import(
        "hal.buffer_view.create", "0rIIiiCID_r",
        buffer=BUFFER, element_type=U32, encoding_type=U32,
    )
    def buffer_view_create(
        self, buffer, source_offset, source_length, element_type, encoding_type, shape
    ):
        if source_offset or (source_length != buffer.length and source_length != WHOLE_BUFFER):
            if source_length == WHOLE_BUFFER:
                source_length = buffer.length - source_offset
            buffer = buffer.subspan(source_offset, source_length)
        shape = tuple(shape)
        for dim in shape:  # (a loop: less than min() for the usual rank 1 to 4)
            if dim < 0:
                i = next(i for i, dim in enumerate(shape) if dim < 0)
                raise _invalid(
                    "buffer_view.create", f"shape dimension {i} is negative ({shape[i]})"
                )
        # (dims are VM integers and both codes arrive masked to u32: nothing to convert;
        # _trusted_view's body, inline: this runs per call for every result)
        view = _new_object(HalBufferView)
        view.buffer = buffer
        view.shape = shape
        view.element_type = element_type
        view.encoding_type = encoding_type
        return view

    @vm_import(
        "hal.buffer_view.assert", "0rriiCID_v",
        buffer_view=BUFFER_VIEW, message=HOST_BYTES, element_type=U32, encoding_type=U32,
    )
    def buffer_view_assert(self, buffer_view, message, element_type, encoding_type, shape):
        view = buffer_view
        if (
            view.element_type == element_type
            and view.encoding_type == encoding_type
            and view.shape == tuple(shape)
        ):
            return  # the common case; the message is decoded only for an error
        message = _message(message)
        if (
            view.encoding_type != encoding_type
            and view.encoding_type != element_types.ENCODING_OPAQUE
        ):
            raise VMError(
                StatusCode.INVALID_ARGUMENT,
                f"{message} encoding mismatch; expected {encoding_type:08X} "
                f"but have {view.encoding_type:08X}",
            )
        if not element_types.is_compatible(view.element_type, element_type):
            raise VMError(
                StatusCode.INVALID_ARGUMENT,
                f"{message} element type mismatch; expected "
                f"{element_types.element_type_name(element_type)} ({element_type:08X}) but have "
                f"{element_types.element_type_name(view.element_type)} ({view.element_type:08X})",
            )
        if view.rank != len(shape):
            raise VMError(
                StatusCode.INVALID_ARGUMENT,
                f"{message} shape rank mismatch; expected {len(shape)} but have {view.rank}",
            )
        for i, (expected, actual) in enumerate(zip(shape, view.shape)):
            if expected != actual:
                raise VMError(
                    StatusCode.INVALID_ARGUMENT,
                    f"{message} shape dimension {i} mismatch; expected {expected} but have "
                    f"{actual}",
                )

    @vm_import("hal.buffer_view.buffer", "0r_r", buffer_view=BUFFER_VIEW)
    def buffer_view_buffer(self, buffer_view):
        return buffer_view.buffer

    @vm_import("hal.buffer_view.element_type", "0r_i", buffer_view=BUFFER_VIEW)
    def buffer_view_element_type(self, buffer_view):
        return wrap_i32(buffer_view.element_type)

    @vm_import("hal.buffer_view.encoding_type", "0r_i", buffer_view=BUFFER_VIEW)
    def buffer_view_encoding_type(self, buffer_view):
        return wrap_i32(buffer_view.encoding_type)

    @vm_import("hal.buffer_view.rank", "0r_i", buffer_view=BUFFER_VIEW)
    def buffer_view_rank(self, buffer_view):
        return buffer_view.rank

    @vm_import("hal.buffer_view.dim", "0ri_I", buffer_view=BUFFER_VIEW)
    def buffer_view_dim(self, buffer_view, index):
        return buffer_view.dim(index)

    @vm_import("hal.buffer_view.trace", "0rCrD_v", key=TEXT, operands=Each(BUFFER_VIEW))
    def buffer_view_trace(self, key, operands):
        if self.trace_sink is not None:
            self.trace_sink(key, list(operands))

    # -- hal.channel: collectives over MPI, or one rank (channel.py) ------------------------

    @vm_import(
        "hal.channel.create", "0rIIrrii_r",
        device=DEVICE, id=HOST_BYTES.or_null, group=HOST_BYTES.or_null,
    )
    def channel_create(self, device, queue_affinity, flags, id, group, rank, count):
        name = bytes(vm_args.host_view(group)[0]).decode("utf-8", "replace") if group is not None else ""
        create = getattr(device, "create_channel", None)  # a device's own (cuda: NCCL)
        if create is not None:
            uid = bytes(vm_args.host_view(id)[0]) if id is not None else None
            return create(rank, count, name, uid or None)
        return HalChannel.create(rank, count, name)

    @vm_import("hal.channel.split", "0riiI_r", channel=CHANNEL)
    def channel_split(self, channel, color, key, flags):
        return channel.split(color, key)

    @vm_import("hal.channel.rank_and_count", "0r_ii", channel=CHANNEL)
    def channel_rank_and_count(self, channel):
        return channel.rank, channel.count

    # -- hal.command_buffer ---------------------------------------------------------------

    @vm_import(
        "hal.command_buffer.create", "0riiIi_r",
        device=DEVICE, modes=U32, command_categories=U32,
    )
    def command_buffer_create(
        self, device, modes, command_categories, queue_affinity, binding_capacity
    ):
        if binding_capacity < 0:
            raise _invalid("command_buffer.create", f"negative binding capacity {binding_capacity}")
        return device.create_command_buffer(modes, command_categories, binding_capacity)

    @vm_import("hal.command_buffer.finalize", "0r_v", command_buffer=COMMAND_BUFFER)
    def command_buffer_finalize(self, command_buffer):
        command_buffer.finalize()

    @vm_import(
        "hal.command_buffer.begin_debug_group", "0rr_v", command_buffer=COMMAND_BUFFER, label=TEXT
    )
    def command_buffer_begin_debug_group(self, command_buffer, label):
        command_buffer.begin_debug_group(label)

    @vm_import("hal.command_buffer.end_debug_group", "0r_v", command_buffer=COMMAND_BUFFER)
    def command_buffer_end_debug_group(self, command_buffer):
        command_buffer.end_debug_group()

    @vm_import(
        "hal.command_buffer.execution_barrier", "0riiI_v",
        command_buffer=COMMAND_BUFFER, source_stage_mask=U32, target_stage_mask=U32,
    )
    def command_buffer_execution_barrier(
        self, command_buffer, source_stage_mask, target_stage_mask, flags
    ):
        command_buffer.execution_barrier(source_stage_mask, target_stage_mask, flags)

    @vm_import(
        "hal.command_buffer.advise_buffer", "0rrIIIi_v",
        command_buffer=COMMAND_BUFFER, buffer=BUFFER.or_null,
    )
    def command_buffer_advise_buffer(self, command_buffer, buffer, flags, arg0, arg1, buffer_slot):
        # Advice is a no-op on host memory.
        command_buffer._check_recording("command_buffer.advise_buffer", CATEGORY_TRANSFER)

    @vm_import(
        "hal.command_buffer.flush_buffer", "0rirII_v",
        command_buffer=COMMAND_BUFFER, target_buffer=BUFFER.or_null,
    )
    def command_buffer_flush_buffer(
        self, command_buffer, target_buffer_slot, target_buffer, target_offset, length
    ):
        # Host memory is coherent.
        command_buffer._check_recording("command_buffer.flush_buffer", CATEGORY_TRANSFER)

    @vm_import(
        "hal.command_buffer.invalidate_buffer", "0rirII_v",
        command_buffer=COMMAND_BUFFER, target_buffer=BUFFER.or_null,
    )
    def command_buffer_invalidate_buffer(
        self, command_buffer, target_buffer_slot, target_buffer, target_offset, length
    ):
        # Host memory is coherent.
        command_buffer._check_recording("command_buffer.invalidate_buffer", CATEGORY_TRANSFER)

    @vm_import(
        "hal.command_buffer.fill_buffer", "0rrIIiIiI_v",
        command_buffer=COMMAND_BUFFER, target_buffer=BUFFER.or_null,
    )
    def command_buffer_fill_buffer(
        self,
        command_buffer,
        target_buffer,
        target_offset,
        length,
        target_buffer_slot,
        pattern,
        pattern_length,
        flags,
    ):
        command_buffer.fill(
            BufferRef(target_buffer, target_buffer_slot, target_offset, length),
            pattern,
            pattern_length,
        )

    @vm_import(
        "hal.command_buffer.update_buffer", "0rrIrIIiI_v",
        command_buffer=COMMAND_BUFFER, source_buffer=HOST_BYTES, target_buffer=BUFFER.or_null,
    )
    def command_buffer_update_buffer(
        self,
        command_buffer,
        source_buffer,
        source_offset,
        target_buffer,
        target_offset,
        length,
        target_buffer_slot,
        flags,
    ):
        name = "command_buffer.update_buffer"
        if length == WHOLE_BUFFER:
            raise _invalid(name, "update length must be explicit")
        source = _host_range(vm_args.host_view(source_buffer)[0], source_offset, length, name)
        command_buffer.update(
            source, BufferRef(target_buffer, target_buffer_slot, target_offset, length)
        )

    @vm_import(
        "hal.command_buffer.copy_buffer", "0riirIrIII_v",
        command_buffer=COMMAND_BUFFER, source_buffer=BUFFER.or_null, target_buffer=BUFFER.or_null,
    )
    def command_buffer_copy_buffer(
        self,
        command_buffer,
        source_buffer_slot,
        target_buffer_slot,
        source_buffer,
        source_offset,
        target_buffer,
        target_offset,
        length,
        flags,
    ):
        command_buffer.copy(
            BufferRef(source_buffer, source_buffer_slot, source_offset, length),
            BufferRef(target_buffer, target_buffer_slot, target_offset, length),
        )

    @vm_import(
        "hal.command_buffer.collective", "0rriiiirrIIIII_v",
        command_buffer=COMMAND_BUFFER, channel=CHANNEL,
        send_buffer=BUFFER.or_null, recv_buffer=BUFFER.or_null,
    )
    def command_buffer_collective(
        self,
        command_buffer,
        channel,
        op,
        param,
        send_slot,
        recv_slot,
        send_buffer,
        recv_buffer,
        send_offset,
        send_length,
        recv_offset,
        recv_length,
        element_count,
    ):
        from .collectives import decode_op  # (loaded at a program's first collective)

        command_buffer.collective(
            channel,
            decode_op(op),
            param & M32,
            BufferRef(send_buffer, send_slot, send_offset, send_length),
            BufferRef(recv_buffer, recv_slot, recv_offset, recv_length),
            element_count,
        )

    @vm_import(
        "hal.command_buffer.dispatch", "0rrIiiiICiDCiirIID_v",
        command_buffer=COMMAND_BUFFER, executable=EXECUTABLE,
        workgroup_x=U32, workgroup_y=U32, workgroup_z=U32,
        bindings=Each(BUFFER.or_null, at=2, suffix=".buffer"),
    )
    def command_buffer_dispatch(
        self,
        command_buffer,
        executable,
        function_id,
        workgroup_x,
        workgroup_y,
        workgroup_z,
        flags,
        constants,
        bindings,
    ):
        if type(command_buffer) is HalCommandBuffer:
            command_buffer.dispatch_span(
                executable, function_id, workgroup_x, workgroup_y, workgroup_z, constants,
                bindings, flags,
            )
            return
        command_buffer.dispatch(
            executable,
            function_id,
            (workgroup_x, workgroup_y, workgroup_z),
            constants,
            _dispatch_bindings(bindings),
            flags,
        )

    @vm_import(
        "hal.command_buffer.dispatch.indirect", "0rrIirIICiDCiirIID_v",
        command_buffer=COMMAND_BUFFER, executable=EXECUTABLE, workgroups_buffer=BUFFER.or_null,
        bindings=Each(BUFFER.or_null, at=2, suffix=".buffer"),
    )
    def command_buffer_dispatch_indirect(
        self,
        command_buffer,
        executable,
        function_id,
        workgroups_buffer_slot,
        workgroups_buffer,
        workgroups_offset,
        flags,
        constants,
        bindings,
    ):
        command_buffer.dispatch(
            executable,
            function_id,
            BufferRef(workgroups_buffer, workgroups_buffer_slot, workgroups_offset, 12),
            constants,
            _dispatch_bindings(bindings),
            flags,
        )

    # -- hal.device -----------------------------------------------------------------------

    @vm_import("hal.device.allocator", "0r_r", device=DEVICE)
    def device_allocator(self, device):
        return device.allocator

    @vm_import("hal.device.query.i64", "0rrr_iI", device=DEVICE, category=TEXT, key=TEXT)
    def device_query_i64(self, device, category, key):
        ok, value = device.query_i64(category, key)
        return int(ok), wrap_i64(value)

    @vm_import(
        "hal.device.queue.alloca", "0rIrrIiiII_r",
        device=DEVICE, **QUEUE_FENCES, memory_types=U32, buffer_usage=U32,
    )
    def device_queue_alloca(
        self,
        device,
        queue_affinity,
        wait_fence,
        signal_fence,
        pool,
        memory_types,
        buffer_usage,
        allocation_size,
        flags,
    ):
        name = "device.queue.alloca"
        if pool != 0:
            raise VMError(
                StatusCode.UNIMPLEMENTED,
                f"hal.{name}: allocation pool {pool} not supported (only 0)",
            )
        if allocation_size < 0:
            raise _invalid(name, f"negative allocation size {allocation_size}")
        allocator = device.allocator
        if type(device) is LocalDevice:
            buffer = fresh_buffer(allocation_size, memory_types, buffer_usage, allocator)
            allocator.bytes_allocated += allocation_size
            device.queue.signal(wait_fence, signal_fence, name)
            return buffer
        # stream-ordered on the cuda device
        buffer = allocator.allocate_async(memory_types, buffer_usage, allocation_size)
        device.queue.submit(wait_fence, signal_fence, lambda: None, name)
        return buffer

    @vm_import(
        "hal.device.queue.dealloca", "0rIrrrI_v", device=DEVICE, **QUEUE_FENCES, buffer=BUFFER
    )
    def device_queue_dealloca(
        self, device, queue_affinity, wait_fence, signal_fence, buffer, flags
    ):
        if type(device) is LocalDevice:
            # Host memory is freed with the object.
            device.queue.signal(wait_fence, signal_fence, "device.queue.dealloca")
            return
        # A stream-ordered allocation is returned in queue order (buffer.release).
        device.queue.submit(wait_fence, signal_fence, buffer.release, "device.queue.dealloca")

    @vm_import(
        "hal.device.queue.fill", "0rIrrrIIIiI_v",
        device=DEVICE, **QUEUE_FENCES, target_buffer=BUFFER,
    )
    def device_queue_fill(
        self,
        device,
        queue_affinity,
        wait_fence,
        signal_fence,
        target_buffer,
        target_offset,
        length,
        pattern,
        pattern_length,
        flags,
    ):
        # (submit, not call: a device's queue may wrap the work, CudaQueue in its context)
        device.queue.submit(
            wait_fence,
            signal_fence,
            lambda: target_buffer.fill(target_offset, length, pattern, pattern_length),
            "device.queue.fill",
        )

    @vm_import(
        "hal.device.queue.update", "0rIrrrIrIII_v",
        device=DEVICE, **QUEUE_FENCES, source_buffer=HOST_BYTES, target_buffer=BUFFER,
    )
    def device_queue_update(
        self,
        device,
        queue_affinity,
        wait_fence,
        signal_fence,
        source_buffer,
        source_offset,
        target_buffer,
        target_offset,
        length,
        flags,
    ):
        name = "device.queue.update"
        data, _ = vm_args.host_view(source_buffer)
        source = bytes(_host_range(data, source_offset, length, name))  # captured at submit
        device.queue.submit(
            wait_fence, signal_fence, lambda: target_buffer.write(target_offset, source), name
        )

    @vm_import(
        "hal.device.queue.copy", "0rIrrrIrIII_v",
        device=DEVICE, **QUEUE_FENCES, source_buffer=BUFFER, target_buffer=BUFFER,
    )
    def device_queue_copy(
        self,
        device,
        queue_affinity,
        wait_fence,
        signal_fence,
        source_buffer,
        source_offset,
        target_buffer,
        target_offset,
        length,
        flags,
    ):
        if length == WHOLE_BUFFER:
            length = source_buffer.length - source_offset
        device.queue.submit(
            wait_fence,
            signal_fence,
            lambda: target_buffer.copy_from(target_offset, source_buffer, source_offset, length),
            "device.queue.copy",
        )

    @vm_import(
        "hal.device.queue.read", "0rIrrrIrIII_v",
        device=DEVICE, **QUEUE_FENCES, source_file=FILE, target_buffer=BUFFER,
    )
    def device_queue_read(
        self,
        device,
        queue_affinity,
        wait_fence,
        signal_fence,
        source_file,
        source_offset,
        target_buffer,
        target_offset,
        length,
        flags,
    ):
        device.queue.submit(
            wait_fence,
            signal_fence,
            lambda: target_buffer.write(target_offset, source_file.read(source_offset, length)),
            "device.queue.read",
        )

    @vm_import(
        "hal.device.queue.write", "0rIrrrIrIII_v",
        device=DEVICE, **QUEUE_FENCES, source_buffer=BUFFER, target_file=FILE,
    )
    def device_queue_write(
        self,
        device,
        queue_affinity,
        wait_fence,
        signal_fence,
        source_buffer,
        source_offset,
        target_file,
        target_offset,
        length,
        flags,
    ):
        device.queue.submit(
            wait_fence,
            signal_fence,
            lambda: target_file.write(
                target_offset, source_buffer.bytes_view(source_offset, length)
            ),
            "device.queue.write",
        )

    @vm_import("hal.device.queue.barrier", "0rIrrI_v", device=DEVICE, **QUEUE_FENCES)
    def device_queue_barrier(self, device, queue_affinity, wait_fence, signal_fence, flags):
        device.queue.signal(wait_fence, signal_fence, "device.queue.barrier")

    @vm_import(
        "hal.device.queue.execute", "0rIrrrI_v",
        device=DEVICE, **QUEUE_FENCES, command_buffer=COMMAND_BUFFER,
    )
    def device_queue_execute(
        self, device, queue_affinity, wait_fence, signal_fence, command_buffer, flags
    ):
        device.queue.submit(
            wait_fence, signal_fence, lambda: command_buffer.execute(None), "device.queue.execute"
        )

    @vm_import(
        "hal.device.queue.execute.indirect", "0rIrrrICrIID_v",
        device=DEVICE, **QUEUE_FENCES, command_buffer=COMMAND_BUFFER,
        binding_table=Each(BUFFER.or_null, at=0, suffix=".buffer"),
    )
    def device_queue_execute_indirect(
        self, device, queue_affinity, wait_fence, signal_fence, command_buffer, flags, binding_table
    ):
        # The span's (buffer, offset, length) tuples are the table as they are: the
        # command buffer reads entries by unpacking (Binding rows where it keeps them).
        # Work that waits runs later: it gets its own copy of the list.
        if wait_fence is not None and not (
            wait_fence.state == REACHED or wait_fence.reached_now()
        ):
            binding_table = list(binding_table)
        device.queue.call(
            wait_fence,
            signal_fence,
            command_buffer.execute,
            binding_table,
            "device.queue.execute.indirect",
        )

    @vm_import("hal.device.queue.flush", "0rI_v", device=DEVICE)
    def device_queue_flush(self, device, queue_affinity):
        pass  # operations are already submitted

    # -- hal.devices ----------------------------------------------------------------------

    @vm_import("hal.devices.count", "0v_i")
    def devices_count(self):
        return len(self.devices)

    @vm_import("hal.devices.get", "0i_r")
    def devices_get(self, index):
        return self.devices[index] if 0 <= index < len(self.devices) else None

    # -- hal.executable -------------------------------------------------------------------

    @vm_import(
        "hal.executable.create", "0rIrrr_r",
        device=DEVICE, executable_format=TEXT, executable_data=HOST_BYTES,
        constants=HOST_BYTES.or_null,
    )
    def executable_create(
        self, device, queue_affinity, executable_format, executable_data, constants
    ):
        data, _ = vm_args.host_view(executable_data)
        constant_values = None
        if constants is not None:
            raw = vm_args.host_view(constants)[0]
            if raw.nbytes % 4:
                raise _invalid(
                    "executable.create", f"constants length {raw.nbytes} is not a multiple of 4"
                )
            if raw.nbytes:
                constant_values = [int(v) for v in np.frombuffer(raw, dtype="<u4")]
        return device.create_executable(executable_format, data, constant_values)

    @vm_import(
        "hal.executable.lookup.function", "0rr_I", executable=EXECUTABLE, name=HOST_BYTES
    )
    def executable_lookup_function(self, executable, name):
        if type(name) is VMBuffer:  # (its data: a byte view, as host_view gives)
            return executable.lookup(bytes(name.data))
        return executable.lookup(bytes(vm_args.host_view(name)[0]))

    # -- hal.fence ------------------------------------------------------------------------

    @vm_import("hal.fence.create", "0rI_r", device=DEVICE)
    def fence_create(self, device, flags):
        return Fence()

    @vm_import("hal.fence.join", "0ICrD_r", fences=Each(FENCE.or_null))
    def fence_join(self, flags, fences):
        return Fence.join_fresh(fences)

    @vm_import("hal.fence.query", "0r_i", fence=FENCE)
    def fence_query(self, fence):
        return fence.query()

    @vm_import("hal.fence.signal", "0r_v", fence=FENCE)
    def fence_signal(self, fence):
        fence.signal()

    @vm_import("hal.fence.fail", "0ri_v", fence=FENCE)
    def fence_fail(self, fence, status):
        fence.fail(status)

    @vm_import("hal.fence.await", "0iICrD_i", timeout_millis=U32, fences=Each(FENCE.or_null))
    def fence_await(self, timeout_millis, flags, fences):
        """Blocks until every fence is reached: 0, or 4 (DEADLINE_EXCEEDED) on timeout;
        raises a failed fence's error."""
        for fence in fences:
            if fence is not None and fence.state != REACHED and not fence.reached_now():
                break
        else:
            return 0  # every fence reached already (what a synchronous queue leaves)
        reached = wait_all(list(fences), _timeout_seconds(timeout_millis))
        return 0 if reached else int(StatusCode.DEADLINE_EXCEEDED)

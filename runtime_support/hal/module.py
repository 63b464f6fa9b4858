"""HalModule: the `hal` import module (hal-abi.md §A.1) over local CPU devices.

One method per `hal.*` import, named by the import's name minus `hal.` with `.` → `_`
(`hal.buffer_view.create` → `buffer_view_create`). Arguments arrive in cconv order as
ARCHITECTURE.md describes: signed ints, refs as objects or None, variadic spans as lists
(tuples for multi-item tuples). Ref arguments are checked like the C module's
`check_deref`: null (unless documented "or null") or the wrong type raises VMError
INVALID_ARGUMENT naming the import and the argument.

Queue operations run through the device's `LocalQueue` (§A.4): at once when their wait
fence is reached, else when it is signaled later. Their errors fail the signal fence.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..errors import StatusCode, VMError
from ..vm import args as vm_args
from . import element_types
from .allocator import HalAllocator
from .buffer import HalBuffer, WHOLE_BUFFER
from .buffer_view import HalBufferView
from .command_buffer import Binding, BufferRef, HalCommandBuffer
from .device import LocalDevice
from .executable import HalExecutable
from .fence import Fence, wait_all
from .file import ACCESS_READ, HalFile


class HalChannel:
    """A `!hal.channel` (collectives are not implemented on the local device)."""


_TYPE_NAMES = {
    HalBuffer: "!hal.buffer",
    HalBufferView: "!hal.buffer_view",
    LocalDevice: "!hal.device",
    HalAllocator: "!hal.allocator",
    HalCommandBuffer: "!hal.command_buffer",
    HalExecutable: "!hal.executable",
    Fence: "!hal.fence",
    HalFile: "!hal.file",
    HalChannel: "!hal.channel",
}


def _i32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def _i64(value: int) -> int:
    value &= 0xFFFFFFFFFFFFFFFF
    return value - (1 << 64) if value & (1 << 63) else value


def _u32(value: int) -> int:
    return value & 0xFFFFFFFF


def _invalid(name: str, message: str) -> VMError:
    return vm_args.invalid("hal", name, message)


def _deref(value, cls, name: str, arg: str, nullable: bool = False):
    """check_deref: `value` must be a `cls` (or None when `nullable`)."""
    return vm_args.deref(value, cls, _TYPE_NAMES[cls], "hal", name, arg, nullable)


def _host_bytes(value, name: str, arg: str, nullable: bool = False):
    """A `!vm.buffer` argument → (byte memoryview, readonly), or None when null."""
    return vm_args.vm_bytes(value, "hal", name, arg, nullable)


def _text(value, name: str, arg: str) -> str:
    return vm_args.vm_text(value, "hal", name, arg)


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


def _timeout_seconds(timeout_millis: int) -> float | None:
    millis = _u32(timeout_millis)
    return None if millis == 0xFFFFFFFF else millis / 1000.0


class HalModule:
    """The `hal` module for a fixed list of devices."""

    # Full import name → cconv (hal-abi.md §A.1, IREE 3.13.0).
    IMPORTS: dict[str, str] = {
        "hal.ex.file.from_memory": "0rIirIIi_r",
        "hal.allocator.select": "0iiICrID_rI",
        "hal.allocator.allocate": "0rIiiI_r",
        "hal.allocator.import": "0riIiirII_r",
        "hal.buffer.assert": "0rrrIii_v",
        "hal.buffer.allocation.preserve": "0r_v",
        "hal.buffer.allocation.discard": "0r_i",
        "hal.buffer.allocation.is_terminal": "0r_i",
        "hal.buffer.subspan": "0rII_r",
        "hal.buffer.length": "0r_I",
        "hal.buffer.load": "0rIi_i",
        "hal.buffer.store": "0irIi_v",
        "hal.buffer_view.create": "0rIIiiCID_r",
        "hal.buffer_view.assert": "0rriiCID_v",
        "hal.buffer_view.buffer": "0r_r",
        "hal.buffer_view.element_type": "0r_i",
        "hal.buffer_view.encoding_type": "0r_i",
        "hal.buffer_view.rank": "0r_i",
        "hal.buffer_view.dim": "0ri_I",
        "hal.buffer_view.trace": "0rCrD_v",
        "hal.channel.create": "0rIIrrii_r",
        "hal.channel.split": "0riiI_r",
        "hal.channel.rank_and_count": "0r_ii",
        "hal.command_buffer.create": "0riiIi_r",
        "hal.command_buffer.finalize": "0r_v",
        "hal.command_buffer.begin_debug_group": "0rr_v",
        "hal.command_buffer.end_debug_group": "0r_v",
        "hal.command_buffer.execution_barrier": "0riiI_v",
        "hal.command_buffer.advise_buffer": "0rrIIIi_v",
        "hal.command_buffer.flush_buffer": "0rirII_v",
        "hal.command_buffer.invalidate_buffer": "0rirII_v",
        "hal.command_buffer.fill_buffer": "0rrIIiIiI_v",
        "hal.command_buffer.update_buffer": "0rrIrIIiI_v",
        "hal.command_buffer.copy_buffer": "0riirIrIII_v",
        "hal.command_buffer.collective": "0rriiiirrIIIII_v",
        "hal.command_buffer.dispatch": "0rrIiiiICiDCiirIID_v",
        "hal.command_buffer.dispatch.indirect": "0rrIirIICiDCiirIID_v",
        "hal.device.allocator": "0r_r",
        "hal.device.query.i64": "0rrr_iI",
        "hal.device.queue.alloca": "0rIrrIiiII_r",
        "hal.device.queue.dealloca": "0rIrrrI_v",
        "hal.device.queue.fill": "0rIrrrIIIiI_v",
        "hal.device.queue.update": "0rIrrrIrIII_v",
        "hal.device.queue.copy": "0rIrrrIrIII_v",
        "hal.device.queue.read": "0rIrrrIrIII_v",
        "hal.device.queue.write": "0rIrrrIrIII_v",
        "hal.device.queue.barrier": "0rIrrI_v",
        "hal.device.queue.execute": "0rIrrrI_v",
        "hal.device.queue.execute.indirect": "0rIrrrICrIID_v",
        "hal.device.queue.flush": "0rI_v",
        "hal.devices.count": "0v_i",
        "hal.devices.get": "0i_r",
        "hal.executable.create": "0rIrrr_r",
        "hal.executable.lookup.function": "0rr_I",
        "hal.fence.create": "0rI_r",
        "hal.fence.join": "0ICrD_r",
        "hal.fence.query": "0r_i",
        "hal.fence.signal": "0r_v",
        "hal.fence.fail": "0ri_v",
        "hal.fence.await": "0iICrD_i",
    }

    # Device classes accepted as `!hal.device`.
    DEVICE_TYPES: tuple[type, ...] = (LocalDevice,)

    def __init__(
        self,
        devices: Sequence[LocalDevice],
        *,
        trace_sink: Callable[[str, list[HalBufferView]], None] | None = None,
    ) -> None:
        self.devices = list(devices)
        self.trace_sink = trace_sink

    @classmethod
    def method_name(cls, full_name: str) -> str:
        """`hal.buffer_view.create` → `buffer_view_create`."""
        return full_name.removeprefix("hal.").replace(".", "_")

    def _device(self, value, name: str, arg: str = "device"):
        if value is None:
            raise _invalid(name, f"argument '{arg}' is null; expected !hal.device")
        if not isinstance(value, self.DEVICE_TYPES):
            raise _invalid(
                name, f"argument '{arg}' is {type(value).__name__}; expected !hal.device"
            )
        return value

    # -- hal.ex ---------------------------------------------------------------------------

    def ex_file_from_memory(self, device, queue_affinity, access, buffer, offset, length, flags):
        name = "ex.file.from_memory"
        self._device(device, name)
        data, _ = _host_bytes(buffer, name, "buffer")
        if _u32(access) != ACCESS_READ:
            raise VMError(
                StatusCode.PERMISSION_DENIED,
                f"hal.{name}: access 0x{_u32(access):x} not allowed; "
                "memory files are read-only (READ = 1)",
            )
        return HalFile(_host_range(data, offset, length, name), ACCESS_READ, owner=buffer)

    # -- hal.allocator --------------------------------------------------------------------

    def allocator_select(self, memory_types, buffer_usage, flags, from_):
        name = "allocator.select"
        if not from_:
            raise _invalid(name, "no devices/queues to select from")
        device, queue_affinity = from_[0]
        self._device(device, name, "from[0].device")
        return device, queue_affinity

    def allocator_allocate(
        self, allocator, queue_affinity, memory_types, buffer_usage, allocation_size
    ):
        name = "allocator.allocate"
        allocator = _deref(allocator, HalAllocator, name, "allocator")
        if allocation_size < 0:
            raise _invalid(name, f"negative allocation size {allocation_size}")
        return allocator.allocate(_u32(memory_types), _u32(buffer_usage), allocation_size)

    def allocator_import(
        self, allocator, try_, queue_affinity, memory_types, buffer_usage, source, offset, length
    ):
        name = "allocator.import"
        allocator = _deref(allocator, HalAllocator, name, "allocator")
        data, readonly = _host_bytes(source, name, "source")
        buffer = allocator.import_host(
            data, readonly, _u32(memory_types), _u32(buffer_usage), offset, length, owner=source
        )
        if buffer is None and not try_:
            raise VMError(
                StatusCode.PERMISSION_DENIED,
                f"hal.{name}: source !vm.buffer is read-only; importing it requires the "
                f"SHARING_IMMUTABLE usage (0x80000), got usage 0x{_u32(buffer_usage):x}",
            )
        return buffer

    # -- hal.buffer -----------------------------------------------------------------------

    def buffer_assert(self, buffer, message, allocator, minimum_length, memory_types, buffer_usage):
        name = "buffer.assert"
        buffer = _deref(buffer, HalBuffer, name, "buffer")
        text = _text(message, name, "message")
        _deref(allocator, HalAllocator, name, "allocator", nullable=True)  # not checked
        if buffer.length < minimum_length:
            raise VMError(
                StatusCode.INVALID_ARGUMENT,
                f"{text} buffer byte length {buffer.length} less than expected minimum "
                f"{minimum_length}",
            )
        required = _u32(memory_types)
        if buffer.memory_types & required != required:
            raise VMError(
                StatusCode.PERMISSION_DENIED,
                f"{text} buffer memory type is not compatible; "
                f"buffer has 0x{buffer.memory_types:x}, "
                f"operation requires 0x{required:x}",
            )
        required = _u32(buffer_usage)
        if buffer.allowed_usage & required != required:
            raise VMError(
                StatusCode.PERMISSION_DENIED,
                f"{text} requested usage was not specified when the buffer was allocated; buffer "
                f"allows 0x{buffer.allowed_usage:x}, operation requires 0x{required:x}",
            )

    def buffer_allocation_preserve(self, buffer):
        _deref(buffer, HalBuffer, "buffer.allocation.preserve", "buffer").preserve()

    def buffer_allocation_discard(self, buffer):
        return int(_deref(buffer, HalBuffer, "buffer.allocation.discard", "buffer").discard())

    def buffer_allocation_is_terminal(self, buffer):
        return int(
            _deref(buffer, HalBuffer, "buffer.allocation.is_terminal", "buffer").is_terminal()
        )

    def buffer_subspan(self, source_buffer, source_offset, length):
        buffer = _deref(source_buffer, HalBuffer, "buffer.subspan", "source_buffer")
        return buffer.subspan(source_offset, length)

    def buffer_length(self, buffer):
        return _deref(buffer, HalBuffer, "buffer.length", "buffer").length

    def buffer_load(self, source_buffer, source_offset, length):
        buffer = _deref(source_buffer, HalBuffer, "buffer.load", "source_buffer")
        return _i32(buffer.load(source_offset, length))

    def buffer_store(self, value, target_buffer, target_offset, length):
        buffer = _deref(target_buffer, HalBuffer, "buffer.store", "target_buffer")
        buffer.store(value, target_offset, length)

    # -- hal.buffer_view ------------------------------------------------------------------

    def buffer_view_create(
        self, buffer, source_offset, source_length, element_type, encoding_type, shape
    ):
        name = "buffer_view.create"
        buffer = _deref(buffer, HalBuffer, name, "buffer")
        if source_length == WHOLE_BUFFER:
            source_length = buffer.length - source_offset
        if source_offset != 0 or source_length != buffer.length:
            buffer = buffer.subspan(source_offset, source_length)
        for i, dim in enumerate(shape):
            if dim < 0:
                raise _invalid(name, f"shape dimension {i} is negative ({dim})")
        return HalBufferView(buffer, shape, _u32(element_type), _u32(encoding_type))

    def buffer_view_assert(self, buffer_view, message, element_type, encoding_type, shape):
        name = "buffer_view.assert"
        view = _deref(buffer_view, HalBufferView, name, "buffer_view")
        text = _text(message, name, "message")
        expected_encoding = _u32(encoding_type)
        if (
            view.encoding_type != expected_encoding
            and view.encoding_type != element_types.ENCODING_OPAQUE
        ):
            raise VMError(
                StatusCode.INVALID_ARGUMENT,
                f"{text} encoding mismatch; expected {expected_encoding:08X} "
                f"but have {view.encoding_type:08X}",
            )
        expected_type = _u32(element_type)
        if not element_types.is_compatible(view.element_type, expected_type):
            raise VMError(
                StatusCode.INVALID_ARGUMENT,
                f"{text} element type mismatch; expected "
                f"{element_types.element_type_name(expected_type)} ({expected_type:08X}) but have "
                f"{element_types.element_type_name(view.element_type)} ({view.element_type:08X})",
            )
        if view.rank != len(shape):
            raise VMError(
                StatusCode.INVALID_ARGUMENT,
                f"{text} shape rank mismatch; expected {len(shape)} but have {view.rank}",
            )
        for i, (expected, actual) in enumerate(zip(shape, view.shape)):
            if expected != actual:
                raise VMError(
                    StatusCode.INVALID_ARGUMENT,
                    f"{text} shape dimension {i} mismatch; expected {expected} but have {actual}",
                )

    def buffer_view_buffer(self, buffer_view):
        return _deref(buffer_view, HalBufferView, "buffer_view.buffer", "buffer_view").buffer

    def buffer_view_element_type(self, buffer_view):
        view = _deref(buffer_view, HalBufferView, "buffer_view.element_type", "buffer_view")
        return _i32(view.element_type)

    def buffer_view_encoding_type(self, buffer_view):
        view = _deref(buffer_view, HalBufferView, "buffer_view.encoding_type", "buffer_view")
        return _i32(view.encoding_type)

    def buffer_view_rank(self, buffer_view):
        return _deref(buffer_view, HalBufferView, "buffer_view.rank", "buffer_view").rank

    def buffer_view_dim(self, buffer_view, index):
        return _deref(buffer_view, HalBufferView, "buffer_view.dim", "buffer_view").dim(index)

    def buffer_view_trace(self, key, operands):
        name = "buffer_view.trace"
        text = _text(key, name, "key")
        views = [_deref(v, HalBufferView, name, f"operands[{i}]") for i, v in enumerate(operands)]
        if self.trace_sink is not None:
            self.trace_sink(text, views)

    # -- hal.channel (collectives: not implemented) ---------------------------------------

    @staticmethod
    def _no_collectives(name: str) -> VMError:
        return VMError(
            StatusCode.UNIMPLEMENTED,
            f"hal.{name}: collectives are not implemented on the local CPU device",
        )

    def channel_create(self, device, queue_affinity, flags, id, group, rank, count):
        raise self._no_collectives("channel.create")

    def channel_split(self, channel, color, key, flags):
        raise self._no_collectives("channel.split")

    def channel_rank_and_count(self, channel):
        raise self._no_collectives("channel.rank_and_count")

    # -- hal.command_buffer ---------------------------------------------------------------

    def _cb(self, value, name: str) -> HalCommandBuffer:
        return _deref(value, HalCommandBuffer, name, "command_buffer")

    def command_buffer_create(
        self, device, modes, command_categories, queue_affinity, binding_capacity
    ):
        name = "command_buffer.create"
        device = self._device(device, name)
        if binding_capacity < 0:
            raise _invalid(name, f"negative binding capacity {binding_capacity}")
        return HalCommandBuffer(device, _u32(modes), _u32(command_categories), binding_capacity)

    def command_buffer_finalize(self, command_buffer):
        self._cb(command_buffer, "command_buffer.finalize").finalize()

    def command_buffer_begin_debug_group(self, command_buffer, label):
        name = "command_buffer.begin_debug_group"
        cb = self._cb(command_buffer, name)
        cb.begin_debug_group(_text(label, name, "label"))

    def command_buffer_end_debug_group(self, command_buffer):
        self._cb(command_buffer, "command_buffer.end_debug_group").end_debug_group()

    def command_buffer_execution_barrier(
        self, command_buffer, source_stage_mask, target_stage_mask, flags
    ):
        cb = self._cb(command_buffer, "command_buffer.execution_barrier")
        cb.execution_barrier(_u32(source_stage_mask), _u32(target_stage_mask), flags)

    def command_buffer_advise_buffer(self, command_buffer, buffer, flags, arg0, arg1, buffer_slot):
        name = "command_buffer.advise_buffer"
        self._cb(command_buffer, name)._check_recording(name)
        _deref(buffer, HalBuffer, name, "buffer", nullable=True)  # advice: no-op on host memory

    def command_buffer_flush_buffer(
        self, command_buffer, target_buffer_slot, target_buffer, target_offset, length
    ):
        name = "command_buffer.flush_buffer"
        self._cb(command_buffer, name)._check_recording(name)
        _deref(
            target_buffer, HalBuffer, name, "target_buffer", nullable=True
        )  # host memory is coherent

    def command_buffer_invalidate_buffer(
        self, command_buffer, target_buffer_slot, target_buffer, target_offset, length
    ):
        name = "command_buffer.invalidate_buffer"
        self._cb(command_buffer, name)._check_recording(name)
        _deref(
            target_buffer, HalBuffer, name, "target_buffer", nullable=True
        )  # host memory is coherent

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
        name = "command_buffer.fill_buffer"
        cb = self._cb(command_buffer, name)
        target = _deref(target_buffer, HalBuffer, name, "target_buffer", nullable=True)
        cb.fill(
            BufferRef(target, target_buffer_slot, target_offset, length), pattern, pattern_length
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
        cb = self._cb(command_buffer, name)
        data, _ = _host_bytes(source_buffer, name, "source_buffer")
        target = _deref(target_buffer, HalBuffer, name, "target_buffer", nullable=True)
        if length == WHOLE_BUFFER:
            raise _invalid(name, "update length must be explicit")
        source = _host_range(data, source_offset, length, name)
        cb.update(source, BufferRef(target, target_buffer_slot, target_offset, length))

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
        name = "command_buffer.copy_buffer"
        cb = self._cb(command_buffer, name)
        source = _deref(source_buffer, HalBuffer, name, "source_buffer", nullable=True)
        target = _deref(target_buffer, HalBuffer, name, "target_buffer", nullable=True)
        cb.copy(
            BufferRef(source, source_buffer_slot, source_offset, length),
            BufferRef(target, target_buffer_slot, target_offset, length),
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
        raise self._no_collectives("command_buffer.collective")

    def _dispatch_bindings(self, bindings, name: str) -> list[BufferRef]:
        refs = []
        for i, (_reserved, slot, buffer, offset, length) in enumerate(bindings):
            buffer = _deref(buffer, HalBuffer, name, f"bindings[{i}].buffer", nullable=True)
            refs.append(BufferRef(buffer, slot, offset, length))
        return refs

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
        name = "command_buffer.dispatch"
        cb = self._cb(command_buffer, name)
        executable = _deref(executable, HalExecutable, name, "executable")
        cb.dispatch(
            executable,
            function_id,
            (workgroup_x, workgroup_y, workgroup_z),
            constants,
            self._dispatch_bindings(bindings, name),
            flags,
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
        name = "command_buffer.dispatch.indirect"
        cb = self._cb(command_buffer, name)
        executable = _deref(executable, HalExecutable, name, "executable")
        workgroups = _deref(workgroups_buffer, HalBuffer, name, "workgroups_buffer", nullable=True)
        cb.dispatch(
            executable,
            function_id,
            BufferRef(workgroups, workgroups_buffer_slot, workgroups_offset, 12),
            constants,
            self._dispatch_bindings(bindings, name),
            flags,
        )

    # -- hal.device -----------------------------------------------------------------------

    def device_allocator(self, device):
        return self._device(device, "device.allocator").allocator

    def device_query_i64(self, device, category, key):
        name = "device.query.i64"
        device = self._device(device, name)
        ok, value = device.query_i64(_text(category, name, "category"), _text(key, name, "key"))
        return int(ok), _i64(value)

    def _queue_args(self, device, wait_fence, signal_fence, name: str):
        device = self._device(device, name)
        wait = _deref(wait_fence, Fence, name, "wait_fence", nullable=True)
        signal = _deref(signal_fence, Fence, name, "signal_fence", nullable=True)
        return device, wait, signal

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
        device, wait, signal = self._queue_args(device, wait_fence, signal_fence, name)
        if pool != 0:
            raise VMError(
                StatusCode.UNIMPLEMENTED,
                f"hal.{name}: allocation pool {pool} not supported (only 0)",
            )
        if allocation_size < 0:
            raise _invalid(name, f"negative allocation size {allocation_size}")
        buffer = device.allocator.allocate(_u32(memory_types), _u32(buffer_usage), allocation_size)
        device.queue.submit(wait, signal, lambda: None, name)
        return buffer

    def device_queue_dealloca(
        self, device, queue_affinity, wait_fence, signal_fence, buffer, flags
    ):
        name = "device.queue.dealloca"
        device, wait, signal = self._queue_args(device, wait_fence, signal_fence, name)
        _deref(buffer, HalBuffer, name, "buffer")
        device.queue.submit(wait, signal, lambda: None, name)  # memory is freed with the object

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
        name = "device.queue.fill"
        device, wait, signal = self._queue_args(device, wait_fence, signal_fence, name)
        target = _deref(target_buffer, HalBuffer, name, "target_buffer")
        device.queue.submit(
            wait, signal, lambda: target.fill(target_offset, length, pattern, pattern_length), name
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
        device, wait, signal = self._queue_args(device, wait_fence, signal_fence, name)
        data, _ = _host_bytes(source_buffer, name, "source_buffer")
        target = _deref(target_buffer, HalBuffer, name, "target_buffer")
        source = bytes(_host_range(data, source_offset, length, name))  # captured at submit
        device.queue.submit(wait, signal, lambda: target.write(target_offset, source), name)

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
        name = "device.queue.copy"
        device, wait, signal = self._queue_args(device, wait_fence, signal_fence, name)
        source = _deref(source_buffer, HalBuffer, name, "source_buffer")
        target = _deref(target_buffer, HalBuffer, name, "target_buffer")
        if length == WHOLE_BUFFER:
            length = source.length - source_offset
        device.queue.submit(
            wait,
            signal,
            lambda: target.copy_from(target_offset, source, source_offset, length),
            name,
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
        name = "device.queue.read"
        device, wait, signal = self._queue_args(device, wait_fence, signal_fence, name)
        file = _deref(source_file, HalFile, name, "source_file")
        target = _deref(target_buffer, HalBuffer, name, "target_buffer")
        device.queue.submit(
            wait,
            signal,
            lambda: target.write(target_offset, file.read(source_offset, length)),
            name,
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
        name = "device.queue.write"
        device, wait, signal = self._queue_args(device, wait_fence, signal_fence, name)
        source = _deref(source_buffer, HalBuffer, name, "source_buffer")
        file = _deref(target_file, HalFile, name, "target_file")
        device.queue.submit(
            wait,
            signal,
            lambda: file.write(target_offset, source.bytes_view(source_offset, length)),
            name,
        )

    def device_queue_barrier(self, device, queue_affinity, wait_fence, signal_fence, flags):
        name = "device.queue.barrier"
        device, wait, signal = self._queue_args(device, wait_fence, signal_fence, name)
        device.queue.submit(wait, signal, lambda: None, name)

    def device_queue_execute(
        self, device, queue_affinity, wait_fence, signal_fence, command_buffer, flags
    ):
        name = "device.queue.execute"
        device, wait, signal = self._queue_args(device, wait_fence, signal_fence, name)
        cb = _deref(command_buffer, HalCommandBuffer, name, "command_buffer")
        device.queue.submit(wait, signal, lambda: cb.execute(None), name)

    def device_queue_execute_indirect(
        self, device, queue_affinity, wait_fence, signal_fence, command_buffer, flags, binding_table
    ):
        name = "device.queue.execute.indirect"
        device, wait, signal = self._queue_args(device, wait_fence, signal_fence, name)
        cb = _deref(command_buffer, HalCommandBuffer, name, "command_buffer")
        table = []
        for i, (buffer, offset, length) in enumerate(binding_table):
            buffer = _deref(buffer, HalBuffer, name, f"binding_table[{i}].buffer", nullable=True)
            table.append(Binding(buffer, offset, length))
        device.queue.submit(wait, signal, lambda: cb.execute(table), name)

    def device_queue_flush(self, device, queue_affinity):
        self._device(device, "device.queue.flush")  # operations are already submitted

    # -- hal.devices ----------------------------------------------------------------------

    def devices_count(self):
        return len(self.devices)

    def devices_get(self, index):
        return self.devices[index] if 0 <= index < len(self.devices) else None

    # -- hal.executable -------------------------------------------------------------------

    def executable_create(
        self, device, queue_affinity, executable_format, executable_data, constants
    ):
        name = "executable.create"
        device = self._device(device, name)
        format = _text(executable_format, name, "executable_format")
        data, _ = _host_bytes(executable_data, name, "executable_data")
        constant_values = None
        packed = _host_bytes(constants, name, "constants", nullable=True)
        if packed is not None and packed[0].nbytes:
            raw = packed[0]
            if raw.nbytes % 4:
                raise _invalid(name, f"constants length {raw.nbytes} is not a multiple of 4")
            constant_values = [int(v) for v in np.frombuffer(raw, dtype="<u4")]
        return device.create_executable(format, data, constant_values)

    def executable_lookup_function(self, executable, name):
        executable = _deref(executable, HalExecutable, "executable.lookup.function", "executable")
        data, _ = _host_bytes(name, "executable.lookup.function", "name")
        return executable.lookup(bytes(data))

    # -- hal.fence ------------------------------------------------------------------------

    def fence_create(self, device, flags):
        self._device(device, "fence.create")
        return Fence()

    def fence_join(self, flags, fences):
        checked = [
            _deref(f, Fence, "fence.join", f"fences[{i}]", nullable=True)
            for i, f in enumerate(fences)
        ]
        return Fence.join(checked)

    def fence_query(self, fence):
        return _deref(fence, Fence, "fence.query", "fence").query()

    def fence_signal(self, fence):
        _deref(fence, Fence, "fence.signal", "fence").signal()

    def fence_fail(self, fence, status):
        _deref(fence, Fence, "fence.fail", "fence").fail(status & 0x1F)

    def fence_await(self, timeout_millis, flags, fences):
        """Blocks until every fence is reached: 0, or 4 (DEADLINE_EXCEEDED) on timeout;
        raises a failed fence's error."""
        checked = [
            _deref(f, Fence, "fence.await", f"fences[{i}]", nullable=True)
            for i, f in enumerate(fences)
        ]
        reached = wait_all(checked, _timeout_seconds(timeout_millis))
        return 0 if reached else int(StatusCode.DEADLINE_EXCEEDED)

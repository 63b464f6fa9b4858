"""HalInlineModule: the `hal_inline` import module (hal-abi.md §H), for modules compiled
with `--iree-execution-model=inline-static|inline-dynamic`.

The inline model has no devices, queues or command buffers: buffers are host memory, and
the program reaches their bytes through `buffer.storage`, a `!vm.buffer` aliasing the
HAL buffer, which it hands to `hal_loader.executable.dispatch` as a binding. Buffer views
are the same `HalBufferView` objects the full `hal` module uses, so a context's numpy
marshalling works unchanged.

Semantics follow IREE 3.13's runtime/src/iree/modules/hal/inline/module.c, including its
gaps: `buffer.wrap` is UNIMPLEMENTED there (the compiler does not emit it), and so here.
"""

from __future__ import annotations

from ..errors import StatusCode, VMError
from ..hal.buffer import HalBuffer, WHOLE_BUFFER
from ..hal.device import has_cpu_feature
from ..hal.module import BUFFER, HalModule
from ..vm import args as vm_args
from ..vm.args import TEXT, U32, Ref, import_module, vm_import
from ..vm.buffer import VMBuffer

# Usage bits of an inline allocation: TRANSFER | DISPATCH_STORAGE | MAPPING (module.c).
_INLINE_USAGE = 0x3 | 0x30 | 0x3000
# OPTIMAL_FOR_HOST: HOST_LOCAL | DEVICE_VISIBLE.
_INLINE_MEMORY = 0x46

VM_BUFFER = Ref(VMBuffer, "!vm.buffer")


def _invalid(name: str, message: str) -> VMError:
    return vm_args.invalid("hal_inline", name, message)


def storage_of(buffer: HalBuffer) -> VMBuffer:
    """A mutable `!vm.buffer` over exactly the bytes of `buffer` (no copy).

    IREE maps the HAL buffer and wraps the mapping as a host-origin, mutable VM buffer;
    a read-only allocation stays read-only here (a write would otherwise reach memory
    the host declared immutable)."""
    return VMBuffer(memoryview(buffer.bytes_view()), readonly=buffer.readonly)


@import_module("hal_inline")
class HalInlineModule:
    """The `hal_inline` module: host buffers and buffer views, no device."""

    def __init__(self, trace_sink=None) -> None:
        # Buffer views behave exactly as in the full HAL module; share its code.
        self._views = HalModule([], trace_sink=trace_sink)

    @property
    def trace_sink(self):
        """Where `hal_inline.buffer_view.trace` goes (the shared views' sink)."""
        return self._views.trace_sink

    @trace_sink.setter
    def trace_sink(self, sink) -> None:
        self._views.trace_sink = sink

    # -- buffers --------------------------------------------------------------------------

    @staticmethod
    def _allocate(name: str, alignment: int, size: int) -> HalBuffer:
        """`alignment`: already unsigned."""
        if size < 0:
            raise _invalid(name, f"negative allocation size {size}")
        alignment = max(alignment, 1)
        if alignment & (alignment - 1):
            raise _invalid(name, f"minimum alignment {alignment} is not a power of two")
        return HalBuffer.allocate(
            size, _INLINE_MEMORY, _INLINE_USAGE, alignment=max(alignment, 64)
        )

    @vm_import("hal_inline.buffer.allocate", "0iI_rr", minimum_alignment=U32)
    def buffer_allocate(self, minimum_alignment, allocation_size):
        buffer = self._allocate("buffer.allocate", minimum_alignment, allocation_size)
        return buffer, storage_of(buffer)

    @vm_import(
        "hal_inline.buffer.allocate.initialized", "0irII_rr",
        minimum_alignment=U32, source=VM_BUFFER,
    )
    def buffer_allocate_initialized(self, minimum_alignment, source, offset, length):
        name = "buffer.allocate.initialized"
        if offset < 0 or length < 0 or offset + length > source.length:
            raise VMError(
                StatusCode.OUT_OF_RANGE,
                f"hal_inline.{name}: source range [{offset}, {offset + length}) is out of "
                f"bounds of a {source.length}-byte buffer",
            )
        buffer = self._allocate(name, minimum_alignment, length)
        storage = storage_of(buffer)
        storage.data[:] = source.data[offset : offset + length]
        return buffer, storage

    @vm_import("hal_inline.buffer.wrap", "0rII_r", source=VM_BUFFER)
    def buffer_wrap(self, source, offset, length):
        raise VMError(
            StatusCode.UNIMPLEMENTED,
            "hal_inline.buffer.wrap: vm->hal buffer wrapping not yet implemented "
            "(as in IREE 3.13's hal_inline module)",
        )

    @vm_import("hal_inline.buffer.subspan", "0rII_r", source_buffer=BUFFER)
    def buffer_subspan(self, source_buffer, source_offset, length):
        return source_buffer.subspan(source_offset, length)

    @vm_import("hal_inline.buffer.length", "0r_I", buffer=BUFFER)
    def buffer_length(self, buffer):
        return buffer.length

    @vm_import("hal_inline.buffer.storage", "0r_r", buffer=BUFFER)
    def buffer_storage(self, buffer):
        return storage_of(buffer)

    # -- buffer views (shared with the full HAL module) -------------------------------------

    @vm_import("hal_inline.buffer_view.create", "0rIIiiCID_r", buffer=BUFFER)
    def buffer_view_create(
        self, buffer, source_offset, source_length, element_type, encoding_type, shape
    ):
        if source_length == WHOLE_BUFFER:
            source_length = buffer.length - source_offset
        return self._views.buffer_view_create(
            buffer, source_offset, source_length, element_type, encoding_type, shape
        )

    @vm_import("hal_inline.buffer_view.assert", "0rriiCID_v")
    def buffer_view_assert(self, buffer_view, message, element_type, encoding_type, shape):
        self._views.buffer_view_assert(buffer_view, message, element_type, encoding_type, shape)

    @vm_import("hal_inline.buffer_view.buffer", "0r_r")
    def buffer_view_buffer(self, buffer_view):
        return self._views.buffer_view_buffer(buffer_view)

    @vm_import("hal_inline.buffer_view.element_type", "0r_i")
    def buffer_view_element_type(self, buffer_view):
        return self._views.buffer_view_element_type(buffer_view)

    @vm_import("hal_inline.buffer_view.encoding_type", "0r_i")
    def buffer_view_encoding_type(self, buffer_view):
        return self._views.buffer_view_encoding_type(buffer_view)

    @vm_import("hal_inline.buffer_view.rank", "0r_i")
    def buffer_view_rank(self, buffer_view):
        return self._views.buffer_view_rank(buffer_view)

    @vm_import("hal_inline.buffer_view.dim", "0ri_I")
    def buffer_view_dim(self, buffer_view, index):
        return self._views.buffer_view_dim(buffer_view, index)

    @vm_import("hal_inline.buffer_view.trace", "0rCrD_v")
    def buffer_view_trace(self, key, operands):
        self._views.buffer_view_trace(key, operands)

    # -- device ---------------------------------------------------------------------------

    @vm_import("hal_inline.device.query.i64", "0rr_iI", category=TEXT, key=TEXT)
    def device_query_i64(self, category, key):
        """(ok, value): only the `hal.cpu` category is known to the inline module."""
        if category == "hal.cpu":
            return 1, int(has_cpu_feature(key))
        return 0, 0


__all__ = ["HalInlineModule", "storage_of"]

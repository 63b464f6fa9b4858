"""IoParametersModule: the `io_parameters` import module (hal-abi.md §G.1).

    load(device, queue_affinity, wait_fence, signal_fence, source_scope,
         target_queue_affinity, target_memory_types, target_buffer_usage,
         key_table, key_data, spans) -> !vm.list<!hal.buffer>
    gather(device, queue_affinity, wait_fence, signal_fence, source_scope,
           target_buffer, key_table, key_data, spans)
    scatter(device, queue_affinity, wait_fence, signal_fence, source_buffer,
            target_scope, key_table, key_data, spans)

`key_table` holds `{u32 offset, u32 length}` per span into `key_data`; `spans` holds
`{u64 parameter_offset, u64 buffer_offset, u64 length}` (24 bytes each). A null scope is
the empty scope (where `--parameters=FILE` without `SCOPE=` puts its file).

Behaviour follows IREE's module.c and parameter_index_provider.c:
* The scope's provider is found first (NOT_FOUND "no provider registered that handles
  scopes like ..."), then the argument buffers are checked (INVALID_ARGUMENT /
  OUT_OF_RANGE); neither touches the fences.
* Each span is then resolved: unknown key -> NOT_FOUND; access (scatter needs a file
  opened writable; splats are read-only) -> PERMISSION_DENIED; `parameter_offset +
  length` past the parameter -> OUT_OF_RANGE; a buffer range past its buffer ->
  OUT_OF_RANGE. Such an error fails the signal fence AND is raised from the call.
* The copies are queue-ordered on the device's LocalQueue: they run once the wait
  fence is reached, then the signal fence is signaled (failed if the work fails).
* `load` returns its buffers at once (contents arrive with the signal fence). A file
  parameter is wrapped zero-copy when the usage cannot write it (SHARING_IMMUTABLE, or
  no write usage bits), its file is read-only and its address is 64-byte aligned (what
  kernels assume of bindings); otherwise it is copied into a new buffer of the requested
  memory types and usage. Splats are filled with their pattern.
"""

from __future__ import annotations

import struct

import numpy as np

from ..errors import StatusCode, VMError, one_line
from ..hal.buffer import (
    ALIGNMENT,
    USAGE_DISPATCH_IMAGE_WRITE,
    USAGE_DISPATCH_STORAGE_WRITE,
    USAGE_MAPPING_ACCESS_SEQUENTIAL_WRITE,
    USAGE_SHARING_IMMUTABLE,
    USAGE_TRANSFER_TARGET,
    HalBuffer,
)
from ..hal.device import HalDevice
from ..hal.fence import Fence
from ..hal.module import BUFFER, QUEUE_FENCES
from ..params.files import key_label
from ..params.entry import ParameterEntry, splat_bytes
from ..params.index import ParameterProviders, build_providers
from ..vm import args as vm_args
from ..vm.args import DEVICE, HOST_BYTES, U32, import_module, vm_import
from ..vm.list import VMList

_KEY = struct.Struct("<II")
_SPAN = struct.Struct("<QQQ")

_WRITE_USAGE = (
    USAGE_TRANSFER_TARGET
    | USAGE_DISPATCH_STORAGE_WRITE
    | USAGE_DISPATCH_IMAGE_WRITE
    | USAGE_MAPPING_ACCESS_SEQUENTIAL_WRITE
)

_MODULE = "io_parameters"


def _error(code: StatusCode, name: str, message: str) -> VMError:
    return vm_args.error(code, _MODULE, name, message)


def _invalid(name: str, message: str) -> VMError:
    return vm_args.invalid(_MODULE, name, message)


def _bytes(value) -> memoryview:
    """A checked `!vm.buffer` argument (VMBuffer, or bytes-like for hosts and tests)."""
    return vm_args.host_view(value)[0]


# The arguments every parameter operation takes.
_COMMON = {
    "device": DEVICE,
    **QUEUE_FENCES,
    "key_table": HOST_BYTES,
    "key_data": HOST_BYTES,
    "spans": HOST_BYTES,
}


class _Span:
    __slots__ = ("index", "key", "parameter_offset", "buffer_offset", "length", "entry")

    def __init__(self, index, key, parameter_offset, buffer_offset, length) -> None:
        self.index = index
        self.key = key
        self.parameter_offset = parameter_offset
        self.buffer_offset = buffer_offset
        self.length = length
        self.entry: ParameterEntry | None = None


@import_module("io_parameters")
class IoParametersModule:
    """The `io_parameters` module over a set of parameter providers (scopes)."""

    DEVICE_TYPES: tuple[type, ...] = (HalDevice,)

    def __init__(self, providers=None) -> None:
        """`providers`: anything `runtime_support.params.build_providers` accepts (None,
        a ParameterProviders, (scope, path) pairs, {scope: path(s)})."""
        self.providers: ParameterProviders = build_providers(providers)

    def __repr__(self) -> str:
        return f"<IoParametersModule {self.providers!r}>"

    # -- argument decoding ------------------------------------------------------------

    @staticmethod
    def _scope(value) -> str:
        """A checked, possibly null scope `!vm.buffer` as text (null: the default "")."""
        if value is None:
            return ""
        return bytes(_bytes(value)).decode("utf-8", errors="surrogateescape")

    @staticmethod
    def _spans(key_table, key_data, spans, name: str) -> list[_Span]:
        table, keys, raw = _bytes(key_table), _bytes(key_data), _bytes(spans)
        if raw.nbytes % _SPAN.size:
            raise _invalid(
                name,
                f"span storage ({raw.nbytes} bytes) must be a multiple of the "
                f"{_SPAN.size}-byte span entry",
            )
        count = raw.nbytes // _SPAN.size
        if table.nbytes < count * _KEY.size:
            raise _invalid(
                name,
                f"key string table ({table.nbytes} bytes) must have enough data to service all "
                f"{count} defined spans ({count * _KEY.size} bytes)",
            )
        out = []
        for i in range(count):
            offset, length = _KEY.unpack_from(table, i * _KEY.size)
            if offset > keys.nbytes or (length and offset + length > keys.nbytes):
                raise _error(
                    StatusCode.OUT_OF_RANGE,
                    name,
                    f"key {i} [{offset}, {offset + length}) is outside the "
                    f"{keys.nbytes}-byte key data",
                )
            key = bytes(keys[offset : offset + length]).decode("utf-8", errors="surrogateescape")
            parameter_offset, buffer_offset, span_length = _SPAN.unpack_from(raw, i * _SPAN.size)
            out.append(_Span(i, key, parameter_offset, buffer_offset, span_length))
        return out

    def _begin(self, scope: str, key_table, key_data, spans, name: str) -> list[_Span]:
        """Provider lookup then argument decoding (IREE's order); no fence is touched."""
        index = self.providers.index(scope)
        if index is None:
            first = ""
            try:
                decoded = self._spans(key_table, key_data, spans, name)
                if decoded:
                    first = (
                        f" (looking up parameter {key_label(decoded[0].key)} in scope "
                        f"{key_label(scope)})"
                    )
            except VMError:
                pass
            raise _error(
                StatusCode.NOT_FOUND,
                name,
                f"no provider registered that handles scopes like {key_label(scope)}{first}",
            )
        return self._spans(key_table, key_data, spans, name)

    def _resolve(self, scope: str, span: _Span, name: str, write: bool) -> ParameterEntry:
        try:
            entry = self.providers.lookup(scope, span.key)
        except VMError as e:
            raise _error(e.code, name, e.message) from None
        if write and (entry.file is None or not entry.file.writable):
            if entry.file is None:
                what = "a splat (synthetic, read-only)"
            else:
                what = f"stored in '{entry.file.path}', which was opened read-only"
            raise _error(
                StatusCode.PERMISSION_DENIED,
                name,
                f"parameter `{one_line(span.key)}` (scope {key_label(scope)}) storage does not "
                f"support the requested access type; parameter allows READ, operation requires "
                f"WRITE: the parameter is {what}",
            )
        if span.parameter_offset + span.length > entry.length:
            raise _error(
                StatusCode.OUT_OF_RANGE,
                name,
                f"parameter `{one_line(span.key)}` (scope {key_label(scope)}) range out of "
                f"bounds (offset={span.parameter_offset}, length={span.length}, "
                f"size={entry.length})",
            )
        span.entry = entry
        return entry

    @staticmethod
    def _check_buffer_range(buffer_length: int, span: _Span, name: str, what: str) -> None:
        if span.buffer_offset + span.length > buffer_length:
            raise _error(
                StatusCode.OUT_OF_RANGE,
                name,
                f"span {span.index} (parameter `{one_line(span.key)}`): {what} range "
                f"[{span.buffer_offset}, {span.buffer_offset + span.length}) is out of bounds "
                f"of a {buffer_length}-byte buffer",
            )

    @staticmethod
    def _fail(signal: Fence | None, error: VMError) -> VMError:
        if signal is not None:
            signal.fail(error)
        return error

    # -- imports ----------------------------------------------------------------------

    @vm_import(
        "io_parameters.load", "0rIrrrIiirrr_r",
        **_COMMON, source_scope=HOST_BYTES.or_null,
        target_memory_types=U32, target_buffer_usage=U32,
    )
    def load(
        self,
        device,
        queue_affinity,
        wait_fence,
        signal_fence,
        source_scope,
        target_queue_affinity,
        target_memory_types,
        target_buffer_usage,
        key_table,
        key_data,
        spans,
    ):
        name = "load"
        wait, signal = wait_fence, signal_fence
        scope = self._scope(source_scope)
        spans = self._begin(scope, key_table, key_data, spans, name)
        memory_types, usage = target_memory_types, target_buffer_usage
        may_write = bool(usage & _WRITE_USAGE) and not usage & USAGE_SHARING_IMMUTABLE
        buffers = []
        copies = []  # (target buffer, span) filled on the queue
        try:
            for span in spans:
                entry = self._resolve(scope, span, name, write=False)
                # The buffer is exactly the span; IREE reads into it at buffer_offset.
                self._check_buffer_range(span.length, span, name, "target buffer")
                buffer = None
                if entry.file is not None and not may_write and not entry.file.writable:
                    buffer = self._wrap(entry, span, memory_types, usage, device)
                if buffer is None:
                    buffer = self._allocate(device, memory_types, usage, span, name)
                    copies.append((buffer, span))
                buffers.append(buffer)
        except VMError as e:
            raise self._fail(signal, e)

        def work():
            for buffer, span in copies:
                _read_into(buffer, span)

        device.queue.submit(wait, signal, work, f"{_MODULE}.{name}")
        result = VMList("!hal.buffer", len(buffers))
        result.resize(len(buffers))
        for i, buffer in enumerate(buffers):
            result.set_ref(i, buffer)
        return result

    @staticmethod
    def _allocate(device, memory_types: int, usage: int, span: _Span, name: str) -> HalBuffer:
        try:
            return device.allocator.allocate(memory_types, usage, span.length)
        except (MemoryError, ValueError, OverflowError):
            raise _error(
                StatusCode.RESOURCE_EXHAUSTED,
                name,
                f"cannot allocate {span.length} bytes for parameter `{one_line(span.key)}`",
            ) from None

    @staticmethod
    def _wrap(entry: ParameterEntry, span: _Span, memory_types, usage, device):
        """A zero-copy read-only buffer over the mapped bytes, or None if unaligned or the
        device cannot address host memory (cuda: the parameter is uploaded instead)."""
        if not getattr(device.allocator, "host_memory", True):
            return None
        view = entry.file.view
        start = entry.offset + span.parameter_offset
        if span.length:
            data = np.frombuffer(view, np.uint8, span.length, start)
            if data.ctypes.data % ALIGNMENT:
                return None
        else:
            data = np.zeros(0, np.uint8)
        if data.flags.writeable:
            data = data.view()
            data.flags.writeable = False
        return HalBuffer.wrap_host(
            data,
            readonly=True,
            memory_types=memory_types,
            usage=usage,
            owner=entry.file,
            allocator=device.allocator,
        )

    @vm_import(
        "io_parameters.gather", "0rIrrrrrrr_v",
        **_COMMON, source_scope=HOST_BYTES.or_null, target_buffer=BUFFER,
    )
    def gather(
        self,
        device,
        queue_affinity,
        wait_fence,
        signal_fence,
        source_scope,
        target_buffer,
        key_table,
        key_data,
        spans,
    ):
        name = "gather"
        wait, signal, target = wait_fence, signal_fence, target_buffer
        scope = self._scope(source_scope)
        spans = self._begin(scope, key_table, key_data, spans, name)
        try:
            if target.readonly and any(s.length for s in spans):
                raise _error(StatusCode.PERMISSION_DENIED, name, "target_buffer is read-only")
            for span in spans:
                self._resolve(scope, span, name, write=False)
                self._check_buffer_range(target.length, span, name, "target_buffer")
        except VMError as e:
            raise self._fail(signal, e)

        def work():
            for span in spans:
                _read_into(target, span)

        device.queue.submit(wait, signal, work, f"{_MODULE}.{name}")

    @vm_import(
        "io_parameters.scatter", "0rIrrrrrrr_v",
        **_COMMON, source_buffer=BUFFER, target_scope=HOST_BYTES.or_null,
    )
    def scatter(
        self,
        device,
        queue_affinity,
        wait_fence,
        signal_fence,
        source_buffer,
        target_scope,
        key_table,
        key_data,
        spans,
    ):
        name = "scatter"
        wait, signal, source = wait_fence, signal_fence, source_buffer
        scope = self._scope(target_scope)
        spans = self._begin(scope, key_table, key_data, spans, name)
        try:
            for span in spans:
                self._resolve(scope, span, name, write=True)
                self._check_buffer_range(source.length, span, name, "source_buffer")
        except VMError as e:
            raise self._fail(signal, e)

        def work():
            touched = {}
            for span in spans:
                if not span.length:
                    continue
                entry = span.entry
                start = entry.offset + span.parameter_offset
                src = source.bytes_view(span.buffer_offset, span.length)
                entry.file.view[start : start + span.length] = memoryview(src).cast("B")
                touched[id(entry.file)] = entry.file
            for file in touched.values():
                file.flush()

        device.queue.submit(wait, signal, work, f"{_MODULE}.{name}")


def _read_into(target: HalBuffer, span: _Span) -> None:
    """Copies (or splats) `span` of its parameter into `target` at the span's offset."""
    if not span.length:
        return
    entry = span.entry
    if entry.file is None:
        data = splat_bytes(entry.pattern, span.parameter_offset, span.length)
    else:
        data = np.frombuffer(
            entry.file.view, np.uint8, span.length, entry.offset + span.parameter_offset
        )
    target.write(span.buffer_offset, data)

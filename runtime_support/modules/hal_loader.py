"""HalLoaderModule: the `hal_loader` import module (hal-abi.md §H) of the inline
execution model: load executables and dispatch them synchronously on the calling thread.

Bindings are `!vm.buffer` ranges (usually `hal_inline.buffer.storage` of a HAL buffer),
not HAL buffers. Semantics follow IREE 3.13's runtime/src/iree/modules/hal/loader/module.c:
at most 32 bindings, every binding range checked against its buffer, one worker.
"""

from __future__ import annotations

import numpy as np

from ..errors import StatusCode, VMError
from ..hal.executable import HalExecutable
from ..loaders import supported_formats
from ..vm import args as vm_args
from ..vm.buffer import VMBuffer

MAX_BINDINGS = 32


def _invalid(name: str, message: str) -> VMError:
    return vm_args.invalid("hal_loader", name, message)


def _vm_buffer(value, name: str, arg: str) -> VMBuffer:
    return vm_args.deref(value, VMBuffer, "!vm.buffer", "hal_loader", name, arg)


def _executable(value, name: str) -> HalExecutable:
    return vm_args.deref(value, HalExecutable, "!hal.executable", "hal_loader", name, "executable")


def _text(value, name: str, arg: str) -> str:
    return vm_args.vm_text(_vm_buffer(value, name, arg), "hal_loader", name, arg)


class HalLoaderModule:
    """The `hal_loader` module over pyree's executable loaders (runtime_support/loaders)."""

    IMPORTS: dict[str, str] = {
        "hal_loader.executable.query_support": "0r_i",
        "hal_loader.executable.load": "0rrr_r",
        "hal_loader.executable.lookup.function": "0rr_I",
        "hal_loader.executable.dispatch": "0rIiiiCiDCrIID_v",
    }

    def __init__(self, formats=None) -> None:
        self.formats = frozenset(supported_formats() if formats is None else formats)

    def executable_query_support(self, executable_format):
        format = _text(executable_format, "executable.query_support", "executable_format")
        return int(format in self.formats)

    def executable_load(self, executable_format, executable_data, constants):
        name = "executable.load"
        format = _text(executable_format, name, "executable_format")
        data = _vm_buffer(executable_data, name, "executable_data")
        values = None
        if constants is not None:
            packed = _vm_buffer(constants, name, "constants")
            if packed.length % 4:
                raise _invalid(
                    name,
                    f"constant buffer data must contain 4-byte elements but data length "
                    f"is {packed.length}",
                )
            values = [int(v) for v in np.frombuffer(packed.data, dtype="<u4")]
        if format not in self.formats:
            raise VMError(
                StatusCode.NOT_FOUND,
                f"hal_loader.{name}: no executable loader registered for the given "
                f"executable format '{format}'",
            )
        return HalExecutable.load(None, format, data.data, values)

    def executable_lookup_function(self, executable, function_name):
        name = "executable.lookup.function"
        executable = _executable(executable, name)
        return executable.lookup(_vm_buffer(function_name, name, "function_name").tobytes())

    def executable_dispatch(
        self, executable, function_id, workgroup_x, workgroup_y, workgroup_z, constants, bindings
    ):
        name = "executable.dispatch"
        executable = _executable(executable, name)
        if len(bindings) > MAX_BINDINGS:
            raise VMError(StatusCode.RESOURCE_EXHAUSTED, f"hal_loader.{name}: too many bindings")
        resolved = []
        for i, (buffer, offset, length) in enumerate(bindings):
            buffer = _vm_buffer(buffer, name, f"bindings[{i}]")
            if length == -1:
                length = buffer.length - offset
            if offset < 0 or length < 0 or offset + length > buffer.length:
                raise VMError(
                    StatusCode.OUT_OF_RANGE,
                    f"hal_loader.{name}: binding {i} range [{offset}, {offset + length}) is "
                    f"out of bounds of a {buffer.length}-byte buffer",
                )
            resolved.append((buffer.address + offset if length else 0, length))
        counts = tuple(int(c) & 0xFFFFFFFF for c in (workgroup_x, workgroup_y, workgroup_z))
        constants = [int(c) & 0xFFFFFFFF for c in constants]
        executable.dispatch(function_id, counts, constants, resolved)


__all__ = ["HalLoaderModule", "MAX_BINDINGS"]

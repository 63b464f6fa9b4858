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
from ..vm.args import TEXT, U32, U32_SPAN, Each, Ref, import_module, vm_import
from ..vm.buffer import VMBuffer

MAX_BINDINGS = 32

VM_BUFFER = Ref(VMBuffer, "!vm.buffer")
EXECUTABLE = Ref(HalExecutable, "!hal.executable")


def _invalid(name: str, message: str) -> VMError:
    return vm_args.invalid("hal_loader", name, message)


@import_module("hal_loader")
class HalLoaderModule:
    """The `hal_loader` module over pyree's executable loaders (runtime_support/loaders)."""

    def __init__(self, formats=None) -> None:
        self.formats = frozenset(supported_formats() if formats is None else formats)

    @vm_import("hal_loader.executable.query_support", "0r_i", executable_format=TEXT)
    def executable_query_support(self, executable_format):
        return int(executable_format in self.formats)

    @vm_import(
        "hal_loader.executable.load", "0rrr_r",
        executable_format=TEXT, executable_data=VM_BUFFER, constants=VM_BUFFER.or_null,
    )
    def executable_load(self, executable_format, executable_data, constants):
        name = "executable.load"
        format = executable_format
        values = None
        if constants is not None:
            packed = constants
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
        return HalExecutable.load(None, format, executable_data.data, values)

    @vm_import(
        "hal_loader.executable.lookup.function", "0rr_I",
        executable=EXECUTABLE, function_name=VM_BUFFER,
    )
    def executable_lookup_function(self, executable, function_name):
        return executable.lookup(function_name.tobytes())

    @vm_import(
        "hal_loader.executable.dispatch", "0rIiiiCiDCrIID_v",
        executable=EXECUTABLE, workgroup_x=U32, workgroup_y=U32, workgroup_z=U32,
        constants=U32_SPAN, bindings=Each(VM_BUFFER, at=0),
    )
    def executable_dispatch(
        self, executable, function_id, workgroup_x, workgroup_y, workgroup_z, constants, bindings
    ):
        name = "executable.dispatch"
        if len(bindings) > MAX_BINDINGS:
            raise VMError(StatusCode.RESOURCE_EXHAUSTED, f"hal_loader.{name}: too many bindings")
        resolved = []
        for i, (buffer, offset, length) in enumerate(bindings):
            if length == -1:
                length = buffer.length - offset
            if offset < 0 or length < 0 or offset + length > buffer.length:
                raise VMError(
                    StatusCode.OUT_OF_RANGE,
                    f"hal_loader.{name}: binding {i} range [{offset}, {offset + length}) is "
                    f"out of bounds of a {buffer.length}-byte buffer",
                )
            resolved.append((buffer.address + offset if length else 0, length))
        executable.dispatch(function_id, (workgroup_x, workgroup_y, workgroup_z), constants, resolved)


__all__ = ["HalLoaderModule", "MAX_BINDINGS"]

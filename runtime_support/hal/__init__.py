"""hal runtime support: the local CPU HAL and the `hal` import module.

device.py          HalDevice (every device's base); LocalDevice (`local-sync` /
                   `local-task`): allocator, queue, queries
allocator.py       HalAllocator: aligned host allocations, zero-copy host imports
buffer.py          HalBuffer (+ Allocation): bytes with a stable address, subspans
buffer_view.py     HalBufferView: buffer + shape + element type + encoding
element_types.py   §B.1/§B.2 encodings and numpy dtypes
command_buffer.py  HalCommandBuffer: recorded commands, binding tables
binding.py         BufferRef, Binding: a command's buffer argument, a binding-table entry
queue.py           LocalQueue: fence-ordered synchronous execution
fence.py           Fence: timepoints, join/signal/fail/wait, completion callbacks
executable.py      HalExecutable: a loader Executable on a device
file.py            HalFile: read-only file over host memory
module.py          HalModule: one method per `hal.*` import
"""

from .allocator import HalAllocator
from .buffer import HalBuffer
from .buffer_view import HalBufferView
from .command_buffer import HalCommandBuffer
from .device import HalDevice, LocalDevice
from .executable import HalExecutable
from .fence import Fence
from .file import HalFile
from .module import HalChannel, HalModule

REF_TYPES = {
    "!hal.buffer": HalBuffer,
    "!hal.buffer_view": HalBufferView,
    "!hal.device": HalDevice,
    "!hal.allocator": HalAllocator,
    "!hal.command_buffer": HalCommandBuffer,
    "!hal.executable": HalExecutable,
    "!hal.fence": Fence,
    "!hal.file": HalFile,
    "!hal.channel": HalChannel,
}


def _register_ref_types() -> None:
    try:
        from ..vm.refs import register_ref_type
    except ImportError:  # the VM's ref registry is not there (yet)
        return
    for type_name, cls in REF_TYPES.items():
        register_ref_type(type_name, cls)


_register_ref_types()

__all__ = [
    "Fence",
    "HalAllocator",
    "HalBuffer",
    "HalBufferView",
    "HalChannel",
    "HalCommandBuffer",
    "HalDevice",
    "HalExecutable",
    "HalFile",
    "HalModule",
    "LocalDevice",
    "REF_TYPES",
]

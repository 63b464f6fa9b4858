# Golden module frame (from tensor_elementwise.mlir); function bodies live in golden/<case>/.
"""Package translated by pyree from the VM module named in VM_MODULE_NAME.

3 functions, 18 imports, 9 rodata segments.
Generated code; regenerate with the command below rather than editing.
"""

# Source: tensor_elementwise.vmfb
# Translator: pyree 0.1.0
# Regenerate: pyree-translate tensor_elementwise.vmfb -o OUT_DIR --name elementwise
from runtime_support.api.context import Export, Import, ModuleContext, describe_exports, vm_fail
from runtime_support.vm.numerics import add_i64, trunc_i64_i32
from runtime_support.vm.globals import global_store_ref
from runtime_support.exec.program import FailIf, QueueProgram, Rodata
from runtime_support.exec.steps import (
    BufferAssert,
    BufferViewAssert,
    BufferViewBuffer,
    CommandBufferCreate,
    CommandBufferDispatch,
    CommandBufferExecutionBarrier,
    CommandBufferFinalize,
    DeviceAllocator,
    DeviceQueueAlloca,
    DeviceQueueExecuteIndirect,
    ExecutableLookupFunction,
    FenceAwait,
    FenceCreate,
)
from runtime_support.exec.bind import bind_program
from runtime_support.hal.buffer import (
    MEMORY_TYPE_DEVICE_LOCAL,
    MEMORY_TYPE_DEVICE_VISIBLE,
    USAGE_DISPATCH_STORAGE,
    USAGE_TRANSFER,
)
from runtime_support.hal.command_buffer import CATEGORY_DISPATCH, CATEGORY_TRANSFER
from runtime_support.hal.element_types import ENCODING_DENSE_ROW_MAJOR, FLOAT_32

#: The VM module's own name (from the vmfb) and the package name it was written as.
VM_MODULE_NAME = "module"
PACKAGE_NAME = "elementwise"

#: Export name -> Export(function, argument codes, result codes, `iree.abi.declaration`,
#: results returned zero-copy, arguments whose copies the next call may refill): the last
#: two proved at translate time (the result was allocated by the call and stored nowhere
#: else; the function keeps no reference to the argument).
_EXPORTS = {
    "elementwise": Export(
        "elementwise",
        "rr",
        "rrr",
        "sync func @elementwise(%input0: tensor<2x5xf32>, %input1: tensor<2x5xf32>) -> (%output0: tensor<2x5xf32>, %output1: tensor<2x5xf32>, %output2: tensor<2x5xf32>)",
        fresh_results=(),
        unkept_arguments=(0, 1),
    ),
    "__init": Export("__init", "", "", None),
}
#: Export name -> its `iree.abi.declaration` (None where the module has none).
EXPORTS = {name: e.declaration for name, e in _EXPORTS.items()}
#: Export name -> VM calling convention.
CCONVS = {name: e.cconv for name, e in _EXPORTS.items()}
# help(pkg) lists the exports (built from the literals above: no vmfb text in docstrings).
__doc__ = describe_exports(__doc__, _EXPORTS)
#: The package's API; dir(pkg) shows it rather than the runtime helpers it imports.
__all__ = ["load", "EXPORTS", "CCONVS", "VM_MODULE_NAME", "PACKAGE_NAME"]


def __dir__():
    return list(__all__)


#: Imports by ordinal: Import(full name, calling convention, optional).
_IMPORTS = (
    Import("hal.buffer.assert", "0rrrIii_v", False),
    Import("hal.buffer_view.create", "0rIIiiCID_r", False),
    Import("hal.buffer_view.assert", "0rriiCID_v", False),
    Import("hal.buffer_view.buffer", "0r_r", False),
    Import("hal.command_buffer.create", "0riiIi_r", False),
    Import("hal.command_buffer.finalize", "0r_v", False),
    Import("hal.command_buffer.execution_barrier", "0riiI_v", False),
    Import("hal.command_buffer.dispatch", "0rrIiiiICiDCiirIID_v", False),
    Import("hal.device.allocator", "0r_r", False),
    Import("hal.device.query.i64", "0rrr_iI", False),
    Import("hal.device.queue.alloca", "0rIrrIiiII_r", False),
    Import("hal.device.queue.execute.indirect", "0rIrrrICrIID_v", False),
    Import("hal.devices.count", "0v_i", False),
    Import("hal.devices.get", "0i_r", False),
    Import("hal.executable.create", "0rIrrr_r", False),
    Import("hal.executable.lookup.function", "0rr_I", False),
    Import("hal.fence.create", "0rI_r", False),
    Import("hal.fence.await", "0iICrD_i", False),
)

# Rodata segments in rodata.bin beside this file: (offset, length).
_RODATA = (
    (0, 13),
    (64, 6),
    (128, 21),
    (192, 19),
    (256, 13832),
    (14144, 41),
    (14208, 6),
    (14272, 6),
    (14336, 6),
)

_GLOBAL_BYTES = 0
_GLOBAL_REFS = 3

# Long `vm.fail` messages, out of line.
MESSAGE_0 = 'HAL device `__device_0` not found or unavailable: #hal.device.target<"local", [#hal.executable.target<"llvm-cpu", "embedded-elf-x86_64", {cpu = "generic", cpu_features = "", data_layout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128", debug_symbols = false, iree.encoding.resolver = #iree_cpu.cpu_encoding_resolver<>, max_stack_allocation_size = 32768 : i64, native_vector_size = 16 : i64, target_triple = "x86_64-unknown-unknown-eabi-elf"}>]>'
MESSAGE_1 = "HAL device `__device_0` does not support any variant of executable `elementwise_dispatch_0`; available formats: [embedded-elf-x86_64]"

# Queue programs: each queue region of a function, run by runtime_support/exec (one call
# where the region was; docs/design/host-path.md).
QUEUE_0 = QueueProgram(...)  # golden/<case>/_programs.py

QUEUE_1 = QueueProgram(...)  # golden/<case>/_programs.py


def _bind(ctx):
    """Binds the VM functions to one context; imports, globals and rodata become locals."""
    rwdata = ctx.rwdata
    refs = ctx.refs
    (
        hal_buffer_assert,
        hal_buffer_view_create,
        hal_buffer_view_assert,
        hal_buffer_view_buffer,
        hal_command_buffer_create,
        hal_command_buffer_finalize,
        hal_command_buffer_execution_barrier,
        hal_command_buffer_dispatch,
        hal_device_allocator,
        hal_device_query_i64,
        hal_device_queue_alloca,
        hal_device_queue_execute_indirect,
        hal_devices_count,
        hal_devices_get,
        hal_executable_create,
        hal_executable_lookup_function,
        hal_fence_create,
        hal_fence_await,
    ) = ctx.imports
    queue_0 = bind_program(QUEUE_0, ctx, _IMPORTS)
    queue_1 = bind_program(QUEUE_1, ctx, _IMPORTS)
    (
        rodata_hal_device_id,
        rodata_local,
        rodata_hal_executable_format,
        rodata_embedded_elf_x86_64,
        rodata_4_elf,
        rodata_elementwise_dispatch_0_elementwise_10_f3,
        rodata_input0,
        rodata_tensor,
        rodata_input1,
    ) = ctx.rodata

    def fn0(...): ...  # golden/<case>/fn0.py
    def elementwise(...): ...  # golden/<case>/elementwise.py
    def __init(...): ...  # golden/<case>/__init.py
    return {
        "fn0": fn0,
        "elementwise": elementwise,
        "__init": __init,
    }


def load(device="local", parameters=None, modules=None, workers=None):
    """Creates an independent context: the device, the imports, `__init` run.

    device: "local" (multi-threaded workgroups), "local-sync" or "local-task".
    parameters: parameter archives by scope, e.g. {"model": "weights.irpa"}.
    modules: import modules by name: overrides (e.g. {"check": ...}), other translated
        contexts whose exports this module imports, or Python objects declaring IMPORTS.
    workers: threads a "local" dispatch may use (default: $PYREE_WORKERS, else the cores).
    """
    return ModuleContext(
        package_file=__file__,
        bind=_bind,
        imports=_IMPORTS,
        rodata=_RODATA,
        global_bytes=_GLOBAL_BYTES,
        global_refs=_GLOBAL_REFS,
        exports=_EXPORTS,
        device=device,
        parameters=parameters,
        modules=modules,
        workers=workers,
    )

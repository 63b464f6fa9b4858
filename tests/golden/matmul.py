"""Package translated by pyree from the VM module named in VM_MODULE_NAME.

5 functions, 18 imports, 10 rodata segments.
Generated code; regenerate with pyree-translate rather than editing.
"""

from runtime_support.context import ModuleContext
from runtime_support.vm.numerics import add_i64, trunc_i64_i32
from runtime_support.vm.globals import global_load_ref, global_store_ref
from runtime_support.context import vm_fail

#: The VM module's own name (from the vmfb) and the package name it was written as.
VM_MODULE_NAME = "module"
PACKAGE_NAME = "matmul"

#: Export name -> its `iree.abi.declaration` (None where the module has none).
EXPORTS = {
    "matmul": "sync func @matmul(%input0: tensor<3x5xf32>, %input1: tensor<5x4xf32>) -> (%output0: tensor<3x4xf32>)",
    "batch_matmul": "sync func @batch_matmul(%input0: tensor<2x3x4xf32>, %input1: tensor<2x4x2xf32>) -> (%output0: tensor<2x3x2xf32>)",
    "__init": None,
}

#: Export name -> VM calling convention.
CCONVS = {
    "matmul": "0rr_r",
    "batch_matmul": "0rr_r",
    "__init": "0v_v",
}

# Export name -> (function, argument codes, result codes, declaration).
_EXPORT_TABLE = {
    "matmul": (
        "matmul",
        ("r", "r"),
        ("r",),
        "sync func @matmul(%input0: tensor<3x5xf32>, %input1: tensor<5x4xf32>) -> (%output0: tensor<3x4xf32>)",
    ),
    "batch_matmul": (
        "batch_matmul",
        ("r", "r"),
        ("r",),
        "sync func @batch_matmul(%input0: tensor<2x3x4xf32>, %input1: tensor<2x4x2xf32>) -> (%output0: tensor<2x3x2xf32>)",
    ),
    "__init": ("init", (), (), None),
}

# Imports by ordinal: (full name, calling convention, optional).
_IMPORTS = (
    ("hal.buffer.assert", "0rrrIii_v", False),
    ("hal.buffer_view.create", "0rIIiiCID_r", False),
    ("hal.buffer_view.assert", "0rriiCID_v", False),
    ("hal.buffer_view.buffer", "0r_r", False),
    ("hal.command_buffer.create", "0riiIi_r", False),
    ("hal.command_buffer.finalize", "0r_v", False),
    ("hal.command_buffer.execution_barrier", "0riiI_v", False),
    ("hal.command_buffer.dispatch", "0rrIiiiICiDCiirIID_v", False),
    ("hal.device.allocator", "0r_r", False),
    ("hal.device.query.i64", "0rrr_iI", False),
    ("hal.device.queue.alloca", "0rIrrIiiII_r", False),
    ("hal.device.queue.execute.indirect", "0rIrrrICrIID_v", False),
    ("hal.devices.count", "0v_i", False),
    ("hal.devices.get", "0i_r", False),
    ("hal.executable.create", "0rIrrr_r", False),
    ("hal.executable.lookup.function", "0rr_I", False),
    ("hal.fence.create", "0rI_r", False),
    ("hal.fence.await", "0iICrD_i", False),
)

# Rodata segments in rodata.bin beside this file: (offset, length).
_RODATA = (
    (0, 13),
    (64, 6),
    (128, 21),
    (192, 19),
    (256, 3192),
    (3456, 34),
    (3520, 6),
    (3584, 6),
    (3648, 6),
    (3712, 48),
)

_GLOBAL_BYTES = 0
_GLOBAL_REFS = 4


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
    (
        rodata_hal_device_id,
        rodata_local,
        rodata_hal_executable_format,
        rodata_embedded_elf_x86_64,
        rodata_4_elf,
        rodata_matmul_dispatch_0_matmul_3x4x5_f32,
        rodata_input0,
        rodata_tensor,
        rodata_input1,
        rodata_batch_matmul_dispatch_0_batch_matmul_2x3,
    ) = ctx.rodata

    def fn0():
        "Internal VM function 0 (cconv '0v_r')."
        r0 = r1 = r2 = r3 = None
        i0 = 13
        i1 = 28
        i2 = 2
        r0 = None
        i3 = 1
        i4 = 3
        i5 = 0
        i6 = 48
        i8 = 80
        i10 = 60
        i12 = 0
        i14 = -1
        r1 = global_load_ref(refs, 0, "!hal.device")
        r2 = global_load_ref(refs, 1, "!hal.executable")
        r3 = hal_command_buffer_create(r1, i5, i4, i14, i4)
        r1 = rodata_matmul_dispatch_0_matmul_3x4x5_f32
        i14 = hal_executable_lookup_function(r2, r1)
        r1 = None
        hal_command_buffer_dispatch(
            r3,
            r2,
            i14,
            i3,
            i3,
            i3,
            i12,
            [],
            [(i5, i5, r0, i12, i10), (i5, i3, r0, i12, i8), (i5, i2, r0, i12, i6)],
        )
        r2 = r0 = None
        hal_command_buffer_execution_barrier(r3, i1, i0, i12)
        hal_command_buffer_finalize(r3)
        return r3

    def matmul(r0, r1):
        "sync func @matmul(%input0: tensor<3x5xf32>, %input1: tensor<5x4xf32>) -> (%output0: tensor<3x4xf32>)"
        r2 = r3 = r4 = r5 = r6 = r7 = None
        i0 = 16
        i1 = 1
        i2 = 553648160
        i3 = 3075
        i4 = 48
        i6 = 3
        i8 = 5
        i10 = 4
        i12 = 60
        i14 = 80
        i16 = 48
        i18 = 0
        i20 = -1
        r2 = None
        i5 = -1
        r3 = global_load_ref(refs, 0, "!hal.device")
        r4 = global_load_ref(refs, 2, "!hal.command_buffer")
        r5 = rodata_input0
        hal_buffer_view_assert(r0, r5, i2, i1, [i6, i8])
        r5 = hal_buffer_view_buffer(r0)
        r0 = hal_device_allocator(r3)
        r6 = rodata_tensor
        hal_buffer_assert(r5, r6, r0, i12, i0, i3)
        r7 = rodata_input1
        hal_buffer_view_assert(r1, r7, i2, i1, [i8, i10])
        r7 = hal_buffer_view_buffer(r1)
        r1 = None
        hal_buffer_assert(r7, r6, r0, i14, i0, i3)
        r6 = None
        r0 = hal_fence_create(r3, i18)
        r1 = hal_device_queue_alloca(r3, i20, r2, r0, i18, i4, i3, i16, i18)
        r2 = hal_fence_create(r3, i18)
        hal_device_queue_execute_indirect(
            r3, i20, r0, r2, r4, i18, [(r5, i18, i12), (r7, i18, i14), (r1, i18, i16)]
        )
        r3 = r0 = r4 = r5 = r7 = None
        i0 = hal_fence_await(i5, i18, [r2])
        r2 = None
        if i0:
            r1 = None
            raise vm_fail(i0, "failed to wait on timepoint", "matmul", None)
        r0 = hal_buffer_view_create(r1, i18, i16, i2, i1, [i6, i10])
        r1 = None
        return r0

    def fn2():
        "Internal VM function 2 (cconv '0v_r')."
        r0 = r1 = r2 = r3 = None
        i0 = 13
        i1 = 28
        r0 = None
        i2 = 1
        i3 = 2
        i4 = 3
        i5 = 0
        i6 = 48
        i8 = 64
        i10 = 96
        i12 = 0
        i14 = -1
        r1 = global_load_ref(refs, 0, "!hal.device")
        r2 = global_load_ref(refs, 1, "!hal.executable")
        r3 = hal_command_buffer_create(r1, i5, i4, i14, i4)
        r1 = rodata_batch_matmul_dispatch_0_batch_matmul_2x3
        i14 = hal_executable_lookup_function(r2, r1)
        r1 = None
        hal_command_buffer_dispatch(
            r3,
            r2,
            i14,
            i3,
            i2,
            i2,
            i12,
            [],
            [(i5, i5, r0, i12, i10), (i5, i2, r0, i12, i8), (i5, i3, r0, i12, i6)],
        )
        r2 = r0 = None
        hal_command_buffer_execution_barrier(r3, i1, i0, i12)
        hal_command_buffer_finalize(r3)
        return r3

    def batch_matmul(r0, r1):
        "sync func @batch_matmul(%input0: tensor<2x3x4xf32>, %input1: tensor<2x4x2xf32>) -> (%output0: tensor<2x3x2xf32>)"
        r2 = r3 = r4 = r5 = r6 = r7 = None
        i0 = 16
        i1 = 1
        i2 = 553648160
        i3 = 3075
        i4 = 48
        i6 = 2
        i8 = 3
        i10 = 4
        i12 = 96
        i14 = 64
        i16 = 48
        i18 = 0
        i20 = -1
        r2 = None
        i5 = -1
        r3 = global_load_ref(refs, 0, "!hal.device")
        r4 = global_load_ref(refs, 3, "!hal.command_buffer")
        r5 = rodata_input0
        hal_buffer_view_assert(r0, r5, i2, i1, [i6, i8, i10])
        r5 = hal_buffer_view_buffer(r0)
        r0 = hal_device_allocator(r3)
        r6 = rodata_tensor
        hal_buffer_assert(r5, r6, r0, i12, i0, i3)
        r7 = rodata_input1
        hal_buffer_view_assert(r1, r7, i2, i1, [i6, i10, i6])
        r7 = hal_buffer_view_buffer(r1)
        r1 = None
        hal_buffer_assert(r7, r6, r0, i14, i0, i3)
        r6 = None
        r0 = hal_fence_create(r3, i18)
        r1 = hal_device_queue_alloca(r3, i20, r2, r0, i18, i4, i3, i16, i18)
        r2 = hal_fence_create(r3, i18)
        hal_device_queue_execute_indirect(
            r3, i20, r0, r2, r4, i18, [(r5, i18, i12), (r7, i18, i14), (r1, i18, i16)]
        )
        r3 = r0 = r4 = r5 = r7 = None
        i0 = hal_fence_await(i5, i18, [r2])
        r2 = None
        if i0:
            r1 = None
            raise vm_fail(i0, "failed to wait on timepoint", "batch_matmul", None)
        r0 = hal_buffer_view_create(r1, i18, i16, i2, i1, [i6, i8, i6])
        r1 = None
        return r0

    def init():
        "VM export '__init' (cconv '0v_v'); no ABI declaration."
        r0 = r1 = r2 = r3 = r4 = r5 = None
        i0 = 1
        r0 = None
        i1 = 14
        i2 = -1
        i4 = 18
        i5 = 0
        i6 = 0
        # tests/corpus/tensor_matmul.mlir:0:0
        i8 = 1
        r1 = None
        i10 = hal_devices_count()
        i12 = i10
        r2 = r1
        i10 = i6
        i14 = i6
        while True:
            i16 = int(r2 is not None)
            i16 = i16 ^ i0
            i17 = int(i10 < i12)
            i17 = i16 & i17
            if not i17:
                r1 = None
                if i16:
                    r0 = r2 = None
                    raise vm_fail(
                        i4,
                        'HAL device `__device_0` not found or unavailable: #hal.device.target<"local", [#hal.executable.target<"llvm-cpu", "embedded-elf-x86_64", {cpu = "generic", cpu_features = "", data_layout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128", debug_symbols = false, iree.encoding.resolver = #iree_cpu.cpu_encoding_resolver<>, max_stack_allocation_size = 32768 : i64, native_vector_size = 16 : i64, target_triple = "x86_64-unknown-unknown-eabi-elf"}>]>',
                        "__init",
                        None,
                    )
                r1 = rodata_hal_executable_format
                r3 = rodata_embedded_elf_x86_64
                i0, i8 = hal_device_query_i64(r2, r1, r3)
                r1 = None
                i4 = int(i8 != 0)
                i5 = i4 if i0 else i5
                # [tests/corpus/tensor_matmul.mlir:6:8, tests/corpus/tensor_matmul.mlir:14:8]
                i8 = i6 if i5 else i2
                i0 = int(i8 == i6)
                # tests/corpus/tensor_matmul.mlir:0:0
                global_store_ref(refs, 0, "!hal.device", r2)
                # [tests/corpus/tensor_matmul.mlir:6:8, tests/corpus/tensor_matmul.mlir:14:8]
                if i0:
                    # tests/corpus/tensor_matmul.mlir:0:0
                    r1 = rodata_4_elf
                    # [tests/corpus/tensor_matmul.mlir:6:8, tests/corpus/tensor_matmul.mlir:14:8]
                    r4 = hal_executable_create(r2, i2, r3, r1, r0)
                    r2 = r3 = r1 = r0 = None
                    global_store_ref(refs, 1, "!hal.executable", r4)
                    r4 = None
                    # tests/corpus/tensor_matmul.mlir:6:8
                    r1 = fn0()
                    global_store_ref(refs, 2, "!hal.command_buffer", r1)
                    # tests/corpus/tensor_matmul.mlir:14:8
                    r1 = fn2()
                    global_store_ref(refs, 3, "!hal.command_buffer", r1)
                    r1 = None
                    return
                # [tests/corpus/tensor_matmul.mlir:6:8, tests/corpus/tensor_matmul.mlir:14:8]
                r0 = r2 = r3 = None
                raise vm_fail(
                    i1,
                    "HAL device `__device_0` does not support any variant of executable `tensor_matmul_linked`; available formats: [embedded-elf-x86_64]",
                    "__init",
                    None,
                )
            # tests/corpus/tensor_matmul.mlir:0:0
            r2 = None
            i17 = trunc_i64_i32(i10)
            r3 = hal_devices_get(i17)
            r4 = rodata_hal_device_id
            r5 = rodata_local
            i17, i18 = hal_device_query_i64(r3, r4, r5)
            r4 = r5 = None
            i20 = int(i18 != 0)
            i20 = i20 if i17 else i5
            if i20:
                r4 = rodata_hal_executable_format
                r5 = rodata_embedded_elf_x86_64
                i17, i18 = hal_device_query_i64(r3, r4, r5)
                r4 = r5 = None
                i20 = int(i18 != 0)
                i20 = i20 if i17 else i5
                i17 = i20
            else:
                i17 = i5
                pass
            i18 = int(i14 == i6)
            i20 = i8 if i17 else i6
            i20 = add_i64(i14, i20)
            i18 = i17 & i18
            r3 = r3 if i18 else r1
            i10 = add_i64(i10, i8)
            r2 = r3
            r3 = None
            i14 = i20
            continue

    return {
        "fn0": fn0,
        "matmul": matmul,
        "fn2": fn2,
        "batch_matmul": batch_matmul,
        "init": init,
    }


def load(device="local", parameters=None, modules=None):
    """Creates an independent context: the device, the imports, `__init` run.

    device: "local" (multi-threaded workgroups), "local-sync" or "local-task".
    modules: optional overrides of import modules by name (e.g. {"check": ...}).
    """
    return ModuleContext(
        package_file=__file__,
        bind=_bind,
        imports=_IMPORTS,
        rodata=_RODATA,
        global_bytes=_GLOBAL_BYTES,
        global_refs=_GLOBAL_REFS,
        exports=_EXPORT_TABLE,
        device=device,
        parameters=parameters,
        modules=modules,
    )

"""Package translated by pyree from the VM module named in VM_MODULE_NAME.

7 functions, 23 imports, 9 rodata segments.
Generated code; regenerate with pyree-translate rather than editing.
"""

from runtime_support.context import ModuleContext
from runtime_support.vm.numerics import add_i64, bitcast_f32_i32, mul_i32, sub_i32, trunc_i64_i32
from runtime_support.vm.globals import global_load_ref, global_store_ref
from runtime_support.context import vm_fail

#: The VM module's own name (from the vmfb) and the package name it was written as.
VM_MODULE_NAME = "module"
PACKAGE_NAME = "multi_export"

#: Export name -> its `iree.abi.declaration` (None where the module has none).
EXPORTS = {
    "first": "sync func @first(%input0: i32) -> (%output0: i32)",
    "second": "sync func @second(%input0: i32, %input1: i32) -> (%output0: i32)",
    "nothing": "sync func @nothing() -> ()",
    "constant_tensor": "sync func @constant_tensor() -> (%output0: tensor<3xi32>)",
    "scale_tensor": "sync func @scale_tensor(%input0: tensor<3xf32>, %input1: f32) -> (%output0: tensor<3xf32>)",
    "__init": None,
}

#: Export name -> VM calling convention.
CCONVS = {
    "first": "0i_i",
    "second": "0ii_i",
    "nothing": "0v_v",
    "constant_tensor": "0v_r",
    "scale_tensor": "0rf_r",
    "__init": "0v_v",
}

# Export name -> (function, argument codes, result codes, declaration).
_EXPORT_TABLE = {
    "first": ("first", ("i",), ("i",), "sync func @first(%input0: i32) -> (%output0: i32)"),
    "second": (
        "second",
        ("i", "i"),
        ("i",),
        "sync func @second(%input0: i32, %input1: i32) -> (%output0: i32)",
    ),
    "nothing": ("nothing", (), (), "sync func @nothing() -> ()"),
    "constant_tensor": (
        "constant_tensor",
        (),
        ("r",),
        "sync func @constant_tensor() -> (%output0: tensor<3xi32>)",
    ),
    "scale_tensor": (
        "scale_tensor",
        ("r", "f"),
        ("r",),
        "sync func @scale_tensor(%input0: tensor<3xf32>, %input1: f32) -> (%output0: tensor<3xf32>)",
    ),
    "__init": ("init", (), (), None),
}

# Imports by ordinal: (full name, calling convention, optional).
_IMPORTS = (
    ("hal.ex.file.from_memory", "0rIirIIi_r", False),
    ("hal.allocator.allocate", "0rIiiI_r", False),
    ("hal.allocator.import", "0riIiirII_r", False),
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
    ("hal.device.queue.copy", "0rIrrrIrIII_v", False),
    ("hal.device.queue.read", "0rIrrrIrIII_v", False),
    ("hal.device.queue.execute", "0rIrrrI_v", False),
    ("hal.devices.count", "0v_i", False),
    ("hal.devices.get", "0i_r", False),
    ("hal.executable.create", "0rIrrr_r", False),
    ("hal.executable.lookup.function", "0rr_I", False),
    ("hal.fence.create", "0rI_r", False),
    ("hal.fence.await", "0iICrD_i", False),
)

# Rodata segments in rodata.bin beside this file: (offset, length).
_RODATA = (
    (0, 64),
    (64, 13),
    (128, 6),
    (192, 21),
    (256, 19),
    (320, 2472),
    (2816, 6),
    (2880, 6),
    (2944, 41),
)

_GLOBAL_BYTES = 0
_GLOBAL_REFS = 3


def _bind(ctx):
    """Binds the VM functions to one context; imports, globals and rodata become locals."""
    rwdata = ctx.rwdata
    refs = ctx.refs
    (
        hal_ex_file_from_memory,
        hal_allocator_allocate,
        hal_allocator_import,
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
        hal_device_queue_copy,
        hal_device_queue_read,
        hal_device_queue_execute,
        hal_devices_count,
        hal_devices_get,
        hal_executable_create,
        hal_executable_lookup_function,
        hal_fence_create,
        hal_fence_await,
    ) = ctx.imports
    (
        rodata_0,
        rodata_hal_device_id,
        rodata_local,
        rodata_hal_executable_format,
        rodata_embedded_elf_x86_64,
        rodata_5_elf,
        rodata_input0,
        rodata_tensor,
        rodata_scale_tensor_dispatch_0_elementwise_3_f3,
    ) = ctx.rodata

    def fn0(i0):
        "Internal VM function 0 (cconv '0i_i')."
        i1 = 3
        i1 = mul_i32(i0, i1)
        return i1

    def first(i0):
        "sync func @first(%input0: i32) -> (%output0: i32)"
        i0 = fn0(i0)
        return i0

    def second(i0, i1):
        "sync func @second(%input0: i32, %input1: i32) -> (%output0: i32)"
        i0 = fn0(i0)
        i1 = fn0(i1)
        i1 = sub_i32(i0, i1)
        return i1

    def nothing():
        "sync func @nothing() -> ()"
        return

    def constant_tensor():
        "sync func @constant_tensor() -> (%output0: tensor<3xi32>)"
        r0 = r1 = r2 = r3 = r4 = None
        i0 = 268435488
        i1 = 1
        i2 = 3
        i4 = -1
        i6 = 0
        r0 = None
        i8 = -1
        i10 = 12
        i5 = 48
        i12 = 3075
        r1 = global_load_ref(refs, 2, "!hal.buffer")
        r2 = global_load_ref(refs, 0, "!hal.device")
        r3 = hal_fence_create(r2, i6)
        r4 = hal_device_queue_alloca(r2, i8, r0, r3, i6, i5, i12, i10, i6)
        r0 = hal_fence_create(r2, i6)
        hal_device_queue_copy(r2, i8, r3, r0, r1, i6, r4, i6, i10, i6)
        r2 = r3 = r1 = None
        i4 = hal_fence_await(i4, i6, [r0])
        r0 = None
        if i4:
            r4 = None
            raise vm_fail(i4, "failed to wait on timepoint", "constant_tensor", None)
        r0 = hal_buffer_view_create(r4, i6, i10, i0, i1, [i2])
        r4 = None
        return r0

    def scale_tensor(r0, i0):
        "sync func @scale_tensor(%input0: tensor<3xf32>, %input1: f32) -> (%output0: tensor<3xf32>)"
        r1 = r2 = r3 = r4 = r5 = r6 = None
        i1 = 13
        i2 = 28
        i3 = 0
        i4 = 3
        i5 = 16
        i6 = 1
        i7 = 553648160
        i8 = -1
        i10 = 0
        r1 = None
        i12 = -1
        i14 = 12
        i16 = 3
        i9 = 48
        i18 = 3075
        r2 = global_load_ref(refs, 0, "!hal.device")
        r3 = global_load_ref(refs, 1, "!hal.executable")
        r4 = rodata_input0
        hal_buffer_view_assert(r0, r4, i7, i6, [i16])
        r4 = hal_buffer_view_buffer(r0)
        r0 = hal_device_allocator(r2)
        r5 = rodata_tensor
        hal_buffer_assert(r4, r5, r0, i14, i5, i18)
        r5 = None
        r0 = hal_fence_create(r2, i10)
        r5 = hal_device_queue_alloca(r2, i12, r1, r0, i10, i9, i18, i14, i10)
        r1 = None
        i5 = bitcast_f32_i32(i0)
        r1 = hal_command_buffer_create(r2, i6, i4, i12, i3)
        r6 = rodata_scale_tensor_dispatch_0_elementwise_3_f3
        i18 = hal_executable_lookup_function(r3, r6)
        r6 = None
        hal_command_buffer_dispatch(
            r1, r3, i18, i6, i6, i6, i10, [i5], [(i3, i3, r4, i10, i14), (i3, i3, r5, i10, i14)]
        )
        r3 = r4 = None
        hal_command_buffer_execution_barrier(r1, i2, i1, i10)
        hal_command_buffer_finalize(r1)
        r3 = hal_fence_create(r2, i10)
        hal_device_queue_execute(r2, i12, r0, r3, r1, i10)
        r2 = r0 = r1 = None
        i0 = hal_fence_await(i8, i10, [r3])
        r3 = None
        if i0:
            r5 = None
            raise vm_fail(i0, "failed to wait on timepoint", "scale_tensor", None)
        r0 = hal_buffer_view_create(r5, i10, i14, i7, i6, [i16])
        r5 = None
        return r0

    def init():
        "VM export '__init' (cconv '0v_v'); no ABI declaration."
        r0 = r1 = r2 = r3 = r4 = r5 = r6 = r7 = r8 = None
        r0 = None
        i0 = 1
        r1 = None
        # tests/corpus/multi_export.mlir:0:0
        i2 = 1
        i1 = 18
        i4 = 14
        i6 = -1
        i5 = 48
        i8 = 527363
        i10 = 64
        i9 = -1
        i12 = 0
        i14 = 0
        r2 = None
        r3 = rodata_0
        i13 = hal_devices_count()
        i16 = i13
        r4 = r1
        i18 = i14
        i20 = i14
        while True:
            i13 = int(r4 is not None)
            i13 = i13 ^ i0
            i22 = int(i18 < i16)
            i22 = i13 & i22
            if not i22:
                r1 = None
                if i13:
                    r0 = r2 = r3 = r4 = None
                    raise vm_fail(
                        i1,
                        'HAL device `__device_0` not found or unavailable: #hal.device.target<"local", [#hal.executable.target<"llvm-cpu", "embedded-elf-x86_64", {cpu = "generic", cpu_features = "", data_layout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128", debug_symbols = false, iree.encoding.resolver = #iree_cpu.cpu_encoding_resolver<>, max_stack_allocation_size = 32768 : i64, native_vector_size = 16 : i64, target_triple = "x86_64-unknown-unknown-eabi-elf"}>]>',
                        "__init",
                        None,
                    )
                # tests/corpus/multi_export.mlir:31:8
                r1 = rodata_hal_executable_format
                r5 = rodata_embedded_elf_x86_64
                i1, i2 = hal_device_query_i64(r4, r1, r5)
                r1 = None
                i13 = int(i2 != 0)
                i13 = i13 if i1 else i12
                i2 = i14 if i13 else i6
                i1 = int(i2 == i14)
                # tests/corpus/multi_export.mlir:0:0
                global_store_ref(refs, 0, "!hal.device", r4)
                # tests/corpus/multi_export.mlir:31:8
                if i1:
                    r1 = rodata_5_elf
                    r6 = hal_executable_create(r4, i6, r5, r1, r0)
                    r4 = r5 = r0 = None
                    # tests/corpus/multi_export.mlir:25:8
                    r1 = global_load_ref(refs, 0, "!hal.device")
                    r7 = hal_device_allocator(r1)
                    r8 = hal_allocator_import(r7, i0, i6, i5, i8, r3, i14, i10)
                    i1 = int(r8 is not None)
                    # tests/corpus/multi_export.mlir:31:8
                    global_store_ref(refs, 1, "!hal.executable", r6)
                    r6 = None
                    # tests/corpus/multi_export.mlir:25:8
                    if i1:
                        r0 = r2
                        r2 = r8
                        r8 = None
                        r3 = r1 = r7 = None
                        r1 = r2
                        r2 = None
                        i0 = hal_fence_await(i9, i14, [r0])
                        r0 = None
                        if i0:
                            r1 = None
                            raise vm_fail(i0, "failed to wait on timepoint", "__init", None)
                        global_store_ref(refs, 2, "!hal.buffer", r1)
                        r1 = None
                        return
                    else:
                        r8 = None
                        r0 = hal_allocator_allocate(r7, i6, i5, i8, i10)
                        r7 = None
                        r4 = hal_ex_file_from_memory(r1, i6, i0, r3, i14, i10, i12)
                        r3 = None
                        r5 = hal_fence_create(r1, i14)
                        hal_device_queue_read(r1, i6, r2, r5, r4, i14, r0, i14, i10, i14)
                        r1 = r2 = r4 = None
                        r1 = r0
                        r0 = None
                        r0 = r5
                        r5 = None
                        i0 = hal_fence_await(i9, i14, [r0])
                        r0 = None
                        if i0:
                            r1 = None
                            raise vm_fail(i0, "failed to wait on timepoint", "__init", None)
                        global_store_ref(refs, 2, "!hal.buffer", r1)
                        r1 = None
                        return
                # tests/corpus/multi_export.mlir:31:8
                r0 = r2 = r3 = r4 = r5 = None
                raise vm_fail(
                    i4,
                    "HAL device `__device_0` does not support any variant of executable `scale_tensor_dispatch_0`; available formats: [embedded-elf-x86_64]",
                    "__init",
                    None,
                )
            # tests/corpus/multi_export.mlir:0:0
            r4 = None
            i22 = trunc_i64_i32(i18)
            r5 = hal_devices_get(i22)
            r6 = rodata_hal_device_id
            r7 = rodata_local
            i22, i24 = hal_device_query_i64(r5, r6, r7)
            r6 = r7 = None
            i23 = int(i24 != 0)
            i23 = i23 if i22 else i12
            if i23:
                r6 = rodata_hal_executable_format
                r7 = rodata_embedded_elf_x86_64
                i22, i24 = hal_device_query_i64(r5, r6, r7)
                r6 = r7 = None
                i23 = int(i24 != 0)
                i23 = i23 if i22 else i12
                i22 = i23
            else:
                i22 = i12
                pass
            i23 = int(i20 == i14)
            i24 = i2 if i22 else i14
            i24 = add_i64(i20, i24)
            i23 = i22 & i23
            r5 = r5 if i23 else r1
            i18 = add_i64(i18, i2)
            r4 = r5
            r5 = None
            i20 = i24
            continue

    return {
        "fn0": fn0,
        "first": first,
        "second": second,
        "nothing": nothing,
        "constant_tensor": constant_tensor,
        "scale_tensor": scale_tensor,
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

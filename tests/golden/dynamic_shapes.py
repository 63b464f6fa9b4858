"""Package translated by pyree from the VM module named in VM_MODULE_NAME.

3 functions, 19 imports, 11 rodata segments.
Generated code; regenerate with pyree-translate rather than editing.
"""

from runtime_support.context import ModuleContext
from runtime_support.vm.numerics import (
    add_i64,
    cmp_lt_i64_u,
    div_i64_s,
    mul_i64,
    shr_i64_u,
    sub_i64,
    trunc_i64_i32,
)
from runtime_support.vm.globals import global_load_ref, global_store_ref
from runtime_support.context import vm_fail

#: The VM module's own name (from the vmfb) and the package name it was written as.
VM_MODULE_NAME = "module"
PACKAGE_NAME = "dynamic_shapes"

#: Export name -> its `iree.abi.declaration` (None where the module has none).
EXPORTS = {
    "dyn_matmul": "sync func @dyn_matmul(%input0: tensor<?x?xf32>, %input1: tensor<?x?xf32>) -> (%output0: tensor<?x?xf32>)",
    "dyn_transpose_rowsum": "sync func @dyn_transpose_rowsum(%input0: tensor<?x?xf32>) -> (%output0: tensor<?x?xf32>, %output1: tensor<?xf32>)",
    "__init": None,
}

#: Export name -> VM calling convention.
CCONVS = {
    "dyn_matmul": "0rr_r",
    "dyn_transpose_rowsum": "0r_rr",
    "__init": "0v_v",
}

# Export name -> (function, argument codes, result codes, declaration).
_EXPORT_TABLE = {
    "dyn_matmul": (
        "dyn_matmul",
        ("r", "r"),
        ("r",),
        "sync func @dyn_matmul(%input0: tensor<?x?xf32>, %input1: tensor<?x?xf32>) -> (%output0: tensor<?x?xf32>)",
    ),
    "dyn_transpose_rowsum": (
        "dyn_transpose_rowsum",
        ("r",),
        ("r", "r"),
        "sync func @dyn_transpose_rowsum(%input0: tensor<?x?xf32>) -> (%output0: tensor<?x?xf32>, %output1: tensor<?xf32>)",
    ),
    "__init": ("init", (), (), None),
}

# Imports by ordinal: (full name, calling convention, optional).
_IMPORTS = (
    ("hal.buffer.assert", "0rrrIii_v", False),
    ("hal.buffer_view.create", "0rIIiiCID_r", False),
    ("hal.buffer_view.assert", "0rriiCID_v", False),
    ("hal.buffer_view.buffer", "0r_r", False),
    ("hal.buffer_view.dim", "0ri_I", False),
    ("hal.command_buffer.create", "0riiIi_r", False),
    ("hal.command_buffer.finalize", "0r_v", False),
    ("hal.command_buffer.execution_barrier", "0riiI_v", False),
    ("hal.command_buffer.dispatch", "0rrIiiiICiDCiirIID_v", False),
    ("hal.device.allocator", "0r_r", False),
    ("hal.device.query.i64", "0rrr_iI", False),
    ("hal.device.queue.alloca", "0rIrrIiiII_r", False),
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
    (0, 13),
    (64, 6),
    (128, 21),
    (192, 19),
    (256, 33464),
    (33728, 6),
    (33792, 6),
    (33856, 6),
    (33920, 38),
    (33984, 49),
    (34048, 49),
)

_GLOBAL_BYTES = 0
_GLOBAL_REFS = 2


def _bind(ctx):
    """Binds the VM functions to one context; imports, globals and rodata become locals."""
    rwdata = ctx.rwdata
    refs = ctx.refs
    (
        hal_buffer_assert,
        hal_buffer_view_create,
        hal_buffer_view_assert,
        hal_buffer_view_buffer,
        hal_buffer_view_dim,
        hal_command_buffer_create,
        hal_command_buffer_finalize,
        hal_command_buffer_execution_barrier,
        hal_command_buffer_dispatch,
        hal_device_allocator,
        hal_device_query_i64,
        hal_device_queue_alloca,
        hal_device_queue_execute,
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
        rodata_input0,
        rodata_tensor,
        rodata_input1,
        rodata_dyn_matmul_dispatch_0_matmul_dxdxd_f32,
        rodata_9,
        rodata_10,
    ) = ctx.rodata

    def dyn_matmul(r0, r1):
        "sync func @dyn_matmul(%input0: tensor<?x?xf32>, %input1: tensor<?x?xf32>) -> (%output0: tensor<?x?xf32>)"
        r2 = r3 = r4 = r5 = r6 = r7 = None
        i0 = 13
        i1 = 28
        i2 = 3
        i3 = 32
        i4 = 16
        i5 = 553648160
        i6 = 1
        i7 = 0
        i8 = -1
        i10 = 1
        i12 = 64
        i14 = 0
        r2 = None
        i16 = -1
        i18 = 4
        i9 = 48
        i20 = 3075
        r3 = global_load_ref(refs, 0, "!hal.device")
        r4 = global_load_ref(refs, 1, "!hal.executable")
        i22 = hal_buffer_view_dim(r0, i7)
        i24 = hal_buffer_view_dim(r0, i6)
        r5 = rodata_input0
        hal_buffer_view_assert(r0, r5, i5, i6, [i22, i24])
        r5 = None
        i26 = mul_i64(i22, i18)
        i28 = mul_i64(i26, i24)
        r5 = hal_buffer_view_buffer(r0)
        r0 = hal_device_allocator(r3)
        r6 = rodata_tensor
        hal_buffer_assert(r5, r6, r0, i28, i4, i20)
        i30 = hal_buffer_view_dim(r1, i7)
        i32 = hal_buffer_view_dim(r1, i6)
        r7 = rodata_input1
        hal_buffer_view_assert(r1, r7, i5, i6, [i30, i32])
        r7 = None
        i18 = mul_i64(i30, i18)
        i18 = mul_i64(i18, i32)
        r7 = hal_buffer_view_buffer(r1)
        r1 = None
        hal_buffer_assert(r7, r6, r0, i18, i4, i20)
        r6 = r0 = None
        i26 = mul_i64(i26, i32)
        r0 = hal_fence_create(r3, i14)
        r1 = hal_device_queue_alloca(r3, i16, r2, r0, i14, i9, i20, i26, i14)
        r2 = None
        i4 = trunc_i64_i32(i24)
        i24 = shr_i64_u(i24, i3)
        i9 = trunc_i64_i32(i24)
        i20 = trunc_i64_i32(i30)
        i30 = shr_i64_u(i30, i3)
        i21 = trunc_i64_i32(i30)
        i24 = trunc_i64_i32(i22)
        i30 = shr_i64_u(i22, i3)
        i25 = trunc_i64_i32(i30)
        i30 = trunc_i64_i32(i32)
        i34 = shr_i64_u(i32, i3)
        i3 = trunc_i64_i32(i34)
        r2 = hal_command_buffer_create(r3, i6, i2, i16, i7)
        r6 = rodata_dyn_matmul_dispatch_0_matmul_dxdxd_f32
        i34 = hal_executable_lookup_function(r4, r6)
        r6 = None
        i2 = cmp_lt_i64_u(i14, i22)
        i2 = i2 ^ i6
        i36 = sub_i64(i14, i22)
        i38 = sub_i64(i22, i10)
        i38 = i36 if i2 else i38
        i38 = div_i64_s(i38, i12)
        i36 = sub_i64(i14, i38)
        i38 = add_i64(i38, i10)
        i38 = i36 if i2 else i38
        i2 = cmp_lt_i64_u(i14, i32)
        i2 = i2 ^ i6
        i36 = sub_i64(i14, i32)
        i40 = sub_i64(i32, i10)
        i40 = i36 if i2 else i40
        i12 = div_i64_s(i40, i12)
        i36 = sub_i64(i14, i12)
        i10 = add_i64(i12, i10)
        i10 = i36 if i2 else i10
        i10 = mul_i64(i38, i10)
        i2 = trunc_i64_i32(i10)
        hal_command_buffer_dispatch(
            r2,
            r4,
            i34,
            i2,
            i6,
            i6,
            i14,
            [i4, i9, i20, i21, i24, i25, i30, i3],
            [(i7, i7, r5, i14, i28), (i7, i7, r7, i14, i18), (i7, i7, r1, i14, i26)],
        )
        r4 = r5 = r7 = None
        hal_command_buffer_execution_barrier(r2, i1, i0, i14)
        hal_command_buffer_finalize(r2)
        r4 = hal_fence_create(r3, i14)
        hal_device_queue_execute(r3, i16, r0, r4, r2, i14)
        r3 = r0 = r2 = None
        i0 = hal_fence_await(i8, i14, [r4])
        r4 = None
        if i0:
            r1 = None
            raise vm_fail(i0, "failed to wait on timepoint", "dyn_matmul", None)
        r0 = hal_buffer_view_create(r1, i14, i26, i5, i6, [i22, i32])
        r1 = None
        return r0

    def dyn_transpose_rowsum(r0):
        "sync func @dyn_transpose_rowsum(%input0: tensor<?x?xf32>) -> (%output0: tensor<?x?xf32>, %output1: tensor<?xf32>)"
        r1 = r2 = r3 = r4 = r5 = r6 = None
        i0 = 13
        i1 = 28
        i2 = 3
        i3 = 32
        i4 = -64
        i6 = 63
        i8 = 16
        i9 = 553648160
        i10 = 1
        i11 = 0
        i12 = -1
        i14 = 32
        i16 = 1
        i18 = 0
        r1 = None
        i20 = -1
        i22 = 64
        i24 = 4
        i13 = 48
        i26 = 3075
        r2 = global_load_ref(refs, 0, "!hal.device")
        r3 = global_load_ref(refs, 1, "!hal.executable")
        i28 = hal_buffer_view_dim(r0, i11)
        i30 = hal_buffer_view_dim(r0, i10)
        r4 = rodata_input0
        hal_buffer_view_assert(r0, r4, i9, i10, [i28, i30])
        r4 = None
        i32 = mul_i64(i28, i24)
        i34 = mul_i64(i32, i30)
        r4 = hal_buffer_view_buffer(r0)
        r0 = hal_device_allocator(r2)
        r5 = rodata_tensor
        hal_buffer_assert(r4, r5, r0, i34, i8, i26)
        r5 = r0 = None
        i24 = mul_i64(i30, i24)
        i24 = mul_i64(i24, i28)
        i36 = add_i64(i24, i6)
        i36 = i36 & i4
        i6 = add_i64(i32, i6)
        i4 = i6 & i4
        i4 = add_i64(i36, i4)
        r0 = hal_fence_create(r2, i18)
        r5 = hal_device_queue_alloca(r2, i20, r1, r0, i18, i13, i26, i4, i18)
        r1 = None
        i6 = trunc_i64_i32(i30)
        i26 = shr_i64_u(i30, i3)
        i7 = trunc_i64_i32(i26)
        i8 = trunc_i64_i32(i28)
        i26 = shr_i64_u(i28, i3)
        i13 = trunc_i64_i32(i26)
        i26 = trunc_i64_i32(i36)
        i38 = shr_i64_u(i36, i3)
        i3 = trunc_i64_i32(i38)
        r1 = hal_command_buffer_create(r2, i10, i2, i20, i11)
        r6 = rodata_9
        i38 = hal_executable_lookup_function(r3, r6)
        r6 = None
        i2 = cmp_lt_i64_u(i18, i28)
        i2 = i2 ^ i10
        i40 = sub_i64(i18, i28)
        i42 = sub_i64(i28, i16)
        i42 = i40 if i2 else i42
        i40 = div_i64_s(i42, i22)
        i44 = sub_i64(i18, i40)
        i40 = add_i64(i40, i16)
        i40 = i44 if i2 else i40
        i27 = cmp_lt_i64_u(i18, i30)
        i27 = i27 ^ i10
        i44 = sub_i64(i18, i30)
        i46 = sub_i64(i30, i16)
        i46 = i44 if i27 else i46
        i22 = div_i64_s(i46, i22)
        i44 = sub_i64(i18, i22)
        i22 = add_i64(i22, i16)
        i22 = i44 if i27 else i22
        i22 = mul_i64(i40, i22)
        i27 = trunc_i64_i32(i22)
        hal_command_buffer_dispatch(
            r1,
            r3,
            i38,
            i27,
            i10,
            i10,
            i18,
            [i6, i7, i8, i13],
            [(i11, i11, r4, i18, i34), (i11, i11, r5, i18, i4)],
        )
        r6 = rodata_10
        i22 = hal_executable_lookup_function(r3, r6)
        r6 = None
        i14 = div_i64_s(i42, i14)
        i38 = sub_i64(i18, i14)
        i16 = add_i64(i14, i16)
        i16 = i38 if i2 else i16
        i2 = trunc_i64_i32(i16)
        hal_command_buffer_dispatch(
            r1,
            r3,
            i22,
            i2,
            i10,
            i10,
            i18,
            [i26, i3, i6, i7, i8, i13],
            [(i11, i11, r4, i18, i34), (i11, i11, r5, i18, i4)],
        )
        r3 = r4 = None
        hal_command_buffer_execution_barrier(r1, i1, i0, i18)
        hal_command_buffer_finalize(r1)
        r3 = hal_fence_create(r2, i18)
        hal_device_queue_execute(r2, i20, r0, r3, r1, i18)
        r2 = r0 = r1 = None
        i0 = hal_fence_await(i12, i18, [r3])
        r3 = None
        if i0:
            r5 = None
            raise vm_fail(i0, "failed to wait on timepoint", "dyn_transpose_rowsum", None)
        r0 = hal_buffer_view_create(r5, i18, i24, i9, i10, [i30, i28])
        r1 = hal_buffer_view_create(r5, i36, i32, i9, i10, [i28])
        r5 = None
        return r0, r1

    def init():
        "VM export '__init' (cconv '0v_v'); no ABI declaration."
        r0 = r1 = r2 = r3 = r4 = r5 = None
        i0 = 1
        r0 = None
        i2 = -1
        i1 = 14
        i4 = 18
        i5 = 0
        i6 = 0
        # tests/corpus/dyn_shape_2d.mlir:0:0
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
                # [tests/corpus/dyn_shape_2d.mlir:10:8, tests/corpus/dyn_shape_2d.mlir:20:8, tests/corpus/dyn_shape_2d.mlir:24:8]
                i8 = i6 if i5 else i2
                i0 = int(i8 == i6)
                # tests/corpus/dyn_shape_2d.mlir:0:0
                global_store_ref(refs, 0, "!hal.device", r2)
                # [tests/corpus/dyn_shape_2d.mlir:10:8, tests/corpus/dyn_shape_2d.mlir:20:8, tests/corpus/dyn_shape_2d.mlir:24:8]
                if i0:
                    # tests/corpus/dyn_shape_2d.mlir:0:0
                    r1 = rodata_4_elf
                    # [tests/corpus/dyn_shape_2d.mlir:10:8, tests/corpus/dyn_shape_2d.mlir:20:8, tests/corpus/dyn_shape_2d.mlir:24:8]
                    r4 = hal_executable_create(r2, i2, r3, r1, r0)
                    r2 = r3 = r1 = r0 = None
                    global_store_ref(refs, 1, "!hal.executable", r4)
                    r4 = None
                    return
                r0 = r2 = r3 = None
                raise vm_fail(
                    i1,
                    "HAL device `__device_0` does not support any variant of executable `dyn_shape_2d_linked`; available formats: [embedded-elf-x86_64]",
                    "__init",
                    None,
                )
            # tests/corpus/dyn_shape_2d.mlir:0:0
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
        "dyn_matmul": dyn_matmul,
        "dyn_transpose_rowsum": dyn_transpose_rowsum,
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

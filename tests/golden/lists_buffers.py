"""Package translated by pyree from the VM module named in VM_MODULE_NAME.

2 functions, 0 imports, 1 rodata segments.
Generated code; regenerate with pyree-translate rather than editing.
"""

from runtime_support.context import ModuleContext
from runtime_support.vm.numerics import add_i64, ext_i32_i64_u
from runtime_support.vm.buffer import (
    buffer_alloc,
    buffer_compare,
    buffer_copy,
    buffer_fill_i16,
    buffer_fill_i32,
    buffer_fill_i8,
    buffer_load_f32,
    buffer_load_i16_s,
    buffer_load_i32,
    buffer_load_i64,
    buffer_load_i8_s,
    buffer_store_f32,
    buffer_store_i32,
    buffer_store_i64,
)

#: The VM module's own name (from the vmfb) and the package name it was written as.
VM_MODULE_NAME = "module"
PACKAGE_NAME = "lists_buffers"

#: Export name -> its `iree.abi.declaration` (None where the module has none).
EXPORTS = {
    "buffer_ops": "sync func @buffer_ops(%input0: i32, %input1: i64, %input2: f32, %input3: i32) -> (%output0: i32, %output1: i64, %output2: f32, %output3: i1, %output4: index, %output5: i32, %output6: i8, %output7: i16)",
    "buffer_fill_widths": "sync func @buffer_fill_widths(%input0: i32, %input1: i16) -> (%output0: i1, %output1: i32, %output2: i16)",
}

#: Export name -> VM calling convention.
CCONVS = {
    "buffer_ops": "0iIfi_iIfiIiii",
    "buffer_fill_widths": "0ii_iii",
}

# Export name -> (function, argument codes, result codes, declaration).
_EXPORT_TABLE = {
    "buffer_ops": (
        "buffer_ops",
        ("i", "I", "f", "i"),
        ("i", "I", "f", "i", "I", "i", "i", "i"),
        "sync func @buffer_ops(%input0: i32, %input1: i64, %input2: f32, %input3: i32) -> (%output0: i32, %output1: i64, %output2: f32, %output3: i1, %output4: index, %output5: i32, %output6: i8, %output7: i16)",
    ),
    "buffer_fill_widths": (
        "buffer_fill_widths",
        ("i", "i"),
        ("i", "i", "i"),
        "sync func @buffer_fill_widths(%input0: i32, %input1: i16) -> (%output0: i1, %output1: i32, %output2: i16)",
    ),
}

# Imports by ordinal: (full name, calling convention, optional).
_IMPORTS = ()

# Rodata segments in rodata.bin beside this file: (offset, length).
_RODATA = ((0, 16),)

_GLOBAL_BYTES = 0
_GLOBAL_REFS = 0


def _bind(ctx):
    """Binds the VM functions to one context; imports, globals and rodata become locals."""
    rwdata = ctx.rwdata
    refs = ctx.refs
    (rodata_0,) = ctx.rodata

    def buffer_ops(i0, i2, i4, i5):
        "sync func @buffer_ops(%input0: i32, %input1: i64, %input2: f32, %input3: i32) -> (%output0: i32, %output1: i64, %output2: f32, %output3: i1, %output4: index, %output5: i32, %output6: i8, %output7: i16)"
        r0 = r1 = None
        i1 = 0
        i6 = 15
        i8 = 64
        i10 = 32
        i12 = 24
        i14 = 4
        i16 = 2
        i18 = 1
        i20 = 0
        i7 = -91
        i22 = 3
        r0 = rodata_0
        i6 = i5 & i6
        i24 = ext_i32_i64_u(i6)
        i8 = add_i64(i24, i8)
        r1 = buffer_alloc(i8, i1)
        buffer_fill_i8(r1, i20, i8, i7)
        buffer_store_i32(r1, i18, i0)
        buffer_store_i64(r1, i18, i2)
        buffer_store_f32(r1, i14, i4)
        i0 = buffer_load_i32(r1, i18)
        i18 = buffer_load_i64(r1, i18)
        i1 = buffer_load_f32(r1, i14)
        i2 = buffer_load_i8_s(r1, i14)
        i3 = buffer_load_i16_s(r1, i16)
        buffer_copy(r1, i20, r1, i10, i12)
        i4 = buffer_compare(r1, i20, r1, i10, i12)
        r1 = None
        i22 = i5 & i22
        i6 = ext_i32_i64_u(i22)
        i5 = buffer_load_i32(r0, i6)
        r0 = None
        return i0, i18, i1, i4, i8, i5, i2, i3

    def buffer_fill_widths(i0, i1):
        "sync func @buffer_fill_widths(%input0: i32, %input1: i16) -> (%output0: i1, %output1: i32, %output2: i16)"
        r0 = None
        i2 = 0
        i4 = 2
        i6 = 4
        i8 = 8
        # tests/corpus/util_buffer.mlir:47:10
        i10 = 16
        # tests/corpus/util_buffer.mlir:48:10
        i12 = 32
        # tests/corpus/util_buffer.mlir:49:10
        i14 = 0
        r0 = buffer_alloc(i12, i14)
        # tests/corpus/util_buffer.mlir:50:3
        buffer_fill_i32(r0, i2, i6, i0)
        # tests/corpus/util_buffer.mlir:51:3
        buffer_fill_i16(r0, i8, i8, i1)
        # tests/corpus/util_buffer.mlir:52:9
        i0 = buffer_compare(r0, i2, r0, i10, i10)
        # tests/corpus/util_buffer.mlir:53:8
        i1 = buffer_load_i32(r0, i4)
        # tests/corpus/util_buffer.mlir:54:8
        i2 = buffer_load_i16_s(r0, i8)
        r0 = None
        # tests/corpus/util_buffer.mlir:42:1
        return i0, i1, i2

    return {
        "buffer_ops": buffer_ops,
        "buffer_fill_widths": buffer_fill_widths,
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

"""Package translated by pyree from the VM module named in VM_MODULE_NAME.

3 functions, 0 imports, 0 rodata segments.
Generated code; regenerate with pyree-translate rather than editing.
"""

from runtime_support.context import ModuleContext
from runtime_support.vm.numerics import (
    add_f32,
    add_i32,
    add_i64,
    cast_si32_f32,
    cmp_lt_i32_u,
    cmp_lt_i64_u,
    ext_i32_i64_u,
    mul_i64,
)

#: The VM module's own name (from the vmfb) and the package name it was written as.
VM_MODULE_NAME = "vm_branches"
PACKAGE_NAME = "vm_branches"

#: Export name -> its `iree.abi.declaration` (None where the module has none).
EXPORTS = {
    "table": None,
    "loop": None,
    "int_compares": None,
}

#: Export name -> VM calling convention.
CCONVS = {
    "table": "0iI_I",
    "loop": "0if_if",
    "int_compares": "0iiII_iiiiiiiiiiiiii",
}

# Export name -> (function, argument codes, result codes, declaration).
_EXPORT_TABLE = {
    "table": ("table", ("i", "I"), ("I",), None),
    "loop": ("loop", ("i", "f"), ("i", "f"), None),
    "int_compares": (
        "int_compares",
        ("i", "i", "I", "I"),
        ("i", "i", "i", "i", "i", "i", "i", "i", "i", "i", "i", "i", "i", "i"),
        None,
    ),
}

# Imports by ordinal: (full name, calling convention, optional).
_IMPORTS = ()

# Rodata segments in rodata.bin beside this file: (offset, length).
_RODATA = ()

_GLOBAL_BYTES = 0
_GLOBAL_REFS = 0


def _bind(ctx):
    """Binds the VM functions to one context; imports, globals and rodata become locals."""
    rwdata = ctx.rwdata
    refs = ctx.refs

    def table(i0, i2):
        "VM export 'table' (cconv '0iI_I'); no ABI declaration."
        i4 = 2
        i6 = -1
        if i0 == 0:
            i4 = add_i64(i2, i4)
            return i4
        elif i0 == 1:
            i2 = ext_i32_i64_u(i0)
            return i2
        elif i0 == 2:
            i4 = add_i64(i2, i4)
            return i4
        else:
            i6 = mul_i64(i2, i6)
            return i6

    def loop(i0, i1):
        "VM export 'loop' (cconv '0if_if'); no ABI declaration."
        i2 = 0
        i3 = 1
        i4 = 31
        i4 = i0 & i4
        i0 = i2
        while True:
            i2 = int(i0 < i4)
            if not i2:
                return i4, i1
            i2 = cast_si32_f32(i0)
            i2 = add_f32(i1, i2)
            i0 = add_i32(i0, i3)
            i1 = i2
            continue

    def int_compares(i0, i1, i2, i4):
        "VM export 'int_compares' (cconv '0iiII_iiiiiiiiiiiiii'); no ABI declaration."
        i6 = 1
        # tests/corpus/vm_branches.mlir:44:10
        i7 = int(i0 == i1)
        # tests/corpus/vm_branches.mlir:45:10
        i8 = int(i0 != i1)
        # tests/corpus/vm_branches.mlir:46:10
        i9 = int(i0 < i1)
        # tests/corpus/vm_branches.mlir:47:10
        i10 = cmp_lt_i32_u(i0, i1)
        # tests/corpus/vm_branches.mlir:48:10
        i11 = int(i0 != 0)
        # tests/corpus/vm_branches.mlir:49:10
        i0 = int(i1 < i0)
        # tests/corpus/vm_branches.mlir:50:10
        i1 = i10 ^ i6
        # tests/corpus/vm_branches.mlir:51:10
        i12 = int(i2 == i4)
        # tests/corpus/vm_branches.mlir:52:10
        i13 = int(i2 != i4)
        # tests/corpus/vm_branches.mlir:53:10
        i14 = int(i2 < i4)
        # tests/corpus/vm_branches.mlir:54:11
        i15 = cmp_lt_i64_u(i2, i4)
        # tests/corpus/vm_branches.mlir:55:11
        i16 = int(i2 != 0)
        # tests/corpus/vm_branches.mlir:56:11
        i17 = int(i4 < i2)
        i6 = i17 ^ i6
        # tests/corpus/vm_branches.mlir:57:11
        i17 = cmp_lt_i64_u(i4, i2)
        # tests/corpus/vm_branches.mlir:58:5
        return i7, i8, i9, i10, i11, i0, i1, i12, i13, i14, i15, i16, i6, i17

    return {
        "table": table,
        "loop": loop,
        "int_compares": int_compares,
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

"""Package translated by pyree from the VM module named in VM_MODULE_NAME.

1 functions, 0 imports, 0 rodata segments.
Generated code; regenerate with pyree-translate rather than editing.
"""

from runtime_support.context import ModuleContext
from runtime_support.vm.numerics import add_i32, div_i32_u, fma_i32, rem_i32_u

#: The VM module's own name (from the vmfb) and the package name it was written as.
VM_MODULE_NAME = "module"
PACKAGE_NAME = "loop"

#: Export name -> its `iree.abi.declaration` (None where the module has none).
EXPORTS = {
    "collatz_steps": "sync func @collatz_steps(%input0: i32) -> (%output0: i32)",
}

#: Export name -> VM calling convention.
CCONVS = {
    "collatz_steps": "0i_i",
}

# Export name -> (function, argument codes, result codes, declaration).
_EXPORT_TABLE = {
    "collatz_steps": (
        "collatz_steps",
        ("i",),
        ("i",),
        "sync func @collatz_steps(%input0: i32) -> (%output0: i32)",
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

    def collatz_steps(i0):
        "sync func @collatz_steps(%input0: i32) -> (%output0: i32)"
        # tests/corpus/cf_scf_while.mlir:3:9
        i1 = 0
        # tests/corpus/cf_scf_while.mlir:4:9
        i2 = 1
        # tests/corpus/cf_scf_while.mlir:5:9
        i3 = 2
        # tests/corpus/cf_scf_while.mlir:6:9
        i4 = 3
        # tests/corpus/cf_scf_while.mlir:7:10
        i5 = 63
        # tests/corpus/cf_scf_while.mlir:9:13
        i5 = i0 & i5
        # tests/corpus/cf_scf_while.mlir:10:9
        i5 = add_i32(i5, i2)
        # tests/corpus/cf_scf_while.mlir:11:12
        i0 = i5
        while True:
            # tests/corpus/cf_scf_while.mlir:12:13
            i5 = int(i0 != i2)
            # tests/corpus/cf_scf_while.mlir:13:5
            if not i5:
                # tests/corpus/cf_scf_while.mlir:2:1
                return i1
            # tests/corpus/cf_scf_while.mlir:16:10
            i5 = rem_i32_u(i0, i3)
            # tests/corpus/cf_scf_while.mlir:17:12
            i5 = int(i5 != 0)
            # tests/corpus/cf_scf_while.mlir:18:13
            if i5:
                # [tests/corpus/cf_scf_while.mlir:11:23, tests/corpus/cf_scf_while.mlir:4:9]
                i5 = fma_i32(i0, i4, i2)
                # tests/corpus/cf_scf_while.mlir:18:13
                i0 = i5
            else:
                # tests/corpus/cf_scf_while.mlir:23:12
                i0 = div_i32_u(i0, i3)
                # tests/corpus/cf_scf_while.mlir:18:13
            # tests/corpus/cf_scf_while.mlir:26:11
            i5 = add_i32(i1, i2)
            # tests/corpus/cf_scf_while.mlir:27:5
            i1 = i5
            continue

    return {
        "collatz_steps": collatz_steps,
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

"""Python identifiers for everything the generated module names.

Names come from untrusted input (export names, import names, rodata contents): they reach
generated code only through `identifier()`, the one identifier rule of
runtime_support/names.py (which a context also names its export attributes with) plus the
names the generated module reserves; `NameTable` makes every name unique.
"""

from __future__ import annotations

import builtins
import re

from runtime_support.names import LIMIT, identifier as _identifier

from translator.codegen.escape import comment_text  # noqa: F401  (re-exported)

_RESERVED = set(dir(builtins)) | {
    "rwdata", "refs", "ctx", "block", "np", "self", "load", "EXPORTS", "CCONVS",
    "ModuleContext", "vm_fail", "Export", "Import", "_EXPORTS", "_IMPORTS", "_RODATA", "_bind",
    "describe_exports", "VM_MODULE_NAME", "PACKAGE_NAME", "__dir__",
}


# Families rendered as `result = helper(fields...)` with the helper named after the
# mnemonic, from the named runtime module.
HELPER_MODULES = {
    "numerics": "runtime_support.vm.numerics",
    "buffer": "runtime_support.vm.buffer",
    "list": "runtime_support.vm.list",
    "globals": "runtime_support.vm.globals",
    # queue programs (codegen/queue_programs.py)
    "program": "runtime_support.exec.program",
    "steps": "runtime_support.exec.steps",
    "general": "runtime_support.exec.bind",
    # HAL enum constants a queue program's fields name (codegen/hal_enums.py)
    "hal_buffer": "runtime_support.hal.buffer",
    "hal_command_buffer": "runtime_support.hal.command_buffer",
    "hal_element_types": "runtime_support.hal.element_types",
}


def _helper_names() -> set[str]:
    """The runtime helpers generated code imports (`add_i32`, `list_alloc`, ...): an
    export named like one must not shadow it inside `_bind`."""
    import importlib

    return {n for m in HELPER_MODULES.values() for n in dir(importlib.import_module(m)) if not n.startswith("_")}


class _Reserved:
    """Names generated code defines itself: builtins, the frame's names, and the
    register (`i4`, `r2`) and message-constant (`MESSAGE_3`) patterns."""

    def __contains__(self, name: str) -> bool:
        if name in _RESERVED or re.fullmatch(r"[ir]\d+|MESSAGE_\d+", name):
            return True
        if not _HELPERS:
            _HELPERS.update(_helper_names())
        return name in _HELPERS


_HELPERS: set[str] = set()
RESERVED = _Reserved()


def identifier(text: str, *, prefix: str = "f_", limit: int = LIMIT) -> str:
    """runtime_support.names.identifier, with the generated module's reserved names."""
    return _identifier(text, prefix=prefix, reserved=RESERVED, limit=limit)


class NameTable:
    def __init__(self, module) -> None:
        self.module = module
        self.taken: set[str] = set(_RESERVED)
        self.functions: dict[int, str] = {}
        self.imports: dict[int, str] = {}
        self.rodata_names: dict[int, str] = {}
        for k in range(module.function_count):
            exports = module.export_names_of(k)
            base = identifier(exports[0]) if exports else self._internal_name(k)
            self.functions[k] = self._unique(base)
        for imp in module.imports:
            self.imports[imp.ordinal] = self._unique(identifier(imp.full_name, prefix="import_"))
        for seg in module.rodata:
            self.rodata_names[seg.ordinal] = self._unique(self._rodata_base(seg))

    def _internal_name(self, k: int) -> str:
        """An internal function is named as the VM names it (its source map), else `fn<k>`."""
        sm = self.module.source_map_of(k)
        if sm is not None and sm.local_name:
            return identifier(sm.local_name)
        return f"fn{k}"

    def _unique(self, base: str) -> str:
        name, n = base, 2
        while name in self.taken:
            name = f"{base}_{n}"
            n += 1
        self.taken.add(name)
        return name

    @staticmethod
    def _rodata_base(seg) -> str:
        data = bytes(seg.data[:48])
        if 0 < len(seg) <= 48 and all(32 <= c < 127 for c in data):
            return "rodata_" + identifier(data.decode("ascii"), prefix="s_", limit=40).lower()
        if data.startswith(b"\x7fELF"):
            return f"rodata_{seg.ordinal}_elf"
        return f"rodata_{seg.ordinal}"

    def function(self, k: int) -> str:
        return self.functions[k]

    def import_name(self, i: int) -> str:
        return self.imports[i]

    def rodata(self, i: int) -> str:
        return self.rodata_names[i]


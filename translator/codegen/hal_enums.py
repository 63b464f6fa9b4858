"""Names for the HAL enum values generated code passes to `hal.*` imports.

`i2 = 553648160` is the f32 element type; the generated line reads
`i2 = 553648160  # FLOAT_32`. A constant is named when its register is written once in
the function (so every use sees that value) and is passed where an import takes an
enum. The names are the runtime's own constants (runtime_support.hal), so the two
cannot drift apart.
"""

from __future__ import annotations

from functools import cache

from translator.ir import IMPORT_BIT, Function

# Import full name -> {operand index: enum kind}. Only operands before any variadic span.
ENUM_ARGUMENTS = {
    "hal.buffer_view.create": {3: "element_type", 4: "encoding_type"},
    "hal.buffer_view.assert": {2: "element_type", 3: "encoding_type"},
    "hal.buffer.assert": {4: "memory_type", 5: "buffer_usage"},
    "hal.allocator.allocate": {2: "memory_type", 3: "buffer_usage"},
    "hal.allocator.import": {3: "memory_type", 4: "buffer_usage"},
    "hal.device.queue.alloca": {5: "memory_type", 6: "buffer_usage"},
    "hal.command_buffer.create": {1: "command_buffer_mode", 2: "command_category"},
}


@cache
def _tables() -> dict[str, tuple[dict[int, str], list[tuple[int, str]]]]:
    """kind -> (exact value -> name, [(bits, name)] widest first for flag sets)."""
    from runtime_support.hal import buffer, command_buffer, element_types

    def pick(module, prefix, skip=()):
        return {
            k[len(prefix):]: v
            for k, v in vars(module).items()
            if k.startswith(prefix) and isinstance(v, int) and k not in skip
        }

    exact_types = {
        k: v
        for k, v in vars(element_types).items()
        if k.isupper() and isinstance(v, int) and not k.startswith(("NUMERICAL_", "ENCODING_"))
    }
    kinds = {
        "element_type": exact_types,
        "encoding_type": pick(element_types, "ENCODING_"),
        "memory_type": pick(buffer, "MEMORY_TYPE_", {"MEMORY_TYPE_LOCAL_CPU"}),
        "buffer_usage": pick(buffer, "USAGE_", {"USAGE_DEFAULT", "USAGE_LOCAL_CPU"}),
        "command_buffer_mode": pick(command_buffer, "MODE_"),
        "command_category": pick(command_buffer, "CATEGORY_"),
    }
    out = {}
    for kind, names in kinds.items():
        exact = {}
        for name, value in names.items():
            exact.setdefault(value, name)
        flags = sorted(((v, n) for n, v in names.items() if v), key=lambda x: -bin(x[0]).count("1"))
        out[kind] = (exact, flags)
    return out


def describe(kind: str, value: int) -> str | None:
    """`FLOAT_32`, `TRANSFER | DISPATCH_STORAGE`, or None when no name fits."""
    exact, flags = _tables()[kind]
    value &= 0xFFFFFFFF
    if value in exact:
        return exact[value]
    if kind in ("element_type", "encoding_type"):
        return None
    parts, rest = [], value
    for bits, name in flags:
        if bits and rest & bits == bits:
            parts.append(name)
            rest &= ~bits
    return " | ".join(parts) if parts and not rest else None


def const_notes(module, fn: Function) -> dict[int, str]:
    """pc of a `vm.const.i32` -> the enum name its value has where it is used."""
    writes: dict[int, list] = {}
    for op in fn.ops():
        for r in op.writes():
            if not r.is_ref:
                writes.setdefault(r.ordinal, []).append(op)
    notes: dict[int, str] = {}
    for op in fn.ops():
        if not op.mnemonic.startswith("call"):
            continue
        callee = op["callee_ordinal"]
        if not callee & IMPORT_BIT:
            continue
        roles = ENUM_ARGUMENTS.get(module.imports[callee & ~IMPORT_BIT].full_name)
        if not roles:
            continue
        operands = op["operands"]
        for index, kind in roles.items():
            if index >= len(operands) or operands[index].is_ref:
                continue
            defs = writes.get(operands[index].ordinal, ())
            if len(defs) != 1 or defs[0].mnemonic != "const.i32":
                continue
            name = describe(kind, defs[0]["value"].value)
            if name:
                notes.setdefault(defs[0].pc, name)
    return notes

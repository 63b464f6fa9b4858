"""Names for the HAL enum values generated code passes to `hal.*` imports.

`i2 = 553648160` is the f32 element type; the generated line reads
`i2 = 553648160  # FLOAT_32`. A constant is named when its register is written once in
the function (so every use sees that value) and is passed where an import takes an
enum. The names are the runtime's own constants (runtime_support.hal), checked equal by
a test.
"""

from __future__ import annotations

from functools import cache

from translator.ir import IMPORT_BIT, Function
from translator.isa import CALL_KINDS

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


# Kind -> name -> value: the runtime's constants (runtime_support/hal: element_types.py,
# buffer.py MEMORY_TYPE_* / USAGE_*, command_buffer.py MODE_* / CATEGORY_*), written out
# so that translating does not import the runtime; tests/translator/test_codegen_passes.py checks
# that the two agree.
NAMES: dict[str, dict[str, int]] = {
    "element_type": {
        "OPAQUE_8": 0x8,
        "OPAQUE_16": 0x10,
        "OPAQUE_32": 0x20,
        "OPAQUE_64": 0x40,
        "INT_4": 0x10000004,
        "INT_8": 0x10000008,
        "INT_16": 0x10000010,
        "INT_32": 0x10000020,
        "INT_64": 0x10000040,
        "SINT_8": 0x11000008,
        "SINT_16": 0x11000010,
        "SINT_32": 0x11000020,
        "SINT_64": 0x11000040,
        "UINT_8": 0x12000008,
        "UINT_16": 0x12000010,
        "UINT_32": 0x12000020,
        "UINT_64": 0x12000040,
        "BOOL_8": 0x13000008,
        "FLOAT_16": 0x21000010,
        "FLOAT_32": 0x21000020,
        "FLOAT_64": 0x21000040,
        "BFLOAT_16": 0x22000010,
        "COMPLEX_64": 0x23000040,
        "COMPLEX_128": 0x23000080,
        "FLOAT_8_E5M2": 0x24000008,
        "FLOAT_8_E4M3FN": 0x25000008,
        "FLOAT_8_E5M2_FNUZ": 0x26000008,
        "FLOAT_8_E4M3_FNUZ": 0x27000008,
        "FLOAT_8_E8M0_FNU": 0x28000008,
    },
    "encoding_type": {"OPAQUE": 0x0, "DENSE_ROW_MAJOR": 0x1},
    "memory_type": {
        "OPTIMAL": 0x1,
        "HOST_VISIBLE": 0x2,
        "HOST_COHERENT": 0x4,
        "HOST_CACHED": 0x8,
        "DEVICE_VISIBLE": 0x10,
        "DEVICE_LOCAL": 0x30,
        "HOST_LOCAL": 0x46,
    },
    "buffer_usage": {
        "TRANSFER_SOURCE": 0x1,
        "TRANSFER_TARGET": 0x2,
        "TRANSFER": 0x3,
        "DISPATCH_INDIRECT_PARAMETERS": 0x100,
        "DISPATCH_UNIFORM_READ": 0x200,
        "DISPATCH_STORAGE_READ": 0x400,
        "DISPATCH_STORAGE_WRITE": 0x800,
        "DISPATCH_STORAGE": 0xC00,
        "DISPATCH_IMAGE_READ": 0x1000,
        "DISPATCH_IMAGE_WRITE": 0x2000,
        "SHARING_EXPORT": 0x10000,
        "SHARING_REPLICATE": 0x20000,
        "SHARING_CONCURRENT": 0x40000,
        "SHARING_IMMUTABLE": 0x80000,
        "MAPPING_SCOPED": 0x1000000,
        "MAPPING_PERSISTENT": 0x2000000,
        "MAPPING_OPTIONAL": 0x4000000,
        "MAPPING_ACCESS_RANDOM": 0x8000000,
        "MAPPING_ACCESS_SEQUENTIAL_WRITE": 0x10000000,
    },
    "command_buffer_mode": {"ONE_SHOT": 0x1, "ALLOW_INLINE_EXECUTION": 0x10, "UNVALIDATED": 0x20},
    "command_category": {"TRANSFER": 0x1, "DISPATCH": 0x2},
}


@cache
def _tables() -> dict[str, tuple[dict[int, str], list[tuple[int, str]]]]:
    """kind -> (exact value -> name, [(bits, name)] widest first for flag sets)."""
    out = {}
    for kind, names in NAMES.items():
        exact: dict[int, str] = {}
        for name, value in names.items():
            exact.setdefault(value, name)
        flags = sorted(((v, n) for n, v in names.items() if v), key=lambda x: -bin(x[0]).count("1"))
        out[kind] = (exact, flags)
    return out


def runtime_names() -> dict[str, dict[str, int]]:
    """NAMES as read from runtime_support.hal (for the test that keeps them equal)."""
    from runtime_support.hal import buffer, command_buffer, element_types

    def pick(module, prefix, skip=()):
        return {
            k[len(prefix) :]: v
            for k, v in vars(module).items()
            if k.startswith(prefix) and isinstance(v, int) and k not in skip
        }

    return {
        "element_type": {
            k: v
            for k, v in vars(element_types).items()
            if k.isupper() and isinstance(v, int) and not k.startswith(("NUMERICAL_", "ENCODING_"))
        },
        "encoding_type": pick(element_types, "ENCODING_"),
        "memory_type": pick(buffer, "MEMORY_TYPE_", {"MEMORY_TYPE_LOCAL_CPU"}),
        "buffer_usage": pick(buffer, "USAGE_", {"USAGE_DEFAULT", "USAGE_LOCAL_CPU"}),
        "command_buffer_mode": pick(command_buffer, "MODE_"),
        "command_category": pick(command_buffer, "CATEGORY_"),
    }


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


# Kind -> (the helper module key its runtime constants are imported under, codegen/ops.py
# HELPER_MODULES; the prefix of their names there): how a queue program's fields name them.
RUNTIME_CONSTANTS = {
    "element_type": ("hal_element_types", ""),
    "encoding_type": ("hal_element_types", "ENCODING_"),
    "memory_type": ("hal_buffer", "MEMORY_TYPE_"),
    "buffer_usage": ("hal_buffer", "USAGE_"),
    "command_buffer_mode": ("hal_command_buffer", "MODE_"),
    "command_category": ("hal_command_buffer", "CATEGORY_"),
}


def expression(kind: str, value: int) -> tuple[str, str, tuple[str, ...]] | None:
    """`value` as the runtime's named constants: (helper module key, the expression,
    the names it uses), e.g. ("hal_buffer", "USAGE_TRANSFER | USAGE_DISPATCH_STORAGE",
    (...)); None where no name fits or the names would not make exactly `value`."""
    if not 0 <= value <= 0xFFFFFFFF:
        return None
    text = describe(kind, value)
    if text is None:
        return None
    key, prefix = RUNTIME_CONSTANTS[kind]
    names = tuple(prefix + part for part in text.split(" | "))
    made = 0
    for part in text.split(" | "):
        made |= NAMES[kind][part]
    if made != value:
        return None
    return key, " | ".join(names), names


def step_enum_fields(full_name: str, params: tuple[str, ...]) -> dict[str, str]:
    """An import's fields (step params, in cconv order) that take an enum: name -> kind."""
    roles = ENUM_ARGUMENTS.get(full_name, {})
    return {params[i]: kind for i, kind in roles.items() if i < len(params)}


def const_notes(module, fn: Function) -> dict[int, str]:
    """pc of a `vm.const.i32` -> the enum name its value has where it is used."""
    writes: dict[int, list] = {}
    for op in fn.ops():
        for r in op.writes():
            if not r.is_ref:
                writes.setdefault(r.ordinal, []).append(op)
    notes: dict[int, str] = {}
    for op in fn.ops():
        if op.spec.emit not in CALL_KINDS:
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
            imm = defs[0].get("value") if len(defs) == 1 and defs[0].spec.emit == "const" else None
            if imm is None or imm.type != "i32":
                continue
            name = describe(kind, defs[0]["value"].value)
            if name:
                notes.setdefault(defs[0].pc, name)
    return notes

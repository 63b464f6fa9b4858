"""The metadata half of the dump: `iree-dump-module --output=metadata` text for a Module.

Sections in order (vm-bytecode.md §7.3): module header, Requirements, Attributes,
Required Types, Module Dependencies, Imported Functions, Exported Functions, Sections
(module state, FlatBuffer and Bytecode sizes, .rodata / .rwdata lines, external rodata
total), the Bytecode descriptor table and Debug Information. Like iree-dump-module, a
section is printed only when its FlatBuffer field is present (`Module.present_fields`),
and strings print up to their first NUL as C would.
"""

from __future__ import annotations

from runtime_support.vm.numerics import wrap_i32
from translator.cconv import format_items, parse_fragment, split_cconv
from translator.module import (
    FEATURE_EXT_F32,
    FEATURE_EXT_F64,
    FLAG_OPTIONAL,
    Module,
    RodataSegment,
    Signature,
)

RULE = "//===" + "-" * 110 + "===//"
REF_SIZE = 16  # sizeof(iree_vm_ref_t) on 64-bit hosts
RODATA_PREVIEW = 32


def _c(s: str) -> str:
    """A string as C's %s prints it (up to the first NUL)."""
    return s.split("\0", 1)[0]


_i32 = wrap_i32  # v as C's %d prints a 32-bit value


def section_header(title: str) -> list[str]:
    return [RULE, f"// {title}", RULE]


def feature_bits(bits: int) -> str:
    names = []
    if bits & FEATURE_EXT_F32:
        names.append("EXT_F32")
    if bits & FEATURE_EXT_F64:
        names.append("EXT_F64")
    rest = bits & ~(FEATURE_EXT_F32 | FEATURE_EXT_F64) & 0xFFFFFFFF
    if rest:
        names.append(f"{rest:08X}")
    return " | ".join(names)


def _feature_bits_width(bits: int) -> int:
    """The column width iree-dump-module counts (names only, not the ' | ')."""
    width = 0
    if bits & FEATURE_EXT_F32:
        width += 7
    if bits & FEATURE_EXT_F64:
        width += 7
    if bits & ~(FEATURE_EXT_F32 | FEATURE_EXT_F64) & 0xFFFFFFFF:
        width += 8
    return width


def signature_text(sig: Signature) -> str:
    """`(i32, !vm.ref<?>) -> (i64)` or "" when the signature has no cconv."""
    if not sig.has_calling_convention:
        return ""
    args, results = split_cconv(sig.calling_convention)
    return f"({format_items(parse_fragment(args))}) -> ({format_items(parse_fragment(results))})"


def _attr_lines(attrs, indent: int) -> list[str]:
    return [" " * indent + f"{_c(k)}: {_c(v)}" for k, v in attrs]


def _rodata_line(seg: RodataSegment) -> str:
    line = f"  .rodata[{seg.ordinal:3d}] "
    if seg.compression_type == 1:
        line += "uncompressed "
    if not seg.external:
        data = bytes(seg.data)
        line += f"embedded {len(data):8d} bytes"
        text = data.split(b"\0", 1)[0]
        if all(0x20 <= b < 0x7F for b in text):
            line += " `" + text[:RODATA_PREVIEW].decode("ascii") + "`"
            if len(text) >= RODATA_PREVIEW:
                line += "..."
        return line
    off = seg.external_data_offset
    end = off + len(seg.data)
    return (
        line
        + f"external {len(seg.data):8d} bytes (offset {off} / {off:X}h to {end:X}h)"
    )


def _descriptor_lines(module: Module) -> list[str]:
    lines = [
        "  # | Offset   |   Length | Blocks | i32 # | ref # | Requirements | Aliases",
        "----+----------+----------+--------+-------+-------+--------------+-"
        + "-" * 52,
    ]
    for k, d in enumerate(module.descriptors):
        reqs = feature_bits(d.requirements)
        pad = max(0, 12 - _feature_bits_width(d.requirements))
        aliases = ", ".join(
            _c(e.local_name) for e in module.exports if e.internal_ordinal == k
        )
        lines.append(
            f"{k:3d} | {d.bytecode_offset & 0xFFFFFFFF:08X} | {d.bytecode_length:8d} | "
            f"{d.block_count:6d} | {d.i32_register_count:5d} | {d.ref_register_count:5d} | "
            f"{reqs}{' ' * pad} | {aliases}"
        )
    return lines


def format_metadata(module: Module) -> str:
    """The text `iree-dump-module --output=metadata` prints for this module."""
    present = module.present_fields
    out: list[str] = []
    out += section_header(f"@{_c(module.name)} : version {_i32(module.version)}")
    out.append("")

    if "requirements" in present:
        out += [f"Requirements: {feature_bits(module.requirements)}", ""]
    if "attrs" in present:
        out += ["Attributes:", *_attr_lines(module.attrs, 2), ""]
    if "types" in present:
        out.append("Required Types:")
        out += [f"  [{i:3d}] {_c(t)}" for i, t in enumerate(module.types)]
        out.append("")
    if "dependencies" in present:
        out.append("Module Dependencies:")
        for d in module.dependencies:
            kind = "optional" if d.flags & FLAG_OPTIONAL else "required"
            out.append(f"  {_c(d.name)}, version >= {_i32(d.minimum_version)}, {kind}")
        out.append("")
    if "imported_functions" in present:
        out.append("Imported Functions:")
        for imp in module.imports:
            opt = "?" if imp.flags & FLAG_OPTIONAL else ""
            out.append(
                f"  [{imp.ordinal:3d}] {opt}{_c(imp.full_name)}{signature_text(imp.signature)}"
            )
            out += _attr_lines(imp.signature.attrs, 8)
        out.append("")
    if "exported_functions" in present:
        out.append("Exported Functions:")
        for e in module.exports:
            sig = module.signatures[e.internal_ordinal]
            out.append(f"  [{e.ordinal:3d}] {_c(e.local_name)}{signature_text(sig)}")
            out += _attr_lines(sig.attrs, 8)
        out.append("")

    out += section_header("Sections")
    out.append("")
    if "module_state" in present:
        total = (module.global_bytes_capacity + REF_SIZE * module.global_ref_count) % (
            1 << 64
        )
        out += [
            "Module State:",
            f"  {module.global_bytes_capacity} bytes, {module.global_ref_count} refs, "
            f"~{total} bytes total",
            "",
        ]
    out.append(f"FlatBuffer: {module.flatbuffer_size} bytes")
    if "bytecode_data" in present:
        out.append(f"  Bytecode: {len(module.bytecode)} bytes")
    out += [_rodata_line(seg) for seg in module.rodata]
    out += [f"  .rwdata[{i:3d}] {n} bytes" for i, n in enumerate(module.rwdata_sizes)]
    out.append("")
    external = sum(len(seg.data) for seg in module.rodata if seg.external)
    if external > 0:
        out += [f"External .rodata: ~{external} bytes", ""]

    out += section_header(f"Bytecode : version {_i32(module.version)}")
    out.append("")
    if "function_descriptors" in present:
        out += _descriptor_lines(module)
    out.append("")

    if "debug_database" in present:
        out += section_header("Debug Information")
        out.append(
            "// NOTE: debug databases are large and should be stripped in deployed artifacts."
        )
        out.append("")
        out += [f"Locations: {len(module.locations)}", ""]
    return "\n".join(out) + "\n"


def executable_formats(module: Module) -> list[str]:
    """The executable formats a module carries code for, in rodata order: the embedded
    strings its device-matching code queries `hal.executable.format` with."""
    from runtime_support.executable_formats import FORMAT_RE

    found = []
    for seg in module.rodata:
        if seg.external or not 0 < len(seg.data) <= 64:
            continue
        text = bytes(seg.data).split(b"\0", 1)[0]
        if not all(0x20 <= b < 0x7F for b in text):
            continue
        name = text.decode("ascii")
        if FORMAT_RE.fullmatch(name) and name not in found:
            found.append(name)
    return found

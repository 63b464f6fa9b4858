"""Reads a .vmfb into a `translator.module.Module`.

    read_module(data)       bytes | bytearray | memoryview -> Module
    read_module_file(path)  the file, read into a private bytes object -> Module

Every field of `BytecodeModuleDef` is read through the checked accessors of
`translator.flatbuf`, then the tables are checked against each other (one signature per
descriptor, bytecode ranges, export ordinals, external rodata ranges, cconv syntax,
bytecode version). Whatever the input bytes, the only exception that leaves
`read_module` is `InvalidModuleError`. Byte payloads are zero-copy views of the input.
"""

from __future__ import annotations

import os
import struct

from translator.cconv import parse_cconv
from translator.container import Container, parse_container
from translator.errors import InvalidModuleError
from translator.flatbuf import FlatBuffer, Table
from translator.module import (
    CallSiteLoc,
    Dependency,
    ExportFunction,
    FileLineColLoc,
    FunctionDescriptor,
    FusedLoc,
    ImportFunction,
    Location,
    Module,
    NameLoc,
    RodataSegment,
    Signature,
    SourceMap,
    UnknownLoc,
)

__all__ = [
    "read_module",
    "read_module_file",
    "BYTECODE_VERSION_MAJOR",
    "BYTECODE_VERSION_MINOR",
]

BYTECODE_VERSION_MAJOR = 17
BYTECODE_VERSION_MINOR = 0

# BytecodeModuleDef field ids (vmfb-format.md §3.1).
F_NAME = 0
F_VERSION = 1
F_REQUIREMENTS = 2
F_ATTRS = 3
F_TYPES = 4
F_DEPENDENCIES = 5
F_IMPORTED_FUNCTIONS = 6
F_EXPORTED_FUNCTIONS = 7
F_FUNCTION_SIGNATURES = 8
F_RODATA_SEGMENTS = 9
F_RWDATA_SEGMENTS = 10
F_MODULE_STATE = 11
F_FUNCTION_DESCRIPTORS = 12
F_BYTECODE_VERSION = 13
F_BYTECODE_DATA = 14
F_DEBUG_DATABASE = 15

MODULE_FIELDS = (
    "name",
    "version",
    "requirements",
    "attrs",
    "types",
    "dependencies",
    "imported_functions",
    "exported_functions",
    "function_signatures",
    "rodata_segments",
    "rwdata_segments",
    "module_state",
    "function_descriptors",
    "bytecode_version",
    "bytecode_data",
    "debug_database",
)

# FunctionDescriptor: i32 offset, i32 length, u32 requirements, i16 reserved,
# i16 block_count, i16 i32_register_count, i16 ref_register_count.
DESCRIPTOR = struct.Struct("<iiIhhhh")
# BytecodeLocationDef: i32 bytecode_offset, i32 location.
BYTECODE_LOCATION = struct.Struct("<ii")

# Union tags.
COMPRESSION_NONE = 0
COMPRESSION_UNCOMPRESSED = 1
LOC_NONE = 0
LOC_CALL_SITE = 1
LOC_FILE_LINE_COL = 2
LOC_FUSED = 3
LOC_NAME = 4

# Errors a bug in a check could let through from struct/memoryview/str operations;
# read_module turns them into InvalidModuleError as a last line of defence.
_LOW_LEVEL_ERRORS = (struct.error, IndexError, ValueError, OverflowError, UnicodeError)


def read_module(data: bytes | bytearray | memoryview) -> Module:
    """Decodes and checks a whole module; raises only InvalidModuleError."""
    try:
        return _read_module(data)
    except InvalidModuleError:
        raise
    except _LOW_LEVEL_ERRORS as e:  # pragma: no cover - every path is checked first
        raise InvalidModuleError(f"malformed module ({type(e).__name__}: {e})") from e


def read_module_file(path: str | os.PathLike) -> Module:
    """Reads the file into one private bytes object (the Module's views are of it) and
    decodes it. Not a memory map: a file truncated while mapped makes a later access to
    the lost pages kill the process with SIGBUS."""
    with open(path, "rb") as f:
        data = f.read()  # (one buffer of the file's size: st_size sizes it)
    try:
        return read_module(data)
    except InvalidModuleError as e:
        raise e.with_path(os.fspath(path)) from None


def _read_module(data: bytes | bytearray | memoryview) -> Module:
    c = parse_container(data)
    fb = FlatBuffer(c.flatbuffer, base=c.fb_start)
    root = fb.root("BytecodeModuleDef")
    present = frozenset(n for i, n in enumerate(MODULE_FIELDS) if root.has(i))

    name = root.string(F_NAME)
    if name is None:
        raise fb.error("module has no name (required field)", root.pos)

    bytecode_version = root.u32(F_BYTECODE_VERSION, 0)
    major, minor = bytecode_version >> 16, bytecode_version & 0xFFFF
    if major != BYTECODE_VERSION_MAJOR or minor > BYTECODE_VERSION_MINOR:
        raise fb.error(
            f"unsupported bytecode version {major}.{minor} (expected "
            f"{BYTECODE_VERSION_MAJOR}.{BYTECODE_VERSION_MINOR})",
            root.pos,
        )

    attrs = _attrs(root.vector_of_tables(F_ATTRS, "attrs"))
    types = tuple(
        t.string(0, "") for t in root.vector_of_tables(F_TYPES, "types") or ()
    )
    dependencies = tuple(
        Dependency(name=t.string(0, ""), minimum_version=t.u32(1, 0), flags=t.u32(2, 1))
        for t in root.vector_of_tables(F_DEPENDENCIES, "dependencies") or ()
    )
    imports = tuple(
        _import(i, t)
        for i, t in enumerate(
            root.vector_of_tables(F_IMPORTED_FUNCTIONS, "imported_functions") or ()
        )
    )
    exports = tuple(
        ExportFunction(
            ordinal=i, local_name=t.string(0, ""), internal_ordinal=t.i32(1, 0)
        )
        for i, t in enumerate(
            root.vector_of_tables(F_EXPORTED_FUNCTIONS, "exported_functions") or ()
        )
    )
    signatures = tuple(
        _signature(t)
        for t in root.vector_of_tables(F_FUNCTION_SIGNATURES, "function_signatures")
        or ()
    )
    rodata = tuple(
        _rodata(i, t, c, fb)
        for i, t in enumerate(
            root.vector_of_tables(F_RODATA_SEGMENTS, "rodata_segments") or ()
        )
    )
    rwdata_sizes = []
    for i, t in enumerate(
        root.vector_of_tables(F_RWDATA_SEGMENTS, "rwdata_segments") or ()
    ):
        size = t.i32(0, 0)
        if size < 0:
            raise fb.error(f"rwdata segment {i} has negative size {size}", t.pos)
        rwdata_sizes.append(size)

    global_bytes = global_refs = 0
    state = root.table(F_MODULE_STATE, "module_state")
    if state is not None:
        global_bytes, global_refs = state.i32(0, 0), state.i32(1, 0)
        if global_bytes < 0 or global_refs < 0:
            raise fb.error(
                f"module state has negative sizes ({global_bytes} bytes, {global_refs} refs)",
                state.pos,
            )

    descriptors = tuple(
        FunctionDescriptor(*row)
        for row in root.struct_vector_unpack(
            F_FUNCTION_DESCRIPTORS, DESCRIPTOR, "function_descriptors"
        )
        or ()
    )
    bytecode_at = root.bytes_with_pos(F_BYTECODE_DATA)
    bytecode_pos, bytecode = bytecode_at if bytecode_at else (root.pos, fb.buf[0:0])

    locations: tuple[Location, ...] = ()
    source_maps: tuple[SourceMap, ...] = ()
    debug = root.table(F_DEBUG_DATABASE, "debug_database")
    if debug is not None:
        locations = tuple(
            _location(tag, t)
            for tag, t in debug.union_vector(0, "location_table") or ()
        )
        source_maps = tuple(
            _source_map(t)
            for t in debug.vector_of_tables(2, "debug_database.functions") or ()
        )

    module = Module(
        name=name,
        version=root.u32(F_VERSION, 0),
        requirements=root.u32(F_REQUIREMENTS, 0),
        attrs=attrs,
        types=types,
        dependencies=dependencies,
        imports=imports,
        exports=exports,
        signatures=signatures,
        descriptors=descriptors,
        rodata=rodata,
        rwdata_sizes=tuple(rwdata_sizes),
        global_bytes_capacity=global_bytes,
        global_ref_count=global_refs,
        bytecode_version=bytecode_version,
        bytecode=bytecode,
        locations=locations,
        source_maps=source_maps,
        flatbuffer_offset=c.fb_start,
        flatbuffer_size=c.size,
        file_size=c.file_size,
        rodata_base=c.rodata_base,
        present_fields=present,
    )
    _check_consistency(module, fb, root, bytecode_pos)
    return module


# -- tables --------------------------------------------------------------------------------


def _attrs(tables: list[Table] | None) -> tuple[tuple[str, str], ...]:
    return tuple((t.string(0, ""), t.string(1, "")) for t in tables or ())


def _signature(t: Table | None) -> Signature:
    if t is None:
        return Signature("", (), has_calling_convention=False)
    cconv = t.string(0)
    return Signature(
        calling_convention=cconv or "",
        attrs=_attrs(t.vector_of_tables(1, "attrs")),
        has_calling_convention=cconv is not None,
    )


def _import(ordinal: int, t: Table) -> ImportFunction:
    full_name = t.string(0, "")
    return ImportFunction(
        ordinal=ordinal,
        full_name=full_name,
        signature=_signature(t.table(1, f"imported_functions[{ordinal}].signature")),
        flags=t.u32(2, 1),
    )


def _rodata(ordinal: int, t: Table, c: Container, fb: FlatBuffer) -> RodataSegment:
    compression = t.u8(0, COMPRESSION_NONE)
    if compression not in (COMPRESSION_NONE, COMPRESSION_UNCOMPRESSED):
        raise fb.error(
            f"rodata segment {ordinal} has unknown compression type {compression}",
            t.pos,
        )
    ext_offset = t.u64(3, 0)
    ext_length = t.u64(4, 0)
    embedded = t.bytes_with_pos(2)
    if embedded is not None:
        pos, view = embedded
        return RodataSegment(
            ordinal=ordinal,
            data=view,
            external=False,
            file_offset=fb.base + pos,
            external_data_offset=ext_offset,
            compression_type=compression,
        )
    available = c.file_size - c.rodata_base
    if ext_offset > available or ext_length > available - ext_offset:
        raise fb.error(
            f"external rodata segment {ordinal} [{ext_offset}, {ext_offset + ext_length}) "
            f"(relative to file offset {c.rodata_base}) lies outside the "
            f"{c.file_size}-byte file",
            t.pos,
        )
    start = c.rodata_base + ext_offset
    return RodataSegment(
        ordinal=ordinal,
        data=c.data[start : start + ext_length],
        external=True,
        file_offset=start,
        external_data_offset=ext_offset,
        compression_type=compression,
    )


def _location(tag: int, t: Table | None) -> Location:
    if tag == LOC_NONE or t is None:
        return UnknownLoc()
    if tag == LOC_CALL_SITE:
        return CallSiteLoc(callee=t.i32(0, 0), caller=t.i32(1, 0))
    if tag == LOC_FILE_LINE_COL:
        return FileLineColLoc(
            filename=t.string(0, ""), line=t.i32(1, 0), column=t.i32(2, 0)
        )
    if tag == LOC_FUSED:
        return FusedLoc(
            metadata=t.string(0),
            locations=tuple(t.scalar_vector(1, "i32", "fused locations") or ()),
        )
    if tag == LOC_NAME:
        return NameLoc(name=t.string(0, ""), child_location=t.i32(1, 0))
    raise t.fb.error(f"unknown location type {tag}", t.pos)


def _source_map(t: Table) -> SourceMap:
    rows = t.struct_vector_unpack(1, BYTECODE_LOCATION, "source map locations") or ()
    return SourceMap(local_name=t.string(0, ""), locations=tuple(rows))


# -- cross-table checks --------------------------------------------------------------------


def _function_label(module: Module, k: int) -> str:
    names = [e.local_name for e in module.exports if e.internal_ordinal == k]
    return names[0] if names else f"fn{k}"


def _check_consistency(
    module: Module, fb: FlatBuffer, root: Table, bytecode_pos: int
) -> None:
    n = len(module.descriptors)
    if len(module.signatures) != n:
        raise fb.error(
            f"{len(module.signatures)} function signatures but {n} function descriptors",
            root.pos,
        )
    for e in module.exports:
        if not 0 <= e.internal_ordinal < n:
            raise fb.error(
                f"export {e.ordinal} ({e.local_name!r}) names internal function "
                f"{e.internal_ordinal}, but the module has {n}",
                root.pos,
            )
    size = len(module.bytecode)
    for k, d in enumerate(module.descriptors):
        label = _function_label(module, k)
        if (
            d.bytecode_offset < 0
            or d.bytecode_length < 0
            or (d.bytecode_offset + d.bytecode_length > size)
        ):
            raise InvalidModuleError(
                f"bytecode range [{d.bytecode_offset}, {d.bytecode_offset + d.bytecode_length})"
                f" lies outside bytecode_data ({size} bytes)",
                function=label,
                offset=fb.base + bytecode_pos,
            )
        if d.block_count < 0 or d.i32_register_count < 0 or d.ref_register_count < 0:
            raise InvalidModuleError(
                f"negative counts in function descriptor (blocks {d.block_count}, i32 "
                f"registers {d.i32_register_count}, ref registers {d.ref_register_count})",
                function=label,
            )
    for imp in module.imports:
        parse_cconv(imp.signature.calling_convention, function=imp.full_name)
    for k, sig in enumerate(module.signatures):
        parse_cconv(sig.calling_convention, function=_function_label(module, k))

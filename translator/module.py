"""The decoded `BytecodeModuleDef`: every table of a .vmfb as plain Python data.

`translator.reader.read_module(data)` builds a `Module` from the file's bytes; nothing
here parses bytes. Byte payloads (rodata, bytecode) are zero-copy `memoryview`s into the
file. Names and strings come from untrusted input: they are kept verbatim here and must be
sanitized (identifiers) or `repr()`-quoted before they reach generated code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from translator.cconv import CConv, parse_cconv

# FeatureBits (vmfb-format.md §6).
FEATURE_EXT_F32 = 0x1
FEATURE_EXT_F64 = 0x2
FEATURE_YIELD = 0x4
FEATURE_UNWIND = 0x8

# ModuleDependencyDef / ImportFunctionDef flags.
FLAG_REQUIRED = 1
FLAG_OPTIONAL = 2


@dataclass(frozen=True)
class Signature:
    """A function's calling convention string and reflection attributes."""

    calling_convention: str
    attrs: tuple[tuple[str, str], ...] = ()
    # False when the FlatBuffer has no calling_convention string at all (then
    # `calling_convention` is ""; iree-dump-module prints no type list for it).
    has_calling_convention: bool = True

    @cached_property
    def cconv(self) -> CConv:
        """The parsed calling convention (InvalidModuleError if malformed)."""
        return parse_cconv(self.calling_convention)

    def attr(self, key: str) -> str | None:
        for k, v in self.attrs:
            if k == key:
                return v
        return None


@dataclass(frozen=True)
class Dependency:
    name: str
    minimum_version: int
    flags: int

    @property
    def optional(self) -> bool:
        return bool(self.flags & FLAG_OPTIONAL)


@dataclass(frozen=True)
class ImportFunction:
    ordinal: int
    full_name: str
    signature: Signature
    flags: int

    @property
    def optional(self) -> bool:
        return bool(self.flags & FLAG_OPTIONAL)


@dataclass(frozen=True)
class ExportFunction:
    ordinal: int
    local_name: str
    internal_ordinal: int


@dataclass(frozen=True)
class RodataSegment:
    """A read-only data segment; `data` is a zero-copy view of the file."""

    ordinal: int
    data: memoryview
    external: bool
    # Absolute file offset of the bytes (external and embedded alike).
    file_offset: int
    # The raw FlatBuffer fields (external_data_offset is relative to the rodata base).
    external_data_offset: int = 0
    compression_type: int = 0  # CompressionTypeDef tag: 0 NONE, 1 UncompressedDataDef

    def __len__(self) -> int:
        return len(self.data)


@dataclass(frozen=True)
class FunctionDescriptor:
    bytecode_offset: int
    bytecode_length: int
    requirements: int
    reserved: int
    block_count: int
    i32_register_count: int
    ref_register_count: int


# Locations of the debug database (LocationTypeDef union members).
@dataclass(frozen=True)
class UnknownLoc:
    pass


@dataclass(frozen=True)
class FileLineColLoc:
    filename: str
    line: int
    column: int


@dataclass(frozen=True)
class CallSiteLoc:
    callee: int
    caller: int


@dataclass(frozen=True)
class FusedLoc:
    metadata: str | None
    locations: tuple[int, ...]


@dataclass(frozen=True)
class NameLoc:
    name: str
    child_location: int


Location = UnknownLoc | FileLineColLoc | CallSiteLoc | FusedLoc | NameLoc


@dataclass(frozen=True)
class SourceMap:
    """pc -> location-table index for one function (see the 3.13 quirk in `Module`)."""

    local_name: str
    locations: tuple[tuple[int, int], ...]  # (function-relative pc, location index)


@dataclass
class Module:
    """Everything a `BytecodeModuleDef` holds, checked for internal consistency."""

    name: str
    version: int
    requirements: int
    attrs: tuple[tuple[str, str], ...]
    types: tuple[str, ...]
    dependencies: tuple[Dependency, ...]
    imports: tuple[ImportFunction, ...]
    exports: tuple[ExportFunction, ...]
    # One signature and one descriptor per internal function, same index.
    signatures: tuple[Signature, ...]
    descriptors: tuple[FunctionDescriptor, ...]
    rodata: tuple[RodataSegment, ...]
    rwdata_sizes: tuple[int, ...]
    global_bytes_capacity: int
    global_ref_count: int
    bytecode_version: int
    bytecode: memoryview
    # Debug database (empty when absent).
    locations: tuple[Location, ...] = ()
    source_maps: tuple[SourceMap, ...] = ()
    # Container facts, for the dump's "Sections" summary.
    flatbuffer_offset: int = 0
    flatbuffer_size: int = 0
    file_size: int = 0
    rodata_base: int = 0  # absolute file offset external rodata is relative to
    # Names of the BytecodeModuleDef fields present in the FlatBuffer ("types",
    # "debug_database", ...): the dump prints some sections only when present.
    present_fields: frozenset[str] = frozenset()
    _name_cache: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def function_count(self) -> int:
        return len(self.descriptors)

    def function_bytecode(self, k: int) -> memoryview:
        d = self.descriptors[k]
        return self.bytecode[d.bytecode_offset : d.bytecode_offset + d.bytecode_length]

    def runtime_function_name(self, k: int) -> str | None:
        """The name IREE's runtime gives internal function k (from the debug database).

        3.13 writes one source map, at index 0, that belongs to the module's *last*
        function; the runtime nonetheless names internal function 0 after it.
        """
        if k < len(self.source_maps):
            name = self.source_maps[k].local_name
            return name or None
        return None

    def export_names_of(self, k: int) -> list[str]:
        return [e.local_name for e in self.exports if e.internal_ordinal == k]

    def function_display_name(self, k: int) -> str:
        """Name used in `vm.func @NAME` headers, as iree-dump-module prints it."""
        names = self.export_names_of(k)
        if names:
            return names[0]
        runtime = self.runtime_function_name(k)
        if runtime:
            return runtime
        return f"fn{k}"

    def source_map_of(self, k: int) -> SourceMap | None:
        """The source map that really belongs to function k, or None.

        Because of the 3.13 quirk, slot 0 holds the last function's map; a map is
        used only when its name matches one of k's names.
        """
        candidates = [sm for sm in self.source_maps if sm.local_name]
        names = set(self.export_names_of(k))
        if k == len(self.descriptors) - 1 and len(self.source_maps) == 1:
            return self.source_maps[0]
        if len(self.source_maps) == len(self.descriptors) and k < len(self.source_maps):
            sm = self.source_maps[k]
            if not names or sm.local_name in names:
                return sm
        for sm in candidates:
            if sm.local_name in names:
                return sm
        return None

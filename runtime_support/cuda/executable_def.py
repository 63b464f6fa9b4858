"""Reader of IREE's CUDA executable format, `cuda-nvptx-fb` (namespace `iree.hal.cuda`).

The `hal.executable.create` data is a 64-byte `iree_flatbuffer_file_header_t` (magic
'CDA1', version 0, u64 content size, six reserved u64) followed by a FlatBuffer of that
size whose root is an `ExecutableDef` (runtime/src/iree/schemas/cuda_executable_def.fbs,
docs/hal-abi.md "CUDA executables"):

    ExecutableDef { 0 exports: [ExportDef], 1 modules: [ModuleDef], 2 source_files }
    ModuleDef     { 0 ptx_image: string }   PTX text, or a cubin (--iree-cuda-use-ptxas)
    ExportDef     { 0 module_ordinal: u32, 1 kernel_name: string, 2 block_dims: {u32 x,y,z},
                    3 block_shared_memory_size: u32, 4 constant_count: u32,
                    5 binding_flags: [u64] (bit 0 READ_ONLY, bit 1 INDIRECT),
                    6 debug_info: iree.hal.debug.ExportDef }

Every offset, count and ordinal is checked (runtime_support.flatbuf) before use; a
malformed executable is a `LoaderError` naming the byte where it goes wrong.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from runtime_support.errors import LoaderError
from runtime_support.flatbuf import FlatBuffer, Table

FORMAT = "cuda-nvptx-fb"
MAGIC = b"CDA1"
HEADER = struct.Struct("<4sIQ6Q")  # magic, version, content_size, reserved[6]
BLOCK_DIMS = struct.Struct("<3I")

BINDING_READ_ONLY = 1 << 0
BINDING_INDIRECT = 1 << 1

# A CUDA block holds at most 1024 threads (every architecture IREE targets); larger
# dimensions in a file are corruption, refused before anything is launched.
MAX_THREADS_PER_BLOCK = 1024
# Kernel parameters are limited to 4 KiB by CUDA (32 KiB from Volta with CUDA 12.1, but
# IREE keeps to 4 KiB): at 8 bytes per binding and 4 per constant, at most 1024 entries.
MAX_KERNEL_PARAMS = 1024


@dataclass(frozen=True)
class SourceLocation:
    filename: str
    line: int


@dataclass(frozen=True)
class CudaModule:
    image: bytes  # PTX text (NUL-free) or a cubin ELF image

    @property
    def is_ptx(self) -> bool:
        return not self.image.startswith(b"\x7fELF")

    def ptx_target(self) -> str | None:
        """The `.target sm_XX` a PTX module names (None for a cubin or when absent)."""
        if not self.is_ptx:
            return None
        for line in self.image.decode("utf-8", "replace").splitlines():
            words = line.split()
            if words[:1] == [".target"] and len(words) > 1:
                return words[1].rstrip(",")
        return None


@dataclass(frozen=True)
class CudaExport:
    ordinal: int
    kernel_name: str
    module_ordinal: int
    block_dims: tuple[int, int, int]
    shared_memory_size: int
    constant_count: int
    binding_flags: tuple[int, ...]
    debug_name: str | None = None
    location: SourceLocation | None = None

    @property
    def binding_count(self) -> int:
        return len(self.binding_flags)


@dataclass(frozen=True)
class CudaExecutableDef:
    exports: tuple[CudaExport, ...]
    modules: tuple[CudaModule, ...]
    source_files: tuple[str, ...] = field(default_factory=tuple)


class _Buffer(FlatBuffer):
    __slots__ = ()

    def error(self, reason: str, pos: int) -> LoaderError:
        return LoaderError(f"{FORMAT} executable: {reason} (at byte {self.base + pos})")


def _location(debug: Table | None) -> tuple[str | None, SourceLocation | None]:
    if debug is None:
        return None, None
    loc = debug.table(1, "debug location")
    where = None
    if loc is not None:
        where = SourceLocation(loc.string(0, "") or "", loc.i32(1, 0))
    return debug.string(0), where


def read_cuda_executable(data: bytes | bytearray | memoryview) -> CudaExecutableDef:
    """Parses and checks a `cuda-nvptx-fb` executable."""
    view = memoryview(data).cast("B")
    if len(view) < HEADER.size:
        raise LoaderError(
            f"{FORMAT} executable of {len(view)} bytes is shorter than its {HEADER.size}-byte header"
        )
    magic, version, content_size, *_ = HEADER.unpack_from(view, 0)
    if magic != MAGIC:
        raise LoaderError(f"{FORMAT} executable has magic {bytes(magic)!r}, expected {MAGIC!r}")
    if version != 0:
        raise LoaderError(f"{FORMAT} executable has header version {version}, expected 0")
    if content_size == 0 or content_size > len(view) - HEADER.size:
        raise LoaderError(
            f"{FORMAT} executable claims {content_size} content bytes but "
            f"{len(view) - HEADER.size} follow its header"
        )
    fb = _Buffer(view[HEADER.size : HEADER.size + content_size], base=HEADER.size)
    fb.check(4, 4, "file identifier")
    if bytes(fb.buf[4:8]) != MAGIC:
        raise fb.error(f"file identifier {bytes(fb.buf[4:8])!r} is not {MAGIC!r}", 4)
    root = fb.root("ExecutableDef")

    modules = tuple(
        CudaModule(bytes(m.string_bytes(0) or b""))
        for m in (root.vector_of_tables(1, "ModuleDef") or [])
    )
    exports = []
    for i, e in enumerate(root.vector_of_tables(0, "ExportDef") or []):
        name = e.string(1)
        if not name:
            raise fb.error(f"export {i} has no kernel name", e.pos)
        module_ordinal = e.u32(0)
        if module_ordinal >= len(modules):
            raise fb.error(
                f"export {i} ({name!r}) names module {module_ordinal} of {len(modules)}", e.pos
            )
        dims = e.inline_struct(2, BLOCK_DIMS) or (0, 0, 0)
        threads = dims[0] * dims[1] * dims[2]
        if not 0 < threads <= MAX_THREADS_PER_BLOCK:
            raise fb.error(f"export {i} ({name!r}) has block dimensions {dims}", e.pos)
        flags = tuple(e.scalar_vector(5, "u64", "binding_flags") or ())
        constants = e.u32(4)
        if 2 * len(flags) + constants > MAX_KERNEL_PARAMS:
            raise fb.error(
                f"export {i} ({name!r}) has {len(flags)} bindings and {constants} constants, "
                f"more kernel parameters than CUDA accepts",
                e.pos,
            )
        debug_name, location = _location(e.table(6, "debug_info"))
        exports.append(
            CudaExport(i, name, module_ordinal, dims, e.u32(3), constants, flags, debug_name, location)
        )
    sources = tuple(
        s.string(0, "") or "" for s in (root.vector_of_tables(2, "SourceFileDef") or [])
    )
    return CudaExecutableDef(tuple(exports), modules, sources)


__all__ = [
    "FORMAT",
    "BINDING_INDIRECT",
    "BINDING_READ_ONLY",
    "CudaExecutableDef",
    "CudaExport",
    "CudaModule",
    "read_cuda_executable",
]

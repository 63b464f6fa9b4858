"""Our own in-process loader for `embedded-elf-x86_64` kernel libraries.

IREE's embedded executables are tiny position-independent ELF shared objects with no
dependencies (hal-abi.md D.1). We load them without the system dynamic linker:

    parse_elf(bytes)            validate header and program headers (FatELF unwrapped)
    ElfImage(parsed)            reserve one PROT_NONE range, map each PT_LOAD read-write,
                                copy file bytes (bss stays zero), read PT_DYNAMIC,
                                check symbols, apply RELA/JMPREL relocations,
                                set final protections (never W and X), RELRO read-only,
                                run DT_INIT / DT_INIT_ARRAY
    ElfImage.symbol(name)       address of an exported dynamic symbol
    load_embedded_elf(bytes)    the above + executable.Executable (query, exports, dispatch)

pyelftools decodes the fixed-size records (ELF header, program headers, dynamic
entries, symbols, relocations), kept between processes per library (elf_records.py);
every offset, size and address is checked here before it is read or written, so a
malformed file raises LoaderError instead of crashing.
"""

from __future__ import annotations

import ctypes
import mmap
import struct
from dataclasses import dataclass, field
from typing import Sequence

from ..errors import LoaderError
import runtime_support.loaders.kernel_abi as abi
from .elf_records import SIZES, Records
from .executable import Executable, LibraryMemory

FORMAT = "embedded-elf-x86_64"

PAGE_SIZE = mmap.PAGESIZE
MAX_IMAGE_SIZE = 1 << 30  # refuse absurd address ranges from malformed headers
MAX_SYMBOLS = 1 << 20

PF_X, PF_W, PF_R = 1, 2, 4
PROT_NONE, PROT_READ, PROT_WRITE, PROT_EXEC = 0, 1, 2, 4  # <sys/mman.h>
EM_X86_64 = 62
ELFCLASS64 = 2
ELFDATA2LSB = 1
DT_RELA = 7

FATELF_MAGIC = 0x1F0E70FA
FATELF_HEADER = struct.Struct("<IHBB")  # magic, version, record count, reserved
FATELF_RECORD = struct.Struct("<HBBBBBBQQ")  # machine, osabi, osabi ver, word size,
#                                              byte order, 2 reserved, offset, size

# x86-64 relocation types (System V psABI) and what we do with them (hal-abi.md D.2).
R_X86_64_NONE = 0
R_X86_64_64 = 1
R_X86_64_PC32 = 2
R_X86_64_COPY = 5
R_X86_64_GLOB_DAT = 6
R_X86_64_JUMP_SLOT = 7
R_X86_64_RELATIVE = 8
R_X86_64_32 = 10
R_X86_64_32S = 11

RELOCATION_NAMES = {
    R_X86_64_NONE: "R_X86_64_NONE",
    R_X86_64_64: "R_X86_64_64",
    R_X86_64_PC32: "R_X86_64_PC32",
    R_X86_64_COPY: "R_X86_64_COPY",
    R_X86_64_GLOB_DAT: "R_X86_64_GLOB_DAT",
    R_X86_64_JUMP_SLOT: "R_X86_64_JUMP_SLOT",
    R_X86_64_RELATIVE: "R_X86_64_RELATIVE",
    R_X86_64_32: "R_X86_64_32",
    R_X86_64_32S: "R_X86_64_32S",
}


# --- libc --------------------------------------------------------------------------------

_libc = ctypes.CDLL(None, use_errno=True)
_mmap = _libc.mmap
_mmap.argtypes = [
    ctypes.c_void_p,
    ctypes.c_size_t,
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_long,
]
_mmap.restype = ctypes.c_void_p
_munmap = _libc.munmap
_munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_munmap.restype = ctypes.c_int
_mprotect = _libc.mprotect
_mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_mprotect.restype = ctypes.c_int
_MAP_FAILED = ctypes.c_void_p(-1).value


def _protect(start: int, end: int, prot: int) -> None:
    if end > start and _mprotect(start, end - start, prot) != 0:
        errno = ctypes.get_errno()
        raise LoaderError(
            f"mprotect(0x{start:x}, 0x{end - start:x}, {prot}) failed: " f"errno {errno}"
        )


def _align_down(value: int, alignment: int) -> int:
    return value & ~(alignment - 1)


def _align_up(value: int, alignment: int) -> int:
    return (value + alignment - 1) & ~(alignment - 1)


# --- parsing -----------------------------------------------------------------------------

def _decode(records: Records, kind: str, data: bytes, offset: int, what: str) -> dict:
    """Decodes one fixed-size record (elf_records.SIZES) at `offset` after checking bounds."""
    size = SIZES[kind]
    if offset < 0 or offset + size > len(data):
        raise LoaderError(f"ELF {what} at offset 0x{offset:x} is outside the file")
    return records.decode(kind, bytes(data[offset : offset + size]), what)


@dataclass(frozen=True)
class Segment:
    """One PT_LOAD program header."""

    vaddr: int
    memsz: int
    offset: int
    filesz: int
    flags: int

    @property
    def end(self) -> int:
        return self.vaddr + self.memsz

    @property
    def prot(self) -> int:
        if not self.flags & (PF_R | PF_W | PF_X):
            return PROT_NONE
        prot = PROT_READ  # W and X imply R, as upstream maps them
        if self.flags & PF_W:
            prot |= PROT_WRITE
        if self.flags & PF_X:
            prot |= PROT_EXEC
        return prot


@dataclass
class ParsedElf:
    data: bytes
    segments: list[Segment]
    dynamic: tuple[int, int]  # (vaddr, size) of PT_DYNAMIC
    relro: list[tuple[int, int]] = field(default_factory=list)  # (vaddr, memsz)
    records: Records | None = None  # its decoded records (the load decodes the rest)


def unwrap_fatelf(data: bytes) -> bytes:
    """Returns the x86-64 little-endian ELF64 inside a FatELF container (or `data`)."""
    if len(data) < 4 or struct.unpack_from("<I", data)[0] != FATELF_MAGIC:
        return data
    if len(data) < FATELF_HEADER.size:
        raise LoaderError("truncated FatELF header")
    _, version, count, _ = FATELF_HEADER.unpack_from(data)
    if version != 1:
        raise LoaderError(f"unsupported FatELF version {version}")
    if FATELF_HEADER.size + count * FATELF_RECORD.size > len(data):
        raise LoaderError("truncated FatELF record table")
    for i in range(count):
        machine, _, _, word_size, byte_order, _, _, offset, size = FATELF_RECORD.unpack_from(
            data, FATELF_HEADER.size + i * FATELF_RECORD.size
        )
        if machine == EM_X86_64 and word_size == ELFCLASS64 and byte_order == ELFDATA2LSB:
            if offset + size > len(data):
                raise LoaderError("FatELF record points outside the file")
            return data[offset : offset + size]
    raise LoaderError("FatELF container has no x86-64 ELF64 little-endian record")


def parse_elf(data: bytes | bytearray | memoryview) -> ParsedElf:
    """Validates an ELF image for loading (hal-abi.md D.2 step 1)."""
    data = unwrap_fatelf(bytes(data))
    if len(data) < 64:
        raise LoaderError(f"truncated ELF: {len(data)} bytes, header needs 64")
    if data[:4] != b"\x7fELF":
        raise LoaderError(f"bad ELF magic {data[:4]!r}")
    if data[4] != ELFCLASS64:
        raise LoaderError(f"ELF class {data[4]} is not ELFCLASS64")
    if data[5] != ELFDATA2LSB:
        raise LoaderError(f"ELF data encoding {data[5]} is not little-endian")
    records = Records(data)
    header = _decode(records, "Elf_Ehdr", data, 0, "header")
    if header["e_machine"] != "EM_X86_64":
        raise LoaderError(f"ELF machine {header['e_machine']} is not EM_X86_64")
    if header["e_type"] != "ET_DYN":
        raise LoaderError(f"ELF type {header['e_type']} is not ET_DYN (shared object)")
    if header["e_version"] != "EV_CURRENT":
        raise LoaderError(f"ELF version {header['e_version']} is not 1")
    if header["e_ehsize"] != 64 or header["e_phentsize"] != 56:
        raise LoaderError("ELF header or program header size is wrong for ELF64")
    phoff, phnum = header["e_phoff"], header["e_phnum"]
    if phoff == 0 or phnum == 0 or phoff + phnum * 56 > len(data):
        raise LoaderError("ELF program header table missing or outside the file")
    if header["e_shoff"]:
        if header["e_shentsize"] != 64:
            raise LoaderError("ELF section header size is wrong for ELF64")
        if header["e_shoff"] + header["e_shnum"] * 64 > len(data):
            raise LoaderError("ELF section header table is outside the file")

    segments: list[Segment] = []
    dynamic = None
    relro = []
    for i in range(phnum):
        ph = _decode(records, "Elf_Phdr", data, phoff + i * 56, f"program header {i}")
        kind = ph["p_type"]
        if kind == "PT_LOAD":
            if ph["p_memsz"] == 0:
                continue
            seg = Segment(
                ph["p_vaddr"], ph["p_memsz"], ph["p_offset"], ph["p_filesz"], ph["p_flags"]
            )
            if seg.filesz > seg.memsz:
                raise LoaderError(f"PT_LOAD {i}: file size exceeds memory size")
            if seg.offset + seg.filesz > len(data):
                raise LoaderError(
                    f"PT_LOAD {i}: file range 0x{seg.offset:x}+0x{seg.filesz:x} is outside "
                    f"the {len(data)}-byte file"
                )
            if seg.end > MAX_IMAGE_SIZE:
                raise LoaderError(f"PT_LOAD {i}: address range ends at 0x{seg.end:x}")
            align = ph["p_align"]
            if align > 1 and align & (align - 1):
                raise LoaderError(f"PT_LOAD {i}: alignment {align} is not a power of two")
            if seg.flags & PF_W and seg.flags & PF_X:
                raise LoaderError(f"PT_LOAD {i} is both writable and executable")
            segments.append(seg)
        elif kind == "PT_DYNAMIC":
            dynamic = (ph["p_vaddr"], ph["p_filesz"])
        elif kind == "PT_GNU_RELRO":
            relro.append((ph["p_vaddr"], ph["p_memsz"]))
        elif kind == "PT_TLS":
            raise LoaderError("ELF uses thread-local storage (PT_TLS), which is unsupported")
        elif kind == "PT_INTERP":
            raise LoaderError("ELF requests an interpreter (PT_INTERP): not a kernel library")
    if not segments:
        raise LoaderError("ELF has no loadable segments")
    if dynamic is None:
        raise LoaderError("ELF has no PT_DYNAMIC segment")
    ordered = sorted(segments, key=lambda s: s.vaddr)
    for a, b in zip(ordered, ordered[1:]):
        if b.vaddr < a.end:
            raise LoaderError(f"PT_LOAD segments overlap at 0x{b.vaddr:x}")
    return ParsedElf(data, segments, dynamic, relro, records)


# --- loading -----------------------------------------------------------------------------


class _ImageMemory(LibraryMemory):
    """Bounds checks against the loaded segments of one ElfImage."""

    def __init__(self, image: "ElfImage") -> None:
        self._image = image

    def check(self, address, size, what):
        if not address:
            raise LoaderError(f"library {what} pointer is NULL")
        if not self._image.is_readable(address, size):
            raise LoaderError(
                f"library {what} (0x{address:x}, {size} bytes) is outside the loaded image"
            )
        return address

    def check_code(self, address, what):
        if not address or not self._image.is_code(address):
            raise LoaderError(
                f"library {what} (0x{address or 0:x}) is not in an executable segment"
            )
        return address

    def cstring(self, address, what):
        self.check(address, 1, what)
        limit = self._image.readable_extent(address)
        chunk = 256
        while True:  # read growing prefixes: names are short, segments may be large
            raw = ctypes.string_at(address, min(chunk, limit))
            end = raw.find(b"\0")
            if end >= 0:
                return raw[:end]
            if chunk >= limit:
                raise LoaderError(f"library {what} string is not NUL-terminated in the image")
            chunk *= 4


@dataclass(frozen=True)
class Symbol:
    name: bytes
    value: int
    bind: str
    shndx: object


class ElfImage:
    """One embedded ELF mapped, relocated and protected in this process."""

    def __init__(self, elf: ParsedElf) -> None:
        self.segments = elf.segments
        self.relocation_counts: dict[str, int] = {}
        self.relocated_words: dict[int, int] = {}  # vaddr -> value written (tests)
        lo = min(_align_down(s.vaddr, PAGE_SIZE) for s in elf.segments)
        hi = max(_align_up(s.end, PAGE_SIZE) for s in elf.segments)
        self.size = hi - lo
        flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
        base = _mmap(None, self.size, PROT_NONE, flags, -1, 0)
        if base in (None, _MAP_FAILED):
            raise LoaderError(f"cannot reserve {self.size} bytes: errno {ctypes.get_errno()}")
        self.base = base
        self.bias = base - lo
        self._writable = True
        try:
            self._load(elf)
        except BaseException:
            self.close()
            raise

    # -- address checks (all addresses absolute) --

    def _segment_at(self, address: int) -> Segment | None:
        vaddr = address - self.bias
        for s in self.segments:
            if s.vaddr <= vaddr < s.end:
                return s
        return None

    def is_readable(self, address: int, size: int) -> bool:
        s = self._segment_at(address)
        if s is None or (s.prot == PROT_NONE and not self._writable):
            return False
        return address - self.bias + max(size, 1) <= s.end

    def readable_extent(self, address: int) -> int:
        s = self._segment_at(address)
        return 0 if s is None else s.end - (address - self.bias)

    def is_code(self, address: int) -> bool:
        s = self._segment_at(address)
        return s is not None and bool(s.flags & PF_X)

    def _check(self, vaddr: int, size: int, what: str) -> int:
        """Absolute address of [vaddr, vaddr+size) after checking it is loaded."""
        if vaddr < 0 or size < 0 or not self.is_readable(self.bias + vaddr, size):
            raise LoaderError(f"ELF {what} (0x{vaddr:x}, {size} bytes) is outside the image")
        return self.bias + vaddr

    def _read(self, vaddr: int, size: int, what: str) -> bytes:
        return ctypes.string_at(self._check(vaddr, size, what), size) if size else b""

    # -- the algorithm --

    def _load(self, elf: ParsedElf) -> None:
        self._records = elf.records if elf.records is not None else Records(elf.data)
        for s in self.segments:
            start = _align_down(self.bias + s.vaddr, PAGE_SIZE)
            _protect(start, _align_up(self.bias + s.end, PAGE_SIZE), PROT_READ | PROT_WRITE)
            if s.filesz:
                ctypes.memmove(
                    self.bias + s.vaddr, elf.data[s.offset : s.offset + s.filesz], s.filesz
                )
        dyn = self._read_dynamic(*elf.dynamic)
        self.symbols = self._read_symbols(dyn)
        for sym in self.symbols[1:]:
            if sym.shndx == "SHN_UNDEF":
                raise LoaderError(
                    f"ELF imports symbol '{sym.name.decode(errors='replace')}': "
                    "kernel libraries may not import symbols"
                )
        self._relocate(dyn)
        self._protect_final(elf.relro)
        self._writable = False
        self._run_initializers(dyn)
        self._records.save()  # (a library that loads: its records are kept)

    def _read_dynamic(self, vaddr: int, size: int) -> dict[str, int]:
        raw = self._read(vaddr, size - size % 16, "dynamic table")
        tags: dict[str, int] = {}
        for offset in range(0, len(raw), 16):
            entry = _decode(self._records, "Elf_Dyn", raw, offset, "dynamic entry")
            tag = entry["d_tag"]
            if tag == "DT_NULL":
                break
            if tag == "DT_NEEDED":
                raise LoaderError("ELF depends on other shared libraries (DT_NEEDED)")
            if isinstance(tag, str):
                tags.setdefault(tag, entry["d_val"])
        for tag, what in (("DT_REL", "REL relocations"), ("DT_RELSZ", "REL relocations")):
            if tags.get(tag):
                raise LoaderError(f"ELF uses {what} ({tag}); only RELA is supported")
        if tags.get("DT_SYMENT", 24) != 24:
            raise LoaderError(f"ELF DT_SYMENT is {tags['DT_SYMENT']}, expected 24")
        if tags.get("DT_RELAENT", 24) != 24:
            raise LoaderError(f"ELF DT_RELAENT is {tags['DT_RELAENT']}, expected 24")
        return tags

    def _read_symbols(self, dyn: dict[str, int]) -> list[Symbol]:
        if "DT_SYMTAB" not in dyn or "DT_STRTAB" not in dyn or "DT_STRSZ" not in dyn:
            raise LoaderError("ELF has no dynamic symbol or string table")
        if "DT_HASH" not in dyn:
            raise LoaderError("ELF has no DT_HASH table (needed for the symbol count)")
        _, count = struct.unpack("<II", self._read(dyn["DT_HASH"], 8, "hash table"))
        if count > MAX_SYMBOLS:
            raise LoaderError(f"ELF hash table claims {count} symbols")
        raw = self._read(dyn["DT_SYMTAB"], 24 * count, "dynamic symbol table")
        strings = self._read(dyn["DT_STRTAB"], dyn["DT_STRSZ"], "dynamic string table")
        symbols = []
        for i in range(count):
            sym = _decode(self._records, "Elf_Sym", raw, 24 * i, f"symbol {i}")
            start = sym["st_name"]
            end = strings.find(b"\0", start)
            if start >= len(strings) or end < 0:
                raise LoaderError(f"ELF symbol {i} name is outside the string table")
            symbols.append(
                Symbol(strings[start:end], sym["st_value"], sym["st_info"]["bind"], sym["st_shndx"])
            )
        return symbols

    def _relocate(self, dyn: dict[str, int]) -> None:
        tables = []
        if "DT_RELA" in dyn or "DT_RELASZ" in dyn:
            tables.append((dyn.get("DT_RELA", 0), dyn.get("DT_RELASZ", 0), "DT_RELA"))
        if "DT_JMPREL" in dyn:
            if dyn.get("DT_PLTREL", DT_RELA) != DT_RELA:
                raise LoaderError("ELF PLT relocations are not RELA (DT_PLTREL)")
            tables.append((dyn["DT_JMPREL"], dyn.get("DT_PLTRELSZ", 0), "DT_JMPREL"))
        for vaddr, size, what in tables:
            if size % 24:
                raise LoaderError(f"ELF {what} table size {size} is not a multiple of 24")
            raw = self._read(vaddr, size, f"{what} table")
            for offset in range(0, size, 24):
                rela = _decode(self._records, "Elf_Rela", raw, offset, f"{what} entry")
                self._apply(
                    rela["r_offset"], rela["r_info_type"], rela["r_info_sym"], rela["r_addend"]
                )

    def _apply(self, offset: int, kind: int, sym_index: int, addend: int) -> None:
        name = RELOCATION_NAMES.get(kind)
        if name is None:
            raise LoaderError(f"unsupported x86-64 relocation type {kind} at 0x{offset:x}")
        self.relocation_counts[name] = self.relocation_counts.get(name, 0) + 1
        if kind == R_X86_64_NONE:
            return
        if sym_index >= len(self.symbols):
            raise LoaderError(
                f"{name} at 0x{offset:x} names symbol {sym_index}, "
                f"but there are {len(self.symbols)}"
            )
        symbol_value = 0
        if sym_index:
            sym = self.symbols[sym_index]
            symbol_value = sym.value if sym.shndx == "SHN_ABS" else self.bias + sym.value
        place = self.bias + offset
        if kind == R_X86_64_RELATIVE:
            value, width = self.bias + addend, 8
        elif kind == R_X86_64_64:
            value, width = symbol_value + addend, 8
        elif kind in (R_X86_64_GLOB_DAT, R_X86_64_JUMP_SLOT, R_X86_64_COPY):
            value, width = symbol_value, 8
        elif kind == R_X86_64_PC32:
            value, width = symbol_value + addend - place, 4
        elif kind == R_X86_64_32:
            value, width = symbol_value + addend, 4
            if not 0 <= value <= 0xFFFFFFFF:
                raise LoaderError(f"{name} at 0x{offset:x}: value 0x{value:x} overflows")
        else:  # R_X86_64_32S
            value, width = symbol_value + addend, 4
            if not -(1 << 31) <= value < (1 << 31):
                raise LoaderError(f"{name} at 0x{offset:x}: value 0x{value:x} overflows")
        address = self._check(offset, width, f"{name} target")
        value &= (1 << (8 * width)) - 1
        ctypes.memmove(address, value.to_bytes(width, "little"), width)
        self.relocated_words[offset] = value

    def _protect_final(self, relro: Sequence[tuple[int, int]]) -> None:
        pages: dict[int, int] = {}
        for s in self.segments:
            first = _align_down(self.bias + s.vaddr, PAGE_SIZE)
            for page in range(first, _align_up(self.bias + s.end, PAGE_SIZE), PAGE_SIZE):
                pages[page] = pages.get(page, 0) | s.prot
        wx = PROT_WRITE | PROT_EXEC
        for page, prot in pages.items():
            if prot & wx == wx:
                raise LoaderError(
                    f"page 0x{page - self.bias:x} would be writable and executable "
                    "(segments with different protections share it)"
                )
        ordered = sorted(pages.items())
        run_start, run_prot = ordered[0]
        run_end = run_start + PAGE_SIZE
        for page, prot in ordered[1:] + [(None, None)]:
            if page == run_end and prot == run_prot:
                run_end += PAGE_SIZE
                continue
            _protect(run_start, run_end, run_prot)
            if page is not None:
                run_start, run_prot, run_end = page, prot, page + PAGE_SIZE
        for vaddr, memsz in relro:
            start = _align_down(self.bias + vaddr, PAGE_SIZE)
            end = _align_down(self.bias + vaddr + memsz, PAGE_SIZE)
            if start < self.base or end > self.base + self.size:
                raise LoaderError(f"PT_GNU_RELRO 0x{vaddr:x}+0x{memsz:x} is outside the image")
            for page in range(start, end, PAGE_SIZE):
                if page not in pages:
                    raise LoaderError("PT_GNU_RELRO covers pages no PT_LOAD maps")
            _protect(start, end, PROT_READ)
        self.page_protections = pages

    def _run_initializers(self, dyn: dict[str, int]) -> None:
        initializers = []
        if dyn.get("DT_INIT"):
            initializers.append(self.bias + dyn["DT_INIT"])
        if dyn.get("DT_INIT_ARRAY") and dyn.get("DT_INIT_ARRAYSZ"):
            size = dyn["DT_INIT_ARRAYSZ"] - dyn["DT_INIT_ARRAYSZ"] % 8
            raw = self._read(dyn["DT_INIT_ARRAY"], size, "DT_INIT_ARRAY")
            for (entry,) in struct.iter_unpack("<Q", raw):
                if entry not in (0, 0xFFFFFFFFFFFFFFFF):
                    initializers.append(entry)
        for address in initializers:
            if not self.is_code(address):
                raise LoaderError(f"ELF initializer 0x{address:x} is not in executable code")
            ctypes.CFUNCTYPE(None)(address)()

    # -- lookup and lifetime --

    def symbol(self, name: bytes) -> int:
        """Address of the exported (GLOBAL or WEAK, defined) dynamic symbol `name`."""
        for sym in reversed(self.symbols[1:]):
            if sym.name == name and sym.bind in ("STB_GLOBAL", "STB_WEAK"):
                return self.bias + sym.value
        raise LoaderError(f"ELF does not export '{name.decode(errors='replace')}'")

    @property
    def memory(self) -> LibraryMemory:
        return _ImageMemory(self)

    def close(self) -> None:
        """Unmaps the image (idempotent)."""
        if self.base is not None:
            _munmap(self.base, self.size)
            self.base = None
            self.segments = []


def load_elf_image(data: bytes | bytearray | memoryview) -> ElfImage:
    """Parses and loads an embedded ELF without querying it (tests, tools)."""
    return ElfImage(parse_elf(data))


def load_embedded_elf(
    data: bytes | bytearray | memoryview, constants: Sequence[int] | None = None
) -> Executable:
    """Loads an `embedded-elf-x86_64` library and reads its export table."""
    image = load_elf_image(data)
    try:
        query = image.symbol(abi.QUERY_SYMBOL)
    except BaseException:
        image.close()
        raise
    executable = Executable(FORMAT, query, image.memory, image.close, constants, keepalive=image)
    executable.image = image
    return executable

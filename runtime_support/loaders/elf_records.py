"""The fixed-size ELF records a library's load decodes, kept between processes.

pyelftools decodes the records (ELF header, program headers, dynamic entries, symbols,
relocations) that runtime_support/loaders/elf.py loads a library by; importing it takes
15-20 ms, a fifth of a fresh process's import and load of a model. A decoded record is a
function of its kind and its bytes alone, so each library's are kept in one cache entry
(runtime_support/cache/disk_cache.py, named by the sha256 of the library's bytes) as plain
dicts: a process that loads a library loaded before reads them back and never imports
pyelftools. Anything wrong with the entry (missing, damaged, another layout) is a miss:
the records are decoded again, and the entry written anew once the load succeeded.
The loader checks every decoded value the same way whichever path it came from.

    records = Records(data)            the entry of the library with these bytes
    records.decode(kind, raw, what)    one record ("Elf_Ehdr", "Elf_Phdr", "Elf_Dyn",
                                       "Elf_Sym" or "Elf_Rela") from exactly its bytes
    records.save()                     writes the entry where this load decoded new ones
"""

from __future__ import annotations

from collections.abc import Mapping

from ..cache import disk_cache
from ..errors import LoaderError

# ELF64 record sizes (the ELF specification's; pyelftools' sizeof() agrees).
SIZES = {"Elf_Ehdr": 64, "Elf_Phdr": 56, "Elf_Dyn": 16, "Elf_Sym": 24, "Elf_Rela": 24}
_VERSION = "elf-records-1"  # (a change to what an entry holds names new entries)
_LIMIT = 16 << 20  # bytes an entry may hold (a model's library: a few kilobytes)
_MAX_RECORDS = 1 << 16  # records kept per library (the rest decoded every load)

_structs = None  # pyelftools' ELF64 little-endian x86-64 structs, made at the first miss


def _decoder(kind: str):
    global _structs
    if _structs is None:
        from elftools.elf.structs import ELFStructs  # (imported only on a miss)

        structs = ELFStructs(little_endian=True, elfclass=64)
        structs.create_basic_structs()
        structs.create_advanced_structs("ET_DYN", "EM_X86_64", "ELFOSABI_SYSV")
        _structs = structs
    return getattr(_structs, kind)


def _plain(value):
    """A decoded pyelftools value as plain data: Containers (nested: st_info, st_other)
    as dicts, ListContainers (e_ident's EI_MAG) as lists."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


class Records:
    """The decoded records of one library (by the sha256 of its bytes)."""

    def __init__(self, data: bytes) -> None:
        self._path = disk_cache.root() / "elf" / disk_cache.key(_VERSION, disk_cache.digest(data))
        self._known = self._read()
        self._new = False

    def _read(self) -> dict:
        table = disk_cache.read_table(self._path, _LIMIT)
        if table is None or not all(
            type(k) is tuple and len(k) == 2 and k[0] in SIZES and type(k[1]) is bytes
            and len(k[1]) == SIZES[k[0]] and type(v) is dict
            for k, v in table.items()
        ):  # fmt: skip
            return {}
        return table

    def decode(self, kind: str, raw: bytes, what: str) -> dict:
        """Record `kind` decoded from `raw` (its SIZES[kind] bytes, bounds checked by the
        caller); LoaderError where pyelftools cannot decode it."""
        found = self._known.get((kind, raw))
        if found is not None:
            return found
        try:
            record = _plain(_decoder(kind).parse(raw))
        except Exception as error:  # construct/ELFError: malformed record
            raise LoaderError(f"malformed ELF {what}: {error}") from None
        if len(self._known) < _MAX_RECORDS:  # (a huge library: memory stays bounded)
            self._known[kind, raw] = record
            self._new = True
        return record

    def save(self) -> None:
        """Keeps what this load decoded (best effort: the cache may be unwritable)."""
        if self._new:
            disk_cache.write_table(self._path, self._known, _LIMIT)
            self._new = False


__all__ = ["Records", "SIZES"]

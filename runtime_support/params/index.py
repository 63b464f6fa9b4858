"""Parameter entries, per-scope indices and the provider set `io_parameters` reads from.

    ParameterEntry      one parameter: file-backed bytes or a splat pattern
    ParameterIndex      key -> entry for one scope; several files may be added
    ParameterProviders  scope -> ParameterIndex (what `load(parameters=...)` builds)
    open_parameter_file(path, writable=False) -> (MappedFile, [ParameterEntry])
    build_providers(parameters) -> ParameterProviders

Matching IREE (runtime/src/iree/tooling, iree/io/parameter_index.c; verified with
iree-run-module 3.13):
* `--parameters=FILE` registers FILE under the empty scope, and a parameter without a
  scope (`#flow.parameter.named<"w">`, a null scope at runtime) is looked up there.
* Several files in one scope form one index. When two files hold the same key, the
  FIRST one added wins (later files only add new keys).
* The file format comes from the extension (case-insensitive): .irpa, .safetensors,
  .gguf; anything else is UNIMPLEMENTED.
* A DATA entry's length is its stored length: a span past it is OUT_OF_RANGE (it does
  not read zeros).
"""

from __future__ import annotations

import os
from typing import Iterable, Iterator, Mapping

from ..errors import StatusCode, VMError
from .entry import ParameterEntry, splat_bytes  # noqa: F401 (splat_bytes re-exported: its home before entry.py)
from .files import MappedFile, key_label


class ParameterIndex:
    """key -> ParameterEntry for one scope (first entry added for a key wins)."""

    def __init__(self) -> None:
        self._entries: dict[str, ParameterEntry] = {}
        self.files: list[MappedFile] = []

    def __repr__(self) -> str:
        return f"<ParameterIndex {len(self._entries)} entries from {len(self.files)} files>"

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: str) -> bool:
        return key in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def keys(self):
        return self._entries.keys()

    def items(self):
        return self._entries.items()

    def get(self, key: str) -> ParameterEntry | None:
        return self._entries.get(key)

    def add(self, entry: ParameterEntry) -> bool:
        """Adds `entry` unless its key is already present; True if it was added."""
        if entry.key in self._entries:
            return False
        self._entries[entry.key] = entry
        return True

    def add_file(self, path, *, writable: bool = False) -> MappedFile:
        """Parses a parameter file (format from its extension) and adds its entries."""
        mapped, entries = open_parameter_file(path, writable=writable)
        self.files.append(mapped)
        for entry in entries:
            self.add(entry)
        return mapped

    def add_buffer(self, key: str, data) -> None:
        """Adds an in-memory, read-only parameter (bytes-like; kept alive)."""
        view = memoryview(data).cast("B").toreadonly()
        self.add(ParameterEntry(key, view.nbytes, file=_MemoryFile(view), offset=0))

    def add_splat(self, key: str, pattern: bytes, length: int) -> None:
        self.add(ParameterEntry(key, length, pattern=bytes(pattern)))


class _MemoryFile(MappedFile):
    """A MappedFile over memory the caller already has (no file on disk)."""

    def __init__(self, view: memoryview) -> None:  # noqa: super().__init__ opens files
        self.path = "<memory>"
        self.writable = False
        self._mmap = None
        self.view = view
        self.size = view.nbytes


class ParameterProviders:
    """scope -> ParameterIndex: the parameters one context can read."""

    def __init__(self, scopes: Mapping[str, ParameterIndex] | None = None) -> None:
        self.scopes: dict[str, ParameterIndex] = dict(scopes or {})

    def __repr__(self) -> str:
        inner = ", ".join(f"{s!r}: {len(i)}" for s, i in self.scopes.items())
        return f"<ParameterProviders {{{inner}}}>"

    def __len__(self) -> int:
        return len(self.scopes)

    def index(self, scope: str) -> ParameterIndex | None:
        return self.scopes.get(scope)

    def add_file(self, scope: str, path, *, writable: bool = False) -> MappedFile:
        """Adds a file to `scope` (creating the scope's index on first use)."""
        return self.scopes.setdefault(scope, ParameterIndex()).add_file(path, writable=writable)

    def lookup(self, scope: str, key: str) -> ParameterEntry:
        """The entry for `key` in `scope`; NOT_FOUND naming both when absent."""
        index = self.scopes.get(scope)
        if index is None:
            raise VMError(
                StatusCode.NOT_FOUND,
                f"no provider registered that handles scopes like {key_label(scope)} "
                f"(looking up parameter {key_label(key)} in scope {key_label(scope)})",
            )
        entry = index.get(key)
        if entry is None:
            raise VMError(
                StatusCode.NOT_FOUND,
                f"no parameter found in index with key {key_label(key)} "
                f"(scope {key_label(scope)})",
            )
        return entry


FORMATS = ("irpa", "safetensors", "gguf")


def open_parameter_file(path, *, writable: bool = False):
    """Maps and parses one parameter file: (MappedFile, [ParameterEntry] in file order)."""
    path = os.fspath(path)
    ext = os.path.splitext(path)[1][1:].lower()
    if ext not in FORMATS:
        if not os.path.exists(path):  # IREE opens the file before it looks at the name
            MappedFile(path, writable=writable)  # raises NOT_FOUND
        raise VMError(
            StatusCode.UNIMPLEMENTED,
            f"unsupported file format `{ext}`; ensure the extension matches one of "
            "the supported formats: [.irpa, .gguf, .safetensors]",
        )
    mapped = MappedFile(path, writable=writable)
    if ext == "irpa":
        from .irpa import parse_irpa as parse
    elif ext == "safetensors":
        from .safetensors import parse_safetensors as parse
    else:
        from .gguf import parse_gguf as parse
    return mapped, parse(mapped)


def _pairs(parameters) -> Iterable[tuple[str, object]]:
    if isinstance(parameters, (str, bytes, os.PathLike)):
        return [("", parameters)]
    if isinstance(parameters, Mapping):
        out = []
        for scope, paths in parameters.items():
            if isinstance(paths, (str, bytes, os.PathLike, ParameterIndex)):
                out.append((scope, paths))
            else:
                out.extend((scope, p) for p in paths)
        return out
    out = []
    for item in parameters:
        if isinstance(item, (str, bytes, os.PathLike)):
            out.append(("", item))
        else:
            scope, path = item
            out.append((scope, path))
    return out


def build_providers(parameters) -> ParameterProviders:
    """The provider set for `load(parameters=...)`.

    `parameters` is None (no parameters), a ParameterProviders (used as is), a path (the
    empty scope), a list of `(scope, path)` pairs in flag order (what pyree-run's
    `--parameters=[SCOPE=]FILE` gives; a bare path means scope ""), or a dict
    `{scope: path | [paths] | ParameterIndex}`. Files are opened read-only at once;
    errors (missing file, unknown format, corrupt archive) raise VMError.
    """
    if parameters is None:
        return ParameterProviders()
    if isinstance(parameters, ParameterProviders):
        return parameters
    if isinstance(parameters, ParameterIndex):
        return ParameterProviders({"": parameters})
    providers = ParameterProviders()
    for scope, path in _pairs(parameters):
        if scope is None:
            scope = ""
        if not isinstance(scope, str):
            raise TypeError(f"parameter scope must be a str, got {type(scope).__name__}")
        if isinstance(path, ParameterIndex):
            target = providers.scopes.setdefault(scope, ParameterIndex())
            target.files.extend(path.files)
            for _, entry in path.items():
                target.add(entry)
            continue
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        providers.add_file(scope, path)
    return providers

"""Code objects the runtime compiles from source it writes itself, kept between processes.

    compiled(parts, make)   the code object cached under `parts` (strings naming everything
                            the code is made from), else `make()`'s, which is then kept
                            (`make` may return None: nothing is kept, None is returned)
    compile_source(source, filename)   compile(source, filename, "exec"), cached

Importing the runtime writes a checking wrapper per declared import, recompiles the
hottest imports' methods with their checks inlined (vm/args.py) and compiles the probes
that calibrate reference counts (abi.py): some 30 ms of `compile` in every process, for
source that is the same each time. (Code written per program, plan runners and export
wrappers, is not kept: a cache of it would grow with every program run.) Like Python's
own .pyc files, the code objects are kept in pyree's cache folder (disk_cache.py), one
file per Python version, marshalled, and found again by a hash of the parts they were
made from; a process that compiled anything new writes the file again at exit. Any
problem with the file (absent, damaged, unwritable folder) means compiling as before.
"""

from __future__ import annotations

import atexit
import sys
import threading
import types

from . import disk_cache

_LIMIT = 1 << 24  # bytes: the file holds a few hundred small code objects
_lock = threading.Lock()
_stored: dict[str, types.CodeType] | None = None  # read from the file at the first use
_used: dict[str, types.CodeType] = {}  # what this process looked up or made
_dirty = False


def _path():
    return disk_cache.root() / "code" / f"{sys.implementation.cache_tag}.marshal"


def _load() -> dict:
    table = disk_cache.read_table(_path(), _LIMIT) or {}
    return {k: v for k, v in table.items() if type(k) is str and type(v) is types.CodeType}


def compiled(parts: tuple[str, ...], make) -> types.CodeType:
    global _stored, _dirty
    key = disk_cache.key(*parts)
    with _lock:
        if _stored is None:
            _stored = _load()
        code = _stored.get(key)
        if code is not None:
            _used[key] = code
            return code
    code = make()
    if code is None:  # (nothing to keep: the caller goes another way)
        return None
    with _lock:
        _used[key] = _stored[key] = code
        if not _dirty:
            _dirty = True
            atexit.register(_save)
    return code


# Entries kept at the most: past this, a save keeps only what its process used (entries
# of runtime versions no longer installed go; the rest are made again where needed).
# (the runtime's own set is some 200 entries, ~0.4 MB: the bound leaves room for two
# installed versions of it)
_KEEP = 512


def compile_source(source: str, filename: str) -> types.CodeType:
    """`compile(source, filename, "exec")`, through the cache."""
    return compiled(("exec", filename, source), lambda: compile(source, filename, "exec"))


def _save() -> None:
    with _lock:
        table = dict(_stored if len(_stored or ()) <= _KEEP else _used)
    disk_cache.write_table(_path(), table)  # (a code object marshal cannot write: nothing kept)


__all__ = ["compile_source", "compiled"]

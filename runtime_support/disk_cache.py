"""Files pyree keeps between processes, all under one folder: $PYREE_CACHE_DIR, else
$XDG_CACHE_HOME/pyree, else ~/.cache/pyree.

    root()                      that folder (made by write_checked, not here)
    read_checked(path, limit)   what write_checked wrote there, or None
    key(*parts)                 a file name part for an entry made from `parts` (sha256)
    digest(data)                the hex sha256 of bytes (a part of such a key)
    write_checked(path, data)   best effort: nothing is raised where the folder is not writable
    read_table(path, limit)     a dict write_table kept there (marshal), or None
    write_table(path, table)    write_checked of the marshalled dict, where marshal can write it

What the cache holds is derived data, so every failure is a miss: an absent, unreadable or
oversized file, or one whose checksum does not match what it holds (a truncated write, a
disk error, an edit) reads as None, and the caller makes the data again. An entry is
written to a temporary file in the same folder and renamed over its name, so a reader in
another process sees the old file or the whole new one.
"""

from __future__ import annotations

import marshal
import os
import tempfile
from pathlib import Path

try:  # CPython's built-in sha256: hashlib would load OpenSSL first (~5 ms per process)
    from _sha256 import sha256
except ImportError:  # pragma: no cover - Python 3.12+ names it _sha2; others: hashlib
    try:
        from _sha2 import sha256
    except ImportError:
        from hashlib import sha256

_MAGIC = b"pyree cache entry 1\n"
_DIGEST = 32  # sha256 of the data, after the magic line


def root() -> Path:
    configured = os.environ.get("PYREE_CACHE_DIR")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pyree"


def key(*parts: str) -> str:
    """The hex sha256 of `parts` (joined by NULs): an entry's name, from what it is made of."""
    return sha256("\0".join(parts).encode()).hexdigest()


def digest(data: bytes) -> str:
    """The hex sha256 of `data` (a key part for an entry made from these bytes)."""
    return sha256(data).hexdigest()


def read_checked(path: Path, limit: int) -> bytes | None:
    """The data of the entry at `path`, or None (a miss) where there is none, it is over
    `limit` bytes, or its checksum does not match."""
    try:
        with open(path, "rb") as f:
            raw = f.read(len(_MAGIC) + _DIGEST + limit + 1)
    except OSError:
        return None
    head = len(_MAGIC) + _DIGEST
    if len(raw) > head + limit or raw[: len(_MAGIC)] != _MAGIC:
        return None
    data = raw[head:]
    return data if sha256(data).digest() == raw[len(_MAGIC) : head] else None


def write_checked(path: Path, data: bytes) -> None:
    """Writes an entry read_checked accepts; on any OSError the cache just stays as it was."""
    tmp = None
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
        with os.fdopen(fd, "wb") as f:
            f.write(_MAGIC + sha256(data).digest() + data)
        os.replace(tmp, path)
        tmp = None
    except OSError:
        pass
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def read_table(path: Path, limit: int) -> dict | None:
    """The dict write_table wrote at `path`, or None: a miss (read_checked's), or data
    that does not unmarshal to a dict. The caller checks its keys and values."""
    data = read_checked(path, limit)
    if data is None:
        return None
    try:
        table = marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        return None
    return table if type(table) is dict else None


def write_table(path: Path, table: dict, limit: int | None = None) -> None:
    """Keeps `table` for read_table; nothing where marshal cannot write one of its values
    or (with `limit`) its data would be over `limit` bytes, which read_table refuses."""
    try:
        data = marshal.dumps(table)
    except ValueError:
        return
    if limit is None or len(data) <= limit:
        write_checked(path, data)


__all__ = ["digest", "key", "read_checked", "read_table", "root", "write_checked", "write_table"]

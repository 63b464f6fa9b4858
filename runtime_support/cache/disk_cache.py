"""Files pyree keeps between processes, all under one folder: $PYREE_CACHE_DIR, else
$XDG_CACHE_HOME/pyree, else ~/.cache/pyree.

    root()                      that folder (made by write_checked or folder(), not here)
    folder(path)                `path` made (0700) and checked safe to use, or None
    open_entry(path)            a read-only file object of a safe entry, or None
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

Some entries are code this process runs (object code, translated packages) or unmarshals,
so the cache trusts only what this user wrote, as ssh and pip trust their folders: folders
are made 0700; a folder is used only when this user owns it and neither group nor others
can write it, and each folder above it is owned by this user or root and not writable by
others (or sticky, like /tmp); an entry is read only when it is a regular file (no link)
that this user owns and that neither group nor others can write. Anything else is refused:
one warning per process on stderr, and pyree works as if the cache were empty. The
checksums only find damage: anyone can compute them.
"""

from __future__ import annotations

import marshal
import os
import stat
import sys
import tempfile
import threading
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


_lock = threading.Lock()
_safe_folders: set[str] = set()  # folders found safe by this process (they stay so: 0700)
_warned = False


def _warn(path, reason: str) -> None:
    """One line on stderr, once per process: the cache is refused, not silently ignored."""
    global _warned
    if _warned:
        return
    _warned = True
    try:
        sys.stderr.write(
            f"pyree: warning: not using the cache folder entry {os.fspath(path)!r}: {reason}; "
            "working without it (set PYREE_CACHE_DIR to a folder only you can write)\n"
        )
    except (OSError, ValueError):  # (no usable stderr: nothing to tell)
        pass


def _owner_problem(st: os.stat_result) -> str | None:
    """Why a folder or entry with status `st` is not this user's alone, or None."""
    uid = os.geteuid()
    if st.st_uid != uid:
        return f"it is owned by uid {st.st_uid}, not by this user (uid {uid})"
    if st.st_mode & 0o022:
        return f"group or others can write it (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def _above_problem(path: str) -> str | None:
    """Why a folder above `path` would let another user swap what is below it: one owned by
    someone else than this user or root, or one that group or others can write and that is
    not sticky (a sticky /tmp lets no one rename what is not theirs)."""
    uid = os.geteuid()
    for above in Path(path).parents:
        st = os.stat(above)
        if st.st_uid not in (0, uid):
            return f"the folder above it, {str(above)!r}, is owned by uid {st.st_uid}"
        if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
            return f"group or others can write the folder above it, {str(above)!r}"
    return None


def folder(path, create: bool = True) -> Path | None:
    """`path` (made with mode 0700 where missing, with `create`) when it is safe to keep
    entries in; None where it is missing, cannot be made, or is not safe (warned once).
    A link to a folder is followed; the folders above the link and above what it points
    to are both checked."""
    path = os.path.abspath(os.fspath(path))
    if path in _safe_folders:
        return Path(path)
    try:
        if create and not os.path.isdir(path):
            _make_folders(path)
        real = os.path.realpath(path)
        st = os.stat(real)
        if not stat.S_ISDIR(st.st_mode):
            problem = "it is not a folder"
        else:
            problem = _owner_problem(st) or _above_problem(real)
            if problem is None and real != path:
                problem = _above_problem(path)
    except OSError:
        return None
    if problem is not None:
        _warn(path, problem)
        return None
    with _lock:
        _safe_folders.add(path)
    return Path(path)


def _make_folders(path: str) -> None:
    """Makes `path` and any missing folder above it with mode 0700 (`mkdir -p` would give
    the ones above it the umask's mode: 0777 under umask 000)."""
    missing = []
    here = path
    while not os.path.isdir(here):
        missing.append(here)
        parent = os.path.dirname(here)
        if parent == here:
            break
        here = parent
    for p in reversed(missing):
        try:
            os.mkdir(p, 0o700)
        except FileExistsError:
            pass


def open_entry(path):
    """A binary file object for reading the entry at `path`, or None (a miss) where there is
    none or it is not safe: its folder is not (folder()), it is a link or not a regular
    file, or it is not this user's alone (warned once)."""
    if folder(os.path.dirname(os.path.abspath(os.fspath(path))), create=False) is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        problem = "it is not a regular file" if not stat.S_ISREG(st.st_mode) else _owner_problem(st)
    except OSError:
        problem = "it cannot be read"
    if problem is not None:
        os.close(fd)
        _warn(path, problem)
        return None
    return os.fdopen(fd, "rb")


def read_checked(path: Path, limit: int) -> bytes | None:
    """The data of the entry at `path`, or None (a miss) where there is none, it is not
    safe (open_entry), it is over `limit` bytes, or its checksum does not match."""
    f = open_entry(path)
    if f is None:
        return None
    try:
        with f:
            raw = f.read(len(_MAGIC) + _DIGEST + limit + 1)
    except OSError:
        return None
    head = len(_MAGIC) + _DIGEST
    if len(raw) > head + limit or raw[: len(_MAGIC)] != _MAGIC:
        return None
    data = raw[head:]
    return data if sha256(data).digest() == raw[len(_MAGIC) : head] else None


def write_checked(path: Path, data: bytes) -> None:
    """Writes an entry read_checked accepts (mode 0600, in a folder made 0700); on any
    OSError, or a folder that is not safe, the cache just stays as it was."""
    if folder(os.path.dirname(os.path.abspath(os.fspath(path)))) is None:
        return
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=os.path.dirname(os.fspath(path)))
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


__all__ = ["digest", "folder", "key", "open_entry", "read_checked", "read_table", "root", "write_checked", "write_table"]

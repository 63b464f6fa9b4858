"""Writing a generated package's folder, OUT_DIR/NAME, so that nothing else is lost.

    write_files(out_dir, name, files, force=False)   the folder holding `files` (name -> bytes)
    read_marker(folder)                              the marker's file table, or None
    parse_marker(raw)                                the same, from the marker's bytes
    MARKER                                           the marker's file name

Every package pyree writes holds a marker file, `.pyree-package`: JSON naming each file it
wrote with its size and sha256. An existing OUT_DIR/NAME is replaced only when it is such a
package and holds nothing but what pyree wrote (a package of an older pyree, which had no
marker, is known by its files and first line); anything else, a user's folder, a file or a
link, is refused with OutputFolderError unless `force` is given. The checksums also let
pyree-run's cache find a damaged translation (runtime_support/cache/package_cache.py).

The new folder is written beside its final place (`.pyree-tmp-*`) and swapped in with one
atomic exchange of the two folders (Linux renameat2 RENAME_EXCHANGE), so an importer sees
the old package or the new one and a kill at any moment leaves a whole package in place;
where the file system cannot exchange, two renames. Translations into one OUT_DIR take
turns (an flock on OUT_DIR), and each first removes the `.pyree-tmp-*` folders a killed
one left. Files and folders get the modes the umask allows, like any file the user writes.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import hashlib
import json
import os
import secrets
import shutil
from pathlib import Path

from translator.errors import OutputFolderError

MARKER = ".pyree-package"
_FORMAT = 1
_TMP_PREFIX = ".pyree-tmp-"
MARKER_LIMIT = 1 << 16  # bytes: a marker names a few files
# What a package of pyree before the marker held, and how its __init__.py starts.
_LEGACY_FILES = {"__init__.py", "rodata.bin", "__pycache__"}
_LEGACY_HEAD = b'"""Package translated by pyree'


def write_files(
    out_dir: Path, name: str, files: dict[str, bytes], *, force: bool = False,
    private: bool = False,
) -> Path:
    """OUT_DIR/NAME holding exactly `files` and the marker; returns that folder. With
    `private`, the folder is 0700 and the files 0600 whatever the umask (a cache's)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / name
    with _turn(out_dir):
        _remove_leftovers(out_dir)
        if not force:
            _check_replaceable(target)
        staging = out_dir / f"{_TMP_PREFIX}{secrets.token_hex(8)}"
        os.mkdir(staging, 0o700 if private else 0o777)  # (the umask applies)
        file_mode = 0o600 if private else 0o666
        try:
            for file_name, data in files.items():
                _write_new(staging / file_name, data, file_mode)
            _write_new(staging / MARKER, _marker(files), file_mode)
            _swap_in(staging, target)
        finally:
            _remove(staging)  # (after the swap: the old package)
    return target


def read_marker(folder: Path) -> dict[str, dict] | None:
    """The files a package folder's marker names ({name: {"size", "sha256"}}), or None
    where it has no marker or the marker is not one pyree writes."""
    try:
        with open(Path(folder) / MARKER, "rb") as f:
            return parse_marker(f.read(MARKER_LIMIT + 1))
    except OSError:
        return None


def parse_marker(raw: bytes) -> dict[str, dict] | None:
    """The file table of a marker's bytes, or None where they are not a marker pyree
    writes (the names are plain file names, the sizes and digests well formed)."""
    try:
        table = json.loads(raw.decode("utf-8")) if len(raw) <= MARKER_LIMIT else None
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(table, dict) or table.get("format") != _FORMAT:
        return None
    files = table.get("files")
    if not isinstance(files, dict) or not all(
        isinstance(k, str) and k and "/" not in k and "\0" not in k
        and k not in (".", "..", MARKER, "__pycache__")
        and isinstance(v, dict) and type(v.get("size")) is int and v["size"] >= 0
        and isinstance(v.get("sha256"), str)
        for k, v in files.items()
    ):
        return None
    return files


def _marker(files: dict[str, bytes]) -> bytes:
    table = {
        "format": _FORMAT,
        "generator": "pyree-translate",
        "files": {
            n: {"size": len(d), "sha256": hashlib.sha256(d).hexdigest()}
            for n, d in sorted(files.items())
        },
    }
    return (json.dumps(table, indent=1, sort_keys=True) + "\n").encode()


def _check_replaceable(target: Path) -> None:
    """Raises OutputFolderError unless `target` is absent or a package pyree wrote that
    holds nothing else."""
    if not os.path.lexists(target):
        return
    if os.path.islink(target) or not target.is_dir():
        what = "a link" if os.path.islink(target) else "not a folder"
        raise OutputFolderError(
            f"{target} exists and is {what}; choose another -o or --name, or pass --force "
            "to replace it"
        )
    others = _not_written_by_pyree(target)
    if others:
        shown = ", ".join(repr(n) for n in sorted(others)[:3]) + (", ..." if len(others) > 3 else "")
        raise OutputFolderError(
            f"{target} exists and holds what pyree-translate did not write ({shown}); "
            "choose another -o or --name, or pass --force to replace it"
        )


def _not_written_by_pyree(folder: Path) -> set[str]:
    """The entries of an existing package folder that pyree did not write (all of them
    when it is not a package of pyree's at all)."""
    try:
        entries = set(os.listdir(folder))
    except OSError as e:
        raise OutputFolderError(f"{folder} exists and cannot be read: {e.strerror}") from None
    files = read_marker(folder)
    if files is not None:
        ours = set(files) | {MARKER, "__pycache__"}
    elif _LEGACY_FILES >= entries and _starts_like_a_package(folder / "__init__.py"):
        ours = _LEGACY_FILES
    else:
        return entries or {"(no marker file)"}
    others = entries - ours
    if "__pycache__" in entries and not _only_bytecode(folder / "__pycache__"):
        others.add("__pycache__")
    return others


def _starts_like_a_package(init: Path) -> bool:
    try:
        with open(init, "rb") as f:
            return f.read(len(_LEGACY_HEAD)) == _LEGACY_HEAD
    except OSError:
        return False


def _only_bytecode(cache: Path) -> bool:
    """Whether a package's __pycache__ holds only what Python writes for its __init__.py."""
    try:
        return cache.is_dir() and not cache.is_symlink() and all(
            n.startswith("__init__.") and n.endswith(".pyc") for n in os.listdir(cache)
        )
    except OSError:
        return False


@contextlib.contextmanager
def _turn(out_dir: Path):
    """Holds an exclusive lock on OUT_DIR: one translation into it at a time."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: no lock, as before
        yield
        return
    fd = os.open(out_dir, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # (releases the lock)


def _remove_leftovers(out_dir: Path) -> None:
    """Removes the staging and old folders of translations that were killed (while the
    lock is held no other translation has any)."""
    try:
        names = [n for n in os.listdir(out_dir) if n.startswith(_TMP_PREFIX)]
    except OSError:
        return
    for n in names:
        _remove(out_dir / n)


def _remove(path: Path) -> None:
    if os.path.islink(path) or (os.path.lexists(path) and not os.path.isdir(path)):
        with contextlib.suppress(OSError):
            os.unlink(path)
    else:
        shutil.rmtree(path, ignore_errors=True)


def _write_new(path: Path, data: bytes, mode: int) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)  # (the umask applies)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _swap_in(staging: Path, target: Path) -> None:
    """Puts `staging` at `target`; what was at `target` ends at `staging`."""
    if not os.path.lexists(target):
        os.rename(staging, target)
        return
    if os.path.isdir(target) and not os.path.islink(target) and _exchange(staging, target):
        return
    # Two renames (a file system that cannot exchange, or a file or link replaced by --force)
    aside = staging.with_name(f"{_TMP_PREFIX}{secrets.token_hex(8)}")
    os.rename(target, aside)
    try:
        os.rename(staging, target)
    except BaseException:
        os.rename(aside, target)
        raise
    os.rename(aside, staging)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Swaps two folders atomically (renameat2 RENAME_EXCHANGE); False where the C library
    or the file system cannot."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    renameat2.restype = ctypes.c_int
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
        return False
    raise OSError(err, os.strerror(err), os.fspath(b))


__all__ = ["MARKER", "MARKER_LIMIT", "parse_marker", "read_marker", "write_files"]

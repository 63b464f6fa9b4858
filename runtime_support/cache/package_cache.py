"""Translations `pyree-run model.vmfb` keeps: a .vmfb given where a package is expected is
translated once per content, file name and translator version into the cache folder's
`packages/` (runtime_support/cache/disk_cache.py), as `iree-run-module --module=model.vmfb` runs
the module without a separate step.

    package_for(path)              the package directory to load for `path`, and its
                                   checked source where it is a cached translation
    package_for_data(data, path)   the same for module bytes (`-`: read from stdin)

The cache is trusted as disk_cache trusts its folders (this user's alone), and a cached
translation is used only when its files are exactly those its marker names, with their
sizes and sha256 (translator/codegen/package_folder.py): a damaged one is translated
again. Its `__init__.py` is imported from the bytes that were checked, and no bytecode is
kept beside it (a damaged .pyc would go unseen).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from runtime_support.cache import disk_cache


def pyree_version() -> str:
    try:
        from importlib.metadata import version

        return version("pyree")
    except Exception:  # not installed (run from a checkout)
        return "unknown"


def _translator_fingerprint() -> str:
    """A hash of the translator and templates, so a cached package is rebuilt when the
    code that generates it changes."""
    import translator
    from translator.template_files import template_dir

    h = hashlib.sha256(pyree_version().encode())
    roots = [os.path.dirname(translator.__file__)]
    templates = str(template_dir())  # (inside translator/ when installed: walked once)
    if not templates.startswith(roots[0] + os.sep):
        roots.append(templates)
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for f in sorted(filenames):
                if f.endswith((".py", ".j2", ".toml")):
                    with open(os.path.join(dirpath, f), "rb") as fh:
                        h.update(f.encode() + b"\0" + fh.read())
    return h.hexdigest()


def package_for(path: str) -> tuple[str, bytes | None]:
    """The package directory to load for `path`, and its `__init__.py` source where it was
    checked here (a cached translation: import that source, not the file, see
    run_cli.load_package): the path itself when it is a directory; for a .vmfb file, its
    translation in the cache, so `pyree-run model.vmfb` does what `iree-run-module
    --module=model.vmfb` does."""
    if not os.path.isfile(path):
        return path, None
    with open(path, "rb") as f:
        data = f.read()
    return package_for_data(data, path)


def package_for_data(data: bytes, path: str) -> tuple[str, bytes | None]:
    """The cached translation of module bytes `data` (named after `path`, the file they
    came from: `-` for stdin, as `iree-run-module --module=-` reads it), and its checked
    source. A cache folder that is not safe (disk_cache.folder), a translation that cannot
    be written there (a full disk) or one found damaged and not replaceable: the module is
    translated into a folder of this run's own instead."""
    from translator.cli import package_name_for

    name = package_name_for(path) if path != "-" else "stdin"
    # Keyed by the package name too: one content under two file names is two packages.
    key = hashlib.sha256(
        data + _translator_fingerprint().encode() + b"\0" + name.encode()
    ).hexdigest()[:32]
    packages = disk_cache.folder(disk_cache.root() / "packages")
    if packages is None:
        return _private_package(data, name, path)
    entry = packages / key
    target = entry / name
    source = _checked_source(entry, target)
    if source is not None:
        return str(target), source
    if os.path.lexists(entry):  # damaged (or not ours): made again
        shutil.rmtree(entry, ignore_errors=True)
    try:
        tmp = tempfile.mkdtemp(dir=packages, prefix=".tmp-")
    except OSError:
        return _private_package(data, name, path)
    try:
        _write(data, tmp, name, path)
        try:
            os.rename(tmp, entry)  # atomic: a concurrent run may have won, which is fine
        except OSError:
            pass
    except OSError:  # a full disk, a file over the size limit: this run's own copy
        return _private_package(data, name, path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    source = _checked_source(entry, target)
    if source is None:
        return _private_package(data, name, path)
    return str(target), source


def _write(data: bytes, folder: str, name: str, path: str) -> None:
    from translator.codegen import write_package
    from translator.reader import read_module

    write_package(
        read_module(data), folder, name, source_name=os.path.basename(path), private=True
    )


def _private_package(data: bytes, name: str, path: str) -> tuple[str, None]:
    """`data` translated into a temporary folder removed when the process exits."""
    import atexit

    folder = tempfile.mkdtemp(prefix="pyree-run-")
    atexit.register(shutil.rmtree, folder, True)
    _write(data, folder, name, path)
    return os.path.join(folder, name), None


def _checked_source(entry: Path, target: Path) -> bytes | None:
    """The `__init__.py` of the cached package at `target`, or None where it is absent,
    not this user's alone (disk_cache), or not exactly the files its marker names with
    their sizes and sha256 (a flipped byte, a truncated file, a file added)."""
    from translator.codegen.package_folder import MARKER, MARKER_LIMIT, parse_marker

    if disk_cache.folder(entry, create=False) is None:
        return None
    if disk_cache.folder(target, create=False) is None:
        return None
    marker = _read_entry(target / MARKER, MARKER_LIMIT)
    files = parse_marker(marker) if marker is not None else None
    if files is None or "__init__.py" not in files:
        return None
    try:
        if set(os.listdir(target)) != set(files) | {MARKER}:
            return None
    except OSError:
        return None
    for file_name, want in files.items():
        if file_name != "__init__.py" and not _matches(target / file_name, want):
            return None
    source = _read_entry(target / "__init__.py", files["__init__.py"]["size"])
    want = files["__init__.py"]
    if source is None or len(source) != want["size"]:
        return None
    return source if hashlib.sha256(source).hexdigest() == want["sha256"] else None


def _read_entry(path: Path, limit: int) -> bytes | None:
    f = disk_cache.open_entry(path)
    if f is None:
        return None
    try:
        with f:
            return f.read(limit + 1)
    except OSError:
        return None


_CHUNK = 1 << 20


def _matches(path: Path, want: dict) -> bool:
    """Whether the entry at `path` has the marker's size and sha256, hashed in chunks (a
    rodata file can be a model's weights: it is not held in memory to be checked)."""
    f = disk_cache.open_entry(path)
    if f is None:
        return False
    digest, size = hashlib.sha256(), 0
    try:
        with f:
            while size <= want["size"]:
                chunk = f.read(_CHUNK)
                if not chunk:
                    break
                digest.update(chunk)
                size += len(chunk)
    except OSError:
        return False
    return size == want["size"] and digest.hexdigest() == want["sha256"]


__all__ = ["package_for", "package_for_data", "pyree_version"]

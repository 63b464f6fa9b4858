"""Translations `pyree-run model.vmfb` keeps: a .vmfb given where a package is expected is
translated once per content, file name and translator version into the cache folder's
`packages/` (runtime_support/disk_cache.py), as `iree-run-module --module=model.vmfb` runs
the module without a separate step.

    package_for(path)              the package directory to load for `path`
    package_for_data(data, path)   the same for module bytes (`-`: read from stdin)
"""

from __future__ import annotations

import os


def pyree_version() -> str:
    try:
        from importlib.metadata import version

        return version("pyree")
    except Exception:  # not installed (run from a checkout)
        return "unknown"


def _translator_fingerprint() -> str:
    """A hash of the translator and templates, so a cached package is rebuilt when the
    code that generates it changes."""
    import hashlib

    import translator

    h = hashlib.sha256(pyree_version().encode())
    roots = [os.path.dirname(translator.__file__)]
    templates = os.path.join(os.path.dirname(roots[0]), "templates")
    if os.path.isdir(templates):
        roots.append(templates)
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for f in sorted(filenames):
                if f.endswith((".py", ".j2")):
                    with open(os.path.join(dirpath, f), "rb") as fh:
                        h.update(f.encode() + b"\0" + fh.read())
    return h.hexdigest()


def package_cache_dir() -> str:
    """Where `pyree-run model.vmfb` keeps translated packages: `packages` in pyree's cache
    folder ($PYREE_CACHE_DIR, else $XDG_CACHE_HOME/pyree or ~/.cache/pyree)."""
    from runtime_support import disk_cache

    return os.path.join(disk_cache.root(), "packages")


def package_for(path: str) -> str:
    """A package directory for `path`: the path itself when it is a directory; for a .vmfb
    file, its translation in a content-addressed cache (translated once per content and
    translator version), so `pyree-run model.vmfb` does what `iree-run-module
    --module=model.vmfb` does."""
    if not os.path.isfile(path):
        return path
    with open(path, "rb") as f:
        data = f.read()
    return package_for_data(data, path)


def package_for_data(data: bytes, path: str) -> str:
    """The cached translation of module bytes `data` (named after `path`, the file they
    came from: `-` for stdin, as `iree-run-module --module=-` reads it)."""
    import hashlib
    import shutil
    import tempfile

    from translator.cli import package_name_for

    name = package_name_for(path) if path != "-" else "stdin"
    # Keyed by the package name too: one content under two file names is two packages.
    key = hashlib.sha256(
        data + _translator_fingerprint().encode() + b"\0" + name.encode()
    ).hexdigest()[:32]
    entry = os.path.join(package_cache_dir(), key)
    target = os.path.join(entry, name)
    if os.path.isfile(os.path.join(target, "__init__.py")):
        return target
    from translator.codegen import write_package
    from translator.reader import read_module

    module = read_module(data)
    try:
        os.makedirs(os.path.dirname(entry), exist_ok=True)
        tmp = tempfile.mkdtemp(dir=os.path.dirname(entry), prefix=".tmp-")
    except OSError:  # no writable cache folder (a read-only home): this run's own copy
        return _private_package(module, name, path)
    try:
        write_package(module, tmp, name, source_name=os.path.basename(path))
        try:
            os.rename(tmp, entry)  # atomic: a concurrent run may have won, which is fine
        except OSError:
            pass
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if not os.path.isfile(os.path.join(target, "__init__.py")):  # (the rename failed)
        return _private_package(module, name, path)
    return target


def _private_package(module, name: str, path: str) -> str:
    """`module` translated into a temporary folder removed when the process exits."""
    import atexit
    import shutil
    import tempfile

    from translator.codegen import write_package

    folder = tempfile.mkdtemp(prefix="pyree-run-")
    atexit.register(shutil.rmtree, folder, True)
    write_package(module, folder, name, source_name=os.path.basename(path))
    return os.path.join(folder, name)


__all__ = ["package_for", "package_for_data", "pyree_version"]

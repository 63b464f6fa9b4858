"""Loader for `system-elf-x86_64`: kernel libraries as ordinary shared objects.

Built with `--iree-llvmcpu-link-embedded=false`, a library is a normal ELF shared object
with the same `iree_hal_executable_library_query` entry point (hal-abi.md C.7). The
system dynamic linker loads it: we write the bytes to a private temporary file (mode
0600), dlopen it, and unlink the file at once (the mapping keeps the contents). Query,
export table and dispatch are shared with the embedded loader (`executable.py`).
"""

from __future__ import annotations

import ctypes
import os
import tempfile
from typing import Sequence

from ..errors import LoaderError
import runtime_support.loaders.kernel_abi as abi
from .elf import parse_elf
from .executable import Executable, LibraryMemory

FORMAT = "system-elf-x86_64"

_libc = ctypes.CDLL(None, use_errno=True)
_dlclose = _libc.dlclose
_dlclose.argtypes = [ctypes.c_void_p]
_dlclose.restype = ctypes.c_int


class SystemLibrary:
    """A dlopen'ed kernel library; `close()` dlcloses it (idempotent)."""

    def __init__(self, data: bytes | bytearray | memoryview) -> None:
        data = bytes(data)
        # Cheap validation first so obviously wrong input never reaches dlopen.
        parse_elf(data)
        fd, path = tempfile.mkstemp(prefix="pyree-kernel-", suffix=".so")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            try:
                self._library = ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_LOCAL)
            except OSError as error:
                raise LoaderError(f"dlopen of system library failed: {error}") from None
            except UnicodeDecodeError as error:  # ctypes decoding dlerror()'s raw bytes
                text = error.object.decode("utf-8", "backslashreplace") if error.object else ""
                raise LoaderError(f"dlopen of system library failed: {text}") from None
        finally:
            os.unlink(path)
        self._handle = self._library._handle
        try:
            function = getattr(self._library, abi.QUERY_SYMBOL.decode())
        except AttributeError:
            self.close()
            raise LoaderError(
                "system library does not export " f"'{abi.QUERY_SYMBOL.decode()}'"
            ) from None
        self.query_address = ctypes.cast(function, ctypes.c_void_p).value

    def close(self) -> None:
        if self._handle is not None:
            _dlclose(self._handle)
            self._handle = None


def load_system_library(
    data: bytes | bytearray | memoryview, constants: Sequence[int] | None = None
) -> Executable:
    """Loads a `system-elf-x86_64` library and reads its export table."""
    library = SystemLibrary(data)
    executable = Executable(
        FORMAT, library.query_address, LibraryMemory(), library.close, constants, keepalive=library
    )
    executable.library = library
    return executable

"""Executable loaders for the local CPU device.

    load_executable(format, data, constants=None) -> Executable
    supported_formats() -> list of format strings

`embedded-elf-x86_64` is loaded by our own ELF loader (`elf.py`), `system-elf-x86_64`
through the system dynamic linker (`system_dylib.py`), `vmvx-bytecode-fb` runs the
Python its executables were translated into (`vmvx.py`). Both share the query, export
table and dispatch code in `executable.py`; the ABI structs are in `kernel_abi.py`.
"""

from __future__ import annotations

from typing import Callable, Sequence

from ..errors import LoaderError
from .elf import load_embedded_elf
from .executable import Executable, ExportInfo
from .system_dylib import load_system_library


def _load_vmvx(data, constants: Sequence[int] | None = None) -> Executable:
    from .vmvx import load_vmvx  # (imported by the packages that carry VMVX kernels only)

    return load_vmvx(data, constants)

_LOADERS: dict[str, Callable[..., Executable]] = {
    "embedded-elf-x86_64": load_embedded_elf,
    "system-elf-x86_64": load_system_library,
    "vmvx-bytecode-fb": _load_vmvx,  # (translated ahead of time: translator/vmvx.py)
}


def supported_formats() -> list[str]:
    """The executable formats `load_executable` accepts."""
    return list(_LOADERS)


def load_executable(
    format: str | bytes,
    data: bytes | bytearray | memoryview,
    constants: Sequence[int] | None = None,
) -> Executable:
    """Loads an executable of `format`; LoaderError if the format is not supported."""
    if isinstance(format, bytes):
        format = format.decode("utf-8", errors="replace")
    loader = _LOADERS.get(format)
    if loader is None:
        raise LoaderError(
            f"executable format '{format}' is not supported " f"(supported: {', '.join(_LOADERS)})"
        )
    return loader(data, constants)


__all__ = [
    "Executable",
    "ExportInfo",
    "LoaderError",
    "load_executable",
    "supported_formats",
]

"""The VMVX loader: `vmvx-bytecode-fb` executables, run as the Python modules pyree
translated them into (translator/vmvx.py), with IREE's dispatch ABI
(runtime/src/iree/hal/local/loaders/vmvx_module_loader.c).

    register_kernels(package_file, {sha256: file name})   a host package, at import
    load_vmvx(data, constants=None) -> VmvxExecutable       the loader for the format

Nothing is translated here: the executable's bytes are looked up by their sha256 among
the kernels the imported packages registered, and the kernel module's own recorded
digest must match. The module is compiled once per process and bound once per loaded
executable (its imports to the `vmvx` module, its rodata, its globals).

A dispatch runs the grid's workgroups in IREE's order (z, then y, then x outermost to
innermost) on the calling thread. A kernel the translator vectorised
(translator/vmvx_vectorize/) runs the whole grid as one numpy program instead, unless
its dispatch-time checks fail (written bindings overlapping others, an address form not
injective over this grid) or PYREE_VMVX_SCALAR=1 asks for the scalar path; then each
workgroup is a call of the entry function with: local
memory (a zero-filled buffer of the entry's `local_memory` bytes), the push constants
(a read-only buffer of u32s), the list of binding buffers (mutable views of the
bindings' memory), the workgroup id, the workgroup size (1, 1, 1: VMVX exports declare
none, and IREE's command buffers use 1 then) and the workgroup count. Kernel faults
(out-of-range access, a failing import) are VMErrors and end the dispatch there.
"""

from __future__ import annotations

import ctypes
import importlib.util
import mmap
import os
import struct
import threading
from pathlib import Path
from typing import Sequence

from ..cache.disk_cache import digest as sha256_hex  # (CPython's built-in sha256: no OpenSSL load)
from ..errors import LoaderError, StatusCode, VMError, quote_name
from ..vm.buffer import VMBuffer
from ..vm.globals import RefGlobals, new_rwdata
from ..vm.list import VMList
from .executable import ExportInfo

FORMAT = "vmvx-bytecode-fb"
PAGE = 4096
_M32 = 0xFFFFFFFF

_registry: dict[str, Path] = {}  # executable sha256 -> kernel file
_modules: dict[str, dict] = {}  # executable sha256 -> the kernel module's namespace
_lock = threading.Lock()


def register_kernels(package_file: str, table: dict[str, str]) -> None:
    """Makes a package's kernels loadable: sha256 -> file name beside `package_file`."""
    folder = Path(package_file).parent
    with _lock:
        for digest, name in table.items():
            _registry.setdefault(digest, folder / name)


def _kernel_module(digest: str, size: int) -> dict:
    with _lock:
        ns = _modules.get(digest)
        path = _registry.get(digest)
    if ns is not None:
        return ns
    if path is None:
        raise LoaderError(
            f"VMVX executable (sha256 {digest[:16]}, {size} bytes) was not translated: no "
            f"imported package carries it; translate the .vmfb that holds it with "
            f"pyree-translate (pyree runs VMVX only as translated Python)"
        )
    # Imported as Python imports any module file (its bytecode cached beside it).
    spec = importlib.util.spec_from_file_location(f"pyree_vmvx_{digest[:16]}", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except OSError as e:
        raise LoaderError(
            f"VMVX kernel file {path.name} of package {path.parent.name} cannot be read "
            f"({e.strerror or e}); translate the .vmfb again"
        ) from None
    ns = vars(module)
    if ns.get("EXECUTABLE_SHA256") != digest:
        raise LoaderError(
            f"VMVX kernel file {path.name} of package {path.parent.name} was not translated "
            f"from this executable (sha256 {digest[:16]}); translate the .vmfb again"
        )
    with _lock:
        return _modules.setdefault(digest, ns)


class _KernelContext:
    """What a kernel module's `bind` reads: globals, imports, rodata."""

    def __init__(self, ns: dict, vmvx) -> None:
        self.rwdata = new_rwdata(ns["GLOBAL_BYTES"])
        self.refs = RefGlobals(ns["GLOBAL_REFS"])
        self.imports = tuple(_resolve(vmvx, *row) for row in ns["IMPORTS"])
        self.rodata = _map_rodata(ns)


def _resolve(vmvx, full_name: str, cconv: str, optional: bool):
    declared = vmvx.IMPORTS.get(full_name)
    if declared == cconv:
        return getattr(vmvx, full_name.partition(".")[2].replace(".", "_"))
    if optional:
        return None
    raise LoaderError(f"VMVX kernel import {quote_name(full_name)} ({cconv}) is not provided by the vmvx module")


def _map_rodata(ns: dict) -> list:
    table = ns["RODATA"]
    if not table:
        return []
    path = Path(ns["__file__"]).with_name(ns["RODATA_FILE"])
    try:
        with open(path, "rb") as f:
            size = __import__("os").fstat(f.fileno()).st_size
            data = mmap.mmap(f.fileno(), size, access=mmap.ACCESS_COPY) if size else bytearray()
    except OSError as e:
        raise LoaderError(f"VMVX kernel rodata {path.name} cannot be read ({e.strerror or e})") from None
    view = memoryview(data)
    out = []
    for offset, length in table:
        if offset < 0 or length < 0 or offset + length > size:
            raise LoaderError(f"{path}: rodata segment out of range; translate the .vmfb again")
        out.append(VMBuffer(view[offset : offset + length], readonly=True))
    return out


def _host_view(address: int, length: int) -> memoryview:
    if length <= 0:
        return memoryview(bytearray())
    return memoryview((ctypes.c_ubyte * length).from_address(address)).cast("B")


def _pack(constants) -> bytes:
    return struct.pack(f"<{len(constants)}I", *(int(c) & _M32 for c in constants))


def _i32(v: int) -> int:
    v &= _M32
    return v - (1 << 32) if v >> 31 else v


_PREPARED_MAX = 256  # dispatch argument sets kept per export (a program's calls repeat them)


_arrays_module = None  # (runtime_support/loaders/vmvx_arrays.py, imported with numpy on first use)


def _small_work() -> int:
    global _arrays_module
    if _arrays_module is None:
        import runtime_support.loaders.vmvx_arrays as _arrays_module
    return _arrays_module.SMALL_WORK


# (a zero-byte local memory: nothing a kernel can write, shared by every dispatch)
_NO_LOCAL = VMBuffer(bytearray(0))


class _Prepared:
    """One dispatch's arguments made from its (constants, bindings) key: the constants as
    a read-only buffer, the bindings as VM buffers (scalar path) and as lazily typed numpy
    views (vectorised path), and the list of binding buffers a workgroup's call takes
    (`binding_list`; made once where the kernel module has no op that could change a list
    (`reuse_list`), else per dispatch). Nothing here is written by a kernel but memory."""

    __slots__ = ("constants", "ranges", "_buffers", "_arrays", "_list", "_reuse_list")

    def __init__(self, constants, ranges, reuse_list: bool) -> None:
        self.constants = _constant_buffer(constants)
        self.ranges = ranges
        self._buffers = self._arrays = self._list = None
        self._reuse_list = reuse_list

    @property
    def buffers(self) -> list:
        if self._buffers is None:
            self._buffers = [_vm_buffer(a, n) for a, n in self.ranges]
        return self._buffers

    @property
    def arrays(self) -> list:
        if self._arrays is None:
            from runtime_support.loaders.vmvx_arrays import Binding

            self._arrays = [Binding(_host_view(a, n)) for a, n in self.ranges]
        return self._arrays

    def binding_list(self) -> VMList:
        lst = self._list
        if lst is None:
            buffers = self.buffers
            lst = VMList("!vm.buffer", len(buffers))  # (from_values' list, its refs as they are)
            lst._items.extend(buffers)
            if self._reuse_list:
                self._list = lst
        return lst


# Read-only VM buffers of push constants by their values (no kernel can write one).
_constants: dict = {}


def _constant_buffer(constants: tuple) -> VMBuffer:
    buf = _constants.get(constants)
    if buf is None:
        if len(_constants) >= _VIEWS_MAX:
            _constants.clear()
        buf = _constants[constants] = VMBuffer(_pack(constants), readonly=True)
    return buf


# VM buffers over host memory by (address, length): a program's buffers come back to the
# same places call after call, so most of a dispatch's bindings were seen before. (A view
# is of raw memory, valid for its range, as _Prepared's are.)
_VIEWS_MAX = 1024
_views: dict = {}


def _vm_buffer(address: int, length: int) -> VMBuffer:
    key = (address, length)
    buf = _views.get(key)
    if buf is None:
        if len(_views) >= _VIEWS_MAX:
            _views.clear()
        buf = _views[key] = VMBuffer(_host_view(address, length))
    return buf


# Kernel-module names (generated code's imports) of the VM ops that change a list: a
# module with none of them cannot change the list of binding buffers it is given.
_LIST_WRITES = ("list_set_", "list_resize", "list_reserve")


def _writes_lists(ns: dict) -> bool:
    return any(name.startswith(_LIST_WRITES) for name in ns)


class VmvxExecutable:
    """A loaded VMVX executable (loaders' Executable interface)."""

    format = FORMAT

    def __init__(self, ns: dict, constants: Sequence[int] | None) -> None:
        from ..modules.vmvx import VmvxModule

        if constants:
            raise LoaderError(
                f"executable has no executable-level constants but {len(constants)} constants "
                f"were provided"
            )
        self.module = ns
        self.closed = False
        functions = ns["bind"](_KernelContext(ns, VmvxModule()))
        scalar_only = os.environ.get("PYREE_VMVX_SCALAR", "") not in ("", "0")
        self._vectorized = [
            None if scalar_only else functions.get(f"vectorized:{row[1]}") for row in ns["ENTRIES"]
        ]
        self._entries = []
        self.exports = []
        for ordinal, (name, function, local, n_constants, n_bindings) in enumerate(ns["ENTRIES"]):
            self._entries.append(functions[function])
            self.exports.append(
                ExportInfo(
                    ordinal, name, (1, 1, 1), n_constants, n_bindings,
                    local_memory_pages=local // PAGE,
                )
            )
        self._local = [e.local_memory_pages * PAGE for e in self.exports]
        self._names = {e.name: e.ordinal for e in self.exports}
        self._seen: list = [{} for _ in self._entries]  # per export: key -> _Prepared
        self._reuse_list = not _writes_lists(ns)

    def lookup(self, name: bytes | str) -> int:
        if isinstance(name, (bytes, bytearray, memoryview)):
            name = bytes(name).decode("utf-8", errors="replace")
        ordinal = self._names.get(name)
        if ordinal is None:
            raise VMError(
                StatusCode.NOT_FOUND,
                f"no exported function with the name {quote_name(name)} found in module",
            )
        return ordinal

    def dispatch(self, ordinal: int, workgroup_count, constants, bindings) -> None:
        if self.closed:
            raise VMError(StatusCode.FAILED_PRECONDITION, "VMVX executable is closed")
        if not 0 <= ordinal < len(self._entries):
            raise VMError(StatusCode.INVALID_ARGUMENT, f"entry point ordinal {ordinal} out of bounds")
        cx, cy, cz = workgroup_count
        cx, cy, cz = int(cx) & _M32, int(cy) & _M32, int(cz) & _M32
        if not cx * cy * cz:
            return
        key = (constants if type(constants) is tuple else tuple(constants), tuple(bindings))
        seen = self._seen[ordinal]
        try:
            prep = seen.get(key)
        except TypeError:  # (bindings as lists: the key of their tuples)
            key = (key[0], tuple(map(tuple, bindings)))
            prep = seen.get(key)
        if prep is None:
            prep = self._prepare(seen, key, key[1])
        self._run(ordinal, prep, cx, cy, cz)

    def dispatch_flat(self, ordinal: int, counts, constants, flat) -> None:
        """`dispatch` with `flat` = the binding addresses, then their lengths (a
        command buffer's recorded form): its (constants, flat) is the cache key as is."""
        if self.closed:
            raise VMError(StatusCode.FAILED_PRECONDITION, "VMVX executable is closed")
        if not 0 <= ordinal < len(self._entries):
            raise VMError(StatusCode.INVALID_ARGUMENT, f"entry point ordinal {ordinal} out of bounds")
        cx, cy, cz = counts
        cx, cy, cz = int(cx) & _M32, int(cy) & _M32, int(cz) & _M32
        if not cx * cy * cz:
            return
        key = (constants if type(constants) is tuple else tuple(constants),
               flat if type(flat) is tuple else tuple(flat), None)
        seen = self._seen[ordinal]
        prep = seen.get(key)
        if prep is None:
            n = len(flat) // 2
            prep = self._prepare(seen, key, tuple(zip(flat[:n], flat[n:])))
        self._run(ordinal, prep, cx, cy, cz)

    def _prepare(self, seen: dict, key, ranges) -> "_Prepared":
        """The dispatch's constant buffer and binding views, kept for when an export is
        dispatched again with the same constants and binding ranges (a program's calls and
        loops repeat them): a view is of raw memory, valid for its range."""
        ranges = tuple(r if type(r) is tuple else tuple(r) for r in ranges)
        if len(seen) >= _PREPARED_MAX:
            seen.clear()
        prep = seen[key] = _Prepared(key[0], ranges, self._reuse_list)
        return prep

    def _run(self, ordinal: int, prep: "_Prepared", cx: int, cy: int, cz: int) -> None:
        vectorized = self._vectorized[ordinal]
        if vectorized is not None:
            work = getattr(vectorized, "work", None)
            # (a small grid runs the scalar translation: the numpy program's own first
            # check, made here before any numpy view is)
            if (work is None or cx * cy * cz * work > _small_work()) and vectorized(
                prep.arrays, prep.constants, prep.ranges, (cx, cy, cz)
            ):
                return
        entry = self._entries[ordinal]
        size = self._local[ordinal]
        local = VMBuffer(bytearray(size)) if size else _NO_LOCAL
        binding_list = prep.binding_list()
        if cx == cy == cz == 1:  # (one workgroup: IREE's order is trivially kept)
            entry(local, prep.constants, binding_list, 0, 0, 0, 1, 1, 1, 1, 1, 1)
            return
        sx, sy, sz = _i32(cx), _i32(cy), _i32(cz)
        for z in range(cz):
            for y in range(cy):
                for x in range(cx):
                    entry(local, prep.constants, binding_list, x, y, z, 1, 1, 1, sx, sy, sz)

    def close(self) -> None:
        self.closed = True


def load_vmvx(data, constants: Sequence[int] | None = None) -> VmvxExecutable:
    raw = bytes(data)
    digest = sha256_hex(raw)
    return VmvxExecutable(_kernel_module(digest, len(raw)), constants)


__all__ = ["FORMAT", "VmvxExecutable", "load_vmvx", "register_kernels"]

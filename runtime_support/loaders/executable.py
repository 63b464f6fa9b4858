"""What every CPU executable loader shares once a library is in memory.

A loader (embedded ELF, system shared object) maps the code and hands over the address
of `iree_hal_executable_library_query` plus a `LibraryMemory` that says which addresses
are safe to read. From there this module does the rest, the same for every format:

    query(6, &environment) -> LibraryV0 -> header checks -> import resolution
      -> export table (ExportInfo per entry) -> Executable.dispatch(...)

Dispatch runs every workgroup of a grid. The fast path is one native call (the package
runtime_support/native, JIT-compiled once per process with llvmlite): it walks the tiles `t`
(x = t % X, y = (t / X) % Y, z = t / (X * Y): z outermost, x fastest, as the upstream
inline executor does) with denormals flushed to zero, on the caller alone or, with
`workers` > 1, split in chunks across the native worker pool (each participant with
its own workgroup state: processor id, local memory). Without llvmlite, or with
`native=False`, a ctypes loop makes one foreign call per workgroup (leaving the thread's
FPU state alone) and several workers split the tiles into contiguous slices on Python
threads.

`statistics` (when enabled) counts every dispatch and its time per export.
"""

from __future__ import annotations

import ctypes
import dataclasses
import struct
import threading
import weakref
from typing import Callable, Sequence

from ..errors import LoaderError, StatusCode, VMError
import runtime_support.loaders.kernel_abi as abi
import runtime_support.native.jit as _jit
from runtime_support.native.layout import GRID_ARGS
from runtime_support.native.pool import worker_pool
import runtime_support.loaders.statistics as statistics

_MAX_EXPORTS = 1 << 16
_MAX_IMPORTS = 1 << 16
_MAX_STRING = 1 << 16

HOST_IMPORTS: dict[bytes, tuple[int, int]] = {}
"""Host functions kernels may import: name -> (import_fn address, context address).

IREE 3.13 kernels import nothing (hal-abi.md C.5), so this is empty; a required import
that is not here fails the load with LoaderError."""


@dataclasses.dataclass(frozen=True)
class ExportInfo:
    """One entry of a library's export table."""

    ordinal: int
    name: str
    workgroup_size: tuple[int, int, int]
    constant_count: int
    binding_count: int
    local_memory_pages: int = 0
    flags: int = 0
    parameter_count: int = 0
    source_location: tuple[str, int] | None = None  # (path, line) when the library has it

    @property
    def local_memory_size(self) -> int:
        return self.local_memory_pages * abi.WORKGROUP_LOCAL_MEMORY_PAGE_SIZE


class LibraryMemory:
    """Which addresses of a loaded library may be read (and which hold code).

    This base version trusts the dynamic linker (system libraries): it only rejects
    NULL. The embedded ELF loader knows its segments and checks every range.
    """

    def check(self, address: int | None, size: int, what: str) -> int:
        if not address:
            raise LoaderError(f"library {what} pointer is NULL")
        return address

    def check_code(self, address: int | None, what: str) -> int:
        return self.check(address, 1, what)

    def read(self, address: int | None, size: int, what: str) -> bytes:
        return ctypes.string_at(self.check(address, size, what), size)

    def cstring(self, address: int | None, what: str) -> bytes:
        return ctypes.string_at(self.check(address, 1, what))


# --- the native workgroup loop ------------------------------------------------------------

# The JIT-compiled tile loop, grid runner, plan runner and worker pool live in
# runtime_support/native/.
_NativeLoop = _jit.NativeRuntime


def native_loop() -> _jit.NativeRuntime | None:
    """The process-wide JIT code, or None if llvmlite cannot provide it."""
    return _jit.native_runtime()


_pool: concurrent.futures.ThreadPoolExecutor | None = None
_pool_size = 0
_pool_lock = threading.Lock()


def _worker_pool(size: int) -> concurrent.futures.ThreadPoolExecutor:
    """Python threads for the ctypes loop (native=False) only; the JIT path uses
    native/pool.py's WorkerPool."""
    global _pool, _pool_size
    if _pool_size < size:
        with _pool_lock:
            if _pool_size < size:
                # The old pool is left running: a dispatch may still be submitting to it.
                import concurrent.futures  # (the fallback without llvmlite: rare)

                _pool = concurrent.futures.ThreadPoolExecutor(
                    max_workers=size, thread_name_prefix="pyree-dispatch"
                )
                _pool_size = size
    return _pool


def _python_import_thunk(fn: int, params: int, context: int, reserved: int) -> int:
    return abi.IMPORT_FN(fn)(params, context, reserved)


_python_import_thunk_ptr = abi.IMPORT_THUNK(_python_import_thunk)


# --- per-dispatch argument block -------------------------------------------------------

_WG_STATE = abi.WORKGROUP_STATE
_GRID_ARGS = struct.Struct(f"<{len(GRID_ARGS)}Q")  # one foreign-call argument


class _InlineBlock:
    """A zeroed argument block for Executable.dispatch_flat, reused call after call."""

    __slots__ = ("memory", "address")

    def __init__(self, size: int) -> None:
        self.memory = ctypes.create_string_buffer(size)
        self.address = ctypes.addressof(self.memory)


class _ArgumentLayout:
    """How one export's dispatch arguments are packed into a single zeroed block.

    [DispatchStateV0 | u32 constants (8-aligned) | binding ptrs | binding lengths], then
    one WorkgroupStateV0 per worker at `size`. `pack_into(block, 0, cx, cy, cz, workers,
    block_address, *constants, *ptrs, *lengths)` fills all but the workgroup states.
    """

    def __init__(self, export: ExportInfo) -> None:
        nc, nb = export.constant_count, export.binding_count
        state = ctypes.sizeof(abi.DispatchStateV0)
        self.constants_offset = state
        self.ptrs_offset = state + (4 * nc + 7) // 8 * 8
        self.lengths_offset = self.ptrs_offset + 8 * nb
        self.size = self.lengths_offset + 8 * nb
        pad = self.ptrs_offset - state - 4 * nc
        self._struct = struct.Struct(f"<IIHHIIHBBQQQ{nc}I{pad}x{nb}Q{nb}Q")
        assert self._struct.size == self.size
        self._fixed = (export.workgroup_size, nc, nb)

    def pack_into(self, block, offset, cx, cy, cz, workers, address, *values) -> None:
        (wx, wy, wz), nc, nb = self._fixed
        self._struct.pack_into(
            block,
            offset,
            wx,
            wy,
            wz,
            nc,
            cx,
            cy,
            cz,
            workers,
            nb,
            address + self.constants_offset,
            address + self.ptrs_offset,
            address + self.lengths_offset,
            *values,
        )


# --- the executable ------------------------------------------------------------------------


class Executable:
    """A loaded CPU executable library: its export table and a way to run it."""

    def __init__(
        self,
        format: str,
        query_address: int,
        memory: LibraryMemory,
        release: Callable[[], None],
        constants: Sequence[int] | None = None,
        keepalive: object = None,
    ) -> None:
        self.format = format
        self._memory = memory
        self._keepalive = keepalive
        self._closed = False
        self._inline: dict = {}  # dispatch_flat's per-export packing
        self._finalizer = weakref.finalize(self, release)
        try:
            self._load(query_address, constants)
        except BaseException:
            self._finalizer()
            raise

    # -- loading --

    def _load(self, query_address: int, constants: Sequence[int] | None) -> None:
        memory = self._memory
        env = abi.EnvironmentV0()
        for i, word in enumerate(abi.host_processor_data()):
            env.processor.data[i] = word
        native = native_loop()
        env.import_thunk = (
            native.import_thunk
            if native
            else ctypes.cast(_python_import_thunk_ptr, ctypes.c_void_p).value
        )
        values = [int(c) & 0xFFFFFFFF for c in (constants if constants is not None else ())]
        self._constants = (ctypes.c_uint32 * max(1, len(values)))(*values)
        env.constants = ctypes.addressof(self._constants) if values else None
        self._env = env

        query = abi.QUERY_FN(memory.check_code(query_address, "query function"))
        library_address = query(abi.LIBRARY_VERSION_LATEST, ctypes.byref(env))
        if not library_address:
            raise LoaderError(
                f"executable library query refused version {abi.LIBRARY_VERSION_LATEST} "
                "(the library needs a newer runtime)"
            )
        library = abi.LibraryV0.from_buffer_copy(
            memory.read(library_address, ctypes.sizeof(abi.LibraryV0), "library")
        )
        header = abi.LibraryHeader.from_buffer_copy(
            memory.read(library.header, ctypes.sizeof(abi.LibraryHeader), "header")
        )
        if header.version != abi.LIBRARY_VERSION_0_6:
            raise LoaderError(
                f"executable library version {header.version} is not supported "
                f"(expected {abi.LIBRARY_VERSION_0_6})"
            )
        if header.sanitizer != abi.SANITIZER_NONE:
            raise LoaderError(f"executable library built with sanitizer {header.sanitizer}")
        if header.features != abi.LIBRARY_FEATURE_NONE:
            raise LoaderError(f"executable library requires features 0x{header.features:x}")
        self.library_name = self._string(header.name, "library name")

        self._resolve_imports(library.imports)

        expected = library.constants.count
        if len(values) != expected:
            raise VMError(
                StatusCode.FAILED_PRECONDITION,
                f"executable library '{self.library_name}' has {expected} constants but "
                f"{len(values)} were provided",
            )
        self.exports = self._read_exports(library.exports)
        self._by_name = {e.name: e.ordinal for e in self.exports}

    def _string(self, address: int | None, what: str) -> str:
        return self._memory.cstring(address, what).decode("utf-8", errors="replace")

    def _pointer_array(self, address: int | None, count: int, what: str) -> list[int]:
        raw = self._memory.read(address, 8 * count, what)
        return list((ctypes.c_uint64 * count).from_buffer_copy(raw))

    def _resolve_imports(self, imports: abi.ImportTableV0) -> None:
        count = imports.count
        if count > _MAX_IMPORTS:
            raise LoaderError(f"executable library declares {count} imports")
        self._import_funcs = (ctypes.c_void_p * max(1, count))()
        self._import_contexts = (ctypes.c_void_p * max(1, count))()
        if count == 0:
            return
        for i, name_ptr in enumerate(self._pointer_array(imports.symbols, count, "imports")):
            name = self._memory.cstring(name_ptr, "import name")
            optional = name.startswith(abi.OPTIONAL_IMPORT_PREFIX)
            bare = name[1:] if optional else name
            found = HOST_IMPORTS.get(bare)
            if found is None:
                if optional:
                    continue  # stays NULL: the kernel checks before calling
                raise LoaderError(
                    f"executable library imports '{bare.decode(errors='replace')}', "
                    "which this runtime does not provide"
                )
            self._import_funcs[i], self._import_contexts[i] = found
        self._env.import_funcs = ctypes.addressof(self._import_funcs)
        self._env.import_contexts = ctypes.addressof(self._import_contexts)

    def _read_exports(self, table: abi.ExportTableV0) -> list[ExportInfo]:
        count = table.count
        if count > _MAX_EXPORTS:
            raise LoaderError(f"executable library declares {count} exports")
        if count == 0:
            self._functions = []
            self._layouts = []
            return []
        memory = self._memory
        ptrs = self._pointer_array(table.ptrs, count, "export function table")
        names = self._pointer_array(table.names, count, "export name table")
        attrs_size = ctypes.sizeof(abi.DispatchAttrsV0)
        raw_attrs = memory.read(table.attrs, attrs_size * count, "export attrs table")
        raw_locs = None
        if table.source_locations:
            loc_size = ctypes.sizeof(abi.SourceLocationV0)
            raw_locs = memory.read(table.source_locations, loc_size * count, "source locations")
        exports = []
        self._functions = []
        for i in range(count):
            self._functions.append(memory.check_code(ptrs[i], f"export {i} function"))
            attrs = abi.DispatchAttrsV0.from_buffer_copy(raw_attrs, i * attrs_size)
            if attrs.constant_count > abi.MAX_CONSTANT_COUNT:
                raise LoaderError(f"export {i} declares {attrs.constant_count} constants")
            if attrs.binding_count > abi.MAX_BINDING_COUNT:
                raise LoaderError(f"export {i} declares {attrs.binding_count} bindings")
            location = None
            if raw_locs is not None:
                loc = abi.SourceLocationV0.from_buffer_copy(
                    raw_locs, i * ctypes.sizeof(abi.SourceLocationV0)
                )
                if loc.path and loc.path_length <= _MAX_STRING:
                    path = memory.read(loc.path, loc.path_length, "source path")
                    location = (path.decode("utf-8", errors="replace"), loc.line)
            exports.append(
                ExportInfo(
                    ordinal=i,
                    name=self._string(names[i], f"export {i} name"),
                    workgroup_size=(
                        attrs.workgroup_size_x,
                        attrs.workgroup_size_y,
                        attrs.workgroup_size_z,
                    ),
                    constant_count=attrs.constant_count,
                    binding_count=attrs.binding_count,
                    local_memory_pages=attrs.local_memory_pages,
                    flags=attrs.flags,
                    parameter_count=attrs.parameter_count,
                    source_location=location,
                )
            )
        self._python_fns = [abi.DISPATCH_FN(p) for p in self._functions]
        self._layouts = [_ArgumentLayout(e) for e in exports]
        return exports

    # -- queries --

    def lookup(self, name: bytes | str) -> int:
        """The ordinal of the export called `name` (VMError NOT_FOUND if none)."""
        key = name.decode("utf-8", errors="replace") if isinstance(name, bytes) else name
        ordinal = self._by_name.get(key)
        if ordinal is None:
            raise VMError(
                StatusCode.NOT_FOUND,
                f"executable '{self.library_name}' has no export named '{key}'",
            )
        return ordinal

    def function_address(self, ordinal: int) -> int:
        """The address of an export's dispatch function (tests, debugging)."""
        self._export(ordinal)
        return self._functions[ordinal]

    def _export(self, ordinal: int) -> ExportInfo:
        if self._closed:
            raise VMError(StatusCode.FAILED_PRECONDITION, "executable is closed")
        if not 0 <= ordinal < len(self.exports):
            raise VMError(
                StatusCode.OUT_OF_RANGE,
                f"export ordinal {ordinal} out of range (executable '{self.library_name}' "
                f"has {len(self.exports)})",
            )
        return self.exports[ordinal]

    # -- dispatch --

    def dispatch(
        self,
        ordinal: int,
        workgroup_count: Sequence[int],
        constants: Sequence[int] = (),
        bindings: Sequence[tuple[int, int]] = (),
        workers: int = 1,
        *,
        native: bool | None = None,
        pool_ordinal: int = 0,
    ) -> None:
        """Runs every workgroup of `workgroup_count` = (x, y, z) through export `ordinal`.

        `constants` are u32 values (signed ints are taken modulo 2**32); `bindings` are
        (address, length) pairs. `workers` > 1 splits the grid across that many threads.
        `native`: True requires the JIT loop, False forces the ctypes loop, None picks
        the JIT loop when available. `pool_ordinal`: whose worker pool a split grid runs
        on (the device's, native/pool.py worker_pool).
        """
        export = self._export(ordinal)
        try:
            cx, cy, cz = workgroup_count
        except (TypeError, ValueError):
            raise VMError(
                StatusCode.INVALID_ARGUMENT, "workgroup count must be (x, y, z)"
            ) from None
        if not (0 <= cx <= 0xFFFFFFFF and 0 <= cy <= 0xFFFFFFFF and 0 <= cz <= 0xFFFF):
            raise VMError(
                StatusCode.OUT_OF_RANGE,
                f"workgroup count ({cx}, {cy}, {cz}) out of range for '{export.name}'",
            )
        if len(constants) != export.constant_count:
            raise VMError(
                StatusCode.INVALID_ARGUMENT,
                f"'{export.name}' expects {export.constant_count} constants, "
                f"got {len(constants)}",
            )
        if len(bindings) != export.binding_count:
            raise VMError(
                StatusCode.INVALID_ARGUMENT,
                f"'{export.name}' expects {export.binding_count} bindings, " f"got {len(bindings)}",
            )
        total = cx * cy * cz
        if total == 0:
            return
        loop = None
        if native is not False:
            loop = native_loop()
            if native and loop is None:
                raise VMError(
                    StatusCode.UNAVAILABLE, f"native dispatch loop: {_jit.native_error()}"
                )
        if workers != 1:
            if export.flags & abi.DISPATCH_FLAG_SEQUENTIAL:
                workers = 1
            workers = max(1, min(int(workers), total, 255))
        pool = None
        if workers > 1 and loop is not None:
            pool = worker_pool(workers, pool_ordinal)
            if pool is not None:
                workers = min(workers, pool.threads + 1)

        # One zeroed block holds everything the kernel reads besides the environment:
        # [dispatch state | constants | binding ptrs | binding lengths | workgroup states]
        layout = self._layouts[ordinal]
        args_offset = layout.size + _WG_STATE.size * workers  # native grid-runner arguments
        block = ctypes.create_string_buffer(args_offset + _GRID_ARGS.size)
        base = ctypes.addressof(block)
        try:
            layout.pack_into(
                block,
                0,
                cx,
                cy,
                cz,
                workers,
                base,
                *constants,
                *[b[0] for b in bindings],
                *[b[1] for b in bindings],
            )
        except struct.error:
            layout.pack_into(
                block,
                0,
                cx,
                cy,
                cz,
                workers,
                base,
                *[int(c) & 0xFFFFFFFF for c in constants],
                *[int(b[0]) for b in bindings],
                *[int(b[1]) for b in bindings],
            )
        wg_offset = layout.size
        local_size = export.local_memory_size
        scratch = None
        if local_size:
            scratch = ctypes.create_string_buffer((local_size + 64) * workers)
        if workers > 1 or local_size:
            for worker in range(workers):
                local = 0
                if local_size:
                    local = (ctypes.addressof(scratch) + worker * (local_size + 64) + 63) & ~63
                _WG_STATE.pack_into(
                    block,
                    wg_offset + worker * _WG_STATE.size,
                    0,
                    0,
                    0,
                    0,
                    worker,
                    local,
                    local_size,
                )

        fn = self._functions[ordinal]
        env_address = ctypes.addressof(self._env)
        timer = statistics.clock() if statistics.enabled else None
        if loop is not None:
            # The runner takes the pool for this grid, or runs it inline if another
            # caller holds the pool.
            _GRID_ARGS.pack_into(
                block,
                args_offset,
                pool.address if pool is not None else 0,
                fn,
                env_address,
                base,
                base + wg_offset,
                cx,
                cy,
                total,
                workers,
            )
            results = [loop.run_grid_args(base + args_offset)]
        elif workers == 1:
            results = [
                self._run_tiles_ctypes(
                    ordinal, env_address, base, block, wg_offset, cx, cy, 0, total
                )
            ]
        else:
            results = [0] * workers
            bounds = [total * w // workers for w in range(workers + 1)]

            def worker_main(w: int) -> None:
                begin, end = bounds[w], bounds[w + 1]
                offset = wg_offset + w * _WG_STATE.size
                results[w] = self._run_tiles_ctypes(
                    ordinal, env_address, base, block, offset, cx, cy, begin, end
                )

            futures = [_worker_pool(workers - 1).submit(worker_main, w) for w in range(1, workers)]
            try:
                worker_main(0)
            finally:
                for future in futures:
                    future.result()
        if timer is not None:
            statistics.record(export.name, statistics.clock() - timer)
        del scratch  # kept alive until every worker has finished
        for rc in results:
            if rc:
                raise self.kernel_error(ordinal, rc)

    def dispatch_flat(
        self, ordinal: int, workgroup_count, constants: Sequence[int], flat: Sequence[int]
    ) -> None:
        """`dispatch(ordinal, workgroup_count, constants, bindings)` on the calling thread,
        with `flat` = every binding's address, then every binding's length. The per-call
        form of dynamic shapes (a command buffer recorded per call): the arguments are
        packed by one struct call into a block reused across calls, and the grid runs in
        one foreign call. Anything unusual (a count or size dispatch() rejects, an empty
        grid, local memory, no JIT loop, statistics on, a closed library) takes dispatch()
        itself, which raises its own errors."""
        inline = self._inline.get(ordinal)
        if inline is None:
            inline = self._inline_entry(ordinal)
        if inline:
            pack, free, fixed, nc, nb, run_grid = inline
            try:
                cx, cy, cz = workgroup_count
            except (TypeError, ValueError):
                cx = 0
            if (
                0 < cx <= 0xFFFFFFFF
                and 0 < cy <= 0xFFFFFFFF
                and 0 < cz <= 0xFFFF
                and len(constants) == nc
                and len(flat) == nb
                and not self._closed
                and not statistics.enabled
            ):
                try:
                    block = free.pop()
                except IndexError:
                    block = _InlineBlock(fixed[-1])
                base = block.address
                try:
                    pack(
                        block.memory, 0, *fixed[0], cx, cy, cz, 1, *fixed[1],
                        base + fixed[2], base + fixed[3], base + fixed[4],
                        *constants, *flat,
                        0, fixed[5], fixed[6], base, base + fixed[7], cx, cy, cx * cy * cz, 1,
                    )
                except struct.error:  # (a value out of range: dispatch() masks or raises)
                    free.append(block)
                else:
                    rc = run_grid(base + fixed[8])
                    free.append(block)
                    if rc:
                        raise self.kernel_error(ordinal, rc)
                    return
        n = len(flat) // 2
        self.dispatch(
            ordinal, workgroup_count, constants, list(zip(flat[:n], flat[n:])) if n else ()
        )

    def _inline_entry(self, ordinal: int):
        """dispatch_flat's per-export packing (False where it always falls back):
        (struct, free blocks, fixed values, constant count, binding count x 2, runner)."""
        if not (type(ordinal) is int and 0 <= ordinal < len(self.exports)) or self._closed:
            return False  # (dispatch() raises; nothing cached for it)
        entry = False
        loop = native_loop()
        if loop is not None and not self.exports[ordinal].local_memory_size:
            export, layout = self.exports[ordinal], self._layouts[ordinal]
            nc, nb = export.constant_count, export.binding_count
            # [DispatchStateV0 | constants | ptrs | lengths][one WorkgroupStateV0, zeroed
            # by the pad bytes][the grid runner's arguments]: one struct for all of it
            fmt = layout._struct.format + f"{_WG_STATE.size}x" + _GRID_ARGS.format[1:]
            pack = struct.Struct(fmt)
            args_offset = layout.size + _WG_STATE.size
            assert pack.size == args_offset + _GRID_ARGS.size
            fixed = (
                (*export.workgroup_size, nc), (nb,), layout.constants_offset, layout.ptrs_offset,
                layout.lengths_offset, self._functions[ordinal], ctypes.addressof(self._env),
                layout.size, args_offset, pack.size,
            )
            entry = (pack.pack_into, [], fixed, nc, 2 * nb, loop.run_grid_args)
        self._inline[ordinal] = entry
        return entry

    def kernel_error(self, ordinal: int, rc: int) -> VMError:
        """The error for a kernel that returned nonzero (a catastrophic failure)."""
        return VMError(
            StatusCode.INTERNAL,
            f"executable entry point '{self.exports[ordinal].name}' (export {ordinal} of "
            f"'{self.library_name}') returned catastrophic error {rc}",
        )

    def _run_tiles_ctypes(
        self,
        ordinal: int,
        env_address: int,
        state_address: int,
        block: ctypes.Array,
        wg_offset: int,
        cx: int,
        cy: int,
        begin: int,
        end: int,
    ) -> int:
        """One foreign call per workgroup; the reference for the native loop."""
        fn = self._python_fns[ordinal]
        wg = abi.WorkgroupStateV0.from_buffer(block, wg_offset)
        wg_address = ctypes.addressof(wg)
        q, x = divmod(begin, cx)
        z, y = divmod(q, cy)
        for _ in range(begin, end):
            wg.workgroup_id_x = x
            wg.workgroup_id_y = y
            wg.workgroup_id_z = z
            rc = fn(env_address, state_address, wg_address)
            if rc:
                return rc
            x += 1
            if x == cx:
                x = 0
                y += 1
                if y == cy:
                    y = 0
                    z += 1
        return 0

    # -- lifetime --

    def close(self) -> None:
        """Releases the library's memory. Further dispatches raise VMError."""
        self._closed = True
        self._finalizer()

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> "Executable":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        names = ", ".join(e.name for e in getattr(self, "exports", []))
        return f"<Executable {self.format} '{getattr(self, 'library_name', '?')}': {names}>"

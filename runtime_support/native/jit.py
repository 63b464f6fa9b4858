"""The native runtime compiled: the IR units beside this module joined into one LLVM module,
their placeholders filled from layout.py, compiled once per process by llvmlite's MCJIT,
with the object code kept in the disk cache (keyed by the final IR text, so an edited
unit is a miss).

The units, in the order they are joined (each declares what it takes from the others, so
that it parses on its own; joined, those declarations are dropped):

    arch_<machine>.ll  FPU state (flush denormals, as IREE runs kernels), pause, futex
    tiles.ll           pyree_run_tiles, pyree_import_thunk
    pool.ll            the worker pool: pyree_worker, pyree_run_grid(_args), placement
    plan.ll            pyree_run_plan(_args), the plan runner
    checks.ll          pyree_check_table, pyree_check_run_plan
    steps.ll           pyree_run_plan_steps
    loop.ll            pyree_run_loop

No C compiler is involved, and the few libc functions the code needs (`syscall` for
futexes, `clock_gettime`, `sched_getcpu`, `pthread_setaffinity_np`) are bound to the
addresses ctypes resolves in the running process. A machine without an arch unit (only
x86-64 and AArch64 have one) has no native runtime: the loaders use their ctypes paths.
"""

from __future__ import annotations

import ctypes
import importlib.resources
import os
import platform
import re
import threading

from ..cache import disk_cache
from ..env_knobs import float_knob
from . import layout

UNITS = ("tiles", "pool", "plan", "checks", "steps", "loop")  # after arch_<machine>
PLACEHOLDER = re.compile(r"@([A-Z][A-Z0-9_]*)@")
_DECLARE = re.compile(r"^declare [^@\n]*@([\w.]+)\(.*\n", re.MULTILINE)
_DEFINE = re.compile(r"^define [^@\n]*@([\w.]+)\(", re.MULTILINE)

INLINE_ENV = "PYREE_INLINE_US"
# Grids estimated below this run on the caller alone. Waking a worker and sharing the
# grid costs a few microseconds and the worker's core comes to the data cold: a 30 us
# grid (model-mlp's first matmul) ran faster on the pool but its call slower (58 vs 53
# us, interleaved); at 40 us model-mlp's `local` equals its local-sync, and the larger
# grids of the other benchmark programs (mlp, gpt2, matmul, resnet) stay on the pool.
_DEFAULT_INLINE_US = 40
# A grid estimated to take a second is never worth keeping off the pool; the bound also
# keeps the nanoseconds an i64 constant of the compiled code.
_MAX_INLINE_US = 1_000_000


def inline_ns() -> int:
    """$PYREE_INLINE_US as nanoseconds: plan grids estimated to take less on one thread
    run inline. Read once, when the native code is compiled."""
    return int(float_knob(INLINE_ENV, _DEFAULT_INLINE_US, 0, _MAX_INLINE_US) * 1000)


def machine() -> str:
    name = platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(name, name)


def unit_names(arch: str | None = None) -> tuple[str, ...]:
    """The units joined into the runtime on `arch` (default: this machine)."""
    return (f"arch_{arch or machine()}",) + UNITS


def unit_text(name: str) -> str:
    """The text of unit `name` as shipped (placeholders unfilled)."""
    return importlib.resources.files(__package__).joinpath(f"{name}.ll").read_text("utf-8")


def arch_units() -> list[str]:
    """Every arch_<machine> unit shipped."""
    files = importlib.resources.files(__package__).iterdir()
    return sorted(f.name[:-3] for f in files if f.name.startswith("arch_") and f.name.endswith(".ll"))


def substitutions() -> dict[str, int]:
    """Every placeholder's value: layout.py's table and the run-time settings."""
    values = layout.substitutions()
    values.update(INLINE_NS=inline_ns(), HALF_INLINE_NS=inline_ns() // 2)
    return values


def fill(text: str, values: dict[str, int]) -> str:
    """`text` with every @NAME@ replaced by its value (KeyError for a name not given)."""
    return PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), text)


def join(texts) -> str:
    """The units as one module: a declaration of a function another unit defines, or that
    an earlier unit declared, is dropped."""
    defined = {name for text in texts for name in _DEFINE.findall(text)}
    declared: set[str] = set()

    def keep(match: re.Match) -> str:
        name = match.group(1)
        if name in defined or name in declared:
            return ""
        declared.add(name)
        return match.group(0)

    return "".join(_DECLARE.sub(keep, text) for text in texts)


def ir() -> str:
    """The runtime's IR for this machine, as compiled."""
    arch = machine()
    if f"arch_{arch}" not in arch_units() or not hasattr(os, "sched_getaffinity"):
        raise OSError(f"no futex-based worker pool on {arch}")
    values = substitutions()
    return join([fill(unit_text(name), values) for name in unit_names(arch)])


_RUN_TILES = ctypes.CFUNCTYPE(
    ctypes.c_int32,
    ctypes.c_void_p,
    ctypes.c_void_p,
    ctypes.c_void_p,
    ctypes.c_void_p,
    ctypes.c_int64,
    ctypes.c_int64,
    ctypes.c_int64,
    ctypes.c_int64,
)


class NativeRuntime:
    """The compiled functions, once per process (see the module docstring)."""

    def __init__(self) -> None:
        import llvmlite.binding as llvm

        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        libc = ctypes.CDLL(None)
        for name in ("syscall", "clock_gettime", "sched_getcpu", "pthread_setaffinity_np"):
            llvm.add_symbol(name, ctypes.cast(getattr(libc, name), ctypes.c_void_p).value)
        target_machine = llvm.Target.from_default_triple().create_target_machine(opt=2)
        text = ir()
        module = llvm.parse_assembly(text)
        self._engine = llvm.create_mcjit_compiler(module, target_machine)
        # MCJIT takes the object code from the disk cache where an earlier process left it
        # for this same IR, llvmlite and target (about 2 ms instead of 60 ms of codegen)
        path = _object_path(text, target_machine)
        cached = disk_cache.read_checked(path, _OBJECT_LIMIT) if path is not None else None
        self.from_cache = cached is not None
        if not self.from_cache:
            module.verify()
        self._engine.set_object_cache(
            None if self.from_cache else (lambda _module, data: _store_object(path, data)),
            lambda _module: cached,
        )
        self._engine.finalize_object()
        self._target_machine = target_machine
        address = self._engine.get_function_address
        self.run_tiles = _RUN_TILES(address("pyree_run_tiles"))
        self.run_grid_args = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)(
            address("pyree_run_grid_args")
        )
        self.run_plan_args = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p)(
            address("pyree_run_plan_args")
        )
        self.run_plan_steps = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p)(
            address("pyree_run_plan_steps")
        )
        self.run_loop = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p)(address("pyree_run_loop"))
        self.check_run_plan = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p)(
            address("pyree_check_run_plan")
        )
        self.check_table = ctypes.CFUNCTYPE(
            ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p
        )(address("pyree_check_table"))
        self.import_thunk = address("pyree_import_thunk")
        self.worker_address = address("pyree_worker")


# The compiled runtime is ~10 KiB; a cache file much larger than that is not ours.
_OBJECT_LIMIT = 1 << 22


def _object_path(ir_text: str, target_machine):
    """Where the object code for `ir_text` on this target is cached (disk_cache.py), named
    by a hash of everything it is made from; None where the key cannot be formed."""
    import llvmlite
    import llvmlite.binding as llvm

    try:
        key = disk_cache.key(
            ir_text, llvmlite.__version__, repr(llvm.llvm_version_info), target_machine.triple,
            str(target_machine.target_data), llvm.get_host_cpu_name(),
        )
    except Exception:  # noqa: BLE001 - (an llvmlite without one of these: no caching)
        return None
    return disk_cache.root() / "native" / f"runtime-{key}.o"


def _store_object(path, data: bytes) -> None:
    if path is not None and 0 < len(data) <= _OBJECT_LIMIT:
        disk_cache.write_checked(path, bytes(data))


_runtime: NativeRuntime | None = None
_runtime_error: BaseException | None = None
_runtime_lock = threading.Lock()


def native_runtime() -> NativeRuntime | None:
    """The process-wide compiled code, or None if llvmlite cannot provide it."""
    global _runtime, _runtime_error
    if _runtime is None and _runtime_error is None:
        with _runtime_lock:
            if _runtime is None and _runtime_error is None:
                try:
                    _runtime = NativeRuntime()
                except Exception as error:  # llvmlite missing or broken: ctypes fallbacks
                    _runtime_error = error
    return _runtime


def native_error() -> BaseException | None:
    return _runtime_error

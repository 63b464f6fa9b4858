"""The worker pool: N-1 native threads per pool that never touch Python, and where they run.

A caller takes the pool with a compare-and-swap on its busy word (a caller that finds it
taken runs its grid inline), publishes a job (one grid) in the pool block, bumps a
generation word and wakes sleeping workers with a futex. Workers spin briefly, then sleep
on the futex. Participation is by ticket: the 64-bit ticket holds the job's generation
(high half), a closed bit and the number of workers inside; a worker joins with a
compare-and-swap while the job is open, so a late worker never delays the caller: the
caller runs tiles itself, closes the ticket when no tiles are left and waits only for
workers that did join. Any tile may run on any participant; each has its own workgroup
state and local memory. The native side is pool.ll; the block's layout is layout.py's
PoolBlock.

Work split: participant p (the caller is 0, workers are numbered as they join) starts
with the p-th of maxp contiguous ranges of the grid and takes its tiles from the front,
an eighth of what is left at a time (at least one); when its range is empty it takes the
back half of what is left of another's range, until no range has tiles left. Contiguous
ranges keep neighbouring tiles (which share cache lines of their operands) on one core,
and a participant that joins late, or is descheduled, leaves at most the tile it is
running to the others. Measured against chunks handed out by one shared counter (a
quarter of a participant's share each): 4-9% faster on the GPT-2 decoder, MLP and 1M
elementwise benchmarks on 2 cores, and much less slowed by another busy process; taking
an eighth at a time rather than single tiles: elementwise1m -1.5%, mlp -5% at p25 (fewer
claims on small tiles). A range word packs (end, next) in 32 bits each; a grid of more
than 2**31 tiles is split into units of several tiles.

Placement: workers are pinned one per CPU (as IREE's task executor pins its workers),
and before each pooled grid the caller, which is never pinned, checks whether a worker
is pinned to the CPU it runs on now; if so that worker moves to a CPU with no worker (at
most once a millisecond). A worker that shares the caller's CPU cannot run beside it:
with another busy process on the machine an unpinned worker is often woken onto the
caller's CPU and the grid runs at one-core speed. A caller that has spun out waiting for
workers to finish their last tiles lets them run on any CPU before it sleeps (one of them
may be descheduled behind another process on its own CPU, and the caller's is about to be
free); its next pooled grid pins them again. $PYREE_PIN=0 turns pinning off.
"""

from __future__ import annotations

import ctypes
import os
import threading

from ..env_knobs import flag_knob, int_knob
from .jit import NativeRuntime, native_runtime
from .layout import AFFINITY_MASK_BYTES, MAX_PARTICIPANTS, POOL_SIZE, PoolBlock

WORKERS_ENV = "PYREE_WORKERS"
SPIN_ENV = "PYREE_SPIN"
PIN_ENV = "PYREE_PIN"
THREAD_NAME = b"pyree-worker"

_DEFAULT_SPIN = 2000  # pause iterations (a few microseconds) before a worker sleeps
# A pause is ~10-150 cycles: a million of them is 3-50 ms, far past the few microseconds
# a futex wake costs, so more only burns an idle core (the count is an i64 the workers
# compare unsigned: unbounded, it could make them spin for ever).
_MAX_SPIN = 1_000_000


def _placement_cpus() -> list[int]:
    """The CPUs pool workers are pinned to (this process's, sorted), or [] when pinning
    is off: $PYREE_PIN=0, no affinity API, or CPUs beyond what the pool block lists."""
    if not flag_knob(PIN_ENV, True) or not hasattr(os, "sched_getaffinity"):
        return []
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) > MAX_PARTICIPANTS or cpus[-1] >= 8 * AFFINITY_MASK_BYTES:
        return []
    return cpus


def default_worker_count() -> int:
    """$PYREE_WORKERS if set (1 to the most participants a pool has), else the cores
    this process may run on."""
    return int_knob(WORKERS_ENV, _usable_cores(), 1, WorkerPool.MAX_THREADS + 1)


def _usable_cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


class WorkerPool:
    """N-1 native threads serving one grid at a time (the caller is the N-th).

    Callers pass `address` to the native grid and plan runners, which take the pool for
    one grid at a time (a caller that finds it taken runs its grid inline). Threads are
    added on demand by `ensure(workers)` (a thread added while a grid runs joins only later
    grids) and live until the process exits; after fork() the child's copy of the block
    says no threads (grids run inline) and the child grows a pool of its own.
    """

    MAX_THREADS = 254

    def __init__(self, runtime: NativeRuntime) -> None:
        self._runtime = runtime
        raw = ctypes.create_string_buffer(POOL_SIZE + 64)
        self._raw = raw
        self.address = (ctypes.addressof(raw) + 63) & ~63
        self.block = block = PoolBlock.from_address(self.address)
        block.spin = int_knob(SPIN_ENV, _DEFAULT_SPIN, 0, _MAX_SPIN)

        self._grow = threading.Lock()
        self._handles: list = []
        self._cpus = _placement_cpus()
        if self._cpus:
            block.cpus[: len(self._cpus)] = self._cpus
            every = block.all_cpus
            for cpu in self._cpus:
                every[cpu // 64] |= 1 << (cpu % 64)
            block.ncpus = len(self._cpus)

    @property
    def threads(self) -> int:
        return self.block.threads

    def ensure(self, workers: int) -> None:
        """Starts threads until `workers` participants (caller included) can run."""
        wanted = min(max(0, workers - 1), self.MAX_THREADS)
        block = self.block
        if block.threads >= wanted:
            return
        with self._grow:
            libc = ctypes.CDLL(None, use_errno=True)
            create = libc.pthread_create
            create.argtypes = [
                ctypes.c_void_p,
                ctypes.c_void_p,
                ctypes.c_void_p,
                ctypes.c_void_p,
            ]
            create.restype = ctypes.c_int
            while block.threads < wanted:
                handle = ctypes.c_uint64()
                rc = create(ctypes.byref(handle), None, self._runtime.worker_address, self.address)
                if rc != 0:
                    break  # run with the threads we have
                libc.pthread_detach(handle)
                if hasattr(libc, "pthread_setname_np"):  # (seen in top -H, /proc)
                    libc.pthread_setname_np(handle, THREAD_NAME)
                self._handles.append(handle)
                self._pin(libc, handle)
                # Only the Python side changes the count (under _grow, outside any grid).
                block.threads += 1

    def _pin(self, libc, handle) -> None:
        """Pins a new worker to a CPU that has no worker and is not the caller's, while
        every worker so far is pinned (native code keeps them off the caller's CPU)."""
        block = self.block
        k = block.pinned
        if not self._cpus or k != len(self._handles) - 1:
            return
        taken = set(block.worker_cpu[:k]) | {libc.sched_getcpu()}
        free = [cpu for cpu in self._cpus if cpu not in taken]
        if not free:
            return
        mask = (ctypes.c_uint64 * (AFFINITY_MASK_BYTES // 8))()
        mask[free[0] // 64] = 1 << (free[0] % 64)
        setaffinity = libc.pthread_setaffinity_np
        setaffinity.argtypes = [ctypes.c_uint64, ctypes.c_size_t, ctypes.c_void_p]
        if setaffinity(handle.value, AFFINITY_MASK_BYTES, mask) != 0:
            return
        block.worker_cpu[k] = free[0]
        block.worker_thread[k] = handle.value
        block.pinned = k + 1  # (after the entry: native code reads entries below it)


# The pool of a context's first device (and of any device made on its own): `pools[0]`,
# kept under its own name for the runners' check per call (`pool.first_pool is not ...`).
first_pool: WorkerPool | None = None
# Every pool by its device ordinal (`LocalDevice.pool_ordinal`); the k-th device of a
# multi-device context takes pool k, as each --device of iree-run-module gets a task
# executor of its own. Pools live until the process exits (their threads never end), so
# they are kept by ordinal, not by device: contexts made one after another reuse them.
_pools: list = [None]
_pools_lock = threading.Lock()


def worker_pool(workers: int, ordinal: int = 0) -> WorkerPool | None:
    """The process's pool for devices of `ordinal` (0: the first device of a context), with
    room for `workers` participants (None: no native code, or `workers` <= 1)."""
    global first_pool
    if workers <= 1:
        return None
    runtime = native_runtime()
    if runtime is None:
        return None
    if ordinal:
        return _other_pool(runtime, workers, ordinal)
    if first_pool is None:
        with _pools_lock:
            if first_pool is None:
                pool = WorkerPool(runtime)
                # Pool threads run (spin in) the JIT code and read the pool block until
                # the process ends: neither may be freed at interpreter shutdown, so the
                # pool and the runtime it holds are never released.
                ctypes.pythonapi.Py_IncRef(ctypes.py_object(pool))
                first_pool = _pools[0] = pool
    pool = first_pool
    if pool.threads < min(workers - 1, WorkerPool.MAX_THREADS):
        pool.ensure(workers)
    return pool


def _other_pool(runtime: NativeRuntime, workers: int, ordinal: int) -> WorkerPool:
    """worker_pool for a device after a context's first (made at its first pooled grid)."""
    if ordinal >= len(_pools) or _pools[ordinal] is None:
        with _pools_lock:
            while len(_pools) <= ordinal:
                _pools.append(None)
            if _pools[ordinal] is None:
                pool = WorkerPool(runtime)
                ctypes.pythonapi.Py_IncRef(ctypes.py_object(pool))  # (as worker_pool's)
                _pools[ordinal] = pool
    pool = _pools[ordinal]
    if pool.threads < min(workers - 1, WorkerPool.MAX_THREADS):
        pool.ensure(workers)
    return pool


def current_pool(ordinal: int) -> WorkerPool | None:
    """The pool of device `ordinal` now (None before its first pooled grid, or after a
    fork() until the child's first): what plans compare the pool they hold against."""
    return _pools[ordinal] if ordinal < len(_pools) else None


def _forget_pool_in_child() -> None:
    global first_pool
    for k, pool in enumerate(_pools):
        if pool is not None:
            # The threads did not survive fork(): the child's copy of the block says so,
            # for runners that kept its address, and a new pool starts its own threads.
            block = pool.block
            block.threads = 0
            block.sleepers = 0
            block.busy = 0
            block.pinned = 0
            _pools[k] = None
    first_pool = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_in_child)

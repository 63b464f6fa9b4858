"""Native plans: a finalized command buffer turned into records one foreign call runs.

`build_plan(commands, workers)` returns a `Plan` or None (the command buffer then runs
command by command in Python, which stays the reference). A plan holds, per dispatch,
the kernel pointer, a prebuilt dispatch state (workgroup size and counts, constants),
binding refs (slot, offset, length) and flags; per fill, copy or update its refs and
data; barriers vanish (execution is serial). `Plan.run(table, workers)` writes the words
of each table entry the plan uses into an array and makes one foreign call
(`pyree_check_run_plan`, native/checks.ll), which checks them, writes the binding-table
array and runs the plan.

What the Python path would check per command is checked here once per execution in
aggregate (per table slot: the furthest byte any ref needs, writability, alignment);
when any aggregate check fails the plan declines (`run` returns False) before touching
memory, and the Python path runs instead and raises the exact error in the exact place.
The checks are native code, not Python written per plan: nothing in runtime_support
compiles source.
Commands whose validity depends on the table in ways the aggregates cannot capture
(whole-buffer transfers through table slots) make the whole command buffer Python-only.

Plans are the fast path, not the HAL object model: hal/command_buffer.py builds one for a
reusable command buffer at its first execution, exec/fast.py and exec/shapes.py build
them for one-shot recordings and segments.
"""

from __future__ import annotations

import ctypes
import struct
from array import array
from functools import partial

from ..errors import StatusCode, VMError
import runtime_support.native.jit as native_jit
import runtime_support.native.pool as native_pool
import runtime_support.loaders.statistics as statistics
from ..loaders.executable import Executable as _NativeExecutable
from ..loaders.kernel_abi import WORKGROUP_STATE
from ..native.layout import (
    CHECK_ARGS,
    DECLINE_ENTRY,
    DECLINE_TABLE,
    D_DS,
    D_LENS,
    D_PTRS,
    ENTRY_WORDS,
    ERR_KERNEL,
    FLAG_INDIRECT,
    FLAG_SEQUENTIAL,
    OP_COPY,
    OP_DISPATCH,
    OP_FILL,
    OP_UPDATE,
    PLAN_ARGS,
)
from ..hal.buffer import WHOLE_BUFFER
from ..hal.binding import BufferRef

_DIRECT = -1  # slot word of a ref that holds an absolute address


class _Unsupported(Exception):
    """This command buffer stays on the Python path."""


class _SlotNeeds:
    __slots__ = ("end", "nonnull", "writable", "align")

    def __init__(self) -> None:
        self.end = 0  # entry length must be >= this
        # a null entry would be an error (transfers, indirect counts); Plan.run declines
        # every null entry a command uses, whatever this says (plan_checks reports it)
        self.nonnull = False
        self.writable = False
        self.align = 1  # entry offset (in its buffer) must be a multiple of this


class Plan:
    def __init__(self, workers: int) -> None:
        self.words = array("q")
        self.count = 0
        self.slots: dict[int, _SlotNeeds] = {}
        self.executables: list = []
        self.names: list[str] = []  # per command: export name, "" for transfers
        self.errors: list = []  # per command: (native executable, ordinal) or None
        self.keep: list = []
        self.workers = max(1, workers)
        self.parallel = False  # some dispatch may have more than one workgroup
        # per dispatch, in order: its u32 constants in the dispatch state (None: none),
        # for runners that write a call's constants before a run (exec/fast.py)
        self.constants: list = []
        self._workers = 1  # the `workers` the runner arguments are set for (parallel plans)
        self._pool = None  # the process's pool they name (a fork() replaces it)
        # whose pool: the device's `pool_ordinal` (native/pool.py worker_pool; 0 is first_pool)
        self.pool_ordinal = 0
        runtime = native_jit.native_runtime()
        self.run_plan = runtime.run_plan_args
        self._check_run_plan = runtime.check_run_plan
        self._check_table = runtime.check_table
        self._token = [True]  # taken while a thread runs the plan (`run`)

    # -- building ------------------------------------------------------------------------

    def _needs(self, slot: int) -> _SlotNeeds:
        needs = self.slots.get(slot)
        if needs is None:
            needs = self.slots[slot] = _SlotNeeds()
        return needs

    def ref(
        self,
        ref,
        *,
        transfer: bool = False,
        writes: bool = False,
        align: int = 1,
        extra_end: int = 0,
    ) -> tuple[int, int, int]:
        """Plan words (slot, offset, length) for a BufferRef; registers its slot needs."""
        buffer, slot, offset, length = ref
        if buffer is not None:
            off, length = buffer.check_range(offset, length, "plan")
            if writes and buffer.readonly:
                raise _Unsupported
            if transfer and (off % align or length % align):
                raise _Unsupported
            if extra_end and off + extra_end > buffer.length:
                raise _Unsupported
            self.keep.append(buffer)
            return _DIRECT, buffer.address + off, length
        if slot < 0 or offset < 0 or length < WHOLE_BUFFER:
            raise _Unsupported
        needs = self._needs(slot)
        if length == WHOLE_BUFFER:
            if transfer:
                raise _Unsupported
            needs.end = max(needs.end, offset)
        else:
            needs.end = max(needs.end, offset + length, offset + extra_end)
        if transfer:
            needs.nonnull = True
            needs.align = max(needs.align, align)
        if writes:
            needs.writable = True
        return slot, offset, length

    def add(self, words, name: str = "", error=None) -> None:
        """Appends one record: `words` is (op, fields...); the length word is inserted."""
        self.words.append(words[0])
        self.words.append(len(words) + 1)
        self.words.extend(words[1:])
        self.names.append(name)
        self.errors.append(error)
        self.count += 1

    def finish(self) -> None:
        if not self.words:
            self.words.append(0)
        slots = max(self.slots, default=-1) + 1
        # (address, length) per slot, written per execution: an array('q') takes item
        # stores at half the cost of a ctypes array, and its storage never moves (fixed size).
        self.table = array("q", bytes(16 * max(1, slots)))
        self.table_address = self.table.buffer_info()[0]
        self.checks = _checks(self.slots)
        self.max_slot = slots - 1
        # The native checks' records (native/layout.py CHECK_*), and the entry words `run`
        # writes per call (ENTRY_*), one struct call for all of them.
        self.check_words = array("q", [
            w for _slot, word, end, _nonnull, writable, align in self.checks
            for w in (word, end, int(writable), align)
        ] or [0])
        self.entries = array("q", bytes(8 * ENTRY_WORDS * max(1, len(self.checks))))
        self._gather = self._gatherer(self.entries)
        self.plan = (ctypes.c_int64 * max(1, len(self.words))).from_buffer(self.words)
        self.plan_address = ctypes.addressof(self.plan)
        self.out = (ctypes.c_int64 * 4)()
        self.out_address = ctypes.addressof(self.out)
        self.executables = list({id(e): e for e in self.executables}.values())
        args = dict.fromkeys(PLAN_ARGS + CHECK_ARGS, 0)
        args.update(plan=self.plan_address, commands=self.count, table=self.table_address)
        args.update(workers=1, wgs=self.wgs_address, nwgs=self.wgs_count, out=self.out_address)
        self.check_address = self.check_words.buffer_info()[0]
        self.entries_address = self.entries.buffer_info()[0]
        args.update(checks=self.check_address, nchecks=len(self.checks),
                    entries=self.entries_address)
        # The runner's arguments as one block (the checks' after them): pool, workers and
        # stats stay (0, 1, 0) between executions, so a one-thread run writes none of them.
        self.args = array("q", args.values())
        self.args_address = self.args.buffer_info()[0]

    # -- running ---------------------------------------------------------------------------

    def run(self, table, workers: int) -> bool:
        """Runs the plan on `table` (a list of (buffer, offset, length) entries): False,
        with nothing done, where the Python path must run instead (an entry fails a check,
        an executable was closed, or another thread is running this plan); a failing
        command raises its error.

        One thread at a time runs a plan (its table and dispatch states are shared): the
        guard is a one-token list, taken by `pop` and given back by `append` (each one C
        call, atomic under the GIL or the list's own lock), about a third of what a Lock's
        `acquire(False)` and `release` cost (acquire parses its arguments by keyword)."""
        try:
            self._token.pop()
        except IndexError:
            return False  # another thread is running this plan
        try:
            for exe in self.executables:
                if exe._closed:  # (its code is unmapped)
                    return False
            gather = self._gather
            if gather is not None:
                if not table:
                    return False  # (_write_entries says why)
                try:
                    gather(table)
                except (AttributeError, IndexError, TypeError, ValueError, struct.error):
                    return False
            if self.parallel:
                # (the first device's pool by name, as ever; a later device's by its ordinal)
                k = self.pool_ordinal
                if workers != self._workers or (
                    native_pool.current_pool(k) if k else native_pool.first_pool
                ) is not self._pool:
                    self._use_workers(workers)
            if statistics.enabled:
                if self._check_table(self.check_address, len(self.checks), self.entries_address,
                                     self.table_address):
                    return False
                self._run_counted()
                return True
            result = self._check_run_plan(self.args_address)
            if result:
                if result < 0:
                    return False  # a check failed (native/layout.py DECLINE_*)
                self._raise(result)
            return True
        finally:
            self._token.append(True)

    def _gatherer(self, entries: array):
        """`gather(table)`: writes the words of the entries of `table` the plan uses into
        `entries` (native/layout.py ENTRY_*, for the native checks); None where no command
        uses the table. Raises what `_write_entries` turns into a decline."""
        if not self.checks:
            return None
        slots = [slot for slot, *_ in self.checks]
        pack = struct.Struct(f"={ENTRY_WORDS * len(slots)}q").pack_into
        if len(slots) <= len(_GATHER):
            return partial(_GATHER[len(slots) - 1], pack, entries, *slots)
        return partial(_gather_n, pack, entries, slots)

    def _write_entries(self, table, entries: array) -> int:
        """`run`'s gathering of `table` (its words written into `entries`): 0, or the
        decline code of a table the native checks cannot be given.

        An absent, empty or short table declines whatever the slots need: IREE's
        submission validation (iree_hal_command_buffer_validate_submission in
        iree/hal/command_buffer_validation.c) rejects a command buffer with bindings run
        without a table of at least its binding count, and a slot without an entry would
        run kernels on null pointers. A null entry (None has no `address`) declines, as
        IREE rejects a slot a command uses without a buffer; so does an entry that is no
        (buffer, offset, length) or whose offset or length is no 64-bit integer
        (struct.error): the Python path raises each one's error."""
        if not table:
            return DECLINE_TABLE
        try:
            self._gatherer(entries)(table)
        except IndexError:
            return DECLINE_TABLE
        except (AttributeError, TypeError, ValueError, struct.error):
            return DECLINE_ENTRY
        return 0

    def check(self, table, image: array) -> int:
        """`run`'s checks of `table`, the words they pass written into `image` (an array
        like `table` of this plan) instead of the plan's table: 0, or a decline code
        (native/layout.py DECLINE_*; `image` partly written). For replays that check a table once
        and run it many times (native steps), and to ask why `run` declines."""
        if len(image) < len(self.table):
            raise ValueError(f"table image of {len(image)} words, {len(self.table)} needed")
        if not self.checks:
            return 0
        entries = array("q", self.entries)  # (not `run`'s own, which its token guards)
        return self._write_entries(table, entries) or self._check_table(
            self.check_address, len(self.checks), entries.buffer_info()[0],
            image.buffer_info()[0],
        )

    def launch(self, workers: int) -> bool:
        """Runs the plan on the native table as it stands (`table`: every slot a command
        uses written and checked by the caller, who also holds the plan's queue, so no
        other thread runs it). False, with nothing done, where an executable was closed;
        a failing command raises its error."""
        if not self.ready(workers):
            return False
        if statistics.enabled:
            self._run_counted()
        else:
            result = self.run_plan(self.args_address)
            if result:
                self._raise(result)
        return True

    def ready(self, workers: int) -> bool:
        """Readies the runner's arguments for runs with `workers` (the caller holds the
        plan's queue): False where an executable was closed (its code is unmapped), and
        the plan must not run. `launch` asks first; exec/native_loops.py once per run of
        a loop's iterations, which run the plan through its argument block."""
        for exe in self.executables:
            if exe._closed:
                return False
        if self.parallel and (
            workers != self._workers
            or native_pool.first_pool is not self._pool and self._pool_moved()
        ):
            self._use_workers(workers)
        return True

    def _use_workers(self, workers: int) -> None:
        """Sets the runner's pool and width for runs with `workers` (kept until either
        changes: the native runner takes the pool per grid, or runs a grid inline while
        another caller's grid holds it)."""
        width = min(workers, self.workers)
        k = self.pool_ordinal
        pool = native_pool.worker_pool(width, k) if width > 1 else None
        self.args[3] = pool.address if pool is not None else 0
        self.args[4] = width if pool is not None else 1
        self._workers, self._pool = workers, native_pool.current_pool(k)

    def _pool_moved(self) -> bool:
        """Whether the pool the runner arguments name is no longer this plan's device's (a
        fork() forgot it). Asked only where it is not native_pool.first_pool (the first
        device's), so a first device's plan checks nothing more than that; a later device's
        always asks."""
        k = self.pool_ordinal
        return not k or native_pool.current_pool(k) is not self._pool

    def _run_counted(self) -> None:
        """A run with per-command times and counts (statistics enabled)."""
        stats = (ctypes.c_int64 * (2 * self.count))()
        self.args[8] = ctypes.addressof(stats)
        try:
            result = self.run_plan(self.args_address)
        finally:
            self.args[8] = 0
        for i, name in enumerate(self.names):
            if stats[2 * i + 1]:
                statistics.record(name, stats[2 * i], stats[2 * i + 1])
        if result:
            self._raise(result)

    def _raise(self, result: int) -> None:
        index, code = result >> 8, result & 0xFF
        executable, ordinal = self.errors[index]
        if code == ERR_KERNEL:
            raise executable.kernel_error(ordinal, self.out[0])
        cx, cy, cz = self.out[0], self.out[1], self.out[2]
        raise VMError(
            StatusCode.OUT_OF_RANGE,
            f"workgroup count ({cx}, {cy}, {cz}) out of range for "
            f"'{executable.exports[ordinal].name}'",
        )


# The entry words of a plan's used table slots, written with one struct call (`pack`).
# A loop over the slots costs more than its loads (3 slots: 0.93 us against 0.39 us
# unrolled, min of 40 interleaved rounds), so the usual few slots have functions of their
# own, written out here; a plan using more slots takes the loop.
def _gather_1(pack, entries, s0, table):
    b0, o0, n0 = table[s0]
    pack(entries, 0, b0.address, b0.length, o0, n0, b0.allocation.readonly)


def _gather_2(pack, entries, s0, s1, table):
    b0, o0, n0 = table[s0]
    b1, o1, n1 = table[s1]
    pack(entries, 0, b0.address, b0.length, o0, n0, b0.allocation.readonly,
         b1.address, b1.length, o1, n1, b1.allocation.readonly)


def _gather_3(pack, entries, s0, s1, s2, table):
    b0, o0, n0 = table[s0]
    b1, o1, n1 = table[s1]
    b2, o2, n2 = table[s2]
    pack(entries, 0, b0.address, b0.length, o0, n0, b0.allocation.readonly,
         b1.address, b1.length, o1, n1, b1.allocation.readonly,
         b2.address, b2.length, o2, n2, b2.allocation.readonly)


def _gather_4(pack, entries, s0, s1, s2, s3, table):
    b0, o0, n0 = table[s0]
    b1, o1, n1 = table[s1]
    b2, o2, n2 = table[s2]
    b3, o3, n3 = table[s3]
    pack(entries, 0, b0.address, b0.length, o0, n0, b0.allocation.readonly,
         b1.address, b1.length, o1, n1, b1.allocation.readonly,
         b2.address, b2.length, o2, n2, b2.allocation.readonly,
         b3.address, b3.length, o3, n3, b3.allocation.readonly)


_GATHER = (_gather_1, _gather_2, _gather_3, _gather_4)


def _gather_n(pack, entries, slots, table):
    words = []
    for slot in slots:
        b, o, n = table[slot]
        words += b.address, b.length, o, n, b.allocation.readonly
    pack(entries, 0, *words)


def build_plan(commands, workers: int, slot_ends: dict[int, int] | None = None) -> Plan | None:
    """A native plan for `commands` (hal/command_buffer.py's FillCommand, UpdateCommand,
    CopyCommand, DispatchCommand), or None when they must run in Python. `slot_ends`: per
    table slot, a length its entry must have beyond what the commands need (runs.py: a
    submission's whole entry)."""
    runtime = native_jit.native_runtime()
    if runtime is None:
        return None
    plan = Plan(workers)
    blocks = []  # (executable, ordinal, counts, constants, record start)
    max_local = _record(plan, commands, blocks)
    if max_local is None:
        return None
    for slot, end in (slot_ends or {}).items():
        needs = plan._needs(slot)
        needs.end = max(needs.end, end)
    _build_states(plan, blocks, max_local)
    plan.finish()
    return plan


def plan_checks(commands) -> tuple | None:
    """`build_plan(commands, 1).checks` (None where that is None), without building the
    plan's native parts: runs.py asks it of each step of a run, whose own plan never runs."""
    if native_jit.native_runtime() is None:
        return None
    plan = Plan(1)
    if _record(plan, commands, []) is None:
        return None
    return _checks(plan.slots)


def _checks(slots: dict) -> tuple:
    """Per slot: (slot, table index, needed end, null fails, read-only fails, alignment)."""
    return tuple(
        (slot, 2 * slot, n.end, n.nonnull, n.writable, n.align) for slot, n in sorted(slots.items())
    )


def _record(plan: Plan, commands, blocks) -> int | None:
    """Appends each command's record to `plan` (and its slot needs): the largest local
    memory a dispatch needs, or None when a command must run in Python."""
    max_local = 0
    try:
        for command in commands:
            kind = type(command).__name__
            if kind == "DispatchCommand":
                max_local = max(max_local, _add_dispatch(plan, command, blocks))
            elif kind == "FillCommand":
                slot, off, length = plan.ref(
                    command.target, transfer=True, writes=True, align=command.pattern_length
                )
                plan.add(
                    (OP_FILL, slot, off, length, command.pattern, command.pattern_length)
                )
            elif kind == "UpdateCommand":
                slot, off, length = plan.ref(command.target, transfer=True, writes=True)
                if length != len(command.data):
                    raise _Unsupported
                data = ctypes.create_string_buffer(bytes(command.data), max(1, len(command.data)))
                plan.keep.append(data)
                plan.add((OP_UPDATE, ctypes.addressof(data), slot, off, length))
            elif kind == "CopyCommand":
                src = plan.ref(command.source, transfer=True)
                dst = plan.ref(command.target, transfer=True, writes=True, extra_end=src[2])
                plan.add((OP_COPY, *src, *dst))
            else:
                raise _Unsupported
    except (_Unsupported, VMError):
        return None
    return max_local


def _add_dispatch(plan: Plan, command, blocks) -> int:
    hal_executable = command.executable
    exe = getattr(hal_executable, "native", None)
    plan.pool_ordinal = getattr(getattr(hal_executable, "device", None), "pool_ordinal", 0)
    if not isinstance(exe, _NativeExecutable) or exe.closed:
        raise _Unsupported
    ordinal = command.ordinal
    if not 0 <= ordinal < len(exe.exports):
        raise _Unsupported
    export = exe.exports[ordinal]
    if len(command.constants) != export.constant_count:
        raise _Unsupported
    if len(command.bindings) != export.binding_count:
        raise _Unsupported
    flags = FLAG_SEQUENTIAL if export.flags & 1 else 0
    if isinstance(command.workgroups, BufferRef):
        cx = cy = cz = 0
        flags |= FLAG_INDIRECT
        iref = plan.ref(command.workgroups, transfer=True)
        if iref[2] < 12:
            raise _Unsupported
    else:
        cx, cy, cz = command.workgroups
        if cx * cy * cz and (cz > 0xFFFF or cx * cy * cz >= 1 << 62):
            raise _Unsupported  # the Python path raises OUT_OF_RANGE (or runs forever)
        iref = (0, 0, 0)
    refs = []
    for ref in command.bindings:
        refs.extend(plan.ref(ref))
    words = [
        OP_DISPATCH,
        exe._functions[ordinal],
        ctypes.addressof(exe._env),
        0,  # dispatch state: set by _build_states
        0,
        0,
        cx,
        cy,
        cz,
        flags,
        export.local_memory_size,
        *iref,
        export.binding_count,
        -1,  # estimated time (ns) inline, kept by the runner (-1: not measured yet)
        -1,  # estimated time (ns) on the worker pool
        -1,  # estimated time (ns) on the pool when its workers were asleep
        0,  # runs
        *refs,
    ]
    if not flags & FLAG_SEQUENTIAL and (flags & FLAG_INDIRECT or cx * cy * cz > 1):
        plan.parallel = True
    blocks.append((exe, ordinal, (cx, cy, cz), command.constants, len(plan.words)))
    plan.add(words, export.name, (exe, ordinal))
    plan.executables.append(exe)
    return export.local_memory_size


def _build_states(plan: Plan, blocks, max_local: int) -> None:
    """One zeroed memory block: every dispatch's state (constants filled in, binding
    arrays patched per run) and the per-worker workgroup states with local memory."""
    offsets, size = [], 0
    for exe, ordinal, _, _, _ in blocks:
        offsets.append(size)
        size += (exe._layouts[ordinal].size + 63) // 64 * 64
    workers = plan.workers
    wgs_offset = size
    size += workers * WORKGROUP_STATE.size
    local_offset = (size + 63) // 64 * 64
    local_stride = (max_local + 63) // 64 * 64
    size = local_offset + local_stride * workers
    memory = ctypes.create_string_buffer(size + 64)
    base = (ctypes.addressof(memory) + 63) & ~63
    view = (ctypes.c_char * size).from_address(base)
    for (exe, ordinal, (cx, cy, cz), constants, start), offset in zip(blocks, offsets):
        layout = exe._layouts[ordinal]
        nb = exe.exports[ordinal].binding_count
        address = base + offset
        layout.pack_into(view, offset, cx, cy, cz, 1, address, *constants, *([0] * (2 * nb)))
        nc = exe.exports[ordinal].constant_count
        plan.constants.append(
            (ctypes.c_uint32 * nc).from_address(address + layout.constants_offset) if nc else None
        )
        plan.words[start + D_DS] = address
        plan.words[start + D_PTRS] = address + layout.ptrs_offset
        plan.words[start + D_LENS] = address + layout.lengths_offset
    for w in range(workers):
        local = base + local_offset + w * local_stride if max_local else 0
        WORKGROUP_STATE.pack_into(view, wgs_offset + w * WORKGROUP_STATE.size, 0, 0, 0, 0, w, local, 0)
    plan.keep.append(memory)
    plan.wgs_address = base + wgs_offset
    plan.wgs_count = workers

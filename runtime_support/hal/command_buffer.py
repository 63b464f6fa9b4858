"""HalCommandBuffer: recorded transfer and dispatch commands, run by queue.execute.

Commands name buffers with buffer refs `(buffer-or-null, slot, offset, length)`
(hal-abi.md §A.3), resolved against the binding table when the command buffer executes,
not when it is recorded. Execution is serial, so barriers are ordering no-ops.

A finalized command buffer runs as a native plan (`plan.py`: one foreign call for all
its commands) whenever the plan can express it and this execution's binding table
passes the plan's checks; otherwise, and as the reference, command by command here.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

from ..errors import StatusCode, VMError
from .binding import Binding, BufferRef
from .buffer import HalBuffer, WHOLE_BUFFER
from .executable import HalExecutable

# Modes (§B.5).
MODE_ONE_SHOT = 0x1
MODE_ALLOW_INLINE_EXECUTION = 0x10
MODE_UNVALIDATED = 0x20
# Categories, and their names as IREE formats a category bitfield (combined names first;
# runtime/src/iree/hal/command_buffer.c iree_hal_command_category_format).
CATEGORY_TRANSFER = 0x1
CATEGORY_DISPATCH = 0x2
_CATEGORY_NAMES = ((0x3, "ANY"), (CATEGORY_TRANSFER, "TRANSFER"), (CATEGORY_DISPATCH, "DISPATCH"))
# Dispatch flags.
DISPATCH_FLAG_DYNAMIC_INDIRECT_PARAMETERS = 0x1
DISPATCH_FLAG_STATIC_INDIRECT_PARAMETERS = 0x2


_tuple_new = tuple.__new__


def format_categories(value: int) -> str:
    """A category bitfield as IREE's iree_bitfield_format writes it: the names whose bits
    are all set, in table order, each taking its bits; what remains as hex with an `h`."""
    parts, rest = [], value & 0xFFFFFFFF
    for bits, name in _CATEGORY_NAMES:
        if rest & bits == bits:
            parts.append(name)
            rest &= ~bits
    if rest:
        parts.append(f"{rest:X}h")
    return "|".join(parts)


def _out_of_range(what: str, message: str) -> VMError:
    return VMError(StatusCode.OUT_OF_RANGE, f"{what}: {message}")


def resolve_ref(
    ref: BufferRef, table: Sequence[Binding] | None, what: str = "buffer ref"
) -> tuple[HalBuffer, int, int] | None:
    """Resolves `ref` to (buffer, offset, length) in that buffer, or None for a null
    binding (no buffer and no table, or a table entry with no buffer)."""
    if ref.buffer is not None:
        offset, length = ref.buffer.check_range(ref.offset, ref.length, what)
        return ref.buffer, offset, length
    if not table:
        return None
    if not 0 <= ref.slot < len(table):
        raise _out_of_range(
            what, f"binding slot {ref.slot} out of range of a {len(table)}-entry table"
        )
    entry = table[ref.slot]
    if entry.buffer is None:
        # As IREE's command buffer validation of a submission's binding table.
        raise VMError(
            StatusCode.INVALID_ARGUMENT,
            f"{what}: binding table slot requires a buffer but none was provided; "
            f"binding table slot {ref.slot}",
        )
    base, base_length = entry.buffer.check_range(
        entry.offset, entry.length, f"{what} (table slot {ref.slot})"
    )
    length = base_length - ref.offset if ref.length == WHOLE_BUFFER else ref.length
    if ref.offset < 0 or length < 0 or ref.offset + length > base_length:
        raise _out_of_range(
            what,
            f"range [{ref.offset}, {ref.offset + length}) out of bounds of table slot "
            f"{ref.slot} ({base_length} bytes)",
        )
    return entry.buffer, base + ref.offset, length


def require_buffer(resolved, what: str):
    if resolved is None:
        raise VMError(StatusCode.INVALID_ARGUMENT, f"{what}: null buffer")
    return resolved


class FillCommand(NamedTuple):
    target: BufferRef
    pattern: int
    pattern_length: int

    def check(self, table):
        resolve_ref(self.target, table, "fill_buffer")

    def execute(self, table, workers):
        self.run_resolved((resolve_ref(self.target, table, "fill_buffer"),), workers)

    def refs(self):
        return (self.target,)

    def run_resolved(self, resolved, workers):
        """execute's work once its refs are resolved (in `refs()` order)."""
        buffer, offset, length = require_buffer(resolved[0], "fill_buffer")
        buffer.fill(offset, length, self.pattern, self.pattern_length)


class UpdateCommand(NamedTuple):
    data: bytes  # captured at record time
    target: BufferRef

    def check(self, table):
        resolve_ref(self.target, table, "update_buffer")

    def execute(self, table, workers):
        self.run_resolved((resolve_ref(self.target, table, "update_buffer"),), workers)

    def refs(self):
        return (self.target,)

    def run_resolved(self, resolved, workers):
        buffer, offset, length = require_buffer(resolved[0], "update_buffer")
        if length != len(self.data):
            raise _out_of_range(
                "update_buffer", f"target range of {length} bytes for {len(self.data)} bytes"
            )
        buffer.write(offset, self.data)


class CopyCommand(NamedTuple):
    source: BufferRef
    target: BufferRef

    def check(self, table):
        resolve_ref(self.source, table, "copy_buffer source")
        resolve_ref(self.target, table, "copy_buffer target")

    def execute(self, table, workers):
        src = resolve_ref(self.source, table, "copy_buffer source")
        dst = resolve_ref(self.target, table, "copy_buffer target")
        self.run_resolved((src, dst), workers)

    def refs(self):
        return (self.source, self.target)

    def run_resolved(self, resolved, workers):
        src, src_off, length = require_buffer(resolved[0], "copy_buffer")
        dst, dst_off, _ = require_buffer(resolved[1], "copy_buffer")
        dst.copy_from(dst_off, src, src_off, length)


class DispatchCommand(NamedTuple):
    executable: object  # HalExecutable
    ordinal: int
    workgroups: tuple[int, int, int] | BufferRef  # a ref: 3 x u32 read at execution
    constants: tuple[int, ...]  # u32
    bindings: tuple[BufferRef, ...]
    flags: int
    # Every binding's address, then every length, where the count and every binding are
    # direct and the executable a HalExecutable: resolved when recorded (a buffer never
    # moves or shrinks), nothing left to resolve or check per execution.
    direct: tuple[int, ...] | None = None

    def check(self, table):
        if self.direct is not None:
            return
        if isinstance(self.workgroups, BufferRef):
            resolve_ref(self.workgroups, table, "dispatch.indirect workgroups")
        for i, ref in enumerate(self.bindings):
            resolve_ref(ref, table, f"dispatch binding {i}")

    def execute(self, table, workers):
        direct = self.direct
        if direct is not None:
            run_direct(self.executable, self.ordinal, self.workgroups, self.constants, direct, workers)
            return
        if isinstance(self.workgroups, BufferRef):
            buffer, offset, _ = require_buffer(
                resolve_ref(self.workgroups, table, "dispatch.indirect workgroups"),
                "dispatch.indirect workgroups",
            )
            counts = tuple(int(v) for v in buffer.bytes_view(offset, 12).view(np.uint32))
        else:
            counts = self.workgroups
        resolved = [resolve_ref(ref, table, f"dispatch binding {i}") for i, ref in enumerate(self.bindings)]
        self._launch(counts, resolved, workers)

    def refs(self):
        """The refs a table-resolved run reads (none where the dispatch is direct; an
        indirect count is not offered to run_resolved: see HalCommandBuffer._table_plan)."""
        return () if self.direct is not None else self.bindings

    def run_resolved(self, resolved, workers):
        if self.direct is not None:
            self.execute(None, workers)
        else:
            self._launch(self.workgroups, resolved, workers)

    def _launch(self, counts, resolved, workers):
        bindings = []
        for r in resolved:
            if r is None:
                bindings.append((0, 0))
            else:
                buffer, offset, length = r
                bindings.append((buffer.address + offset, length))
        if 0 in counts:
            return  # an empty grid launches nothing
        self.executable.dispatch(self.ordinal, counts, self.constants, bindings, workers)


def run_direct(executable, ordinal: int, workgroups, constants, direct, workers: int) -> None:
    """Runs a dispatch recorded with direct bindings (`direct`: every binding's address,
    then every length; `workgroups` masked to u32): nothing left to resolve or check.
    (DispatchCommand.execute, and runtime_support/hal/one_shot.py's fast path.)"""
    if 0 not in workgroups:  # (an empty grid launches nothing)
        inline = executable._flat
        if workers == 1 and inline:  # (the loader's own, as dispatch_flat calls it)
            inline(ordinal, workgroups, constants, direct)
        else:
            executable.dispatch_flat(ordinal, workgroups, constants, direct, workers)


def overwritten_first(commands, slot: int, size: int, offset: int, length: int) -> bool:
    """Whether the first of `commands` that touches binding-table `slot`, holding a new
    `size`-byte buffer at (`offset`, `length`), writes all of its bytes without reading
    any: a fill, update or copy whose target covers the whole buffer (then zero-filling
    it first changes nothing the commands can see). Any other first touch, or none, is
    False."""
    if offset != 0 or (length != WHOLE_BUFFER and length < size):
        return False
    for c in commands:
        refs = _slot_refs(c, slot)
        if not refs:
            continue
        if type(c) not in (FillCommand, UpdateCommand, CopyCommand) or refs != [c.target]:
            return False  # (read as well, or by a command whose writes are unknown)
        ref = c.target
        covered = len(c.data) if type(c) is UpdateCommand else ref.length
        return ref.offset == 0 and (covered == WHOLE_BUFFER or covered >= size)
    return False


def _slot_refs(command, slot: int) -> list:
    """The BufferRefs of `command` (any command type: its fields and tuples of them)
    naming table `slot`."""
    if not isinstance(command, tuple):
        return [None]  # (a command of another kind: treated as touching every slot)
    out = []
    for value in command:
        for ref in value if type(value) is tuple else (value,):
            if type(ref) is BufferRef and ref.buffer is None and ref.slot == slot:
                out.append(ref)
    return out


class CollectiveBatch:
    """Consecutive collectives, started together and waited for together (collectives.py)."""

    __slots__ = ("entries",)

    def __init__(self) -> None:
        self.entries: list[tuple] = []  # (channel, op, param, send ref, recv ref, count)

    def check(self, table):
        for _, op, _, send_ref, recv_ref, _ in self.entries:
            resolve_ref(send_ref, table, f"collective {op} send")
            resolve_ref(recv_ref, table, f"collective {op} recv")

    def execute(self, table, workers):
        from .collectives import Collective, byte_counts, run_batch

        batch = []
        for channel, op, param, send_ref, recv_ref, count in self.entries:
            send_bytes, recv_bytes = byte_counts(op, count, channel.count)
            views = []
            for ref, needed, what in ((send_ref, send_bytes, "send"), (recv_ref, recv_bytes, "recv")):
                resolved = resolve_ref(ref, table, f"collective {op} {what}")
                if resolved is None:
                    if needed and (what == "send" or op.kind not in ("broadcast", "reduce")):
                        raise VMError(StatusCode.INVALID_ARGUMENT, f"collective {op}: no {what} buffer")
                    views.append(None)
                    continue
                buffer, offset, length = resolved
                if length < needed:
                    raise _out_of_range(
                        f"collective {op}", f"{what} range of {length} bytes for {needed} bytes"
                    )
                views.append(buffer.bytes_view(offset, needed) if needed else None)
            batch.append(Collective(channel, op, param, views[0], views[1], count))
        run_batch(batch)


_TABLE_COMMANDS = (FillCommand, UpdateCommand, CopyCommand, DispatchCommand)


def _table_plan(commands) -> list | bool:
    """[(command, refs)] for a finalized command buffer whose commands are all fills,
    updates, copies and dispatches with direct workgroup counts (their refs resolved by
    resolve_ref alone), else False."""
    out = []
    for c in commands:
        if type(c) not in _TABLE_COMMANDS or (type(c) is DispatchCommand and type(c.workgroups) is not tuple):
            return False
        out.append((c, tuple(c.refs())))
    return out


def _run_table_plan(commands, binding_table, workers: int) -> bool:
    """The Python path's execution with a binding table, each table entry checked once
    (resolve_ref checks it per ref, and the path checks every ref before running any
    command, then resolves it again to run): every ref is resolved first as resolve_ref
    would resolve it, and where any of them, or any entry, would be an error or is not a
    plain HalBuffer entry, nothing has run and False says so (the path then runs and
    raises as it does). Else the commands run in order with their resolved refs: True."""
    for entry in binding_table:
        if type(entry) is not tuple and type(entry) is not Binding or len(entry) != 3:
            return False
    n = len(binding_table)
    entries: dict = {}  # slot -> (buffer, offset, length) of the entry, checked
    resolved_all = []
    for command, refs in commands:
        resolved = []
        for ref in refs:
            buffer = ref.buffer
            if buffer is not None:
                if type(buffer) is not HalBuffer:
                    return False
                offset, length = ref.offset, ref.length
                size = buffer.length
                if length == WHOLE_BUFFER:
                    length = size - offset
                if offset < 0 or length < 0 or offset + length > size:
                    return False
                resolved.append((buffer, offset, length))
                continue
            k = ref.slot
            entry = entries.get(k)
            if entry is None:
                if not 0 <= k < n:
                    return False
                buffer, base, base_length = binding_table[k]
                if type(buffer) is not HalBuffer or type(base) is not int or type(base_length) is not int:
                    return False
                size = buffer.length
                if base_length == WHOLE_BUFFER:
                    base_length = size - base
                if base < 0 or base_length < 0 or base + base_length > size:
                    return False
                entry = entries[k] = (buffer, base, base_length)
            buffer, base, base_length = entry
            offset = ref.offset
            length = base_length - offset if ref.length == WHOLE_BUFFER else ref.length
            if offset < 0 or length < 0 or offset + length > base_length:
                return False
            resolved.append((buffer, base + offset, length))
        resolved_all.append(resolved)
    k = 0
    for command, _ in commands:
        command.run_resolved(resolved_all[k], workers)
        k += 1
    return True


class HalCommandBuffer:
    """A `!hal.command_buffer`, created in the recording state."""

    def __init__(
        self, device=None, modes: int = 0, categories: int = 3, binding_capacity: int = 0
    ) -> None:
        if binding_capacity < 0:
            raise VMError(
                StatusCode.INVALID_ARGUMENT, f"negative binding capacity {binding_capacity}"
            )
        self.device = device
        self.modes = modes & 0xFFFFFFFF
        self.categories = categories & 0xFFFFFFFF
        self.binding_capacity = binding_capacity
        # Table slots the commands use: 1 + the highest one (IREE's binding_count).
        self.binding_count = 0
        self.commands: list = []
        self._open_batch: CollectiveBatch | None = None
        self.recording = True
        self.executions = 0
        self.debug_depth = 0
        self._plan = None  # plan.Plan, False (Python only), None (not built yet)
        # The Python path's commands with their refs ([(command, refs)]), where every
        # command resolves its refs the same way (_table_plan); False where not; None: not
        # looked at yet.
        self._table_commands = None

    def __repr__(self) -> str:
        state = "recording" if self.recording else "finalized"
        return f"<HalCommandBuffer {state} {len(self.commands)} commands>"

    @property
    def one_shot(self) -> bool:
        return bool(self.modes & MODE_ONE_SHOT)

    # -- recording ------------------------------------------------------------------------

    def _check_recording(self, what: str, categories: int = 0) -> None:
        """Recording must be open, and the command buffer must have been created with
        every category the operation needs (IREE's command buffer validation: a dispatch
        needs DISPATCH, a transfer TRANSFER), whatever its mode says."""
        if not self.recording:
            raise VMError(
                StatusCode.FAILED_PRECONDITION, f"{what}: command buffer is not recording"
            )
        if self.categories & categories != categories:
            raise VMError(
                StatusCode.FAILED_PRECONDITION,
                f"{what}: operation requires categories {format_categories(categories)} "
                f"but command buffer only supports {format_categories(self.categories)}",
            )

    def _ref(self, buffer, slot: int, offset: int, length: int, what: str) -> BufferRef:
        ref = BufferRef(buffer, slot, offset, length)
        if buffer is not None:
            buffer.check_range(offset, length, what)  # fail early on direct refs
        elif not 0 <= slot < self.binding_capacity:  # capacity 0 included, as IREE's validation
            raise _out_of_range(
                what,
                f"binding slot {slot} out of range of the binding capacity {self.binding_capacity}",
            )
        elif slot >= self.binding_count:
            self.binding_count = slot + 1
        return ref

    def fill(self, target: BufferRef, pattern: int, pattern_length: int) -> None:
        self._check_recording("fill_buffer", CATEGORY_TRANSFER)
        if pattern_length not in (1, 2, 4):
            raise VMError(
                StatusCode.INVALID_ARGUMENT,
                f"fill_buffer: pattern length {pattern_length} not 1, 2 or 4",
            )
        if target.offset % pattern_length or (
            target.length != WHOLE_BUFFER and target.length % pattern_length
        ):
            raise VMError(
                StatusCode.INVALID_ARGUMENT,
                f"fill_buffer: offset {target.offset} and length {target.length} must be "
                f"multiples of the pattern length {pattern_length}",
            )
        target = self._ref(*target, "fill_buffer")
        self.commands.append(FillCommand(target, pattern, pattern_length))
        self._open_batch = None

    def update(self, data, target: BufferRef) -> None:
        """Records a copy of host bytes; `data` is captured (copied) now."""
        self._check_recording("update_buffer", CATEGORY_TRANSFER)
        target = self._ref(*target, "update_buffer")
        self.commands.append(UpdateCommand(bytes(data), target))
        self._open_batch = None

    def copy(self, source: BufferRef, target: BufferRef) -> None:
        self._check_recording("copy_buffer", CATEGORY_TRANSFER)
        source = self._ref(*source, "copy_buffer source")
        target = self._ref(*target, "copy_buffer target")
        self.commands.append(CopyCommand(source, target))
        self._open_batch = None

    def dispatch(
        self, executable, ordinal: int, workgroups, constants, bindings, flags: int = 0
    ) -> None:
        """Records a launch. `workgroups` is (x, y, z) or a BufferRef to 3 x u32;
        `bindings` are BufferRefs."""
        self._check_recording("dispatch", CATEGORY_DISPATCH)
        # (list comprehensions, not generator expressions: dynamic shapes record a
        # command buffer per call)
        if isinstance(workgroups, BufferRef):
            workgroups = self._ref(*workgroups, "dispatch.indirect workgroups")
        else:
            workgroups = tuple([int(v) & 0xFFFFFFFF for v in workgroups])
        refs = tuple([self._ref(*ref, f"dispatch binding {i}") for i, ref in enumerate(bindings)])
        constants = tuple([int(c) & 0xFFFFFFFF for c in constants])
        self.commands.append(DispatchCommand(executable, ordinal, workgroups, constants, refs, flags))
        self._open_batch = None

    def dispatch_span(self, executable, ordinal, x, y, z, constants, span, flags) -> None:
        """`dispatch(executable, ordinal, (x, y, z), constants, bindings, flags)` of the
        hal import's own arguments (counts already masked to u32, constants ints; `span`
        rows (_, slot, buffer, offset, length)) in one pass, the same checks in the same
        order: the per-call path of a one-shot command buffer recorded per call (dynamic
        shapes). (Tuples built with tuple.__new__: a NamedTuple's own __new__ is a Python
        call per row.)"""
        if not self.recording or self.categories & CATEGORY_DISPATCH != CATEGORY_DISPATCH:
            self._check_recording("dispatch", CATEGORY_DISPATCH)
        refs = []
        addresses = []
        lengths = []
        direct = type(executable) is HalExecutable
        i = 0
        for _, slot, buffer, offset, length in span:
            if buffer is not None and 0 <= offset and 0 <= length <= buffer.length - offset:
                refs.append(_tuple_new(BufferRef, (buffer, slot, offset, length)))
                addresses.append(buffer.address + offset)
                lengths.append(length)
            else:  # (a slot, a whole-buffer length, or an error: _ref decides and raises)
                refs.append(self._ref(buffer, slot, offset, length, f"dispatch binding {i}"))
                if buffer is None:
                    direct = False
                else:
                    offset, length = buffer.check_range(offset, length)
                    addresses.append(buffer.address + offset)
                    lengths.append(length)
            i += 1
        self.commands.append(
            _tuple_new(
                DispatchCommand,
                (
                    executable, ordinal, (x, y, z), tuple([c & 0xFFFFFFFF for c in constants]),
                    tuple(refs), flags, (*addresses, *lengths) if direct else None,
                ),
            )
        )
        self._open_batch = None

    def collective(self, channel, op, param: int, send: BufferRef, recv: BufferRef, count: int) -> None:
        """Records a collective (`op`: collectives.CollectiveOp) over `channel`; consecutive
        collectives join one batch, as IREE groups them."""
        self._check_recording("collective", CATEGORY_DISPATCH)
        if count < 0:
            raise VMError(StatusCode.INVALID_ARGUMENT, f"collective {op}: element count {count}")
        if self._open_batch is None:
            self._open_batch = CollectiveBatch()
            self.commands.append(self._open_batch)
        self._open_batch.entries.append((channel, op, param, send, recv, count))

    def execution_barrier(
        self, source_stage_mask: int = 0, target_stage_mask: int = 0, flags: int = 0
    ) -> None:
        self._check_recording("execution_barrier")  # serial execution: nothing to order
        self._open_batch = None  # a barrier ends a batch of collectives

    def begin_debug_group(self, label: str = "") -> None:
        self._check_recording("begin_debug_group")
        self.debug_depth += 1

    def end_debug_group(self) -> None:
        self._check_recording("end_debug_group")
        if self.debug_depth == 0:
            raise VMError(
                StatusCode.FAILED_PRECONDITION, "end_debug_group without begin_debug_group"
            )
        self.debug_depth -= 1

    def finalize(self) -> None:
        self._check_recording("finalize")
        if self.debug_depth:
            raise VMError(StatusCode.FAILED_PRECONDITION, "finalize: unbalanced debug groups")
        self.recording = False

    # -- execution ------------------------------------------------------------------------

    def execute(
        self, binding_table: Sequence[Binding] | None = None, workers: int | None = None
    ) -> None:
        """Runs the commands in order, resolving buffer refs against `binding_table`.
        Dispatches use up to `workers` threads (default: the device's worker count)."""
        plan = self._plan
        if (
            plan is None
            and binding_table is None
            and self.modes & MODE_ONE_SHOT
            and not self.executions
            and not self.recording
            and not self.binding_count
        ):
            # A one-shot command buffer with no table, run for the first time (dynamic
            # shapes record one per call): what the Python path below does for it, whose
            # checks all pass here, without the plan branch or the table checks.
            self.executions = 1
            self._plan = False
            if workers is None:
                workers = getattr(self.device, "worker_count", 1)
            for command in self.commands:
                command.execute(None, workers)
            return
        if plan:
            # Plans exist only for finalized reusable command buffers (neither check below
            # can fail for them) of local devices (which have a worker count): the
            # per-call path.
            self.executions += 1
            if workers is None:
                workers = self.device.worker_count
            if plan.run(binding_table, workers):
                return
        else:
            if workers is None:
                workers = getattr(self.device, "worker_count", 1)
            if self.recording:
                raise VMError(
                    StatusCode.FAILED_PRECONDITION, "execute: command buffer is not finalized"
                )
            if self.one_shot and self.executions:
                raise VMError(
                    StatusCode.FAILED_PRECONDITION,
                    "execute: one-shot command buffer already executed",
                )
            self.executions += 1
            if plan is None:
                # Reusable command buffers (recorded once, replayed per call) become plans;
                # a one-shot one runs once, and building a plan costs more than that run.
                # (The import only then: a one-shot one runs per call.)
                if self.one_shot:
                    plan = self._plan = False
                else:
                    from ..exec.plan import build_plan

                    plan = self._plan = build_plan(self.commands, workers) or False
            if plan and plan.run(binding_table, workers):
                return
        if self.binding_count and not binding_table:
            # As IREE's submission validation (iree_hal_command_buffer_validate_submission):
            # without it the commands would run with null bindings.
            raise VMError(
                StatusCode.INVALID_ARGUMENT,
                f"indirect command buffer requires at least {self.binding_count} bindings but "
                "no binding table was provided",
            )
        if binding_table:
            commands = self._table_commands
            if commands is None:
                commands = self._table_commands = _table_plan(self.commands)
            if commands and _run_table_plan(commands, binding_table, workers):
                return
        table = [Binding(*entry) for entry in binding_table] if binding_table else None
        if table is not None:
            # Every command's table references are checked before any command runs, as
            # IREE validates a submission's binding table: a bad reference in a later
            # command must not let an earlier dispatch run with the rest of the table.
            for command in self.commands:
                command.check(table)
        for command in self.commands:
            command.execute(table, workers)

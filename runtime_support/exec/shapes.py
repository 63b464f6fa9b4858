"""A segment's native plan per shape (segments.py finds the segments): built at a shape's
first call, by stepping a copy of the call's values through the segment's steps (their
imports record into scratch command buffers, allocas become arena places), and run
for every later call of the shape under LocalQueue.hold from its own table words; and
`segment_op`, the op of a segment in a FastProgram: the plan where the call and the shape
allow it, else the segment's steps one by one.
"""

from __future__ import annotations

from ..hal.buffer import ALIGNMENT, WHOLE_BUFFER, HalBuffer, fresh_buffer
from ..hal.command_buffer import BufferRef, FillCommand, HalCommandBuffer
from ..hal.device import LocalDevice
from ..hal.fence import Fence
from ..errors import VMError
from ..hal.queue import internal_error
from .fence_states import DONE, PENDING
from .program import Compute, FailIf
from .segments import EXECUTES, QUEUE_OPS, Segment
from .steps import (
    BufferLoad,
    CommandBufferCopyBuffer,
    CommandBufferCreate,
    CommandBufferDispatch,
    CommandBufferExecutionBarrier,
    CommandBufferFillBuffer,
    CommandBufferFinalize,
    ExecutableLookupFunction,
    DeviceQueueAlloca,
    DeviceQueueDealloca,
    DeviceQueueExecuteIndirect,
    FenceAwait,
    FenceCreate,
    FenceJoin,
)

MAX_PLANS = 16
_M32 = 0xFFFFFFFF
_RECORDING = (CommandBufferCreate, CommandBufferDispatch, CommandBufferExecutionBarrier,
              CommandBufferFillBuffer, CommandBufferCopyBuffer, CommandBufferFinalize)
# The commands a segment plan holds (as fast.py's one-shot plans).
_PLANNABLE = frozenset({"DispatchCommand", "FillCommand", "CopyCommand"})


class _Decline(Exception):
    """This shape of the segment runs step by step."""


class _Aliased(_Decline):
    """This call runs step by step: one buffer comes in under two names (a question of
    this call's buffers, not of the shape: a later call of the shape may build it)."""


class _Alloc:
    """A buffer the segment allocates, while its plan is built: the k-th one it returns
    (`k`), or a transient one (`k` None) at `offset` in arena `arena`."""

    __slots__ = ("k", "arena", "offset", "size")

    def __init__(self, k, arena=None, offset=0, size=0) -> None:
        self.k, self.arena, self.offset, self.size = k, arena, offset, size


class _Shape:
    """A segment's plan for one shape, and what it leaves behind.

    Table slots: one per arena (the transient buffers of one memory type and usage, at
    fixed offsets; the commands' refs into them composed with their rows, checked when
    the plan was built), then one per binding-table row of a buffer from outside or of
    one the segment returns. Every word of the plan's native table that is the same in
    every call (the arenas', explicit lengths) is written once when the shape is built;
    per call only a row's address (and a whole-buffer row's length) is, after the checks
    the plan's runner would make (`outside`)."""

    __slots__ = (
        "plan", "fresh", "fresh_bytes", "arenas", "outside", "results", "await_args", "fences",
        "values", "loads", "outside_signal",
    )

    def __init__(self, plan, fresh, arenas, outside, results, await_args, fences) -> None:
        self.plan = plan
        # per buffer returned: (size, memory types, usage, [(table word, row offset)],
        # [the slots it is read as later])
        self.fresh = fresh
        self.fresh_bytes = 0  # (what a call's allocas count: returned and transient buffers)
        self.arenas = arenas  # the arena buffers (the plan zeroes them first per call)
        # per row of a buffer from outside: (name, table word, offset, length | -1 for
        # the whole buffer, the end the plan needs of a whole-buffer row, writes)
        self.outside = outside
        self.results = results  # (slot, value) per value read later that is the shape's
        self.await_args = await_args  # (timeout, flags) of an await, for its error (or None)
        self.fences = fences  # (name, signalled here) per returned fence the segment makes
        self.values = None  # per dispatch: its value slot (Segment.value_slot), or None
        # per readback: (its value's slot, an arena's storage array, the byte there,
        # length), read after the plan while the queue is held
        self.loads = ()
        # the slot of the caller's fence the segment signals last (a Fence per call), or None
        self.outside_signal = None


# -- building a shape's plan ----------------------------------------------------------------


def build_shape(segment: Segment, env: dict, ops: list, getters: list, states) -> _Shape:
    """The plan of the segment for the values in `env` (a copy is stepped through);
    raises _Decline where this shape must run step by step. `ops[i]`/`getters[i]`: the
    general op and the field getters of the segment's i-th step; `states`: fence_states.py's
    (PENDING, DONE) private fence states."""
    from .plan import build_plan

    pending, done = states
    sim = list(env)
    deps: dict[str, frozenset] = {}  # private fence -> the executions it follows
    fresh: list = []  # (size, types, usage) per buffer the segment returns
    arenas: dict = {}  # (types, usage) -> [arena index, bytes so far]
    rows: list = []  # (slot, name | returned index, offset, length)
    row_slots: dict = {}  # (one slot per distinct row)
    commands: list = []
    executed = 0
    awaited: frozenset = frozenset()
    device = None
    await_args = None
    new_fences: list = []  # returned fences made here: a real Fence each per call
    signalled: list = []  # (returned fence, executions before its signal)
    alloc_of: dict[int, _Alloc] = {}  # id(scratch buffer) -> what it stands for
    keep: list = []  # (the scratch buffers, alive while ids name them)
    recordings: dict[str, list] = {}  # command buffer recorded here -> constants getters
    values: list = []  # per dispatch of the plan: its value slot (Segment.value_slot), or None
    loads: list = []  # (its value's slot, the buffer's _Alloc, offset, length) per readback
    transient_bytes = 0  # (the transient allocas' sizes: counted per call as theirs)
    names = {}  # id(buffer) -> the name it came in as (buffers from outside)
    slot_of = segment.slot
    for name, k in zip(segment.buffer_names, segment.buffers):
        if id(env[k]) in names:
            raise _Aliased  # (one buffer under two names: which one is it per call?)
        names[id(env[k])] = name
    steps = segment.program.steps[segment.first : segment.last + 1]

    def row_of(buffer, offset, length):
        """A binding row (buffer, offset, length) as a slot of the plan: a transient
        buffer's arena at the composed offset ("arena", index, offset, length), or the
        (provisional) slot of a buffer from outside or one the segment returns."""
        alloc = alloc_of.get(id(buffer))
        if alloc is not None and alloc.k is None:
            # (the row's range in its transient buffer, as the import checks it)
            length = alloc.size - offset if length == WHOLE_BUFFER else length
            if offset < 0 or length < 0 or offset + length > alloc.size:
                raise _Decline
            return ("arena", alloc.arena, alloc.offset + offset, length)
        if alloc is not None:
            source = alloc.k
        elif type(buffer) is HalBuffer and id(buffer) in names:
            source = names[id(buffer)]
        else:
            raise _Decline  # (a null or constant row: the general path's checks)
        slot = row_slots.get((source, offset, length))
        if slot is None:  # (numbered after the arenas' slots below)
            slot = row_slots[source, offset, length] = -1 - len(rows)
            rows.append((slot, source, offset, length))
        return slot

    for i, step in enumerate(steps):
        get = getters[i]
        if isinstance(step, Compute):
            ops[i](sim)
            continue
        if isinstance(step, FailIf):
            try:
                ops[i](sim)
            except Exception:  # noqa: BLE001 - the check fails: the general path raises it
                raise _Decline from None
            continue
        kind = type(step)
        if kind is BufferLoad:  # (after the await: find_segments)
            buffer = get["source_buffer"](sim)
            offset, length = get["source_offset"](sim), get["length"](sim)
            alloc = alloc_of.get(id(buffer))
            if (
                alloc is None or alloc.k is not None or type(offset) is not int or type(length) is not int
                or not 1 <= length <= 4 or not 0 <= offset <= alloc.size - length
            ):
                raise _Decline  # (the import raises what it raises)
            loads.append((slot_of(step.out), alloc, offset, length))
            sim[slot_of(step.out)] = 0  # (read per call: nothing in the segment reads it)
            continue
        if kind in _RECORDING or kind is ExecutableLookupFunction:
            # A command buffer recorded here: recorded through the imports into a scratch
            # one (their checks are the general path's), its commands joining the plan.
            try:
                ops[i](sim)
            except Exception:  # noqa: BLE001 - the general path raises it
                raise _Decline from None
            if kind is CommandBufferCreate:
                recordings[step.out] = []
            elif kind is CommandBufferDispatch:
                recordings[step.command_buffer].append(segment.value_slot(step))
            continue
        if kind is FenceCreate or kind in QUEUE_OPS:
            dev = get["device"](sim)
            if type(dev) is not LocalDevice or (device is not None and dev is not device):
                raise _Decline
            device = dev
        if kind is FenceCreate:
            sim[slot_of(step.out)] = pending
            deps[step.out] = frozenset()
            if step.out in segment.public:
                new_fences.append(step.out)
            continue
        if kind is FenceJoin or kind is FenceAwait:
            covered = frozenset()
            for name, value in zip(step.fences, get["fences"](sim)):
                covered |= _follows(name, value, deps, done)
            if kind is FenceJoin:
                sim[slot_of(step.out)] = done
                deps[step.out] = covered
                continue
            if len(covered | awaited) != executed:
                raise _Decline  # (an execution the await does not wait for)
            sim[slot_of(step.out)] = 0  # (a failure raises at the first await after it, as here)
            awaited = covered | awaited  # (the host goes on after these: all that follows does)
            await_args = (get["timeout_millis"](sim), get["flags"](sim))
            continue
        # a queue operation
        signal = step.signal_fence
        to_caller = segment.outside_signal is not None and slot_of(signal) == segment.outside_signal
        if to_caller:  # (the caller's fence, signalled per call after the plan: run_shape)
            if type(sim[slot_of(signal)]) is not Fence:
                raise _Decline
        elif sim[slot_of(signal)] is not pending:
            raise _Decline
        follows = _follows(step.wait_fence, get["wait_fence"](sim), deps, done) | awaited
        if len(follows) != executed:
            raise _Decline  # (not one chain: a failure would not stop it)
        if kind is DeviceQueueAlloca:
            size = get["allocation_size"](sim)
            if get["pool"](sim) != 0 or not 0 <= size:
                raise _Decline
            types, usage = get["memory_types"](sim) & _M32, get["buffer_usage"](sim) & _M32
            if step.out in segment.results:
                alloc = _Alloc(len(fresh))
                fresh.append((size, types, usage))
            else:
                arena = arenas.setdefault((types, usage), [len(arenas), 0])
                alloc = _Alloc(None, arena[0], arena[1], size)
                transient_bytes += size
                arena[1] += -(-size // ALIGNMENT) * ALIGNMENT  # (aligned as a fresh one)
            # (a real buffer while building: the recordings' imports check it as theirs)
            sim[slot_of(step.out)] = scratch = fresh_buffer(size, types, usage, device.allocator)
            alloc_of[id(scratch)] = alloc
            keep.append(scratch)
        elif kind is DeviceQueueDealloca:
            if type(get["buffer"](sim)) is not HalBuffer:
                raise _Decline
        elif kind in EXECUTES:
            cmd = get["command_buffer"](sim)
            recorded = recordings.get(step.command_buffer)  # (recorded here: per call)
            if (
                type(cmd) is not HalCommandBuffer
                or cmd.recording
                or (cmd.one_shot and recorded is None)
                or any(type(c).__name__ not in _PLANNABLE for c in cmd.commands)
            ):
                raise _Decline
            table = []  # per row of this execution: ("arena", index, offset, length) | slot
            if kind is DeviceQueueExecuteIndirect:
                for name, (buffer, offset, length) in zip(
                    (row[0] for row in step.binding_table), get["binding_table"](sim)
                ):
                    table.append(row_of(buffer, offset, length))
            elif cmd.binding_count:
                raise _Decline
            if cmd.binding_count > len(table):
                raise _Decline
            dispatches = [c for c in cmd.commands if type(c).__name__ == "DispatchCommand"]
            if recorded is not None:
                if len(recorded) != len(dispatches):
                    raise _Decline
                values.extend(recorded)  # (this call's constants, written per call)
            else:
                values.extend([None] * len(dispatches))
            for c in cmd.commands:
                if recorded is not None:
                    c = _direct_to_table(c, table, row_of)
                commands.append(_rebased(c, table))
            executed += 1
        if to_caller:
            continue  # (the segment's last step: it follows every execution, checked above)
        deps[signal] = follows | ({executed} if kind in EXECUTES else frozenset())
        sim[slot_of(signal)] = done
        if signal in segment.public:
            signalled.append((signal, executed))
    if any(count != executed for _, count in signalled):
        raise _Decline  # (a returned fence signalled before an execution that may fail)
    # Slots: arenas 0..A-1, then the rows (their provisional numbers -1, -2... mapped).
    count = len(arenas)
    commands = [_numbered(c, count) for c in commands]
    # Each arena zeroed first, as fresh allocas are, by the plan itself (one foreign
    # call less per arena and call). Arena sizes are multiples of ALIGNMENT.
    zeroes = [
        FillCommand(BufferRef(None, index, 0, size), 0, 4)
        for (index, size) in sorted(arenas.values()) if size
    ]
    plan = build_plan(zeroes + commands, device.worker_count)
    if plan is None or len(plan.constants) != len(values):
        raise _Decline
    allocator = device.allocator
    arena_buffers = [None] * count
    for (types, usage), (index, size) in arenas.items():
        arena_buffers[index] = fresh_buffer(size, types, usage, allocator)
    rows = [(count - 1 - slot, source, offset, length) for slot, source, offset, length in rows]
    outside, places = _table_words(plan, arena_buffers, rows, fresh, slot_of)
    results = []
    read = {slot for slot, *_ in loads}
    for name in segment.results:
        if name in new_fences or slot_of(name) in read:
            continue  # (made per call)
        value = sim[slot_of(name)]
        alloc = alloc_of.get(id(value))
        if alloc is not None and alloc.k is not None:
            results.append((slot_of(name), alloc.k, None))
        elif alloc is not None or type(value) is HalCommandBuffer:
            raise _Decline  # (a transient buffer or a recording read later)
        else:
            results.append((slot_of(name), None, value))
    signals = {name for name, _ in signalled}
    fences = [(slot_of(name), name in signals) for name in new_fences]
    slots = [[slot for slot, k, _ in results if k == i] for i in range(len(fresh))]
    fresh = [(*f, p, s) for f, p, s in zip(fresh, places, slots)]
    results = [(slot, value) for slot, k, value in results if k is None]
    shape = _Shape(plan, fresh, arena_buffers, outside, results, await_args, fences)
    shape.outside_signal = segment.outside_signal
    # (what the allocas would count: the returned buffers and the transient ones alike)
    shape.fresh_bytes = sum(f[0] for f in fresh) + transient_bytes
    # Readbacks: from the buffer's place in its arena's storage.
    shape.loads = [
        (slot, arena.allocation.array, arena.offset + alloc.offset + offset, length)
        for slot, alloc, offset, length in loads
        for arena in (arena_buffers[alloc.arena],)
    ]
    shape.values = values if any(v is not None for v in values) else None
    return shape


def _table_words(plan, arenas: list, rows: list, fresh: list, slot_of):
    """Writes the plan's native table words that every call shares and makes the checks
    of the rest, as Plan.run's native checks (exec/plan.py) would per call: an entry's
    range in its buffer, the end the plan's commands need of it, its alignment and
    writability. Checks of what the shape fixes (arenas, returned buffers, offsets,
    explicit lengths) are made here once; a failing one declines the shape (the steps'
    imports raise it). Returns (the per-call checks of the rows of buffers from outside,
    per returned buffer the (word, offset) of each row of it)."""
    needs, table = plan.slots, plan.table
    for slot, arena in enumerate(arenas):
        need = needs.get(slot)
        if need is not None:
            if need.end > arena.length:
                raise _Decline
            table[2 * slot], table[2 * slot + 1] = arena.address, arena.length
    outside: list = []
    places: list = [[] for _ in fresh]
    for slot, source, offset, length in rows:
        need = needs.get(slot)
        if need is None:
            continue  # (no command uses it)
        if offset < 0 or (length < 0 and length != WHOLE_BUFFER) or offset % need.align:
            raise _Decline
        word = 2 * slot
        if type(source) is int:  # a buffer the segment returns: its size is the shape's
            size = fresh[source][0]
            n = size - offset if length == WHOLE_BUFFER else length
            if n < need.end or offset + n > size:
                raise _Decline
            table[word + 1] = n
            places[source].append((word, offset))
        elif length == WHOLE_BUFFER:
            outside.append((slot_of(source), word, offset, -1, need.end, need.writable))
        else:
            if length < need.end:
                raise _Decline
            table[word + 1] = length
            outside.append((slot_of(source), word, offset, length, 0, need.writable))
    return outside, places


def _follows(name, value, deps: dict, done) -> frozenset:
    """The executions a wait on the fence `name` (its value `value`) follows; raises
    _Decline where the wait is not over (a private fence nothing signals, an outside
    fence pending or failed)."""
    if value is None:
        return frozenset()
    if value is done:
        return deps.get(name, frozenset()) if isinstance(name, str) else frozenset()
    if type(value) is Fence and value.reached_now():
        return frozenset()
    raise _Decline


def _rebased(command, table: list):
    """`command` with its table refs moved to the segment's slots: a row of a transient
    buffer becomes its arena's slot at the composed offset (the ref's range checked in
    the row, as resolve_ref checks it), any other row its own (provisional) slot."""
    kind = type(command).__name__
    if kind == "DispatchCommand":
        if isinstance(command.workgroups, BufferRef):
            raise _Decline
        return command._replace(bindings=tuple(_ref(r, table) for r in command.bindings), direct=None)
    if kind == "FillCommand":
        return command._replace(target=_ref(command.target, table))
    if kind == "CopyCommand":
        return command._replace(source=_ref(command.source, table), target=_ref(command.target, table))
    raise _Decline


def _direct_to_table(command, table: list, row_of):
    """A command recorded here (its refs name this call's buffers) with each buffer ref
    a row appended to `table` (the buffer's slot or arena place), so `_rebased` moves
    it as an execution's table ref."""

    def ref(r: BufferRef) -> BufferRef:
        if r.buffer is None:
            raise _Decline  # (a recorded table ref: no binding table here)
        table.append(row_of(r.buffer, 0, WHOLE_BUFFER))
        return BufferRef(None, len(table) - 1, r.offset, r.length)

    kind = type(command).__name__
    if kind == "DispatchCommand":
        return command._replace(bindings=tuple(ref(r) for r in command.bindings))
    if kind == "FillCommand":
        return command._replace(target=ref(command.target))
    if kind == "CopyCommand":
        return command._replace(source=ref(command.source), target=ref(command.target))
    raise _Decline


def _ref(ref: BufferRef, table: list) -> BufferRef:
    if ref.buffer is not None:
        return ref
    if not 0 <= ref.slot < len(table):
        raise _Decline
    row = table[ref.slot]
    if type(row) is int:
        return BufferRef(None, row, ref.offset, ref.length)
    _, arena, base, row_length = row
    length = row_length - ref.offset if ref.length == WHOLE_BUFFER else ref.length
    if ref.offset < 0 or length < 0 or ref.offset + length > row_length:
        raise _Decline
    return BufferRef(None, _ARENA - arena, base + ref.offset, length)


# (arena slots while building: _ARENA - index, below every row's provisional -1, -2..)
_ARENA = -(1 << 40)


def _numbered(command, arenas: int):
    """`command` with provisional slots numbered: arena a -> a, row -1 - r -> arenas + r."""

    def slot(ref):
        if ref.buffer is not None:
            return ref
        s = ref.slot
        s = _ARENA - s if s <= _ARENA // 2 else arenas - 1 - s
        return ref._replace(slot=s)

    kind = type(command).__name__
    if kind == "DispatchCommand":
        return command._replace(bindings=tuple(slot(r) for r in command.bindings))
    if kind == "FillCommand":
        return command._replace(target=slot(command.target))
    return command._replace(source=slot(command.source), target=slot(command.target))


# -- running a shape ------------------------------------------------------------------------


def write_outside_rows(outside, table, env) -> bool:
    """Writes the native table words of a shape's rows of buffers from outside (`outside`:
    _Shape.outside) for the buffers in `env`, after the checks the plan's runner would
    make of them (a HalBuffer, the range, the end the plan needs of a whole-buffer row,
    writability); False where one fails (the words written so far are this call's)."""
    for name, word, offset, length, end, writes in outside:
        buffer = env[name]
        if type(buffer) is not HalBuffer:
            return False
        if length < 0:
            length = buffer.length - offset
            if length < end:
                return False
            table[word + 1] = length
        elif offset + length > buffer.length:
            return False
        if writes and buffer.allocation.readonly:
            return False
        table[word] = buffer.address + offset
    return True


def run_shape(segment: Segment, shape: _Shape, env: dict, await_import, held=None) -> bool:
    """Runs `shape`'s plan for the call's values in `env` (`ready` holds); False (nothing
    done) where another thread holds the queue or a row's checks decline. `held`: the
    queue this thread holds already (a loop call's iterations, exec/host_loops.py): the
    device's queue must be that one, and stays held."""
    device = env[segment.device]
    signal = shape.outside_signal
    if signal is not None and type(env[signal]) is not Fence:
        return False  # (no fence: the steps)
    queue = device.queue
    if held is not None:
        if queue is not held:
            return False
    elif not queue.hold():
        return False
    try:  # (the plan's table is written only while this thread holds its queue)
        plan = shape.plan
        table = plan.table
        if not write_outside_rows(shape.outside, table, env):
            return False
        allocator = device.allocator
        for size, types, usage, places, slots in shape.fresh:
            buffer = fresh_buffer(size, types, usage, allocator)
            for word, offset in places:
                table[word] = buffer.address + offset
            for slot in slots:  # (the names it is read as later)
                env[slot] = buffer
        if shape.values is not None:
            for target, value_slot in zip(plan.constants, shape.values):
                if target is not None and value_slot is not None:
                    indices, get, _ = value_slot
                    if indices is None:
                        target[:] = [v & _M32 for v in get(env)]
                    else:
                        for j, v in zip(indices, get(env)):
                            target[j] = v & _M32
        error = None
        try:
            if not plan.launch(device.worker_count):
                return False  # (an executable was closed: the imports raise it)
        except VMError as exc:
            error = exc
        except Exception as exc:  # noqa: BLE001 - a bug or a native failure: INTERNAL
            error = internal_error("device.queue.execute", exc)
        if error is None:
            for slot, source, start, length in shape.loads:  # (hal.buffer.load, inline)
                if length == 1:
                    env[slot] = source.item(start)
                else:
                    value = int.from_bytes(source[start : start + length].tobytes(), "little")
                    env[slot] = value if value < 0x80000000 else value - 0x100000000
    finally:
        if held is None:
            queue.release()
    finish_shape(shape, env, allocator, error, await_import)
    return True


def finish_shape(shape: _Shape, env, allocator, error, await_import) -> None:
    """What a run of `shape`'s plan leaves behind in `env` after it ran (`error`: its
    failure, or None): the allocas counted, the fences it makes and signals (failed after
    a failure), the values read later; an await in the segment raises the failure."""
    allocator.bytes_allocated += shape.fresh_bytes
    for name, signalled in shape.fences:
        if not signalled:
            env[name] = Fence()
        elif error is None:
            env[name] = Fence.reached()
        else:
            env[name] = fence = Fence()
            fence.fail(error)  # (it follows the failed execution)
    if error is not None and shape.await_args is not None:
        # The chain's await sees the failed execution: the import raises its error.
        fence = Fence()
        fence.fail(error)
        await_import(shape.await_args[0], shape.await_args[1], [fence])
        raise error  # (not reached: an await of a failed fence raises)
    signal = shape.outside_signal
    if signal is not None:  # (after everything, as the queue signals it: or fails it)
        if error is None:
            env[signal].signal()
        else:
            env[signal].fail(error)
    for slot, value in shape.results:
        env[slot] = value



# -- the op of a segment --------------------------------------------------------------------


def segment_op(segment, inner: list, general_ops: list, getters: list, computes: list, await_import):
    """The op of a segment: its plan for this call's shape (built at the shape's first
    call), or its steps' own ops where the call or the shape declines."""
    shapes = segment.shapes
    waits, buffers, device_name, key_of = segment.waits, segment.buffers, segment.device, segment.key_of

    def run_segment(env) -> None:
        # (inline, as run_held below checks them: every wait over, every buffer a
        # HalBuffer; run_shape declines where another thread holds the queue)
        for name in waits:
            fence = env[name]
            if not (fence is None or fence is DONE or (type(fence) is Fence and fence.reached_now())):
                break
        else:
            for name in buffers:
                if type(env[name]) is not HalBuffer:
                    break
            else:
                device = env[device_name]
                if type(device) is LocalDevice:
                    for op in computes:  # (this call's integer results: constants, values read later)
                        op(env)
                    try:
                        key = key_of(env)
                        shape = shapes.get(key)
                    except TypeError:  # (an unhashable value: no shape)
                        shape = key = None
                    if shape is None and key is not None:
                        try:
                            shape = build_shape(segment, env, general_ops, getters, (PENDING, DONE))
                        except _Aliased:
                            shape = None  # (this call's buffers: the shape is not decided)
                        except _Decline:
                            shape = False
                        if shape is not None:
                            shapes[key] = shape
                            if len(shapes) > MAX_PLANS:
                                shapes.popitem(last=False)
                    if shape:
                        if len(shapes) > 1:
                            shapes.move_to_end(key)
                        if run_shape(segment, shape, env, await_import):
                            return
        for op in inner:
            op(env)

    def held_shape(env):
        """The shape a held run of these values would run (their integer ops computed in
        `env`), or None where run_segment would do anything else: a wait not over, an
        operand of another kind, a shape not built."""
        for name in waits:
            fence = env[name]
            if not (fence is None or fence is DONE or (type(fence) is Fence and fence.reached_now())):
                return None
        for name in buffers:
            if type(env[name]) is not HalBuffer:
                return None
        if type(env[device_name]) is not LocalDevice:
            return None
        for op in computes:
            op(env)
        try:
            shape = shapes.get(key_of(env))
        except TypeError:
            return None
        return shape or None

    def run_held(env, queue) -> bool:
        """The segment's plan for a shape built already, `queue` held by this thread (a
        loop call's iterations, exec/host_loops.py); False (nothing done) where
        run_segment would do anything else (held_shape), or where the queue is another
        or a row's checks decline."""
        shape = held_shape(env)
        if shape is None:
            return False
        return run_shape(segment, shape, env, await_import, queue)

    run_segment.held = run_held
    run_segment.held_shape = held_shape
    run_segment.segment = segment
    return run_segment

__all__ = ["MAX_PLANS", "build_shape", "finish_shape", "run_shape", "segment_op", "write_outside_rows"]

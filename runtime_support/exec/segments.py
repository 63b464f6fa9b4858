"""Queue segments: a run of queue steps up to an await, run as one native plan.

A *segment* is a stretch of a queue program made of integer computations, private fence
creations and joins, queue allocas, deallocas, barriers and executions of reusable command
buffers, ending at the `FenceAwait` that waits for them (and the `FailIf` on its status).
IREE writes one per submission (alloca, execute.indirect, await) and one per chain of
them: on the general path each step is an import call, each execution one plan run.

Here the whole segment is one plan (exec/plan.py) of every command of every command buffer
it executes, in order, each execution's binding-table entries table slots of that plan.
The plan is built at the first call of a *shape*: the values of everything the segment
reads except the buffers it binds and the fences it waits on (the device, the command
buffers, sizes, offsets, lengths, scalars); it is kept (MAX_PLANS per segment, least
recently used dropped) with what the segment leaves behind: which buffers it allocates
(sizes, memory types, usage), and the values of what later steps read (statuses 0,
private fences reached, integer results). A later call of the same shape allocates the
buffers, fills the table and runs the plan under `LocalQueue.run_now`.

Fast only where provably the same, decided when the plan is built and checked per call:
- the segment's queue operations form one chain: each waits, through private fences, on
  every execution before it, and the await covers them all; so a failure stops every
  later operation, as the plan does, and the await raises that failure;
- each command buffer is a reusable, finalized HalCommandBuffer whose commands a plan can
  hold; every binding-table row names a buffer; every `FailIf` passes;
- per call: each fence it waits on is reached, each buffer it binds or releases is a
  HalBuffer, the queue is free, and the plan's per-slot checks pass; otherwise it runs
  step by step (fast.py's ops), nothing of it done.
"""

from __future__ import annotations

from collections import OrderedDict
from operator import itemgetter

from ..hal.buffer import ALIGNMENT, WHOLE_BUFFER, HalBuffer, fresh_buffer
from ..hal.command_buffer import BufferRef, FillCommand, HalCommandBuffer
from ..hal.device import LocalDevice
from ..hal.fence import Fence
from ..errors import VMError
from ..hal.queue import internal_error
from .program import Compute, FailIf, fields_read, names_in
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
    DeviceQueueBarrier,
    DeviceQueueDealloca,
    DeviceQueueExecute,
    DeviceQueueExecuteIndirect,
    FenceAwait,
    FenceCreate,
    FenceJoin,
)

MAX_PLANS = 16
_M32 = 0xFFFFFFFF
_QUEUE_OPS = (DeviceQueueAlloca, DeviceQueueDealloca, DeviceQueueBarrier,
              DeviceQueueExecute, DeviceQueueExecuteIndirect)
_EXECUTES = (DeviceQueueExecute, DeviceQueueExecuteIndirect)
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


class Segment:
    """One segment of a program: steps `first`..`last` (indices into program.steps)."""

    def __init__(self, program, first: int, last: int, live_after, public, slot) -> None:
        self.program = program
        # name -> its slot in a call's values list (exec/general.py's _Values.key)
        self.slot = slot
        self.public = public  # (fences the program makes and returns)
        self.first, self.last = first, last
        steps = program.steps[first : last + 1]
        # Each name a step reads, by role: "wait" (a fence waited on: reached per call),
        # "buffer" (bound or released: a HalBuffer per call, a table slot), "value" (a
        # dispatch constant: written into the plan per call) or "key" (everything else:
        # its value decides the plan). An integer op's operands take its result's roles.
        uses: list[tuple[int, object, str]] = []  # (step, value, role)
        for i, step in enumerate(steps):
            if isinstance(step, Compute):
                continue
            if isinstance(step, FailIf):
                uses.append((i, (step.test, step.status), "key"))
                continue
            for p in step.PARAMS:
                value = getattr(step, p)
                if p in ("wait_fence", "fences"):
                    uses.append((i, value, "wait"))
                elif p == "signal_fence":
                    uses.append((i, value, "signal"))
                elif p in ("buffer", "source_buffer", "target_buffer"):
                    uses.append((i, value, "buffer"))
                elif p == "binding_table":
                    for row in value:
                        uses.append((i, row[0], "buffer"))
                        uses.append((i, row[1:], "key"))
                elif p == "bindings":  # (a recorded dispatch's: ordinal, slot, buffer, ...)
                    for row in value:
                        uses.append((i, row[2], "buffer"))
                        uses.append((i, row[:2] + row[3:], "key"))
                elif p == "constants" and type(step) is CommandBufferDispatch:
                    uses.append((i, value, "value"))
                else:
                    uses.append((i, value, "key"))
        roles: dict[str, set] = {}

        def note(value, role) -> None:
            for name in names_in(value):
                roles.setdefault(name, set()).add(role)

        for _, value, role in uses:
            note(value, role)
        for step in reversed(steps):  # (a result's roles flow to the operands)
            if isinstance(step, Compute):
                for role in roles.get(step.out, ()):
                    note(step.args, role)
        made: set[str] = set()
        computed: set[str] = set()
        for step in steps:
            if isinstance(step, Compute):
                for a in step.args:
                    if isinstance(a, str) and a in made and a not in computed:
                        raise ValueError("an integer op of a segment reads a step's result")
                computed.add(step.out)
            outs = getattr(step, "out", None)
            for name in (outs,) if isinstance(outs, str) else outs or ():
                made.add(name)
        external = {name: r for name, r in roles.items() if name not in made}
        device = next(
            (getattr(step, "device") for step in steps if "device" in getattr(step, "PARAMS", ())),
            None,
        )
        if not isinstance(device, str):
            raise ValueError("a segment's device is a value of the program")
        self.device = slot(device)  # (keyed: a shape's device is the same object)
        keyed = sorted(name for name, r in external.items() if "key" in r)
        if device not in keyed:
            keyed.append(device)
        self.waits = [slot(name) for name in sorted(n for n, r in external.items() if "wait" in r)]
        # The caller's fence the segment's last step signals (find_segments), or None.
        outside = [name for name, r in external.items() if "signal" in r]
        if len(outside) > 1 or any(external[name] != {"signal"} for name in outside):
            raise ValueError("a caller's fence read as more than the segment's last signal")
        self.outside_signal = slot(outside[0]) if outside else None
        self.buffer_names = sorted(name for name, r in external.items() if "buffer" in r)
        self.buffers = [slot(name) for name in self.buffer_names]
        keys = [slot(name) for name in keyed]
        self.key_slots = frozenset(keys)  # (exec/loops.py: a carried input must not be one)
        self.key_of = itemgetter(*keys) if len(keys) > 1 else itemgetter(keys[0])
        # An integer result of keyed values only is the same in every call of a shape:
        # the plan holds it (a dispatch constant baked in, a value read later kept with
        # the shape); only the others are computed and written per call.
        determined = set(keyed)
        for step in steps:
            if isinstance(step, Compute) and all(
                not isinstance(a, str) or a in determined for a in step.args
            ):
                determined.add(step.out)
        self.determined = determined
        self.results = sorted(n for n in (made - computed) | (computed & determined) if n in live_after)
        # Per call, before the plan: the integer ops whose results are this call's values
        # (dispatch constants, values read later) and not the shape's.
        needed = {n for n in made if n in live_after} - determined  # (the segment's own names are asked)
        for step in steps:  # (a dispatch's constants are written together, or not at all)
            if type(step) is CommandBufferDispatch:
                needed.update(v for _, v in self._varying(step))
        wanted = []
        for i in range(len(steps) - 1, -1, -1):
            step = steps[i]
            if isinstance(step, Compute) and step.out in needed:
                wanted.append(first + i)
                needed.update(a for a in step.args if isinstance(a, str))
        self.computes = wanted[::-1]
        self.shapes: OrderedDict = OrderedDict()

    def _varying(self, dispatch) -> list[tuple[int, str]]:
        """(index, name) of each of a recorded dispatch's constants whose value is this
        call's (the others are the shape's: its plan holds them)."""
        return [
            (j, v) for j, v in enumerate(dispatch.constants)
            if isinstance(v, str) and v not in self.determined
        ]

    def value_slot(self, dispatch):
        """What a call writes of a recorded dispatch's constants: None (nothing: all are
        the shape's), or (their indices, or None for all of them, a getter of their values)."""
        varying = self._varying(dispatch)
        if not varying:
            return None
        keys = [self.slot(v) for _, v in varying]
        get = itemgetter(*keys) if len(keys) > 1 else (lambda env, k=keys[0]: (env[k],))
        if len(varying) == len(dispatch.constants):
            return None, get
        return [j for j, _ in varying], get


def find_segments(program, spans: list, private: set[str], own, slot) -> list[Segment]:
    """The program's segments: maximal runs of segment steps (through the hal module's own
    imports: `own(step)`), awaits and fail checks, up to the last await (or the fail
    check after it) or the last queue operation signalling a fence the program returns,
    with at least one execution. `spans`: (create, members, execute) of each command
    buffer the program records and submits once: inside a segment only whole."""
    steps = program.steps
    public = made_fences(program) - private  # (fences made here and returned)
    fences = private | public
    inputs = set(program.inputs)
    reads = _LastReads(program)
    recorded = {k: span for span in spans for k in (span[0], *span[1], span[2])}
    out = []
    k, n = 0, len(steps)
    while k < n:
        first = end = k
        last = None  # (where the segment can end)
        while end < n:
            step = steps[end]
            if end in recorded or type(step) is ExecutableLookupFunction:
                if not own(step):
                    break
                if end in recorded and type(step) in _QUEUE_OPS and step.signal_fence in public:
                    last = end
                if end in recorded and _signals_outside(step, inputs):
                    last = end
                    break  # (the caller's fence: signalled after everything before it)
            elif type(step) is FenceAwait:
                if not (own(step) and isinstance(step.out, str)):
                    break
                if not any(
                    isinstance(f, str) and f in fences and _made_in(steps, first, end, f)
                    for f in step.fences
                ):
                    break  # (it waits on no fence of the run: it ends before it)
                last = end
            elif isinstance(step, FailIf):
                if last == end - 1 and type(steps[end - 1]) is FenceAwait:
                    last = end
            elif type(step) is BufferLoad:
                # A readback right after the await of a buffer the run allocates and
                # nothing reads later: read by the plan's call while it holds the queue,
                # from the buffer's place in an arena (it is transient then).
                if not (
                    last == end - 1 and own(step) and isinstance(step.out, str)
                    and _allocated_in(steps, first, end, step.source_buffer)
                    and step.source_buffer not in reads.after(end)
                ):
                    break
                last = end
            elif _inner(step, private, fences, own):
                if type(step) in _QUEUE_OPS and step.signal_fence in public:
                    last = end
            elif own(step) and _signals_outside(step, inputs):
                last = end
                break  # (the caller's fence: signalled after everything before it)
            else:
                break
            end += 1
        whole = last is not None and all(
            first <= j <= last
            for i in range(first, last + 1) if i in recorded
            for j in (recorded[i][0], *recorded[i][1], recorded[i][2])
        )
        if whole and any(type(steps[j]) in _EXECUTES for j in range(first, last + 1)):
            try:
                out.append(Segment(program, first, last, reads.after(last), public, slot))
            except ValueError:  # (a shape this module does not take: step by step)
                pass
            k = last + 1
        else:
            k = max(end, first + 1)
    return out


def _allocated_in(steps, first: int, end: int, name) -> bool:
    return isinstance(name, str) and any(
        type(steps[j]) is DeviceQueueAlloca and steps[j].out == name for j in range(first, end)
    )


def _made_in(steps, first: int, end: int, name: str) -> bool:
    return any(getattr(steps[j], "out", None) == name for j in range(first, end))


def made_fences(program) -> set[str]:
    """The fences the program makes (creations and joins)."""
    return {
        step.out for step in program.steps
        if type(step) in (FenceCreate, FenceJoin) and isinstance(step.out, str)
    }


def _signals_outside(step, inputs: set[str]) -> bool:
    """Whether `step` is a queue operation signalling a fence the program was given (an
    async export's signal fence, iree-turbine's `main$async`): a segment ends there."""
    return type(step) in _QUEUE_OPS and isinstance(step.signal_fence, str) and step.signal_fence in inputs


def _inner(step, private: set[str], fences: set[str], own) -> bool:
    """Whether `step` can be inside a segment: an integer op, a fence made (joins of
    private ones only), or a queue operation signalling a fence the program makes."""
    if isinstance(step, Compute):
        return True
    if type(step) is FenceJoin:
        return step.out in private and own(step)
    if type(step) is FenceCreate:
        return step.out in fences and own(step)
    if type(step) in _QUEUE_OPS:
        return step.signal_fence in fences and own(step)
    return False


class _LastReads:
    """Which names the steps after a step, or the outputs, read: each name's last read,
    found in one pass over the program (find_segments asks once per segment and per
    readback; a scan of the rest of the program each time made loading a program of
    a thousand dispatches quadratic: minutes)."""

    def __init__(self, program) -> None:
        last: dict[str, int] = {}
        for k, step in enumerate(program.steps):
            for name in names_in(fields_read(step)):
                last[name] = k
        for name in program.outputs:
            last[name] = len(program.steps)
        self._last = last

    def after(self, k: int) -> "_LiveAfter":
        return _LiveAfter(self._last, k)


class _LiveAfter:
    """The names read after step `k` (`name in live`)."""

    __slots__ = ("_last", "_k")

    def __init__(self, last: dict, k: int) -> None:
        self._last, self._k = last, k

    def __contains__(self, name) -> bool:
        return self._last.get(name, -1) > self._k


# -- building a shape's plan ----------------------------------------------------------------


def build_shape(segment: Segment, env: dict, ops: list, getters: list, states) -> _Shape:
    """The plan of the segment for the values in `env` (a copy is stepped through);
    raises _Decline where this shape must run step by step. `ops[i]`/`getters[i]`: the
    general op and the field getters of the segment's i-th step; `states`: fast.py's
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
        if kind is FenceCreate or kind in _QUEUE_OPS:
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
        elif kind in _EXECUTES:
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
        deps[signal] = follows | ({executed} if kind in _EXECUTES else frozenset())
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
                    indices, get = value_slot
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
    if signal is not None:  # (after everything, as the queue signals it: or fails it)
        if error is None:
            env[signal].signal()
        else:
            env[signal].fail(error)
    for slot, value in shape.results:
        env[slot] = value
    return True


__all__ = [
    "MAX_PLANS", "Segment", "build_shape", "find_segments", "made_fences", "run_shape",
    "write_outside_rows",
]

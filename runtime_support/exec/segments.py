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
buffers, sizes, offsets, lengths, scalars); it is kept (shapes.MAX_PLANS per segment, least
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

This module finds the segments of a program (`find_segments`) and reads what each one's
names are to it (`Segment`: waits, buffers, per-call values, the shape's key); shapes.py
builds a shape's plan and runs it, apart because it is the other half of the job: what
is decided per shape and per call, not once per program.
"""

from __future__ import annotations

from collections import OrderedDict
from operator import itemgetter

from .fence_states import made_fences
from .program import Compute, FailIf, fields_read, names_in
from .steps import (
    BufferLoad,
    CommandBufferDispatch,
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

# (the queue operations a segment holds; shapes.py reads them too)
QUEUE_OPS = (DeviceQueueAlloca, DeviceQueueDealloca, DeviceQueueBarrier,
             DeviceQueueExecute, DeviceQueueExecuteIndirect)
EXECUTES = (DeviceQueueExecute, DeviceQueueExecuteIndirect)


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
        the shape's), or (their indices, or None for all of them, a getter of their values,
        the slots it reads)."""
        varying = self._varying(dispatch)
        if not varying:
            return None
        keys = [self.slot(v) for _, v in varying]
        get = itemgetter(*keys) if len(keys) > 1 else (lambda env, k=keys[0]: (env[k],))
        if len(varying) == len(dispatch.constants):
            return None, get, keys
        return [j for j, _ in varying], get, keys


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
    made = _MadeAt(steps)
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
                if end in recorded and type(step) in QUEUE_OPS and step.signal_fence in public:
                    last = end
                if end in recorded and _signals_outside(step, inputs):
                    last = end
                    break  # (the caller's fence: signalled after everything before it)
            elif type(step) is FenceAwait:
                if not (own(step) and isinstance(step.out, str)):
                    break
                if not any(
                    isinstance(f, str) and f in fences and made.within(f, first, end)
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
                    and made.within(step.source_buffer, first, end, DeviceQueueAlloca)
                    and step.source_buffer not in reads.after(end)
                ):
                    break
                last = end
            elif _inner(step, private, fences, own):
                if type(step) in QUEUE_OPS and step.signal_fence in public:
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
        if whole and any(type(steps[j]) in EXECUTES for j in range(first, last + 1)):
            try:
                out.append(Segment(program, first, last, reads.after(last), public, slot))
            except ValueError:  # (a shape this module does not take: step by step)
                pass
            k = last + 1
        else:
            k = max(end, first + 1)
    return out


class _MadeAt:
    """Where each name is made (the steps whose `out` it is), found in one pass: an
    await or a readback asks whether its fence or buffer is made inside the run so far
    (a scan of the run each time made loading a long program quadratic)."""

    def __init__(self, steps) -> None:
        at: dict[str, list[int]] = {}
        for k, step in enumerate(steps):
            out = getattr(step, "out", None)
            if isinstance(out, str):
                at.setdefault(out, []).append(k)
        self._at, self._steps = at, steps

    def within(self, name, first: int, end: int, kind=None) -> bool:
        """Whether a step in [first, end) makes `name` (one of `kind`, where given)."""
        if not isinstance(name, str):
            return False
        for k in self._at.get(name, ()):
            if first <= k < end and (kind is None or type(self._steps[k]) is kind):
                return True
        return False


def _signals_outside(step, inputs: set[str]) -> bool:
    """Whether `step` is a queue operation signalling a fence the program was given (an
    async export's signal fence, iree-turbine's `main$async`): a segment ends there."""
    return type(step) in QUEUE_OPS and isinstance(step.signal_fence, str) and step.signal_fence in inputs


def _inner(step, private: set[str], fences: set[str], own) -> bool:
    """Whether `step` can be inside a segment: an integer op, a fence made (joins of
    private ones only), or a queue operation signalling a fence the program makes."""
    if isinstance(step, Compute):
        return True
    if type(step) is FenceJoin:
        return step.out in private and own(step)
    if type(step) is FenceCreate:
        return step.out in fences and own(step)
    if type(step) in QUEUE_OPS:
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


__all__ = ["EXECUTES", "QUEUE_OPS", "Segment", "find_segments"]

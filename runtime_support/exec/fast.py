"""The fast path of the queue-program executor (docs/design/host-path.md §5.2).

Two things the general path spends its time on are skipped where nothing can tell:

*Private fences.* A fence the program makes (`FenceCreate`, `FenceJoin`) and does not
return is seen by its own steps alone. While a queue step's wait is reached and the
device's queue is free, the step runs here and now, as `LocalQueue` would run it on this
thread, and its private signal fence is not made at all: it is a state (`PENDING`,
`DONE`, or failed with an error) in the values dict. An `Await` of reached states reads
0. Any step this path does not take (another thread runs the queue, a wait is pending,
an operand of an unexpected type, a device that is not a LocalDevice, an import that is
not the hal module's own) first gets real `Fence` objects in the same states for the
private fences it reads, then runs through its import: the general path exactly, from
there on.

*One-shot recordings.* A command buffer recorded and submitted in the program
(`CommandBufferCreate` .. `CommandBufferFinalize`, `DeviceQueueExecute`) is recorded
lazily: its steps are skipped, and at the submission a native plan (exec/plan.py) keyed by
every value the recording reads except the buffers (executables, ordinals, counts,
constants, offsets, lengths, flags) and by which buffer fields name the same buffer runs
under `LocalQueue.run_now`, the buffers filling its binding table. Where it cannot (a
plan declines, the queue is busy, the wait is pending, a new shape) the recording is
replayed through the imports in order and submitted through the import; a miss builds the
plan from that replay's recording for the next call. Plans are bounded (MAX_PLANS per
span, least recently used dropped).

This module puts a FastProgram together and runs the deferred recordings; the parts it
is made of are apart: the private fences' states (fence_states.py), each step's op and
an argument's checks as one op (fast_steps.py), segments (segments.py) and their plans
(shapes.py); bind.py chooses between this path and the general one.
"""

from __future__ import annotations

from collections import OrderedDict

from ..hal.buffer import WHOLE_BUFFER, HalBuffer
from ..hal.command_buffer import BufferRef
from ..hal.device import LocalDevice
from ..hal.fence import Fence
from ..hal.module import HalModule
from ..hal.queue import BUSY
from .fast_steps import CHECKS, HANDLERS, argument_op
from .fence_states import DONE, PENDING, FenceState, materialised, private_fences, ready
from .general import GeneralProgram
from .host_loops import NOT_HELD
from .loops import LoopMode
from .program import Compute, fields_read, names_in
from .segments import find_segments
from .shapes import segment_op
from .steps import (
    CommandBufferCopyBuffer,
    CommandBufferCreate,
    CommandBufferDispatch,
    CommandBufferExecutionBarrier,
    CommandBufferFillBuffer,
    CommandBufferFinalize,
    DeviceQueueExecute,
    DeviceQueueFill,
    FenceAwait,
    FenceCreate,
)

MAX_PLANS = 16
# The steps a program's tail after its one segment may hold (FastProgram.tail).
_TAIL = (Compute, FenceCreate, DeviceQueueFill)

# The steps a deferred recording may hold, and which of each one's fields are buffers.
_DEFERRED = {
    CommandBufferDispatch: (),  # (its buffers are in `bindings`: column 2 of each row)
    CommandBufferExecutionBarrier: (),
    CommandBufferFillBuffer: ("target_buffer",),
    CommandBufferCopyBuffer: ("source_buffer", "target_buffer"),
    CommandBufferFinalize: (),
}
_BINDING_BUFFER = 2  # (ordinal, slot, buffer, offset, length)


class _Span:
    """One command buffer's recording and its submission, within a program."""

    def __init__(self, create: int, members: list[int], execute: int) -> None:
        self.create = create  # step index of CommandBufferCreate
        self.members = members  # the recording steps after it, in order
        self.execute = execute  # step index of DeviceQueueExecute
        self.key_fields: list = []  # getters of every non-buffer value the recording reads
        self.buffer_fields: list = []  # getters of every buffer field, in recording order
        # per dispatch: the getter of its constants, written into the plan per call (a
        # value slot: a greedy decode's step index does not make a plan per step)
        self.value_fields: list = []
        self.plans: OrderedDict = OrderedDict()
        self.fields: dict = {}  # the submission's field getters


def _spans(program) -> list[_Span]:
    """The deferrable recordings: a command buffer created in the program, used only by
    recording steps of _DEFERRED and one DeviceQueueExecute after them, with no binding
    table (its bindings are direct)."""
    out = []
    steps = program.steps
    for i, step in enumerate(steps):
        if type(step) is not CommandBufferCreate or not isinstance(step.out, str):
            continue
        if step.binding_capacity != 0:
            continue
        cmd = step.out
        users = [
            k for k, s in enumerate(steps)
            if k != i and any(getattr(s, p, None) == cmd for p in getattr(s, "PARAMS", ()))
        ]
        members = [k for k in users if type(steps[k]) in _DEFERRED]
        executes = [k for k in users if type(steps[k]) is DeviceQueueExecute]
        if len(executes) != 1 or len(members) + 1 != len(users) or any(k > executes[0] for k in members):
            continue
        if not members or type(steps[members[-1]]) is not CommandBufferFinalize:
            continue
        if cmd in program.outputs:
            continue
        out.append(_Span(i, members, executes[0]))
    return out


def has_fast_path(program) -> bool:
    """Whether `program` has steps the fast path can take: a private fence, a one-shot
    recording it can defer, or a step it can do without its import (CHECKS)."""
    return (
        bool(private_fences(program))
        or bool(_spans(program))
        or any(type(step) in CHECKS for step in program.steps)
    )


def _own(imports: dict, step) -> bool:
    """Whether the import `step` calls is the hal module's own method, whose behaviour
    the handlers of fast_steps.py reproduce (not a tracing wrapper or an override)."""
    bound = imports.get(step.IMPORT)
    owner = getattr(bound, "__self__", None)
    return isinstance(owner, HalModule) and getattr(bound, "__func__", None) is getattr(
        HalModule, HalModule.method_name(step.IMPORT), None
    )


class FastProgram(GeneralProgram):
    """A queue program run with private fences elided and one-shot recordings as cached
    native plans (above), the general path for every step it does not take."""

    def __init__(self, program, imports: dict, rodata) -> None:
        super().__init__(program, imports, rodata)
        private = private_fences(program)
        values = self._values
        self.spans = _spans(program) if _own(imports, DeviceQueueExecute) else []
        deferred = {k for span in self.spans for k in (span.create, *span.members)}
        submits = {span.execute: span for span in self.spans}
        ops: dict[int, object] = {}  # step index -> its op
        made: dict[int, dict] = {}  # step index -> its fields' getters (made once)

        def fields(k: int) -> dict:
            get = made.get(k)
            if get is None:
                step = program.steps[k]
                get = made[k] = {p: values.getter(getattr(step, p)) for p in getattr(step, "PARAMS", ())}
            return get

        for k, (step, _fn, _fetch, _outs) in enumerate(self._steps):
            if k in deferred:
                continue  # (recorded at its submission, if at all)
            reads = dict.fromkeys(
                values.key(n) for n in names_in(fields_read(step)) if n in private
            )
            general = materialised(self._ops[k], tuple(reads))
            span = submits.get(k)
            if span is not None:
                span.fields = fields(k)
                self._prepare(span)
                ops[k] = self._submission(span, general)
                continue
            make = HANDLERS.get(type(step))
            op = None
            if make is not None and _own(imports, step):
                op = make(step, fields(k), private, general, values)
            ops[k] = general if op is None else op
        # Arguments: each one op where its checks pass (IREE's sequence of four imports).
        getters = [fields(k) for k in range(len(program.steps))]
        k = 0
        while k < len(program.steps):
            k += argument_op(program.steps, k, ops, values, getters) or 1
        # Segments (segments.py): one op each, its steps' ops where a call declines.
        await_import = self.await_import = imports.get(FenceAwait.IMPORT)
        recorded = [(span.create, span.members, span.execute) for span in self.spans]
        own = lambda step: _own(imports, step)  # noqa: E731
        segments = find_segments(program, recorded, private, own, values.key)
        for segment in segments:
            indices = range(segment.first, segment.last + 1)
            inner = [ops.pop(k) for k in indices if k in ops]
            getters = [fields(k) for k in indices]
            general_ops = [self._ops[k] for k in indices]
            computes = [self._ops[k] for k in segment.computes]
            ops[segment.first] = segment_op(
                segment, inner, general_ops, getters, computes, await_import
            )
        self._fast_ops = [ops[k] for k in sorted(ops)]
        # A program that is one segment (every step in it): a loop call may run its plan
        # under one hold of the queue for many iterations (exec/host_loops.py, call_held).
        # A program that is one segment and then a tail of integer ops, fences it makes and
        # queue fills (greedy decoding writes each step's token so): no held runs in
        # Python, but a loop call's iterations may run natively (exec/native_loops.py);
        # `tail` is the index of its first step.
        self.whole_segment = None  # (the input position of its device, where it is one)
        self._run_held = None
        self.tail = None
        first = segments[0] if len(segments) == 1 else None
        if (
            first is not None and first.first == 0
            and type(first.device) is int and first.device < len(program.inputs)
        ):
            rest = program.steps[first.last + 1 :]
            if not rest and len(self._fast_ops) == 1:
                self.whole_segment = first.device
                self._run_held = self._fast_ops[0].held
            elif rest and all(type(s) in _TAIL for s in rest):
                self.tail = first.last + 1
            if self.whole_segment is not None or self.tail is not None:
                self._held_shape = self._fast_ops[0].held_shape
                self.segment = first
        # Loop mode (loops.py): a loop's program that is one segment (PYREE_QUEUE_LOOP=0:
        # each step a call).
        self.loop_mode = None
        from ..env_knobs import flag_knob

        if (
            program.carried and flag_knob("PYREE_QUEUE_LOOP", True)
            and len(segments) == 1 and len(self._fast_ops) == 1
            and segments[0].first == 0 and segments[0].last == len(program.steps) - 1
        ):
            computes = [self._ops[k] for k in segments[0].computes]
            self.loop_mode = LoopMode(self, segments[0], computes)
            self.step = self.loop_mode.step

    def __call__(self, *args):
        tail = self._tail
        if tail is None or self._packed or len(args) != self._inputs:
            env = self._env(args)  # (the first call, a packed call or a wrong count)
        else:
            env = list(args)
            env += tail
        for op in self._fast_ops:
            op(env)
        return None if self._outputs is None else self._outputs(env)

    def call_held(self, args: tuple, queue):
        """A call of a program that is one segment (`whole_segment`) with `queue`, its
        device's, held by this thread already (a loop call's iterations after its first):
        the outputs, or NOT_HELD with nothing done where the segment's plan does not run
        for these inputs (the caller releases the queue and calls the program)."""
        env = self._held_values(args)
        if not self._run_held(env, queue):
            return NOT_HELD
        return None if self._outputs is None else self._outputs(env)

    def held_env(self, args: tuple):
        """(the values list, the shape) a held call of these inputs would run (a program
        that is one segment, `whole_segment`, or a segment and a tail), its integer ops
        computed; the shape None where call_held would not run a plan
        (exec/native_loops.py runs the shape's iterations from here)."""
        env = self._held_values(args)
        return env, self._held_shape(env)

    def _held_values(self, args: tuple) -> list:
        """The values list of a call of these inputs, as __call__ makes it (written out
        there: per call)."""
        tail = self._tail
        if tail is None or self._packed or len(args) != self._inputs:
            return self._env(args)
        env = list(args)
        env += tail
        return env

    def resume_general(self, env: list, start: int):
        """Steps `start`.. through their imports (the general path) on the values in
        `env`: the outputs (a native loop's iteration that declined in its tail)."""
        return GeneralProgram.resume(self, env, start)

    def resume(self, env: dict, start: int):
        raise NotImplementedError("a fast program runs whole; GeneralProgram.resume hands over")

    def _submission(self, span: "_Span", general):
        """The op of a deferred recording's submission: its plan, or the recording
        replayed through the imports and the submission's import."""

        def run(env) -> None:
            key, buffers = self._key(span, env)  # (what the recording would hold)
            if self._run_plan(span, env, key, buffers):
                return
            self._replay(span, env, key, buffers)
            general(env)

        return run

    def _prepare(self, span: _Span) -> None:
        """The getters of the recording's values: buffers and dispatch constants apart
        from the rest, every span flattened into its items (so the key is a flat tuple);
        literal values left out (the same in every call)."""
        steps = self.program.steps
        for k in [span.create, *span.members]:
            step = steps[k]
            buffers = _DEFERRED.get(type(step), ())
            for name in step.PARAMS:
                value = getattr(step, name)
                if name == "command_buffer":
                    continue  # (the deferred command buffer itself)
                if name in buffers:
                    span.buffer_fields.append(self._values.getter(value))
                elif name == "constants" and type(step) is CommandBufferDispatch:
                    span.value_fields.append(self._values.getter(value))
                elif name == "bindings" and type(step) is CommandBufferDispatch:
                    for row in value:
                        for j, v in enumerate(row):
                            if j == _BINDING_BUFFER:
                                span.buffer_fields.append(self._values.getter(v))
                            else:
                                self._key_field(span, v)
                else:
                    self._key_field(span, value)

    def _key_field(self, span: _Span, value) -> None:
        if isinstance(value, str):
            span.key_fields.append(self._values.getter(value))
        elif isinstance(value, tuple):
            for v in value:
                self._key_field(span, v)

    # -- running -----------------------------------------------------------------------

    def _replay(self, span: _Span, env: dict, key, buffers) -> None:
        """The deferred recording, through the imports (the general path's calls, in
        order); a plan for the next call of this shape (`key`) is built from it."""
        for k in [span.create, *span.members]:
            self._ops[k](env)
        if key is not None and key not in span.plans:
            cmd = env[self._values.key(self.program.steps[span.create].out)]
            plan = _plan_of(cmd, buffers)
            if plan and len(plan.constants) != len(span.value_fields):
                plan = False  # (its dispatches are not the recording's steps one for one)
            span.plans[key] = plan
            if len(span.plans) > MAX_PLANS:
                span.plans.popitem(last=False)

    @staticmethod
    def _key(span: _Span, env: dict):
        """(key, distinct buffers) of this call's recording, or (None, None) where a
        buffer field holds something other than a buffer."""
        buffers: list = []
        index: dict[int, int] = {}
        layout = []
        for get in span.buffer_fields:
            b = get(env)
            if type(b) is not HalBuffer:
                return None, None
            slot = index.get(id(b))
            if slot is None:
                slot = index[id(b)] = len(buffers)
                buffers.append(b)
            layout.append(slot)
        return (tuple(layout), *[get(env) for get in span.key_fields]), buffers

    def _run_plan(self, span: _Span, env: dict, key, buffers) -> bool:
        """The submission as a native plan run now; False where it must go the general way
        (the command buffer was never made)."""
        get = span.fields
        device, wait = get["device"](env), get["wait_fence"](env)
        if type(device) is not LocalDevice or not ready(wait) or key is None:
            return False
        signal_name = self._values.key(self.program.steps[span.execute].signal_fence)
        signal = get["signal_fence"](env)
        if signal is not None and type(signal) is not Fence and signal is not PENDING:
            return False
        plan = span.plans.get(key)
        if not plan:
            return False
        span.plans.move_to_end(key)
        table = [(b, 0, WHOLE_BUFFER) for b in buffers]
        constants = [get(env) for get in span.value_fields]
        ran = []
        error = device.queue.run_now(
            _run, plan, (table, device.worker_count, ran, constants), "device.queue.execute"
        )
        if error is BUSY or (error is None and not ran):
            return False  # (the queue was busy, or the plan declined: nothing ran)
        if signal is PENDING:
            env[signal_name] = DONE if error is None else FenceState(error)
        elif signal is not None:
            if error is None:
                signal.signal()
            else:
                signal.fail(error)
        elif error is not None:
            raise error
        return True


def _run(plan, packed) -> None:
    """(Under the queue:) this call's dispatch constants written, the plan run."""
    table, workers, ran, constants = packed
    for target, values in zip(plan.constants, constants):
        if target is not None:
            target[:] = [v & 0xFFFFFFFF for v in values]
    if plan.run(table, workers):
        ran.append(True)


def _plan_of(cmd, buffers):
    """A native plan of `cmd`'s commands with each buffer a binding-table slot (its index
    in `buffers`), or False where the commands cannot be one (the general path then)."""
    from .plan import build_plan

    slots = {id(b): k for k, b in enumerate(buffers)}
    commands = []
    try:
        for c in getattr(cmd, "commands", ()):
            kind = type(c).__name__
            if kind == "DispatchCommand":
                if isinstance(c.workgroups, BufferRef):
                    return False
                c = c._replace(bindings=tuple(_slot(r, slots) for r in c.bindings), direct=None)
            elif kind == "FillCommand":
                c = c._replace(target=_slot(c.target, slots))
            elif kind == "CopyCommand":
                c = c._replace(source=_slot(c.source, slots), target=_slot(c.target, slots))
            else:
                return False
            commands.append(c)
    except KeyError:  # (a buffer the recording holds that no field named)
        return False
    device = getattr(cmd, "device", None)
    return build_plan(commands, getattr(device, "worker_count", 1)) or False


def _slot(ref: BufferRef, slots: dict) -> BufferRef:
    if ref.buffer is None:
        raise KeyError(ref.slot)
    return BufferRef(None, slots[id(ref.buffer)], ref.offset, ref.length)


__all__ = ["FastProgram", "MAX_PLANS", "has_fast_path"]

"""The fast path of the queue-program executor: one-shot command buffers as cached native plans.

A queue program that records a command buffer and submits it (`CommandBufferCreate` ..
`CommandBufferFinalize`, `DeviceQueueExecute`) spends the general path's time on the
recording: one import call per dispatch, each validating its bindings, then the commands
run one by one. Here the recording is *deferred*: the steps that only build the command
buffer are skipped, and at its `DeviceQueueExecute` the executor looks up a native plan
(hal/plan.py) for what the recording would have held. The plan is keyed by every value the
recording reads except the buffers (executables, function ordinals, counts, constants,
offsets, lengths, flags) and by which buffer fields name the same buffer; the buffers fill
the plan's binding table (one slot per distinct buffer). Everything else (allocations,
fences, waits, checks, reads) runs through the imports as on the general path.

Fast only where provably the same:
- the plan runs only where the submission could run at once: its wait fence reached, and
  the device's queue free (`LocalQueue.run_now`); the signal fence is signaled (or failed
  with the plan's error) as the queue would;
- the plan's per-slot checks (range, writability, alignment) run before any command;
- in every other case (a plan declines, the queue is busy, the wait fence is pending,
  the device is not a local one) the deferred steps are replayed through the imports in
  their order, with the values they would have had, and the submission goes through the
  `hal.device.queue.execute` import: the general path exactly. A miss builds the plan
  from that replay's recording, for the next call.

The plans of a program are bounded (MAX_PLANS per span, least recently used dropped).
"""

from __future__ import annotations

from collections import OrderedDict

from ..hal.buffer import WHOLE_BUFFER, HalBuffer
from ..hal.command_buffer import BufferRef
from ..hal.fence import REACHED
from ..hal.queue import BUSY
from .general import GeneralProgram, run_step
from .steps import (
    CommandBufferCopyBuffer,
    CommandBufferCreate,
    CommandBufferDispatch,
    CommandBufferExecutionBarrier,
    CommandBufferFillBuffer,
    CommandBufferFinalize,
    DeviceQueueExecute,
)

MAX_PLANS = 16

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
        self.plans: OrderedDict = OrderedDict()


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
    """Whether `program` records a command buffer the fast path can defer."""
    return bool(_spans(program))


class FastProgram(GeneralProgram):
    """A queue program whose one-shot recordings run as cached native plans (above)."""

    def __init__(self, program, imports: dict, rodata) -> None:
        super().__init__(program, imports, rodata)
        self.spans = _spans(program)
        self._deferred: dict[int, _Span] = {}
        self._submit: dict[int, _Span] = {}
        for span in self.spans:
            self._prepare(span)
            self._deferred[span.create] = span
            for k in span.members:
                self._deferred[k] = span
            self._submit[span.execute] = span

    def _prepare(self, span: _Span) -> None:
        """The getters of the recording's values: buffers apart from the rest, every
        span flattened into its items (so the key is a flat tuple); constants left out
        (the same in every call)."""
        steps = self.program.steps
        for k in [span.create, *span.members]:
            step = steps[k]
            buffers = _DEFERRED.get(type(step), ())
            for name in step.PARAMS:
                value = getattr(step, name)
                if name == "command_buffer":
                    continue  # (the deferred command buffer itself)
                if name in buffers:
                    span.buffer_fields.append(self._get(value))
                elif name == "bindings" and type(step) is CommandBufferDispatch:
                    for row in value:
                        for j, v in enumerate(row):
                            if j == _BINDING_BUFFER:
                                span.buffer_fields.append(self._get(v))
                            else:
                                self._key_field(span, v)
                else:
                    self._key_field(span, value)

    def _key_field(self, span: _Span, value) -> None:
        if isinstance(value, str):
            span.key_fields.append(self._get(value))
        elif isinstance(value, tuple):
            for v in value:
                self._key_field(span, v)

    # -- running -----------------------------------------------------------------------

    def resume(self, env: dict, start: int):
        function = self.program.function
        deferred, submit = self._deferred, self._submit
        for k in range(start, len(self._steps)):
            if k in deferred:
                continue  # (recorded at its submission, if at all)
            entry = self._steps[k]
            span = submit.get(k)
            if span is not None:
                key, buffers = self._key(span, env)  # (what the recording would hold)
                if self._run_plan(span, env, entry[2], key, buffers):
                    continue
                self._replay(span, env, key, buffers)
            run_step(entry, env, function)
        return None if self._outputs is None else self._outputs(env)

    def _replay(self, span: _Span, env: dict, key, buffers) -> None:
        """The deferred recording, through the imports (the general path's calls, in
        order); a plan for the next call of this shape (`key`) is built from it."""
        for k in [span.create, *span.members]:
            _step, fn, args, outs = self._steps[k]
            result = fn(*[a(env) for a in args])
            if isinstance(outs, str):
                env[outs] = result
        if key is not None and key not in span.plans:
            cmd = env[self.program.steps[span.create].out]
            span.plans[key] = _plan_of(cmd, buffers)
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

    def _run_plan(self, span: _Span, env: dict, args, key, buffers) -> bool:
        """The submission as a native plan run now; False where it must go the general way."""
        # (device, queue_affinity, wait_fence, signal_fence, command_buffer, flags): the
        # command buffer was never made
        device, wait, signal = args[0](env), args[2](env), args[3](env)
        if wait is not None and not (wait.state == REACHED or wait.reached_now()):
            return False
        queue = getattr(device, "queue", None)
        workers = getattr(device, "worker_count", None)
        if queue is None or workers is None or not hasattr(queue, "run_now"):
            return False
        if key is None:
            return False
        plan = span.plans.get(key)
        if not plan:
            return False
        span.plans.move_to_end(key)
        table = [(b, 0, WHOLE_BUFFER) for b in buffers]
        ran = []
        error = queue.run_now(_run, plan, (table, workers, ran), "device.queue.execute")
        if error is BUSY or (error is None and not ran):
            return False  # (the queue was busy, or the plan declined: nothing ran)
        if signal is not None:
            if error is None:
                signal.signal()
            else:
                signal.fail(error)
        elif error is not None:
            raise error
        return True


def _run(plan, packed) -> None:
    table, workers, ran = packed
    if plan.run(table, workers):
        ran.append(True)


def _plan_of(cmd, buffers):
    """A native plan of `cmd`'s commands with each buffer a binding-table slot (its index
    in `buffers`), or False where the commands cannot be one (the general path then)."""
    from ..hal.plan import build_plan

    slots = {id(b): k for k, b in enumerate(buffers)}
    commands = []
    try:
        for c in getattr(cmd, "commands", ()):
            kind = type(c).__name__
            if kind == "_Dispatch":
                if isinstance(c.workgroups, BufferRef):
                    return False
                c = c._replace(bindings=tuple(_slot(r, slots) for r in c.bindings), direct=None)
            elif kind == "_Fill":
                c = c._replace(target=_slot(c.target, slots))
            elif kind == "_Copy":
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

"""The fast path of the queue-program executor (docs/design/host-path.md §5.2).

Two things the general path spends its time on are skipped where nothing can tell:

*Private fences.* A fence the program makes (`FenceCreate`, `FenceJoin`) and does not
return is seen by its own steps alone. While a queue step's wait is reached and the
device's queue is free, the step runs here and now, as `LocalQueue` would run it on this
thread, and its private signal fence is not made at all: it is a state (`_PENDING`,
`_DONE`, or failed with an error) in the values dict. An `Await` of reached states reads
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
"""

from __future__ import annotations

from collections import OrderedDict

from ..hal.allocator import HalAllocator
from ..hal.buffer import WHOLE_BUFFER, HalBuffer, fresh_buffer
from ..hal.buffer_view import HalBufferView
from ..hal.command_buffer import BufferRef, HalCommandBuffer
from ..hal.device import LocalDevice
from ..hal.fence import REACHED, Fence
from ..hal.module import HalModule
from ..hal.queue import BUSY
from .general import GeneralProgram
from .host_loops import NOT_HELD
from .loops import LoopMode
from .program import Compute, fields_read, names_in
from .segments import MAX_PLANS as SEGMENT_PLANS
from .segments import _Aliased, _Decline, build_shape, find_segments, made_fences, run_shape
from .steps import (
    BufferAssert,
    BufferLoad,
    BufferViewAssert,
    BufferViewBuffer,
    BufferViewDim,
    DeviceAllocator,
    CommandBufferCopyBuffer,
    CommandBufferCreate,
    CommandBufferDispatch,
    CommandBufferExecutionBarrier,
    CommandBufferFillBuffer,
    CommandBufferFinalize,
    DeviceQueueAlloca,
    DeviceQueueBarrier,
    DeviceQueueDealloca,
    DeviceQueueExecute,
    DeviceQueueExecuteIndirect,
    DeviceQueueFill,
    FenceAwait,
    FenceCreate,
    FenceJoin,
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
    recording it can defer, or a step it can do without its import (_CHECKS)."""
    return (
        bool(_private_fences(program))
        or bool(_spans(program))
        or any(type(step) in _CHECKS for step in program.steps)
    )


# (the steps whose handlers need neither a private fence nor a recording: checks, reads,
# fills)
_CHECKS = (
    BufferViewAssert, BufferViewBuffer, BufferViewDim, DeviceAllocator, BufferAssert, BufferLoad,
    DeviceQueueFill,
)


# -- private fences ------------------------------------------------------------------------


class _State:
    """A private fence's state, in place of a Fence object nobody else can see."""

    __slots__ = ("error",)

    def __init__(self, error=None) -> None:
        self.error = error

    def fence(self) -> Fence:
        """A real fence in this state (for a step that goes through its import)."""
        if self is _DONE:
            return Fence.reached()
        fence = Fence()
        if self is not _PENDING:
            fence.fail(self.error)
        return fence


_PENDING = _State()  # made, not yet signaled
_DONE = _State()  # reached
_M32 = 0xFFFFFFFF
_TABLE_TYPES = frozenset({HalBuffer, type(None)})


def _ready(fence) -> bool:
    """Whether a wait on `fence` (None, a private state or a Fence) is over now."""
    return (
        fence is None
        or fence is _DONE
        or (type(fence) is Fence and (fence.state == REACHED or fence.reached_now()))
    )


def _private_fences(program) -> set[str]:
    """The fences the program makes and does not return: no one else can see them."""
    return made_fences(program) - set(program.outputs)


def _own(imports: dict, step) -> bool:
    """Whether the import `step` calls is the hal module's own method, whose behaviour
    the handlers below reproduce (not a tracing wrapper or an override)."""
    bound = imports.get(step.IMPORT)
    owner = getattr(bound, "__self__", None)
    return isinstance(owner, HalModule) and getattr(bound, "__func__", None) is getattr(
        HalModule, HalModule.method_name(step.IMPORT), None
    )


def _segment_op(segment, inner: list, general_ops: list, getters: list, computes: list, await_import):
    """The op of a segment: its plan for this call's shape (built at the shape's first
    call), or its steps' own ops where the call or the shape declines."""
    shapes = segment.shapes
    waits, buffers, device_name, key_of = segment.waits, segment.buffers, segment.device, segment.key_of

    def run_segment(env) -> None:
        # (inline, as run_held below checks them: every wait over, every buffer a
        # HalBuffer; run_shape declines where another thread holds the queue)
        for name in waits:
            fence = env[name]
            if not (fence is None or fence is _DONE or (type(fence) is Fence and fence.reached_now())):
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
                            shape = build_shape(segment, env, general_ops, getters, (_PENDING, _DONE))
                        except _Aliased:
                            shape = None  # (this call's buffers: the shape is not decided)
                        except _Decline:
                            shape = False
                        if shape is not None:
                            shapes[key] = shape
                            if len(shapes) > SEGMENT_PLANS:
                                shapes.popitem(last=False)
                    if shape:
                        if len(shapes) > 1:
                            shapes.move_to_end(key)
                        if run_shape(segment, shape, env, await_import):
                            return
        for op in inner:
            op(env)

    def run_held(env, queue) -> bool:
        """The segment's plan for a shape built already, `queue` held by this thread (a
        loop call's iterations, exec/host_loops.py); False (nothing done) where
        run_segment would do anything else: a wait not over, an operand of another kind,
        a shape not built, another queue, a row's checks declining."""
        for name in waits:
            fence = env[name]
            if not (fence is None or fence is _DONE or (type(fence) is Fence and fence.reached_now())):
                return False
        for name in buffers:
            if type(env[name]) is not HalBuffer:
                return False
        if type(env[device_name]) is not LocalDevice:
            return False
        for op in computes:
            op(env)
        try:
            shape = shapes.get(key_of(env))
        except TypeError:
            return False
        if not shape:
            return False
        return run_shape(segment, shape, env, await_import, queue)

    run_segment.held = run_held
    return run_segment


def _materialised(op, reads: tuple):
    """`op` (a step through its import) after the private fences it reads get real
    Fence objects in their states."""
    if not reads:
        return op

    def run(env) -> None:
        for slot in reads:
            value = env[slot]
            if type(value) is _State:
                env[slot] = value.fence()
        op(env)

    return run


# The handlers: per step kind, a function (step, field getters, private fences, the
# step's general op) -> the step's op, or None where the step never qualifies. An op does
# the step here where it can and calls `general` otherwise.


def _fence_create(step, get, private, general, values):
    device_of, out = get["device"], values.key(step.out)
    if step.out not in private:
        # A fence the program returns (a loop's carried one): a Fence, as the import
        # makes it for a LocalDevice (its flags a literal: the import reads no more).
        if type(step.flags) is not int:
            return None

        def fence_create_public(env) -> None:
            if type(device_of(env)) is LocalDevice:
                env[out] = Fence()
            else:
                general(env)

        return fence_create_public

    def fence_create(env) -> None:
        if type(device_of(env)) is LocalDevice:
            env[out] = _PENDING
        else:
            general(env)

    return fence_create


def _alloca(step, get, private, general, values):
    signal = step.signal_fence
    if signal not in private:
        return None
    device_of, wait_of, pool_of = get["device"], get["wait_fence"], get["pool"]
    size_of, types_of, usage_of = get["allocation_size"], get["memory_types"], get["buffer_usage"]
    out = values.key(step.out) if isinstance(step.out, str) else None
    signal = values.key(signal)

    def alloca(env) -> None:
        device, wait = device_of(env), wait_of(env)
        if (
            type(device) is LocalDevice
            and env[signal] is _PENDING
            and (wait is None or wait is _DONE or (type(wait) is Fence and wait.reached_now()))
            and pool_of(env) == 0
            and device.queue.idle()  # (else the import queues it behind the other thread)
        ):
            size = size_of(env)
            if size >= 0:
                allocator = device.allocator
                buffer = fresh_buffer(size, types_of(env) & _M32, usage_of(env) & _M32, allocator)
                allocator.bytes_allocated += size
                if out is not None:
                    env[out] = buffer
                env[signal] = _DONE
                return
        general(env)  # (and the import's own error where an operand is wrong)

    return alloca


def _signal_only(step, get, private, general, values):
    """Dealloca (host memory is freed with the object) and barrier: only the signal."""
    signal = step.signal_fence
    if signal not in private:
        return None
    device_of, wait_of, buffer_of = get["device"], get["wait_fence"], get.get("buffer")
    signal = values.key(signal)

    def signal_only(env) -> None:
        device, wait = device_of(env), wait_of(env)
        if (
            type(device) is LocalDevice
            and env[signal] is _PENDING
            and (wait is None or wait is _DONE or (type(wait) is Fence and wait.reached_now()))
            and (buffer_of is None or type(buffer_of(env)) is HalBuffer)
            and device.queue.idle()
        ):
            env[signal] = _DONE
        else:
            general(env)

    return signal_only


_execute_command_buffer = HalCommandBuffer.execute


def _execute(step, get, private, general, values):
    """`queue.execute` and `queue.execute.indirect`: the command buffer run now, as
    LocalQueue runs a submission whose wait is reached, under `run_now`."""
    signal = step.signal_fence
    if signal not in private:
        return None
    device_of, wait_of, cmd_of = get["device"], get["wait_fence"], get["command_buffer"]
    table_of = get.get("binding_table")
    name = step.IMPORT[len("hal."):]
    signal = values.key(signal)

    def execute(env) -> None:
        device, wait, cmd = device_of(env), wait_of(env), cmd_of(env)
        if (
            type(device) is LocalDevice
            and type(cmd) is HalCommandBuffer
            and env[signal] is _PENDING
            and (wait is None or wait is _DONE or (type(wait) is Fence and wait.reached_now()))
        ):
            table = None
            if table_of is not None:
                table = table_of(env)
                for entry in table:
                    if type(entry[0]) not in _TABLE_TYPES:
                        general(env)  # (the import's operand check raises)
                        return
            error = device.queue.run_now(_execute_command_buffer, cmd, table, name)
            if error is not BUSY:
                env[signal] = _DONE if error is None else _State(error)
                return
        general(env)

    return execute


def _fill_now(target: HalBuffer, args: tuple) -> None:
    target.fill(*args)


def _fill(step, get, private, general, values):
    """`queue.fill` on a LocalDevice whose wait is over: the buffer filled now, as
    LocalQueue.call runs a ready submission (`run_signalling`: the queue held), its signal
    signalled or failed as the import's would be (a private one: its state)."""
    device_of, wait_of, signal_of = get["device"], get["wait_fence"], get["signal_fence"]
    target_of, offset_of, length_of = get["target_buffer"], get["target_offset"], get["length"]
    pattern_of, width_of = get["pattern"], get["pattern_length"]
    private_signal = step.signal_fence in private
    signal = values.key(step.signal_fence) if private_signal else None

    def fill(env) -> None:
        device, wait, target = device_of(env), wait_of(env), target_of(env)
        if (
            type(device) is LocalDevice
            and type(target) is HalBuffer
            and (wait is None or wait is _DONE or (type(wait) is Fence and wait.reached_now()))
        ):
            args = (offset_of(env), length_of(env), pattern_of(env), width_of(env))
            queue = device.queue
            if private_signal:
                if env[signal] is _PENDING:
                    error = queue.run_now(_fill_now, target, args, "device.queue.fill")
                    if error is not BUSY:
                        env[signal] = _DONE if error is None else _State(error)
                        return
            else:
                fence = signal_of(env)
                if fence is None or type(fence) is Fence:
                    error = queue.run_signalling(_fill_now, target, args, fence, "device.queue.fill")
                    if error is not BUSY:
                        if error is not None and fence is None:
                            raise error  # (no fence to carry it: the import raises it)
                        return
        general(env)  # (a pending wait, another device, a wrong operand: the import)

    return fill


def _fence_join(step, get, private, general, values):
    if step.out not in private:
        return None
    fences_of, out = get["fences"], values.key(step.out)

    def fence_join(env) -> None:
        fences = fences_of(env)
        for fence in fences:
            if not _ready(fence):
                general(env)
                return
        env[out] = _DONE if any(f is not None for f in fences) else None

    return fence_join


def _fence_await(step, get, private, general, values):
    fences_of = get["fences"]
    out = values.key(step.out) if isinstance(step.out, str) else None

    def fence_await(env) -> None:
        for fence in fences_of(env):
            if not (
                fence is None
                or fence is _DONE
                or (type(fence) is Fence and fence.reached_now())
            ):
                general(env)  # (pending or failed: the import waits or raises)
                return
        if out is not None:
            env[out] = 0

    return fence_await


# Argument checks: each passes here where its operand is of the type the import takes
# and the check holds; otherwise the import runs and raises its own error.


def _folded(step, get, values, names):
    """Per field in `names`: its value where it is a constant of the program (folded at
    bind: most checks compare with literals), else its getter; and whether all were."""
    out, all_known = [], True
    for name in names:
        known, value = values.constant(getattr(step, name))
        out.append(value if known else get[name])
        all_known = all_known and known
    return out, all_known


def _view_matches(view, shape: tuple, element: int, encoding: int) -> bool:
    """What `hal.buffer_view.assert` passes without a word: a view of this shape, element
    type and encoding (anything else goes through the import, which decides)."""
    return (
        type(view) is HalBufferView
        and view.shape == shape
        and view.element_type == element
        and view.encoding_type == encoding
    )


def _buffer_meets(buffer, allocator, length: int, types: int, usage: int) -> bool:
    """What `hal.buffer.assert` passes without a word: a buffer this long, of these
    memory types and usage, and an allocator or none."""
    return (
        type(buffer) is HalBuffer
        and buffer.length >= length
        and buffer.memory_types & types == types
        and buffer.allowed_usage & usage == usage
        and (allocator is None or isinstance(allocator, HalAllocator))
    )


def _literal_or_getter(step, get, values, name, convert):
    """`(value, None)` where the field is a constant of the program (folded at bind,
    through `convert`), else `(None, getter)`."""
    known, value = values.constant(getattr(step, name))
    return (convert(value), None) if known else (None, get[name])


def _view_check(step, get, values):
    """(shape, shape getter, element type, encoding) of a view assert: the shape folded
    where it is literal; None where the element type or encoding is not a literal (never
    in IREE's output: the import then runs)."""
    (element, encoding), known = _folded(step, get, values, ("element_type", "encoding_type"))
    if not known:
        return None
    shape, shape_of = _literal_or_getter(step, get, values, "shape", tuple)
    return shape, shape_of, element & _M32, encoding & _M32


def _buffer_check(step, get, values):
    """(length, length getter, memory types, usage) of a buffer assert, as _view_check."""
    (types, usage), known = _folded(step, get, values, ("memory_types", "buffer_usage"))
    if not known:
        return None
    length, length_of = _literal_or_getter(step, get, values, "minimum_length", int)
    return length, length_of, types & _M32, usage & _M32


def _view_assert(step, get, private, general, values):
    check = _view_check(step, get, values)
    if check is None:
        return None
    view_of = get["buffer_view"]
    shape, shape_of, element, encoding = check

    def view_assert(env) -> None:
        wanted = shape if shape_of is None else tuple(shape_of(env))
        if not _view_matches(view_of(env), wanted, element, encoding):
            general(env)

    return view_assert


def _attribute(operand: str, kind: type, attribute: str):
    """The handler of a step whose result is an attribute of its operand where that is of
    `kind` (a view's buffer, a device's allocator); the import otherwise."""

    def make(step, get, private, general, values):
        of, out = get[operand], step.out
        if not isinstance(out, str):
            return None
        out = values.key(out)

        def attribute_of(env) -> None:
            value = of(env)
            if type(value) is kind:
                env[out] = getattr(value, attribute)
            else:
                general(env)

        return attribute_of

    return make


_view_buffer = _attribute("buffer_view", HalBufferView, "buffer")
_device_allocator = _attribute("device", LocalDevice, "allocator")


def _buffer_assert(step, get, private, general, values):
    check = _buffer_check(step, get, values)
    if check is None:
        return None
    buffer_of, allocator_of = get["buffer"], get["allocator"]
    length, length_of, types, usage = check

    def buffer_assert(env) -> None:
        needed = length if length_of is None else length_of(env)
        if not _buffer_meets(buffer_of(env), allocator_of(env), needed, types, usage):
            general(env)

    return buffer_assert


def _view_dim(step, get, private, general, values):
    """A view's dimension (`HalBufferView.dim` without the import's wrapper: a view and an
    index within its rank; anything else goes through the import)."""
    if not isinstance(step.out, str):
        return None
    view_of, index_of = get["buffer_view"], get["index"]
    out = values.key(step.out)

    def view_dim(env) -> None:
        view, index = view_of(env), index_of(env)
        if type(view) is HalBufferView and type(index) is int and 0 <= index < len(view.shape):
            env[out] = view.shape[index]
        else:
            general(env)

    return view_dim


def _buffer_load(step, get, private, general, values):
    """A readback (a predicate the host branches on): `HalBuffer.load` without the
    import's wrapper where the operands are what the import takes."""
    if not isinstance(step.out, str):
        return None
    buffer_of, offset_of, length_of = get["source_buffer"], get["source_offset"], get["length"]
    out = values.key(step.out)

    def buffer_load(env) -> None:
        buffer = buffer_of(env)
        if type(buffer) is HalBuffer:
            offset, length = offset_of(env), length_of(env)
            if type(offset) is int and type(length) is int and 1 <= length <= 4:
                if 0 <= offset <= buffer.length - length:  # (else the import raises)
                    value = buffer.load(offset, length)
                    env[out] = value if value < 0x80000000 else value - 0x100000000
                    return
        general(env)

    return buffer_load


_HANDLERS = {
    FenceCreate: _fence_create,
    FenceJoin: _fence_join,
    FenceAwait: _fence_await,
    DeviceQueueAlloca: _alloca,
    DeviceQueueDealloca: _signal_only,
    DeviceQueueBarrier: _signal_only,
    DeviceQueueFill: _fill,
    DeviceQueueExecuteIndirect: _execute,
    DeviceQueueExecute: _execute,
    BufferViewAssert: _view_assert,
    BufferViewBuffer: _view_buffer,
    BufferViewDim: _view_dim,
    DeviceAllocator: _device_allocator,
    BufferAssert: _buffer_assert,
    BufferLoad: _buffer_load,
}


def _argument(steps, k: int, ops: dict, values, getters) -> int:
    """An argument's checks as one op where steps k.. are IREE's ABI sequence for it: a
    view's assert, the view's buffer, optionally the device's allocator, the buffer's
    assert (their fields literals but the shape and length), with integer ops between
    them (a dynamic shape's byte length: they read no step's result, so the op runs them
    first). The op passes where every check passes; otherwise the steps' own ops run one
    by one (each goes through its import where its check fails and raises there).
    Returns the number of steps it took (0 where steps k.. are not such a sequence)."""
    taken, computes = [], []  # (the sequence's step indices; its integer ops' indices)
    j = k
    while j < len(steps) and len(taken) < 4:
        if isinstance(steps[j], Compute):
            computes.append(j)
        else:
            taken.append(j)
            if type(steps[j]) is BufferAssert:
                break
        j += 1
    kinds = [type(steps[i]) for i in taken]
    if kinds[:2] != [BufferViewAssert, BufferViewBuffer] or kinds[-1] is not BufferAssert:
        return 0
    with_allocator = kinds[2:3] == [DeviceAllocator]
    if len(kinds) != (4 if with_allocator else 3) or not all(i in ops for i in range(k, j + 1)):
        return 0
    check, view_step, assert_step = steps[taken[0]], steps[taken[1]], steps[taken[-1]]
    buffer = view_step.out
    if view_step.buffer_view != check.buffer_view or assert_step.buffer != buffer or not isinstance(buffer, str):
        return 0
    view_check = _view_check(check, getters[taken[0]], values)
    buffer_check = _buffer_check(assert_step, getters[taken[-1]], values)
    if view_check is None or buffer_check is None:
        return 0
    shape, shape_of, element, encoding = view_check
    length, length_of, types, usage = buffer_check
    view_of = getters[taken[0]]["buffer_view"]
    allocator_of = getters[taken[-1]]["allocator"]
    if with_allocator:
        allocator_name = steps[taken[2]].out
        device_of = getters[taken[2]]["device"]
        if not isinstance(allocator_name, str) or assert_step.allocator != allocator_name:
            return 0
    parts = [ops.pop(i) for i in range(k, j + 1)]
    first = [parts[i - k] for i in computes]
    buffer = values.key(buffer)
    if with_allocator:
        allocator_name = values.key(allocator_name)

    def argument(env) -> None:
        for op in first:  # (the integer ops: they cannot fail)
            op(env)
        view = view_of(env)
        if _view_matches(view, shape if shape_of is None else tuple(shape_of(env)), element, encoding):
            data = view.buffer
            if with_allocator:
                device = device_of(env)
                allocator = device.allocator if type(device) is LocalDevice else False
            else:
                allocator = allocator_of(env)
            needed = length if length_of is None else length_of(env)
            if _buffer_meets(data, allocator, needed, types, usage):
                env[buffer] = data
                if with_allocator:
                    env[allocator_name] = allocator
                return
        for op in parts:  # (a check fails: its import raises)
            op(env)

    ops[k] = argument
    return j + 1 - k


class FastProgram(GeneralProgram):
    """A queue program run with private fences elided and one-shot recordings as cached
    native plans (above), the general path for every step it does not take."""

    def __init__(self, program, imports: dict, rodata) -> None:
        super().__init__(program, imports, rodata)
        private = _private_fences(program)
        values = self._values
        self.spans = _spans(program) if _own(imports, DeviceQueueExecute) else []
        deferred = {k for span in self.spans for k in (span.create, *span.members)}
        submits = {span.execute: span for span in self.spans}
        ops: dict[int, object] = {}  # step index -> its op
        for k, (step, _fn, _fetch, _outs) in enumerate(self._steps):
            if k in deferred:
                continue  # (recorded at its submission, if at all)
            reads = dict.fromkeys(
                values.key(n) for n in names_in(fields_read(step)) if n in private
            )
            general = _materialised(self._ops[k], tuple(reads))
            span = submits.get(k)
            if span is not None:
                span.fields = {p: values.getter(getattr(step, p)) for p in step.PARAMS}
                self._prepare(span)
                ops[k] = self._submission(span, general)
                continue
            make = _HANDLERS.get(type(step))
            op = None
            if make is not None and _own(imports, step):
                get = {p: values.getter(getattr(step, p)) for p in step.PARAMS}
                op = make(step, get, private, general, values)
            ops[k] = general if op is None else op
        # Arguments: each one op where its checks pass (IREE's sequence of four imports).
        getters = [
            {p: values.getter(getattr(step, p)) for p in getattr(step, "PARAMS", ())}
            for step in program.steps
        ]
        k = 0
        while k < len(program.steps):
            k += _argument(program.steps, k, ops, values, getters) or 1
        # Segments (segments.py): one op each, its steps' ops where a call declines.
        await_import = imports.get(FenceAwait.IMPORT)
        recorded = [(span.create, span.members, span.execute) for span in self.spans]
        own = lambda step: _own(imports, step)  # noqa: E731
        segments = find_segments(program, recorded, private, own, values.key)
        for segment in segments:
            indices = range(segment.first, segment.last + 1)
            inner = [ops.pop(k) for k in indices if k in ops]
            getters = [
                {p: values.getter(getattr(program.steps[k], p)) for p in getattr(program.steps[k], "PARAMS", ())}
                for k in indices
            ]
            general_ops = [self._ops[k] for k in indices]
            computes = [self._ops[k] for k in segment.computes]
            ops[segment.first] = _segment_op(
                segment, inner, general_ops, getters, computes, await_import
            )
        self._fast_ops = [ops[k] for k in sorted(ops)]
        # A program that is one segment (every step in it): a loop call may run its plan
        # under one hold of the queue for many iterations (exec/host_loops.py, call_held).
        self.whole_segment = None  # (the input position of its device, where it is one)
        self._run_held = None
        if (
            len(segments) == 1 and len(self._fast_ops) == 1
            and segments[0].first == 0 and segments[0].last == len(program.steps) - 1
            and type(segments[0].device) is int and segments[0].device < len(program.inputs)
        ):
            self.whole_segment = segments[0].device
            self._run_held = self._fast_ops[0].held
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
        tail = self._tail
        if tail is None or self._packed or len(args) != self._inputs:
            env = self._env(args)  # (as __call__ makes it)
        else:
            env = list(args)
            env += tail
        if not self._run_held(env, queue):
            return NOT_HELD
        return None if self._outputs is None else self._outputs(env)

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
        if type(device) is not LocalDevice or not _ready(wait) or key is None:
            return False
        signal_name = self._values.key(self.program.steps[span.execute].signal_fence)
        signal = get["signal_fence"](env)
        if signal is not None and type(signal) is not Fence and signal is not _PENDING:
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
        if signal is _PENDING:
            env[signal_name] = _DONE if error is None else _State(error)
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

"""The fast path's op of each single step (docs/design/host-path.md §5.2): per step kind a
handler making an op that does the step here where nothing can tell (a private fence's
state, a queue step on a free LocalDevice run on this thread, a check that passes, a
readback) and calls the step's import otherwise; and an argument's four checks as one op
(`argument_op`). fast.py puts them together into a FastProgram; they are apart from it
because each is a small rule of its own, read against the import it stands for.
"""

from __future__ import annotations

from ..hal.allocator import HalAllocator
from ..hal.buffer import HalBuffer, fresh_buffer
from ..hal.buffer_view import HalBufferView
from ..hal.command_buffer import HalCommandBuffer
from ..hal.device import LocalDevice
from ..hal.fence import Fence
from ..hal.queue import BUSY
from .fence_states import DONE, PENDING, FenceState, ready
from .program import Compute
from .steps import (
    BufferAssert,
    BufferLoad,
    BufferViewAssert,
    BufferViewBuffer,
    BufferViewDim,
    DeviceAllocator,
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

_M32 = 0xFFFFFFFF
_TABLE_TYPES = frozenset({HalBuffer, type(None)})

# (the steps whose handlers need neither a private fence nor a recording: checks, reads,
# fills)
CHECKS = (
    BufferViewAssert, BufferViewBuffer, BufferViewDim, DeviceAllocator, BufferAssert, BufferLoad,
    DeviceQueueFill,
)


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
            env[out] = PENDING
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
            and env[signal] is PENDING
            and (wait is None or wait is DONE or (type(wait) is Fence and wait.reached_now()))
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
                env[signal] = DONE
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
            and env[signal] is PENDING
            and (wait is None or wait is DONE or (type(wait) is Fence and wait.reached_now()))
            and (buffer_of is None or type(buffer_of(env)) is HalBuffer)
            and device.queue.idle()
        ):
            env[signal] = DONE
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
            and env[signal] is PENDING
            and (wait is None or wait is DONE or (type(wait) is Fence and wait.reached_now()))
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
                env[signal] = DONE if error is None else FenceState(error)
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
            and (wait is None or wait is DONE or (type(wait) is Fence and wait.reached_now()))
        ):
            args = (offset_of(env), length_of(env), pattern_of(env), width_of(env))
            queue = device.queue
            if private_signal:
                if env[signal] is PENDING:
                    error = queue.run_now(_fill_now, target, args, "device.queue.fill")
                    if error is not BUSY:
                        env[signal] = DONE if error is None else FenceState(error)
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
            if not ready(fence):
                general(env)
                return
        env[out] = DONE if any(f is not None for f in fences) else None

    return fence_join


def _fence_await(step, get, private, general, values):
    fences_of = get["fences"]
    out = values.key(step.out) if isinstance(step.out, str) else None

    def fence_await(env) -> None:
        for fence in fences_of(env):
            if not (
                fence is None
                or fence is DONE
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


HANDLERS = {
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


def argument_op(steps, k: int, ops: dict, values, getters) -> int:
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


__all__ = ["CHECKS", "HANDLERS", "argument_op"]

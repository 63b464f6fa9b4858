"""One call for a one-shot command buffer recorded and submitted in one block
(translator/analyses/one_shots.py: dynamic shapes record one per call).

Generated code keeps the block's integer ops in place and, where each recording call
was, appends that call's operands to a list as a step (the command buffer left out):

    steps = [(ALLOCA, fence_flags, affinity, wait, pool, memory_types, usage, size, flags)]
    steps.append((CREATE, modes, categories, affinity, binding_capacity))
    steps.append((LOOKUP, executable, name))
    steps.append((DISPATCH, executable, function, x, y, z, flags, constants, bindings))
    steps.append((BARRIER, source_stage_mask, target_stage_mask, flags))
    buffer, *functions, status = submit(device, steps, create_flags, affinity, wait,
                                        exec_flags, timeout, await_flags)

(the ALLOCA step, a fence.create + queue.alloca pair, is optional; `wait` is then
`ALLOCA_FENCE`, its fence; a dispatch's function `LOOKED_UP` is the latest lookup's
result, a binding's buffer `ALLOCATED` the new buffer). The call returns the new buffer
(None without an ALLOCA step), each lookup's result and the await's status.

GENERAL path: the calls themselves through the bound imports, in order, then
command_buffer.finalize, fence.create, queue.execute and fence.await: what the unfused
code does. FAST path, only where provably the same: the imports are the `hal` module's
own, the device a `LocalDevice` whose queue no other thread runs, the waits null or
reached, pool 0, a size >= 0, a ONE_SHOT command buffer of a capacity >= 0 with the
DISPATCH category, every dispatch's executable a `HalExecutable` and every binding a
`HalBuffer` (or the new buffer) with its range inside it (what recording checks), and
every lookup answered before by the import for that executable and read-only name.
Then it allocates as queue.alloca does and runs the dispatches as the command buffer's
execution runs them (command_buffer.run_direct), holding the queue's draining role as
queue.execute does; a failure fails the await as in the unfused code, and the fences and
the command buffer, which nothing else sees, are never made. Anything else: the general
path, before anything is done (or, when another thread took the queue meanwhile, from
the command buffer's create on, the buffer and lookups already made).
"""

from __future__ import annotations

from .buffer import HalBuffer, fresh_buffer
from .command_buffer import CATEGORY_DISPATCH, MODE_ONE_SHOT, run_direct
from .device import LocalDevice
from .executable import HalExecutable
from .fence import REACHED, Fence
from .fused import ALLOCATED, _failed, _own
from .queue import BUSY
from ..vm.buffer import VMBuffer

_M32 = 0xFFFFFFFF
_EXECUTE = "device.queue.execute"
_LOOKUPS_MAX = 256  # (executable, name) answers kept per helper


class _Marker:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


# Step kinds (each step tuple's first item).
ALLOCA = _Marker("ALLOCA")
CREATE = _Marker("CREATE")
LOOKUP = _Marker("LOOKUP")
DISPATCH = _Marker("DISPATCH")
BARRIER = _Marker("BARRIER")
# Operands the helper supplies: a dispatch's function from the latest LOOKUP step, and
# the execute's wait fence, the ALLOCA step's signal fence.
LOOKED_UP = _Marker("LOOKED_UP")
ALLOCA_FENCE = _Marker("ALLOCA_FENCE")


def _run(commands, workers) -> None:
    for executable, ordinal, counts, constants, flat in commands:
        run_direct(executable, ordinal, counts, constants, flat, workers)


def one_shot(fence_create, alloca, create, lookup, dispatch, barrier, finalize, execute, await_):
    """The helper, built per context from its bound imports (module.py.j2's `_bind`;
    `alloca`, `lookup` and `barrier` None where the module imports none: then no step
    needs them)."""
    answers: dict = {}  # (executable, read-only name) -> the import's answer

    def general(
        device, steps, create_flags, affinity, wait, exec_flags, timeout, await_flags,
        buffer=None, functions=None,
    ):
        """The steps through the imports; with `functions` (the fast path's buffer and
        lookups made), from the create on, the alloca's fence reached."""
        looked = [] if functions is None else functions
        function = command_buffer = f0 = None
        n = 0
        for step in steps:
            kind = step[0]
            if kind is ALLOCA:
                f0 = fence_create(device, step[1])
                if functions is None:
                    buffer = alloca(device, step[2], step[3], f0, *step[4:])
                else:
                    f0.signal()  # (what the fast path's allocation left: reached)
            elif kind is CREATE:
                command_buffer = create(device, *step[1:])
            elif kind is LOOKUP:
                if functions is None:
                    function = lookup(step[1], step[2])
                    looked.append(function)
                    if type(step[1]) is HalExecutable and type(step[2]) is VMBuffer and step[2].readonly:
                        if len(answers) >= _LOOKUPS_MAX:
                            answers.clear()
                        answers[step[1], step[2]] = function
                else:
                    function = functions[n]
                n += 1
            elif kind is DISPATCH:
                _, executable, fn, x, y, z, flags, constants, bindings = step
                dispatch(
                    command_buffer, executable, function if fn is LOOKED_UP else fn, x, y, z,
                    flags, constants,
                    [(o, s, buffer if b is ALLOCATED else b, off, length)
                     for o, s, b, off, length in bindings],
                )
            else:
                barrier(command_buffer, *step[1:])
        finalize(command_buffer)
        f1 = fence_create(device, create_flags)
        execute(device, affinity, f0 if wait is ALLOCA_FENCE else wait, f1, command_buffer, exec_flags)
        return (buffer, *looked, await_(timeout, await_flags, [f1]))

    if not _own([(await_, "fence_await"), (fence_create, "fence_create"),
                 (create, "command_buffer_create"), (dispatch, "command_buffer_dispatch"),
                 (finalize, "command_buffer_finalize"), (execute, "device_queue_execute")]
                + [(f, name) for f, name in ((alloca, "device_queue_alloca"),
                                             (lookup, "executable_lookup_function"),
                                             (barrier, "command_buffer_execution_barrier"))
                   if f is not None]):
        return general

    def submit(device, steps, create_flags, affinity, wait, exec_flags, timeout, await_flags):
        # (the tests are inline, in the order the imports make them; any failing one: the
        # general path, nothing done yet)
        if type(device) is not LocalDevice or device.queue._draining:
            return general(device, steps, create_flags, affinity, wait, exec_flags, timeout, await_flags)
        step = steps[0]
        k = 0
        size = 0
        if step[0] is ALLOCA:
            _, _, _, awaited, pool, memory_types, usage, size, _ = step
            if pool or size < 0 or wait is not ALLOCA_FENCE or not (
                awaited is None
                or (type(awaited) is Fence and (awaited.state == REACHED or awaited.reached_now()))
            ):
                return general(device, steps, create_flags, affinity, wait, exec_flags, timeout, await_flags)
            k = 1
        elif not (
            wait is None or (type(wait) is Fence and (wait.state == REACHED or wait.reached_now()))
        ):
            return general(device, steps, create_flags, affinity, wait, exec_flags, timeout, await_flags)
        _, modes, categories, _, capacity = steps[k]
        if capacity < 0 or not modes & MODE_ONE_SHOT:
            return general(device, steps, create_flags, affinity, wait, exec_flags, timeout, await_flags)
        can_dispatch = categories & CATEGORY_DISPATCH == CATEGORY_DISPATCH
        # What recording checks: (executable, function, counts, constants, bindings)
        commands = []
        looked = []
        function = None
        for step in steps[k + 1:]:
            kind = step[0]
            if kind is DISPATCH:
                _, executable, fn, x, y, z, _, constants, bindings = step
                if not can_dispatch or type(executable) is not HalExecutable:
                    break
                for _, _, b, off, length in bindings:
                    if b is ALLOCATED:
                        if k and 0 <= off and 0 <= length <= size - off:
                            continue
                    elif type(b) is HalBuffer and 0 <= off and 0 <= length <= b.length - off:
                        continue
                    break
                else:
                    commands.append((
                        executable, function if fn is LOOKED_UP else fn,
                        (x & _M32, y & _M32, z & _M32), tuple([c & _M32 for c in constants]),
                        bindings,
                    ))
                    continue
                break
            elif kind is LOOKUP:
                function = answers.get((step[1], step[2]))
                if function is None:
                    break
                looked.append(function)
            elif kind is not BARRIER:
                break
        else:
            # queue.alloca on a LocalDevice (its fence reached at once, as its wait is)
            buffer = None
            if k:
                allocator = device.allocator
                buffer = fresh_buffer(size, memory_types & _M32, usage & _M32, allocator)
                allocator.bytes_allocated += size
            for j, (executable, fn, counts, constants, bindings) in enumerate(commands):
                flat = [buffer.address + off if b is ALLOCATED else b.address + off
                        for _, _, b, off, _ in bindings]
                flat += [length for _, _, _, _, length in bindings]
                commands[j] = (executable, fn, counts, constants, tuple(flat))
            # queue.execute with its wait reached: the command buffer's one execution
            error = device.queue.run_now(_run, commands, device.worker_count, _EXECUTE)
            if error is None:
                return (buffer, *looked, 0)  # (the await of a reached fence)
            if error is BUSY:  # another thread runs the queue: the imports queue behind it
                return general(device, steps, create_flags, affinity, wait, exec_flags,
                               timeout, await_flags, buffer, looked)
            return (buffer, *looked, _failed(error, await_, timeout, await_flags))
        return general(device, steps, create_flags, affinity, wait, exec_flags, timeout, await_flags)

    submit.general = general
    return submit

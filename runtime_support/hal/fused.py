"""One call for the submission group a compiled program issues per dispatch (and, at the
end of this file, for the checks of each input argument).

For a dispatch whose result is transient, IREE's compiler emits, back to back:

    f0 = hal.fence.create(device, flags)
    buffer = hal.device.queue.alloca(device, affinity, wait, f0, pool, types, usage, size, flags)
    f1 = hal.fence.create(device, flags)
    hal.device.queue.execute.indirect(device, affinity, f0, f1, command_buffer, flags, table)
    status = hal.fence.await(timeout, flags, [f1])

(or its last three ops, the execute then waiting on any fence; or fence.create,
hal.device.queue.execute, fence.await for a command buffer with no binding table). When the
translator proves both fences private to the group (translator/analyses/submissions.py),
it emits one call of a helper built here, per context, from the context's bound imports.

The helper's GENERAL path is the sequence above, literally, through the bound imports: the
behaviour of every device, argument and error is the imports' own. Its FAST path runs
only where it is provably the same: the imports are the `hal` module's own methods, the
device is a `LocalDevice`, the wait fence is null or already reached, the command buffer
is a `HalCommandBuffer`, every table entry's buffer is a `HalBuffer` or null, pool 0 and
a size >= 0 (else the general path raises the import's own error), and no other thread
is running the device's queue. It then does what the imports would do on that path and
skips only what nothing can observe: the two private fences and their signalling. It
allocates as `device_queue_alloca` does, runs `command_buffer.execute(table)` as
`LocalQueue.call` does (holding the queue's draining role, errors captured the same way),
and returns. A failure of the command buffer fails a real fence that the bound
`hal.fence.await` then reports, so the error raised is the unfused one.

In generated code a table entry whose buffer is the one being allocated holds
`ALLOCATED`; `slots` names those entries (a constant tuple), and the helper puts the new
buffer there before the table is used.
"""

from __future__ import annotations

from ..errors import StatusCode, VMError
from .buffer import HalBuffer, fresh_buffer
from .command_buffer import HalCommandBuffer
from .device import LocalDevice
from .fence import REACHED, Fence
from .plan_runner import (
    BUSY_QUEUE, MISMATCH, TYPE, compile_alloca, compile_chain, compile_submit,
)
from .queue import BUSY
from . import runs
from .runs import Run  # (the layout class of generated code's run constants)

_M32 = 0xFFFFFFFF
_new = object.__new__
_EXECUTE_INDIRECT = "device.queue.execute.indirect"
_EXECUTE = "device.queue.execute"


class _Allocated:
    """The table entry placeholder for the buffer the group allocates."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "ALLOCATED"


ALLOCATED = _Allocated()


class _Transient:
    """A chain's dealloca buffer placeholder: the chain's own alloca, which nothing reads
    after the chain (translator/analyses/chains.py leaves it unassigned)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "TRANSIENT"


# The chain returns None in its place; its fast path may run the dispatches on a scratch
# buffer the call site keeps (plan_runner.compile_chain) instead of a new one.
TRANSIENT = _Transient()

# Table entry buffers the fast path takes as they are (any other type: general path,
# where the import's check raises its own error).
_TABLE_TYPES = frozenset({HalBuffer, type(None)})


def run_command_buffer(command_buffer, table) -> None:
    """`command_buffer.execute(table)`, its plan tried here first (one frame less per
    dispatch; the same steps as HalCommandBuffer.execute's plan branch)."""
    plan = command_buffer._plan
    if plan:
        command_buffer.executions += 1
        if plan.run(table, command_buffer.device.worker_count):
            return
        command_buffer.executions -= 1  # (execute counts it again)
    command_buffer.execute(table)


_UNSEEN = object()
_cb_execute = HalCommandBuffer.execute


def _submit_for(plan, slots, table, placed):
    """The plan's compiled submit for a call site's `slots` (None: the general steps),
    compiled at the site's first call."""
    run = plan.submits[slots] = compile_submit(plan, len(table), placed)
    return run


def _own(pairs, local_device: bool = True) -> bool:
    """Whether every bound import of `pairs` ((bound, HalModule method name)) is one
    `HalModule`'s own method (not a subclass's override), and, with `local_device`, that
    module accepts a LocalDevice: then a fast path knows what each one does."""
    from .module import HalModule

    owner = getattr(pairs[0][0], "__self__", None)
    if not isinstance(owner, HalModule):
        return False
    for bound, name in pairs:
        if getattr(bound, "__self__", None) is not owner or getattr(
            bound, "__func__", None
        ) is not getattr(HalModule, name):
            return False
    return not local_device or issubclass(LocalDevice, owner.DEVICE_TYPES)


def _failed(error, await_, timeout, await_flags, fence=None):
    """The await of a fence the execution failed: the bound import raises what the
    unfused sequence raises. `fence`: the new fence to fail (default one made here), for
    a caller that also returns it."""
    fence = Fence() if fence is None else fence
    fence.fail(error)
    return await_(timeout, await_flags, [fence])


def alloca_execute_indirect(create, alloca, execute, await_):
    """The helper for fence.create, queue.alloca, fence.create, queue.execute.indirect,
    fence.await (arguments in the ops' order, fences left out):

        buffer, status = submit(device, create_flags, affinity, wait, pool, memory_types,
                                usage, size, alloca_flags, create_flags2, exec_affinity,
                                command_buffer, exec_flags, table, slots, timeout,
                                await_flags)
    """

    def general(
        device, create_flags, affinity, wait, pool, memory_types, usage, size, alloca_flags,
        create_flags2, exec_affinity, command_buffer, exec_flags, table, slots, timeout,
        await_flags,
    ):
        f0 = create(device, create_flags)
        buffer = alloca(
            device, affinity, wait, f0, pool, memory_types, usage, size, alloca_flags
        )
        f1 = create(device, create_flags2)
        for k in slots:
            _, offset, length = table[k]
            table[k] = (buffer, offset, length)
        execute(device, exec_affinity, f0, f1, command_buffer, exec_flags, table)
        return buffer, await_(timeout, await_flags, [f1])

    if not _own([(await_, "fence_await"), (create, "fence_create"),
                 (alloca, "device_queue_alloca"), (execute, "device_queue_execute_indirect")]):
        return general

    def resume(device, create_flags, create_flags2, exec_affinity, command_buffer, exec_flags,
               table, timeout, await_flags, buffer):
        """The sequence after the alloca, through the imports (f0 as the alloca left
        it: reached)."""
        f0 = create(device, create_flags)
        f0.signal()
        f1 = create(device, create_flags2)
        execute(device, exec_affinity, f0, f1, command_buffer, exec_flags, table)
        return buffer, await_(timeout, await_flags, [f1])

    def finish(device, create_flags, create_flags2, exec_affinity, command_buffer, exec_flags,
               table, timeout, await_flags, buffer, error):
        """After the compiled fast path's execution (plan_runner.compile_alloca): another
        thread held the queue (the table holds the buffer), or it failed."""
        if error is BUSY_QUEUE:
            return resume(device, create_flags, create_flags2, exec_affinity, command_buffer,
                          exec_flags, table, timeout, await_flags, buffer)
        return buffer, _failed(error, await_, timeout, await_flags)

    def submit(
        device, create_flags, affinity, wait, pool, memory_types, usage, size, alloca_flags,
        create_flags2, exec_affinity, command_buffer, exec_flags, table, slots, timeout,
        await_flags,
    ):
        # The call site's compiled fast path (plan_runner.compile_alloca), where it applies
        if type(command_buffer) is HalCommandBuffer:
            plan = command_buffer._plan
            if plan:
                fast = plan.allocas.get(slots, _UNSEEN)
                if fast is _UNSEEN:
                    fast = plan.allocas[slots] = compile_alloca(plan, len(table), slots)
                if fast is not None:
                    result = fast(device, create_flags, affinity, wait, pool, memory_types,
                                  usage, size, alloca_flags, create_flags2, exec_affinity,
                                  command_buffer, exec_flags, table, slots, timeout,
                                  await_flags, finish)
                    if result is not MISMATCH:
                        return result
        # (the tests are inline: a helper function per test costs a frame per dispatch)
        if not (
            type(device) is LocalDevice
            and type(command_buffer) is HalCommandBuffer
            and pool == 0
            and size >= 0
            and (
                wait is None
                or (type(wait) is Fence and (wait.state == REACHED or wait.reached_now()))
            )
            and not device.queue._draining
        ):
            return general(
                device, create_flags, affinity, wait, pool, memory_types, usage, size,
                alloca_flags, create_flags2, exec_affinity, command_buffer, exec_flags, table,
                slots, timeout, await_flags,
            )
        # hal.device.queue.alloca on a LocalDevice; its signal fence f0 is reached at once
        allocator = device.allocator
        buffer = fresh_buffer(size, memory_types & _M32, usage & _M32, allocator)
        allocator.bytes_allocated += size
        # (a plan's call site compiled above; here what it declined or could not compile:
        # plan.run's own checks through run_command_buffer)
        queue = device.queue
        for k in slots:
            _, offset, length = table[k]
            table[k] = (buffer, offset, length)
        for entry in table:
            if type(entry[0]) not in _TABLE_TYPES:  # the import's check raises
                return resume(device, create_flags, create_flags2, exec_affinity,
                              command_buffer, exec_flags, table, timeout, await_flags, buffer)
        # hal.device.queue.execute.indirect: LocalQueue.call with its wait fence reached
        error = queue.run_now(run_command_buffer, command_buffer, table, _EXECUTE_INDIRECT)
        if error is BUSY:  # another thread runs the queue: queue up behind it
            return resume(device, create_flags, create_flags2, exec_affinity,
                          command_buffer, exec_flags, table, timeout, await_flags, buffer)
        if error is None:
            return buffer, 0  # hal.fence.await of a reached fence
        return buffer, _failed(error, await_, timeout, await_flags)

    submit.general = general
    return submit


def run(create, alloca, execute, await_):
    """The helper for a run of `alloca_execute_indirect` and `execute_indirect` groups
    (runtime_support/hal/runs.py; translator/codegen/runs.py), its imports those of an
    `alloca_execute_indirect` group:

        *buffers, status = submit(layout, device, command_buffers, outside, fences, scalars)

    `layout` (a `runs.Run`) says, per step, which of `scalars` (ints), `fences` (wait
    fences) and buffers (`outside`: from before the run; or allocated by an earlier step)
    its operands are; the call returns the buffers of `layout.outputs` and the status of
    the last step run. GENERAL path: each step through the group helper in turn, stopping
    at a non-zero status. FAST path: the run's combined plan (built per context and
    command buffers/scalars, then cached) in one native call, where the group helper's
    fast path would run each step and nothing can tell the difference: a LocalDevice with
    an idle queue, every wait fence null or reached, every outside buffer a HalBuffer,
    the combined plan's checks passing (else nothing ran: the general path runs)."""
    step = alloca_execute_indirect(create, alloca, execute, await_)
    indirect = execute_indirect(create, execute, await_)  # (the steps without an alloca)
    own_table, no_alloca = runs.OWN, runs.NO_ALLOCA

    def general(layout, device, cbs, outside, fences, scalars):
        results = [None] * len(layout.steps)
        for j, s in enumerate(layout.steps):
            # (runs.CREATE_FLAGS .. runs.TABLE: indices into `scalars`, WAIT into `fences`)
            cf, aff, wait, pool, types, usage, size, af, cf2, eaff, ef, timeout, awf, tab = s
            table = [
                (
                    outside[source] if source >= 0
                    else ALLOCATED if source == own_table else results[-2 - source],
                    scalars[o],
                    scalars[n],
                )
                for source, o, n in tab
            ]
            if size == no_alloca:
                status = indirect(
                    device, scalars[cf2], scalars[eaff], fences[wait], cbs[j], scalars[ef],
                    table, scalars[timeout], scalars[awf],
                )
            else:
                results[j], status = step(
                    device, scalars[cf], scalars[aff], fences[wait], scalars[pool],
                    scalars[types], scalars[usage], scalars[size], scalars[af], scalars[cf2],
                    scalars[eaff], cbs[j], scalars[ef], table, layout.slots[j],
                    scalars[timeout], scalars[awf],
                )
            if status:
                return (*[results[k] for k in layout.outputs], status)
        return (*[results[k] for k in layout.outputs], 0)

    if step is step.general or indirect is indirect.general:  # (not the hal module's own)
        return general

    # layout -> {scalars: runs.Combined}: a few per layout, for sizes that change per call
    # (dynamic shapes); each entry is for one set of command buffers
    cache: dict = {}

    def submit(layout, device, cbs, outside, fences, scalars):
        if type(device) is not LocalDevice:
            return general(layout, device, cbs, outside, fences, scalars)
        entries = cache.get(layout)
        if entries is None:
            entries = cache[layout] = {}
        entry = entries.get(scalars)
        if entry is None or entry.cbs != cbs:
            if len(entries) >= runs.ENTRIES_PER_RUN:
                del entries[next(iter(entries))]  # the oldest
            entry = entries[scalars] = runs.build(
                layout, cbs, scalars, len(outside), device.worker_count
            )
        plan = entry.plan
        if plan is None:
            return general(layout, device, cbs, outside, fences, scalars)
        for f in fences:
            if f is not None and not (
                type(f) is Fence and (f.state == REACHED or f.reached_now())
            ):
                return general(layout, device, cbs, outside, fences, scalars)
        for b in outside:
            if type(b) is not HalBuffer:
                return general(layout, device, cbs, outside, fences, scalars)
        allocator = device.allocator
        try:
            made = [fresh_buffer(size, types & _M32, usage & _M32, allocator)
                    for size, types, usage in entry.made]
        except VMError:  # (out of memory: the step whose alloca fails raises, in order)
            return general(layout, device, cbs, outside, fences, scalars)
        table = [(b, 0, -1) for b in outside]
        table += [(b, 0, -1) for b in made]
        error = device.queue.run_now(
            _run_plan, plan, (table, device.worker_count), _EXECUTE_INDIRECT
        )
        if error is BUSY or type(error) is _Declined:  # nothing ran: step by step
            return general(layout, device, cbs, outside, fences, scalars)
        allocator.bytes_allocated += entry.total
        # the run's outputs: each step's new buffer, returned in `layout.outputs` order
        if error is None:
            return (*made, 0)
        # A failed step fails its fence, and its await raises the error, as in the unfused
        # sequence (any step's await: the timeout and flags do not change what it raises).
        s = layout.steps[-1]
        return (*made, _failed(error, await_, scalars[s[runs.TIMEOUT]],
                               scalars[s[runs.AWAIT_FLAGS]]))

    submit.general = general
    return submit


class _Declined(VMError):
    """The combined plan declined (a per-call check failed): nothing ran."""


def _run_plan(plan, args) -> None:
    """A run's combined plan, under LocalQueue.run_now (which captures its errors)."""
    if not plan.run(*args):
        raise _Declined(StatusCode.INTERNAL, "combined plan declined")


def execute_indirect(create, execute, await_):
    """The helper for fence.create, queue.execute.indirect, fence.await:

        status = submit(device, create_flags, affinity, wait, command_buffer, exec_flags,
                        table, timeout, await_flags)
    """

    def general(
        device, create_flags, affinity, wait, command_buffer, exec_flags, table, timeout,
        await_flags,
    ):
        f1 = create(device, create_flags)
        execute(device, affinity, wait, f1, command_buffer, exec_flags, table)
        return await_(timeout, await_flags, [f1])

    if not _own([(await_, "fence_await"), (create, "fence_create"),
                 (execute, "device_queue_execute_indirect")]):
        return general

    def submit(
        device, create_flags, affinity, wait, command_buffer, exec_flags, table, timeout,
        await_flags,
    ):
        if type(device) is LocalDevice and type(command_buffer) is HalCommandBuffer and (
            wait is None
            or (type(wait) is Fence and (wait.state == REACHED or wait.reached_now()))
        ):
            plan = command_buffer._plan
            error = MISMATCH
            if plan:
                run = plan.submits.get((), _UNSEEN)
                if run is _UNSEEN:
                    run = _submit_for(plan, (), table, ())
                if run is not None:  # (the steps below in one function, as above)
                    error = run(command_buffer, device.queue, table, device.worker_count)
            if error is MISMATCH:
                for entry in table:
                    if type(entry[0]) not in _TABLE_TYPES:
                        error = TYPE
                        break
                else:
                    error = device.queue.run_now(
                        run_command_buffer, command_buffer, table, _EXECUTE_INDIRECT
                    )
            if error is None:
                return 0
            if error is not BUSY and error is not BUSY_QUEUE and error is not TYPE:
                return _failed(error, await_, timeout, await_flags)
        return general(
            device, create_flags, affinity, wait, command_buffer, exec_flags, table, timeout,
            await_flags,
        )

    submit.general = general
    return submit


def execute(create, execute, await_):
    """The helper for fence.create, queue.execute (a command buffer with no binding
    table, typically one-shot), fence.await:

        status = submit(device, create_flags, affinity, wait, command_buffer, exec_flags,
                        timeout, await_flags)
    """

    def general(
        device, create_flags, affinity, wait, command_buffer, exec_flags, timeout, await_flags
    ):
        f1 = create(device, create_flags)
        execute(device, affinity, wait, f1, command_buffer, exec_flags)
        return await_(timeout, await_flags, [f1])

    if not _own([(await_, "fence_await"), (create, "fence_create"),
                 (execute, "device_queue_execute")]):
        return general

    def submit(
        device, create_flags, affinity, wait, command_buffer, exec_flags, timeout, await_flags
    ):
        if type(device) is LocalDevice and type(command_buffer) is HalCommandBuffer and (
            wait is None
            or (type(wait) is Fence and (wait.state == REACHED or wait.reached_now()))
        ):
            # LocalQueue.submit of `command_buffer.execute(None)` (with no plan yet, as a
            # one-shot one recorded per call has: execute itself, one frame less)
            error = device.queue.run_now(
                run_command_buffer if command_buffer._plan is not None else _cb_execute,
                command_buffer, None, _EXECUTE,
            )
            if error is None:
                return 0
            if error is not BUSY:
                return _failed(error, await_, timeout, await_flags)
        return general(
            device, create_flags, affinity, wait, command_buffer, exec_flags, timeout, await_flags
        )

    submit.general = general
    return submit


def chain(create, alloca, join, execute, dealloca):
    """The helper for a queue chain (translator/analyses/chains.py): per transient buffer
    fence.create + queue.alloca, all waiting on `wait`; fence.join of their fences when
    there are several; fence.create + queue.execute.indirect; optionally fence.create +
    queue.dealloca. Every fence but the last is private; the last is returned:

        *buffers, fence = submit(device, wait, allocas, join_flags, create_flags,
                                 affinity, command_buffer, exec_flags, table, slots,
                                 dealloca)

    `allocas`: per alloca (fence flags, affinity, pool, memory types, usage, size, flags);
    `join_flags`: None with fewer than two allocas; `slots`: (table entry, alloca index)
    of each entry holding `ALLOCATED`; `dealloca`: None or (fence flags, affinity,
    buffer, flags, alloca index or -1 for the outside buffer given, signal fence): fence
    flags None when the dealloca signals the outside fence given last (then that is the
    fence returned), else the chain creates it. `join`/`dealloca` may be None when the
    module imports neither (then no call site needs them).
    """

    def general(device, wait, allocas, join_flags, create_flags, affinity, command_buffer,
                exec_flags, table, slots, dealloca_args):
        buffers, fences = [], []
        for fence_flags, aff, pool, memory_types, usage, size, flags in allocas:
            f = create(device, fence_flags)
            buffers.append(alloca(device, aff, wait, f, pool, memory_types, usage, size, flags))
            fences.append(f)
        if join_flags is not None:
            w = join(join_flags, fences)
        else:
            w = fences[0] if fences else wait
        fx = create(device, create_flags)
        for k, j in slots:
            _, offset, length = table[k]
            table[k] = (buffers[j], offset, length)
        execute(device, affinity, w, fx, command_buffer, exec_flags, table)
        return _results(buffers, _dealloca(device, fx, buffers, dealloca_args), dealloca_args)

    def _results(buffers, fence, dealloca_args):
        """The call's results: the buffers (None for a TRANSIENT one) and the fence."""
        if dealloca_args is not None and dealloca_args[2] is TRANSIENT:
            buffers = list(buffers)
            buffers[dealloca_args[4]] = None
        return (*buffers, fence)

    def _dealloca(device, fx, buffers, dealloca_args):
        """The optional tail through the imports, after the execute signalled `fx`."""
        if dealloca_args is None:
            return fx
        fence_flags, aff, buffer, flags, which, fd = dealloca_args
        if fence_flags is not None:  # (else it signals the outside fence `fd`)
            fd = create(device, fence_flags)
        dealloca(device, aff, fx, fd, buffers[which] if which >= 0 else buffer, flags)
        return fd

    # (join and dealloca are None where the module imports neither: no call needs them)
    optional = [(join, "fence_join"), (dealloca, "device_queue_dealloca")]
    if not _own([(create, "fence_create"), (alloca, "device_queue_alloca"),
                 (execute, "device_queue_execute_indirect")]
                + [(b, n) for b, n in optional if b is not None]):
        return general

    def submit(device, wait, allocas, join_flags, create_flags, affinity, command_buffer,
               exec_flags, table, slots, dealloca_args):
        # The call site's compiled fast path (plan_runner.compile_chain), where it applies
        if type(command_buffer) is HalCommandBuffer:
            plan = command_buffer._plan
            if plan:
                fast = plan.chains.get(slots, _UNSEEN)
                if fast is _UNSEEN:
                    transient = -1
                    if dealloca_args is not None and dealloca_args[2] is TRANSIENT:
                        transient = dealloca_args[4]
                    fast = plan.chains[slots] = compile_chain(
                        plan, len(allocas), len(table), slots, transient, TRANSIENT
                    )
                if fast is not None:
                    result = fast(device, wait, allocas, join_flags, create_flags, affinity,
                                  command_buffer, exec_flags, table, slots, dealloca_args,
                                  finish)
                    if result is not MISMATCH:
                        return result
        # The imports' checks, made up front: any that would fail takes the general path
        # from the start, which raises at the op that raises, after what ran before it.
        if not (
            type(device) is LocalDevice
            and type(command_buffer) is HalCommandBuffer
            and (
                wait is None
                or (type(wait) is Fence and (wait.state == REACHED or wait.reached_now()))
            )
            and not device.queue._draining
            and (
                dealloca_args is None
                or (
                    (dealloca_args[4] >= 0 or type(dealloca_args[2]) is HalBuffer)
                    and (dealloca_args[0] is not None or dealloca_args[5] is None
                         or type(dealloca_args[5]) is Fence)
                )
            )
        ):
            return general(device, wait, allocas, join_flags, create_flags, affinity,
                           command_buffer, exec_flags, table, slots, dealloca_args)
        for a in allocas:
            if a[2] or a[5] < 0:
                return general(device, wait, allocas, join_flags, create_flags, affinity,
                               command_buffer, exec_flags, table, slots, dealloca_args)
        # hal.device.queue.alloca on a LocalDevice, each fence reached at once (and so
        # their join)
        allocator = device.allocator
        buffers = []
        for _, _, _, memory_types, usage, size, _ in allocas:
            buffers.append(fresh_buffer(size, memory_types & _M32, usage & _M32, allocator))
            allocator.bytes_allocated += size
        # hal.device.queue.execute.indirect: LocalQueue.call with its wait fence reached
        # (nothing ran since the check above: the queue is still idle on this thread).
        # The table's entries are checked here, after the allocas, as the import checks
        # them after the unfused allocas ran: one of another type (TYPE) goes the imports'
        # way from the execute on, where the import raises its own error.
        queue = device.queue
        plan = command_buffer._plan
        error = MISMATCH
        if plan:
            run = plan.submits.get(slots, _UNSEEN)
            if run is _UNSEEN:
                run = _submit_for(plan, slots, table, slots)
            if run is not None:  # (the steps below in one function, as above)
                error = run(command_buffer, queue, table, device.worker_count, *buffers)
        if error is MISMATCH:
            for k, j in slots:
                _, offset, length = table[k]
                table[k] = (buffers[j], offset, length)
            for entry in table:
                if type(entry[0]) not in _TABLE_TYPES:
                    error = TYPE
                    break
            else:
                error = queue.run_now(
                    run_command_buffer, command_buffer, table, _EXECUTE_INDIRECT
                )
        return finish(device, create_flags, affinity, command_buffer, exec_flags, table,
                      dealloca_args, buffers, error)

    def finish(device, create_flags, affinity, command_buffer, exec_flags, table,
               dealloca_args, buffers, error):
        """The fast path after the execution ran (`error`: its outcome), or did not
        (BUSY, BUSY_QUEUE: another thread holds the queue; TYPE: an entry the import
        rejects; the table holds the buffers)."""
        queue = device.queue
        if error is BUSY or error is BUSY_QUEUE or error is TYPE:
            # another thread took the queue, or an entry the import rejects: the imports
            fx = Fence()
            fx.signal()  # (what the allocas and join left: the execute's wait, reached)
            f = create(device, create_flags)
            execute(device, affinity, fx, f, command_buffer, exec_flags, table)
            return _results(buffers, _dealloca(device, f, buffers, dealloca_args),
                            dealloca_args)
        if error is None:
            if dealloca_args is None or not queue._draining:
                # The execute's signal fence, reached as LocalQueue.call leaves it; or
                # hal.device.queue.dealloca's on a LocalDevice (ordering only: signalled at
                # once on an idle queue). Fence() + signal(), minus the lock: no one else
                # can hold or wait on the new fence yet.
                if dealloca_args is not None and dealloca_args[0] is None:
                    fence = dealloca_args[5]  # the outside fence the dealloca signals
                    if fence is not None:
                        fence.signal()
                    return _results(buffers, fence, dealloca_args)
                return _results(buffers, Fence.reached(), dealloca_args)
            fx = Fence()
            fx.signal()
        else:
            fx = Fence()  # the execute's signal fence, failed as LocalQueue.call leaves it
            fx.fail(error)
        return _results(buffers, _dealloca(device, fx, buffers, dealloca_args), dealloca_args)

    submit.general = general
    submit.finish = finish  # (for chain_loop.ChainLoop's replays)
    submit.transient = TRANSIENT
    return submit


# -- per-argument input checks ---------------------------------------------------------
# hal.buffer_view.assert, hal.buffer_view.buffer, [hal.device.allocator,] hal.buffer.assert
# on one argument (translator/analyses/arguments.py). GENERAL path: the bound imports in
# sequence. FAST path, only where the imports are one HalModule's own methods: exact
# types (a HalBufferView holding a HalBuffer, rodata messages, a HalAllocator or null) and
# every check passing, done inline; anything else takes the general path, so an error is
# the import's own (the checks read only, so running them again changes nothing).


def _check_argument(view_assert, view_buffer, allocator_of, buffer_assert):
    from ..vm.buffer import VMBuffer
    from .allocator import HalAllocator
    from .buffer_view import HalBufferView

    with_allocator = allocator_of is not None

    def general(view, message, element_type, encoding_type, shape, allocator, message2,
                minimum_length, memory_types, usage):
        view_assert(view, message, element_type, encoding_type, shape)
        buffer = view_buffer(view)
        if with_allocator:
            allocator = allocator_of(allocator)  # (the device)
            buffer_assert(buffer, message2, allocator, minimum_length, memory_types, usage)
            return buffer, allocator
        buffer_assert(buffer, message2, allocator, minimum_length, memory_types, usage)
        return buffer

    pairs = [(view_assert, "buffer_view_assert"), (view_buffer, "buffer_view_buffer"),
             (buffer_assert, "buffer_assert")]
    if with_allocator:
        pairs.append((allocator_of, "device_allocator"))
    if not _own(pairs, local_device=with_allocator):
        return general

    # (the shape arrives as a tuple: generated code writes it so, and the import's
    # `tuple(shape)` of a tuple is equal to it)
    if with_allocator:

        def fast(view, message, element_type, encoding_type, shape, device, message2,
                 minimum_length, memory_types, usage):
            if (
                type(view) is HalBufferView
                and type(message) is VMBuffer
                and type(message2) is VMBuffer
                and type(device) is LocalDevice
                and view.element_type == element_type & _M32
                and view.encoding_type == encoding_type & _M32
                and view.shape == shape
            ):
                buffer = view.buffer
                allocator = device.allocator
                memory_types &= _M32
                usage &= _M32
                if (
                    type(buffer) is HalBuffer
                    and type(allocator) is HalAllocator
                    and buffer.length >= minimum_length
                    and buffer.memory_types & memory_types == memory_types
                    and buffer.allowed_usage & usage == usage
                ):
                    return buffer, allocator
            return general(view, message, element_type, encoding_type, shape, device,
                           message2, minimum_length, memory_types, usage)

    else:

        def fast(view, message, element_type, encoding_type, shape, allocator, message2,
                 minimum_length, memory_types, usage):
            if (
                type(view) is HalBufferView
                and type(message) is VMBuffer
                and type(message2) is VMBuffer
                and view.element_type == element_type & _M32
                and view.encoding_type == encoding_type & _M32
                and view.shape == shape
            ):
                buffer = view.buffer
                memory_types &= _M32
                usage &= _M32
                if (
                    type(buffer) is HalBuffer
                    and (allocator is None or type(allocator) is HalAllocator)
                    and buffer.length >= minimum_length
                    and buffer.memory_types & memory_types == memory_types
                    and buffer.allowed_usage & usage == usage
                ):
                    return buffer
            return general(view, message, element_type, encoding_type, shape, allocator,
                           message2, minimum_length, memory_types, usage)

    fast.general = general
    return fast


def check_argument(view_assert, view_buffer, buffer_assert):
    """`buffer = check(view, message, element_type, encoding_type, shape, allocator,
    message2, minimum_length, memory_types, usage)`."""
    return _check_argument(view_assert, view_buffer, None, buffer_assert)


def check_argument_allocator(view_assert, view_buffer, device_allocator, buffer_assert):
    """`buffer, allocator = check(view, message, element_type, encoding_type, shape,
    device, message2, minimum_length, memory_types, usage)`: device.allocator(device)
    between the two checks."""
    return _check_argument(view_assert, view_buffer, device_allocator, buffer_assert)


__all__ = [
    "ALLOCATED",
    "alloca_execute_indirect",
    "chain",
    "check_argument",
    "check_argument_allocator",
    "execute",
    "execute_indirect",
    "run",
    "Run",
]


# (the runtime class of translator/codegen/loops.py's loops; it calls `chain`'s helper)
from .chain_loop import ChainLoop  # noqa: E402

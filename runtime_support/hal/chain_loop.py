"""The steps of a host loop of one queue chain (translator/codegen/loops.py).

Generated code makes one `ChainLoop` before such a loop, from the chain's first call's
arguments, then calls `step()` once per iteration where the chain call was, and
`results()` at the exit where the chain's results were read:

    loop_0 = ChainLoop(submit_chain, (device, wait, allocas, ...), ((0, 0),), True)
    while True:
        loop_0.step()
        ...
        if more:
            continue
        buffer, _, fence = loop_0.results()

(where the loop tests first, the exit reads results only `if loop_0.steps`)

A step is the chain call (fused.chain's helper) with what the loop's moves carried: each
table entry of `carried` holds the buffer the last step allocated, and with
`wait_carried` the call waits on the last step's fence.

REPLAY. The steps may be replays of the command buffer's native plan on buffers this
object owns, where nothing can tell the difference: the helper is `hal`'s own fast path,
the device a LocalDevice, the wait fence the loop came with null or reached, the allocas
from pool 0, the plan's checks passing on the first step's table and on this loop's
buffers (their sizes are the allocas', the same every step), and the plan writing no
buffer but this loop's. A replayed step writes new zero-filled buffers as the helper's
allocas would, two per alloca taking turns (the one a step reads is the last step's; the
one before that is dead, since the loop carries a buffer one step only), and a TRANSIENT
alloca on one scratch buffer; its fence is reached, as the helper's would be.

Replayed steps are DEFERRED: `step()` counts the step and its allocas, and `results()`
runs the steps counted, in order, under one taking of the queue and the plan, in native
code (loaders/native.py: pyree_run_plan_steps zero-fills a step's new buffers, writes its
table and runs the plan, per step). Between steps the loop runs only integer ops
(codegen/loops.py), which read nothing the steps write, and the steps write only this
object's buffers, so running them later changes nothing anyone can see; a loop left by an
exception has no results to read. Accounting is the helper's: the allocator counts each
step's allocas, the command buffer each execution. Where the steps cannot all run then (another thread holds the queue or the
plan, an executable was closed, statistics are on) or one fails, that step and the rest
go through the helper, from what the replays left, which does what the unfused chain
does (for the failed one, what it does with a failed execution).
"""

from __future__ import annotations

from array import array

from ..loaders import native, statistics
from .buffer import HalBuffer, fresh_buffer
from .command_buffer import HalCommandBuffer, overwritten_first
from .device import LocalDevice
from .fence import REACHED, Fence
from .plan_runner import image_of

# helper argument positions (fused.chain's submit)
DEVICE, WAIT, ALLOCAS, CMD, TABLE, SLOTS, DEALLOCA = 0, 1, 2, 6, 8, 9, 10
_M32 = 0xFFFFFFFF
_LATER = "later"  # _set_up: the plan is not built yet; try again after the first step
_new = object.__new__
# Words of the native steps block (native.STEPS_FIELDS) written per run.
_FIELD = {name: i for i, (name, _) in enumerate(native.STEPS_FIELDS)}
_COUNT, _TURN, _RAN = _FIELD["count"], _FIELD["turn"], _FIELD["ran"]
_FIRST0, _LATER0 = _FIELD["first0"], _FIELD["later0"]
_SLICE = 1024  # steps per foreign call at most


class _Replay:
    """The per-step state of a replay (see the module docstring)."""

    __slots__ = ("plan", "queue", "lock", "take", "give", "images", "zeros", "block",
                 "block_address", "run_steps", "parity", "ran", "pending",
                 "outputs", "executables", "allocator", "total", "command_buffer",
                 "workers", "parallel")


class ChainLoop:
    """One run of a loop's steps (module docstring): made before the loop, per call."""

    __slots__ = ("helper", "args", "table", "carried", "wait_carried", "last", "replay",
                 "transient", "tried", "steps")

    def __init__(self, helper, args, carried, wait_carried: bool) -> None:
        self.helper = helper
        self.args = list(args)
        self.table = list(args[TABLE])  # entries as given; carried ones updated per step
        self.carried = carried
        self.wait_carried = wait_carried
        self.last = None
        self.replay = None
        dealloca = args[DEALLOCA]
        transient = getattr(helper, "transient", None)
        self.transient = (dealloca[4] if dealloca is not None and transient is not None
                          and dealloca[2] is transient else -1)
        self.tried = False  # (whether replays were set up, or found not to apply)
        self.steps = 0  # steps made (an exit before the first reads no results)

    # -- the loop's calls ------------------------------------------------------------------
    def step(self) -> None:
        self.steps += 1
        replay = self.replay
        if replay is None and not self.tried:
            replay = self._set_up()  # (once: at the first step, or after it built the plan)
            if replay is _LATER:
                replay = None
            else:
                self.tried = True
                self.replay = replay
        if replay is not None:
            replay.pending += 1  # (run by results(); its allocas counted now)
            replay.allocator.bytes_allocated += replay.total
            return
        self._helper_step()

    def results(self):
        replay = self.replay
        if replay is not None:
            self._run_pending(replay)
            if self.replay is not None and replay.ran:
                self.last = self._materialized(replay)
        return self.last

    def _helper_step(self) -> None:
        """A step through the helper, from what the loop carried."""
        args = self.args
        results = self.helper(*args[:TABLE], list(self.table), *args[SLOTS:])
        self.last = results
        self._carry(results)

    def _carry(self, results) -> None:
        """What the loop's moves carried: the next step's wait fence and table buffers."""
        if self.wait_carried:
            self.args[WAIT] = results[-1]
        table = self.table
        for entry, j in self.carried:
            _, offset, length = table[entry]
            table[entry] = (results[j], offset, length)

    # -- replay ----------------------------------------------------------------------------
    def _set_up(self):
        """The replay state, where the module docstring's conditions hold before the
        first step; else None (every step through the helper)."""
        helper = self.helper
        device, wait, allocas, cb = (self.args[DEVICE], self.args[WAIT], self.args[ALLOCAS],
                                     self.args[CMD])
        dealloca = self.args[DEALLOCA]
        if type(cb) is HalCommandBuffer and cb._plan is None and self.steps == 1:
            return _LATER  # (its first execution builds the plan)
        if (
            getattr(helper, "finish", None) is None  # (not hal's own fast path)
            or type(device) is not LocalDevice
            or type(cb) is not HalCommandBuffer
            or not cb._plan
            or not cb._plan.checks
            or (dealloca is not None and dealloca[0] is None)  # (it signals an outside fence)
            or (dealloca is not None and dealloca[4] < 0 and type(dealloca[2]) is not HalBuffer)
        ):
            return None
        if wait is not None and not (
            type(wait) is Fence and wait.state == REACHED and wait.error is None
        ):
            return None
        try:
            sizes = [(a[2], a[3], a[4], a[5]) for a in allocas]  # pool, types, usage, size
        except (TypeError, IndexError):
            return None
        if any(pool != 0 or type(size) is not int or size < 0 for pool, _, _, size in sizes):
            return None
        plan = cb._plan
        own = dict(self.args[SLOTS])
        carried = dict(self.carried)
        for slot, _, _, _, writable, _ in plan.checks:
            if writable and slot not in own and slot not in carried:
                return None  # (it writes a buffer from outside: steps must not be deferred)
        # Two buffers per alloca taking turns, one scratch for a TRANSIENT one.
        outputs = []
        allocator = device.allocator
        for j, (_, types, usage, size) in enumerate(sizes):
            a = fresh_buffer(size, types & _M32, usage & _M32, allocator)
            b = a if j == self.transient else fresh_buffer(size, types & _M32, usage & _M32,
                                                          allocator)
            outputs.append((a, b))
        # The native table's words, every check of plan.run made here: for the first step
        # (it reads the buffers the loop came with), and for turn 0 (writes outputs[j][0],
        # reads outputs[j][1]). Turn 1's differs from turn 0's only in which buffer of
        # each pair an entry holds, of the same length, allocated alike: the same checks.
        table = list(self.table)
        for k, j in own.items():
            _, offset, length = table[k]
            table[k] = (outputs[j][0], offset, length)
        first = _checked_image(plan, table)
        for k, j in carried.items():
            _, offset, length = table[k]
            table[k] = (outputs[j][1], offset, length)
        turn0 = _checked_image(plan, table) if carried else first
        if first is None or turn0 is None:
            return None
        turn1 = array("q", turn0)
        for slot, index, *_ in plan.checks:
            if slot in own or slot in carried:
                buffer, offset, _ = table[slot]
                j = own[slot] if slot in own else carried[slot]
                turn1[index] = outputs[j][0 if slot in carried else 1].address + offset
        unread = set()  # a TRANSIENT alloca the commands overwrite whole before reading it
        for k, j in own.items():
            if j == self.transient:
                _, offset, length = self.table[k]
                if overwritten_first(cb.commands, k, sizes[j][3], offset, length):
                    unread.add(j)
        # per turn, (address, size) of each new buffer a step zero-fills as an alloca would
        zeros = [array("q"), array("q")]
        for j, (a, b) in enumerate(outputs):
            if j in unread:
                continue  # (nothing can see its bytes before the commands write them all)
            for parity, buffer in ((0, a), (1, b)):
                if buffer.length:
                    zeros[parity].extend((buffer.address, buffer.length))
        runtime = native.native_runtime()
        replay = _new(_Replay)
        replay.plan = plan
        replay.queue = device.queue
        replay.lock = device.queue._lock
        replay.take, replay.give = plan._token.pop, plan._token.append
        # The arrays the native block points into, kept alive with it (none ever resized).
        replay.images = (first, turn0, turn1)
        replay.zeros = zeros
        block = dict.fromkeys(native.STEPS_FIELDS_NAMES, 0)
        block.update(
            args=plan.args_address, table=plan.table_address, words=len(plan.table),
            first0=first.buffer_info()[0], later0=turn0.buffer_info()[0],
            image1=turn1.buffer_info()[0],
            zeros0=zeros[0].buffer_info()[0], nzeros0=len(zeros[0]) // 2,
            zeros1=zeros[1].buffer_info()[0], nzeros1=len(zeros[1]) // 2,
        )
        replay.block = array("q", block.values())
        replay.block_address = replay.block.buffer_info()[0]
        replay.run_steps = runtime.run_plan_steps
        replay.parity = 0
        replay.outputs = outputs
        replay.executables = tuple(plan.executables)
        replay.allocator = allocator
        replay.total = sum(size for *_, size in sizes)
        replay.command_buffer = cb
        replay.workers = device.worker_count
        replay.parallel = plan.parallel
        replay.ran = replay.pending = 0
        return replay

    def _run_pending(self, r: _Replay) -> None:
        """Runs the steps step() counted (module docstring: DEFERRED)."""
        count, r.pending = r.pending, 0
        done, error, parity = 0, None, r.parity
        queue, lock, plan = r.queue, r.lock, r.plan
        if count and not statistics.enabled and not any(e._closed for e in r.executables):
            lock.acquire()
            if queue._draining:  # (another thread holds the queue)
                lock.release()
            else:
                queue._draining = True
                lock.release()
                try:
                    r.take()  # (IndexError: another thread is running this plan)
                    try:
                        if r.parallel and (
                            r.workers != plan._workers
                            or native._pool is not plan._pool and plan._pool_moved()
                        ):
                            plan._use_workers(r.workers)
                        block, address, run_steps = r.block, r.block_address, r.run_steps
                        cb = r.command_buffer
                        while done < count:  # (in slices: Ctrl-C is seen between them)
                            block[_COUNT] = min(count - done, _SLICE)
                            block[_TURN] = parity
                            result = run_steps(address)
                            ran = block[_RAN]
                            if ran:  # (the first step's image is done with)
                                block[_FIRST0] = block[_LATER0]
                            cb.executions += ran
                            done += ran
                            parity ^= ran & 1
                            if result:
                                try:
                                    plan._raise(result)
                                except Exception as exc:  # (a VMError: the step's error)
                                    error = exc
                                break
                    finally:
                        r.give(1)
                except IndexError:
                    pass
                finally:
                    queue.release()
        r.parity = parity
        r.ran += done
        if done == count and error is None:
            return
        # The rest through the helper: from what the replays left, or, after a failed
        # step, from its results as the helper leaves a failed execution.
        self.replay = None
        if error is not None:
            buffers = [pair[parity ^ 1] for pair in r.outputs]
            args = self.args
            table = list(self.table)
            for k, j in dict(args[SLOTS]).items():
                _, offset, length = table[k]
                table[k] = (buffers[j], offset, length)
            self.last = self.helper.finish(
                args[DEVICE], args[4], args[5], args[CMD], args[7], table, args[DEALLOCA],
                tuple(buffers), error,
            )
            self._carry(self.last)
        elif r.ran:
            self.last = self._materialized(r)
            self._carry(self.last)
        for _ in range(count - done):
            r.allocator.bytes_allocated -= r.total  # (counted by step(); the helper counts)
            self._helper_step()

    def _materialized(self, r: _Replay):
        """The last replayed step's results, as the helper returns them."""
        last = r.parity ^ 1  # (the turn the last step wrote)
        buffers = [None if j == self.transient else pair[last]
                   for j, pair in enumerate(r.outputs)]
        return (*buffers, Fence.reached())


def _checked_image(plan, table):
    """The native table plan.run would write for `table` (an array of the same type and
    length as plan.table), or None where one of its checks fails: plan.run's own checks
    (plan_runner.image_of), on (HalBuffer or null, int, int) entries."""
    for entry in table:
        if not (type(entry) is tuple and len(entry) == 3
                and type(entry[0]) in (HalBuffer, type(None))
                and type(entry[1]) is int and type(entry[2]) is int):
            return None
    image = array("q", bytes(8 * len(plan.table)))
    return image if image_of(plan)(table, image) else None

"""Loop mode of a queue program: a host loop's calls deferred and run as one native call
(docs/design/host-path.md §5.4).

The translator marks a program `carried` where it is the queue work of a host loop's
body whose back edge moves each of its outputs into one of its inputs
(translator/analyses/queue_loops.py `loop_exits` proves it), and writes its call site
`queue_n.step(...)` and, at the start of each block the loop leaves to,
`... = queue_n.results(...)` over the registers that may hold what the calls returned:

    while True:
        r0, r6 = queue_2.step(r3, r1, r4, r0, r5)    # carried: r0 -> r1, r6 -> r0
        i0 = add_i32(i0, i5)
        i4 = int(i0 < i6)
        if i4:
            r1 = r0
            r0 = r6
            continue
        r0, r6 = queue_2.results(r0, r6)             # the last call's fence and buffer
        ...

A step may return *tokens* in place of its outputs: this step is DEFERRED. The next step
that receives the last step's tokens where the back edge carries them, and every other
input the same object as the step before, is deferred too; `results` (or any step that
does not continue the run) runs the deferred steps, in order, under one hold of the
queue, in one native call (native/steps.ll `pyree_run_plan_steps`: per step, zero the
new buffers, copy the step's table image into the plan's table, run the plan), and
replaces each token by the value the step it stands for would have returned. Between two
steps the loop runs only integer ops that cannot fail and read no token (the analysis
proves it), so running the steps later changes nothing anyone can see; a loop left by an
exception has no deferred step (only `step` raises, and it runs what was deferred first).

A run of deferred steps is taken where nothing can tell (checked when it starts): the
program is one segment (segments.py) whose shape for these inputs is built, with no
await or readback (its dispatch constants are written once: the integer ops that compute
them read integer inputs only, and the run's are the first step's); its outputs are the
fences it
signals after its last execution (reached, or failed with the execution's error) and the
buffers it allocates (each carried into the next step's input); the waits are over; the
plan writes no buffer from outside but the carried ones; statistics are off. Each
returned buffer has two buffers taking turns (the one a step reads is the last step's;
the one before that is dead: the loop carries a buffer one step only, and a token is at
most one step old where it is read, see the analysis), zeroed before the step that
writes it, as an alloca's new buffer is; the first step reads the buffers it was given.
Where the deferred steps cannot all run natively (another thread holds the queue, an
executable was closed, statistics were turned on, a step's execution failed), the rest
run as calls of the program, from what the native steps left: the fast path, which is
the general path's equal.
"""

from __future__ import annotations

from array import array

from ..errors import StatusCode, VMError
from ..hal.buffer import HalBuffer, fresh_buffer
from ..hal.device import LocalDevice
from ..hal.fence import Fence
from ..hal.queue import internal_error
from ..loaders import statistics
from ..native import jit as native_jit, layout as native_layout, pool as native_pool
from .shapes import write_outside_rows

_FIELD = {name: i for i, (name, _) in enumerate(native_layout.STEPS_FIELDS)}
_COUNT, _TURN, _RAN = _FIELD["count"], _FIELD["turn"], _FIELD["ran"]
_FIRST0, _LATER0 = _FIELD["first0"], _FIELD["later0"]
_SLICE = 1024  # steps per foreign call at most (Ctrl-C is seen between them)
_M32 = 0xFFFFFFFF
_SHORT_RUNS = 8
_IDENTITY = object.__eq__


class _Token:
    """What a deferred step returns for output `index`; `parity`: its step's number mod 2."""

    __slots__ = ("run", "index", "parity")

    def __init__(self, run, index: int, parity: int) -> None:
        self.run, self.index, self.parity = run, index, parity

    def __repr__(self) -> str:
        return f"<deferred output {self.index} of a loop step>"


class _Run:
    """The deferred steps of one loop (module docstring)."""

    __slots__ = (
        "loop", "args", "count", "final", "tokens", "expect", "shape", "queue", "workers",
        "allocator", "pairs", "block", "block_address", "images", "zeros", "constants",
        "want", "by_value",
    )


def _resolve(value):
    """A token's value (its run's steps run first); anything else as it is."""
    if type(value) is not _Token:
        return value
    run = value.run
    if run.final is None:
        run.loop.flush(run)
    outputs = run.final[value.parity]
    if outputs is None:  # (not made by the analysis' code: a token two steps old)
        raise VMError(StatusCode.INTERNAL, "queue program: a loop step's result read after it was replaced")
    return outputs[value.index]


def _same(args, want) -> bool:
    """Whether `args` are `want`: the same objects, or integers of the same values."""
    for a, b in zip(args, want):
        if a is not b and not (type(a) is int and type(b) is int and a == b):
            return False
    return True


def results(*values):
    """The values of a loop's registers at its exit: each token replaced by the output of
    the step it stands for (its run's deferred steps run first), the rest as they are.
    One value for one register, else a tuple."""
    if len(values) == 1:
        return _resolve(values[0])
    return tuple(_resolve(v) for v in values)


class LoopMode:
    """A FastProgram's `step` where the program has `carried` pairs and is one segment."""

    def __init__(self, program, segment, computes) -> None:
        self.program = program  # (the FastProgram: its __call__ is a step not deferred)
        self.segment = segment
        # The integer ops a call computes before its plan (dispatch constants): of integer
        # inputs only (the carried ones are refs), so the same in every step of a run.
        self.computes = computes
        spec = program.program
        self.single = len(spec.outputs) == 1
        self.packed = spec.packed
        # per carried pair: (input position, output index)
        self.carried = [(spec.inputs.index(i), spec.outputs.index(o)) for o, i in spec.carried]
        taken = {i for i, _ in self.carried}
        self.same = [k for k in range(len(spec.inputs)) if k not in taken]
        self.probe = self.carried[0][0]
        self.output_slots = [program._values.slots[name] for name in spec.outputs]
        # (for tests and profiles: runs begun, steps deferred, steps run natively)
        self.runs_started = self.steps_deferred = self.native_steps = 0
        # Runs broken off after a step or two (an input that changes per step, e.g. a
        # dispatch constant): past _SHORT_RUNS of them no run starts (each costs more
        # than the calls it would save).
        self.short_runs = 0

    # -- the call site's step -------------------------------------------------------------
    def step(self, *args):
        if self.packed:  # (more than 10 inputs travel as one tuple)
            (args,) = args
        token = args[self.probe]
        if type(token) is _Token:
            run = token.run
            # (the last step's tokens where the back edge carries them, the other inputs
            # the first step's: refs the same objects, integers the same values)
            if run.final is None and (
                args == run.want[run.count & 1] if run.by_value else _same(args, run.want[run.count & 1])
            ):
                expect = run.tokens[run.count & 1]
                run.count += 1
                return expect[0] if self.single else expect
        if any(type(a) is _Token for a in args):
            if type(token) is _Token and token.run.final is None and token.run.count < 3:
                self.short_runs += 1  # (a run that its next step did not continue)
            args = tuple(_resolve(a) for a in args)
        run = self._start(args) if self.short_runs < _SHORT_RUNS else None
        if run is not None:
            return run.expect[0] if self.single else run.expect
        return self._call(args)

    def _call(self, args):
        """A step as a call of the program (its fast path)."""
        return self.program(args) if self.packed else self.program(*args)

    # -- starting a run -------------------------------------------------------------------
    def _start(self, args):
        """A run whose first (deferred) step is this call, or None (module docstring)."""
        if statistics.enabled:
            return None
        program, segment = self.program, self.segment
        env = program._env((args,) if self.packed else args)
        device = env[segment.device]
        if type(device) is not LocalDevice:
            return None
        for op in self.computes:
            op(env)
        for slot in segment.waits:
            fence = env[slot]
            if not (fence is None or (type(fence) is Fence and fence.reached_now())):
                return None
        for slot in segment.buffers:
            if type(env[slot]) is not HalBuffer:
                return None
        try:
            shape = segment.shapes.get(segment.key_of(env))
        except TypeError:
            return None
        if not shape or shape.loads or shape.results:
            return None
        if shape.await_args is not None or any(not signalled for _, signalled in shape.fences):
            return None
        # Each output: a fence signalled after the last execution, or a returned buffer.
        fences = {slot for slot, _ in shape.fences}
        fresh_of = {s: k for k, f in enumerate(shape.fresh) for s in f[4]}
        kinds = []  # per output: ("fence",) or ("buffer", fresh index)
        for slot in self.output_slots:
            if slot in fences:
                kinds.append(None)
            elif slot in fresh_of:
                kinds.append(fresh_of[slot])
            else:
                return None
        if sorted(k for k in kinds if k is not None) != list(range(len(shape.fresh))):
            return None  # (a buffer returned twice, or one that is no output)
        # The carried inputs: buffers bound or released, or fences waited on, not keyed.
        keyed = segment.key_slots
        carried_slots = set()
        for i, j in self.carried:
            if i in keyed:
                return None
            if kinds[j] is None and i not in segment.waits:
                return None
            if kinds[j] is not None and i not in segment.buffers:
                return None
            carried_slots.add(i)
        for slot, _word, _offset, _length, _end, writes in shape.outside:
            if writes and slot not in carried_slots:
                return None  # (it writes a buffer from outside: steps must not wait)
        # Two buffers per returned buffer, taking turns.
        allocator = device.allocator
        pairs = []
        for size, types, usage, _places, _slots in shape.fresh:
            pairs.append((fresh_buffer(size, types, usage, allocator),
                          fresh_buffer(size, types, usage, allocator)))
        # Table images: the first step (the buffers it was given, writes turn 0's), then
        # turn 0 (reads turn 1's) and turn 1 (reads turn 0's).
        first = _image(shape, env, pairs, 0)
        later = list(env)
        for i, j in self.carried:
            if kinds[j] is not None:
                later[i] = pairs[kinds[j]][1]
        turn0 = _image(shape, later, pairs, 0)
        for i, j in self.carried:
            if kinds[j] is not None:
                later[i] = pairs[kinds[j]][0]
        turn1 = _image(shape, later, pairs, 1)
        if first is None or turn0 is None or turn1 is None:
            return None
        zeros = [array("q"), array("q")]
        for pair in pairs:
            for parity in (0, 1):
                if pair[parity].length:
                    zeros[parity].extend((pair[parity].address, pair[parity].length))
        plan = shape.plan
        run = object.__new__(_Run)
        run.loop, run.args, run.count, run.final = self, args, 1, None
        # The dispatch constants each step writes (shapes.run_shape): the inputs'
        # values, the same in every step of the run (its other inputs are the first's).
        run.constants = None
        if shape.values is not None:
            run.constants = []
            for target, value_slot in zip(plan.constants, shape.values):
                if target is not None and value_slot is not None:
                    indices, get, _ = value_slot
                    run.constants.append((target, indices, [v & _M32 for v in get(env)]))
        run.tokens = (
            tuple(_Token(run, j, 0) for j in range(len(kinds))),
            tuple(_Token(run, j, 1) for j in range(len(kinds))),
        )
        run.expect = run.tokens[0]
        # The inputs a step continuing the run gets, by its parity: the step before's
        # tokens where the back edge carries them, the first step's inputs elsewhere.
        want = [list(args), list(args)]
        for i, j in self.carried:
            want[0][i], want[1][i] = run.tokens[1][j], run.tokens[0][j]
        run.want = (tuple(want[0]), tuple(want[1]))
        # (== compares them where it means the same object or integer: no float, whose
        # -0.0 == 0.0, and nothing with an equality of its own; else `_same`)
        run.by_value = all(type(a) is int or type(a).__eq__ is _IDENTITY for a in args)
        run.shape, run.queue, run.workers, run.allocator = shape, device.queue, device.worker_count, allocator
        run.pairs = [None if k is None else pairs[k] for k in kinds]
        run.images = (first, turn0, turn1)
        run.zeros = zeros
        block = dict.fromkeys(native_layout.STEPS_FIELDS_NAMES, 0)
        block.update(
            args=plan.args_address, table=plan.table_address, words=len(plan.table),
            first0=first.buffer_info()[0], later0=turn0.buffer_info()[0],
            image1=turn1.buffer_info()[0],
            zeros0=zeros[0].buffer_info()[0], nzeros0=len(zeros[0]) // 2,
            zeros1=zeros[1].buffer_info()[0], nzeros1=len(zeros[1]) // 2,
        )
        run.block = array("q", block.values())
        run.block_address = run.block.buffer_info()[0]
        self.runs_started += 1
        return run

    # -- running the deferred steps -------------------------------------------------------
    def flush(self, run: _Run) -> None:
        """Runs `run`'s deferred steps (module docstring) and keeps the outputs of its
        last two, by their steps' parity, in `run.final`."""
        count = run.count
        self.steps_deferred += count
        shape = run.shape
        plan = shape.plan
        done, error = 0, None
        runtime = native_jit.native_runtime()
        if (
            runtime is not None and not statistics.enabled
            and not any(e._closed for e in plan.executables) and run.queue.hold()
        ):
            try:  # (the plan's table is written only while this thread holds its queue)
                if plan.parallel and (
                    run.workers != plan._workers
                    or native_pool.first_pool is not plan._pool and plan._pool_moved()
                ):
                    plan._use_workers(run.workers)
                for target, indices, values in run.constants or ():
                    if indices is None:
                        target[:] = values
                    else:
                        for j, v in zip(indices, values):
                            target[j] = v
                block, address, run_steps = run.block, run.block_address, runtime.run_plan_steps
                parity = 0
                while done < count:
                    block[_COUNT] = min(count - done, _SLICE)
                    block[_TURN] = parity
                    result = run_steps(address)
                    ran = block[_RAN]
                    if ran:  # (the first step's image is done with)
                        block[_FIRST0] = block[_LATER0]
                    done += ran
                    parity ^= ran & 1
                    if result:
                        try:
                            plan._raise(result)
                        except VMError as exc:
                            error = exc
                        except Exception as exc:  # noqa: BLE001 - a bug or a native failure
                            error = internal_error("device.queue.execute", exc)
                        break
            finally:
                run.queue.release()
        run.allocator.bytes_allocated += shape.fresh_bytes * done
        self.native_steps += done
        final = [None, None]  # (the outputs of the last two steps, by parity)
        last = None
        if done:
            if done > 1:
                final[done & 1] = self._outputs(run, done - 2, None)
            final[(done - 1) & 1] = last = self._outputs(run, done - 1, error)
        # The rest as calls of the program, from what the native steps left.
        args = list(run.args)
        for k in range(done, count):
            if last is not None:
                for i, j in self.carried:
                    args[i] = last[j]
            out = self._call(args)
            final[k & 1] = last = (out,) if self.single else tuple(out)
        run.final = final
        # Nothing native points into the images now; and without its tokens the run is no
        # reference cycle: it goes (with the buffers it holds) with the last register that
        # holds one of its tokens, when the function returns, before its results are
        # looked at (a result buffer nothing else holds is handed out without a copy).
        run.images = run.block = run.zeros = run.constants = None
        run.tokens = run.expect = run.want = run.args = run.pairs = run.shape = None

    @staticmethod
    def _outputs(run: _Run, k: int, error) -> tuple:
        """The outputs step `k` (run natively) returns: its turn's buffers, its fences
        reached, or failed with the error of its execution."""
        out = []
        for pair in run.pairs:
            if pair is not None:
                out.append(pair[k & 1])
            elif error is None:
                out.append(Fence.reached())
            else:
                fence = Fence()
                fence.fail(error)  # (it follows the failed execution)
                out.append(fence)
        return tuple(out)


def _image(shape, env, pairs, turn: int):
    """The plan's native table for a step that reads the buffers in `env` and writes
    turn `turn`'s buffers of `pairs`, or None where a check of run_shape's declines."""
    table = array("q", shape.plan.table)
    if not write_outside_rows(shape.outside, table, env):
        return None
    for (_size, _types, _usage, places, _slots), pair in zip(shape.fresh, pairs):
        for word, offset in places:
            table[word] = pair[turn].address + offset
    return table


__all__ = ["LoopMode", "results"]

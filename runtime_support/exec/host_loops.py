"""Loop calls: a host loop whose body is one queue program and integer ops, its
iterations run by one call (docs/design/host-path.md §18).

The translator writes such a loop (translator/analyses/queue_loops.py `host_loop`)
with the program's call as `queue_n.loop(...)`, and keeps the loop around it:

    while True:
        i36 = i5
        # QUEUE_4: pc 0x2ee-0x53d, 23 queue steps
        i5, r8, i34 = queue_4.loop(r5, r2, i36, i6, r6, r3, i34, r0, r7, i16, i18)
        i34 = add_i64(i34, i16)
        i33 = int(i34 < i18)
        i36 = int(i5 != 0)
        i36 = i33 & i36
        if i36:
            r0 = r8
            continue
        ...

The loop call runs the program, then what the loop runs until its next call (the integer
ops after the call, the branch, the back edge's copies, the ops at the loop's head: the
program's `Loop`, exec/program.py), and calls the program again, as long as the branch
goes back. It returns the outputs of the last call and the registers `kept` as they were
at that call: the state the generated code is in after that call, from which it goes on
(computes the test again, leaves the loop). Nothing but the program's calls can fail or
be seen (the analysis proves the ops between are integer ops that cannot fail and touch
no ref), so the registers in between are nobody's business; an error of a call is raised
by the loop call as the call raises it, and the function's registers die with it.

A call is the program's own (its fast path, or the general path): the results and errors
are the program's, whatever runs them. Where the program is one segment (and perhaps a
tail of fills), the iterations after the one that built its shape run in native code, in
one foreign call (exec/native_loops.py); an iteration that code cannot run is handed
back here, from where it stopped.
"""

from __future__ import annotations

from operator import itemgetter

from ..errors import StatusCode, VMError
from ..hal.device import LocalDevice
from ..loaders import statistics
from ..native import layout as L
from .computes import compute_function, compute_op
from .program import Compute, Loop
from .shapes import finish_shape


# What FastProgram.call_held answers where the held plan does not run for the inputs.
NOT_HELD = object()


class HostLoop:
    """A program's `loop` (module docstring): the register file and the ops over it."""

    def __init__(self, program, call) -> None:
        spec: Loop = program.loop
        self.call = call  # (the bound program: one call of it)
        self.arguments = len(program.inputs) + len(spec.registers)
        slots: dict[str, int] = {}
        template: list = []

        def slot(name) -> int:
            if type(name) is not str:  # (a literal operand)
                template.append(name)
                return len(template) - 1
            if name not in slots:
                slots[name] = len(template)
                template.append(None)
            return slots[name]

        # the loop call's arguments first, in order
        for name in (*program.inputs, *spec.registers):
            if name in slots:
                raise VMError(StatusCode.INVALID_ARGUMENT, f"queue program loop: {name!r} passed twice")
            slot(name)
        self.width = len(template)
        self.slots = slots  # (register name -> index: exec/native_loops.py)
        self.inputs = [slots[n] for n in program.inputs]
        self.targets = [slot(n) for n in spec.targets]
        self.single = len(program.outputs) == 1
        if len(spec.targets) != len(program.outputs):
            raise VMError(StatusCode.INVALID_ARGUMENT, "queue program loop: one target per output")
        self.after = [self._op(op, slot) for op in spec.after]
        self.before = [self._op(op, slot) for op in spec.before]
        self.test = slot(spec.test)
        self.negate = spec.negate
        self.sources = [slot(a) for a, _ in spec.copies]
        self.destinations = [slot(b) for _, b in spec.copies]
        self.kept = [slot(n) for n in spec.kept]
        self.template = template[self.width:]
        # (one tuple where the program takes its inputs packed or has one)
        self.one_argument = program.packed or len(self.inputs) == 1
        self.fetch_inputs = itemgetter(*self.inputs) if self.inputs else (lambda regs: ())
        # (for tests and profiles: iterations, loop calls, iterations run as held runs)
        self.iterations = self.loop_calls = self.held_iterations = 0
        from ..env_knobs import flag_knob

        # PYREE_HOST_LOOP=0: each loop call one call of the program (the generated loop
        # runs the iterations, as it did before loop calls)
        self.enabled = flag_knob("PYREE_HOST_LOOP", True)
        # PYREE_NATIVE_LOOP=0: held runs stay in Python (exec/native_loops.py)
        self.native = flag_knob("PYREE_NATIVE_LOOP", True)
        self.native_iterations = 0  # (iterations run natively: tests and profiles)
        self._natives: dict = {}  # (id(shape), kinds) -> (shape, NativeLoop | None)

    def _run_native(self, regs: list, args, queue):
        """The loop's next iterations in one foreign call (exec/native_loops.py), from
        `regs`: None where they do not run there (nothing done); else (iterations run,
        the loop call's result where the test left the loop or None, and NOT_HELD or the
        outputs of an iteration whose plan failed without raising). `regs` is left as the
        native iterations leave it."""
        from .native_loops import NativeLoop, NotNative

        program = self.call
        try:
            env, shape = program.held_env(args)
        except Exception:  # noqa: BLE001 - the call itself says what is wrong
            return None
        if shape is None:
            return None
        # (the values' types decide their kinds: NativeLoop.build reads them)
        cache_key = (id(shape), tuple(map(type, regs)), tuple(map(type, env)))
        entry = self._natives.get(cache_key)
        if entry is None:
            try:
                native = NativeLoop.build(self, program, shape, regs, env)
            except NotNative:
                native = None
            if len(self._natives) >= 8:
                self._natives.clear()
            entry = self._natives[cache_key] = (shape, native)
        native = entry[1]
        if native is None:
            return None
        device = env[native.device_slot]
        try:
            code, pc, done, words, objects, failed_env, error = native.run(regs, env, queue, device)
        except NotNative:
            return None
        self.native_iterations += done
        self.held_iterations += done
        kinds = native.kinds_at(pc, done)
        written = native.written  # (the others hold the objects they held)
        for r, v in zip(written, native.values(words, objects, kinds, written)):
            regs[r] = v
        if code == L.LOOP_EXIT_LEFT:
            self.native_iterations += 1
            self.held_iterations += 1
            return done + 1, tuple(native.values(words, objects, kinds, native.snapshot)), NOT_HELD
        if code == L.LOOP_EXIT_DECLINE and failed_env is None:
            return done, None, NOT_HELD  # (nothing of this iteration done)
        if code == L.LOOP_EXIT_FAILED:  # (what the held run leaves: an await raises it)
            finish_shape(native.shape, failed_env, device.allocator, error, program.await_import)
        if native.tail is not None:  # (the tail's steps, through their imports)
            return done, None, program.resume_general(failed_env, native.tail)
        return done, None, program.outputs_of(failed_env)

    @staticmethod
    def _op(op: Compute, slot):
        keys = tuple(slot(a) for a in op.args)
        return compute_op(compute_function(op.op), keys, slot(op.out), op.op)

    def __call__(self, args):
        if len(args) != self.arguments:
            raise VMError(
                StatusCode.INVALID_ARGUMENT,
                f"queue program loop: {len(args)} arguments, expected {self.arguments}",
            )
        regs = list(args)
        regs += self.template
        call, fetch, targets, single = self.call, self.fetch_inputs, self.targets, self.single
        after, before, test, negate = self.after, self.before, self.test, self.negate
        sources, destinations, kept = self.sources, self.destinations, self.kept
        one_argument, enabled = self.one_argument, self.enabled
        # A program that is one segment: after its first call, its plan runs for the
        # iterations under one hold of the queue (held runs, module docstring).
        whole = getattr(call, "whole_segment", None) if enabled else None
        # A segment and a tail (FastProgram.tail): the queue held for native runs alone.
        hold_at = whole
        if hold_at is None and enabled and self.native and getattr(call, "tail", None) is not None:
            hold_at = call.segment.device
        self.loop_calls += 1
        count = 0
        held = None  # (the queue this loop call holds)
        tries = 2 if self.native else 0  # (native runs per loop call: a decline ends one)
        if hold_at is not None and tries and not statistics.enabled:
            # (a shape built by an earlier loop call: the first iteration natively too)
            device = regs[self.inputs[hold_at]]
            if type(device) is LocalDevice and device.queue.hold():
                held = device.queue
        try:
            while True:
                inputs = fetch(regs)
                args = (inputs,) if one_argument else inputs
                out = NOT_HELD
                if held is not None and tries and not statistics.enabled:
                    tries -= 1
                    native = self._run_native(regs, args, held)
                    if native is not None:
                        ran, left, out = native
                        count += ran
                        if left is not None:
                            state = left  # (the test said the loop is over)
                            break
                        if out is NOT_HELD:  # (declined: this iteration from the registers)
                            inputs = fetch(regs)
                            args = (inputs,) if one_argument else inputs
                    elif count == 0:  # (no shape yet: the first iteration a call, which builds it)
                        held.release()
                        held = None
                if out is not NOT_HELD:
                    pass  # (an iteration the native run left to Python, finished)
                elif held is not None and whole is None:  # (no held runs of a tail: calls)
                    held.release()
                    held = hold_at = None
                    out = call(*args)
                elif held is not None:
                    out = NOT_HELD if statistics.enabled else call.call_held(args, held)
                    if out is NOT_HELD:  # (the rest as calls: they raise what the steps raise)
                        held.release()
                        held = whole = hold_at = None
                        out = call(*args)
                    else:
                        self.held_iterations += 1
                else:
                    out = call(*args)
                    if hold_at is not None and not statistics.enabled:
                        device = regs[self.inputs[hold_at]]
                        if type(device) is LocalDevice and device.queue.hold():
                            held = device.queue
                        else:
                            whole = hold_at = None
                count += 1
                if single:
                    regs[targets[0]] = out
                    out = (out,)
                else:
                    for k, v in zip(targets, out):
                        regs[k] = v
                state = out + tuple([regs[k] for k in kept])
                if not enabled:
                    break
                for op in after:
                    op(regs)
                if (not regs[test]) is not negate:
                    break  # (the loop is left: the generated code computes the test again)
                values = [regs[k] for k in sources]
                for k, v in zip(destinations, values):
                    regs[k] = v
                for op in before:
                    op(regs)
        finally:
            if held is not None:
                held.release()
            self.iterations += count
        return state[0] if len(state) == 1 else state


__all__ = ["HostLoop", "NOT_HELD"]

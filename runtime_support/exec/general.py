"""The general path of the queue-program executor: the reference (docs/design/host-path.md §5.1).

It runs a program's steps in order through the context's bound imports, exactly the calls
the VM function would make, so its results and errors are the imports' own. Its state is
one dict of named values, so it can start at any step: `resume(values, k)` runs steps k..
and returns the outputs (a fast path that declines after step k hands over there).

    run = bind_program(QUEUE_0, ctx, _IMPORTS)     # once per program and context, at load
    buffer0, status0 = run(r3, i22)                  # per call: the inputs, in order

(bind.py's `bind_program` chooses between this path and the fast one.)

Each step is prepared once at bind into a closure: its import resolved by name, its
fields turned into one getter over the values dict, where constants and rodata segments
sit under int keys beside the named values; nothing is looked up by name per call but
the values themselves.
"""

from __future__ import annotations

from operator import itemgetter

from ..errors import StatusCode, VMError
from .computes import compute_function, compute_op
from .loops import results as loops_results
from .program import Compute, FailIf, QueueProgram, Rodata
from .steps import Step


class _Values:
    """The slots of a program's values list and the getters over it, made at bind.

    Each name (`"r3"`, `"fence0"`) and each constant or rodata segment gets a slot (an
    index into the call's values list: the inputs first, in order, then the rest), the
    constants' slots filled in the template every call starts from, so that every scalar
    field is one C-level `itemgetter` lookup and a step's whole argument list is one
    `itemgetter` call where it has no spans."""

    def __init__(self, inputs, rodata) -> None:
        self.rodata = rodata
        self.slots: dict[str, int] = {}  # name -> slot
        self.constants: dict[int, object] = {}  # slot -> constant value
        self._by_value: dict = {}
        for name in inputs:
            self.add(name)

    def add(self, name: str) -> int:
        """The slot of a name the program makes (a new one at its first mention)."""
        slot = self.slots.get(name)
        if slot is None:
            slot = self.slots[name] = len(self.slots) + len(self.constants)
        return slot

    def template(self, inputs: int) -> list:
        """What follows the inputs in a call's values list: the constants in their slots."""
        tail = [None] * (len(self.slots) + len(self.constants) - inputs)
        for slot, value in self.constants.items():
            tail[slot - inputs] = value
        return tail

    def key(self, value):
        """The slot of a field's value: a name's own, or a constant's."""
        if isinstance(value, str):
            slot = self.slots.get(value)
            if slot is None:
                raise VMError(StatusCode.INVALID_ARGUMENT, f"queue program: {value!r} is read before it is made")
            return slot
        if isinstance(value, Rodata):
            if not 0 <= value.ordinal < len(self.rodata):
                raise VMError(StatusCode.OUT_OF_RANGE, f"queue program: rodata {value.ordinal} out of range")
            value = self.rodata[value.ordinal]
        # (by identity and type: 1 and 1.0 and True are different constants)
        ident = (type(value), value) if isinstance(value, (int, float, type(None))) else id(value)
        key = self._by_value.get(ident)
        if key is None:
            key = self._by_value[ident] = len(self.slots) + len(self.constants)
            self.constants[key] = value
        return key

    def constant(self, value):
        """(True, the value) of a field that names no value of the program (a literal, a
        rodata segment, a tuple of them), else (False, None): handlers fold such fields
        at bind."""
        if isinstance(value, str):
            return False, None
        if isinstance(value, tuple):
            items = [self.constant(v) for v in value]
            if all(known for known, _ in items):
                return True, tuple(v for _, v in items)
            return False, None
        return True, self.constants[self.key(value)]

    def getter(self, value):
        """A function of the values dict giving the field's value: a span is a list (of
        tuples where its items have several operands), as the VM passes it."""
        if not isinstance(value, tuple):
            return itemgetter(self.key(value))
        if value and all(isinstance(v, tuple) for v in value):
            rows = [self._row(v) for v in value]
            return lambda env: [row(env) for row in rows]
        keys = [self.key(v) for v in value]
        if not keys:
            return lambda env: []
        if len(keys) == 1:
            (k,) = keys
            return lambda env: [env[k]]
        get = itemgetter(*keys)
        return lambda env: list(get(env))

    def _row(self, value: tuple):
        keys = [self.key(v) for v in value]
        if len(keys) == 1:
            (k,) = keys
            return lambda env: (env[k],)
        return itemgetter(*keys)

    def fetch(self, values):
        """A function of the values dict giving a step's argument tuple."""
        if any(isinstance(v, tuple) for v in values):
            getters = [self.getter(v) for v in values]
            return lambda env: [g(env) for g in getters]
        keys = [self.key(v) for v in values]
        if not keys:
            return lambda env: ()
        if len(keys) == 1:
            (k,) = keys
            return lambda env: (env[k],)
        return itemgetter(*keys)


def _operation(step, fn, fetch, outs, function: str):
    """The closure that runs one prepared step on the values dict, through its import
    (or its numerics function, or its fail check)."""
    if isinstance(step, FailIf):
        test, status = fetch
        negate, message, location = step.negate, step.message, step.location

        def fail_if(env) -> None:
            if bool(test(env)) != negate:
                raise VMError(status(env), message, function=function, location=location)

        return fail_if
    if outs is None:

        def call(env) -> None:
            fn(*fetch(env))

    elif isinstance(outs, int):

        def call(env) -> None:
            env[outs] = fn(*fetch(env))

    else:

        def call(env) -> None:
            for slot, value in zip(outs, fn(*fetch(env))):
                env[slot] = value

    return call


class GeneralProgram:
    """A queue program bound to one context's imports; calling it runs every step."""

    def __init__(self, program: QueueProgram, imports: dict, rodata) -> None:
        self.program = program
        values = self._values = _Values(program.inputs, rodata)
        self._steps = []  # (step, function, argument fetch, output slots) per step
        self._ops = []  # per step: the closure that runs it through its import
        for k, step in enumerate(program.steps):
            if isinstance(step, Compute):
                fn, fields, outs = compute_function(step.op), step.args, step.out
                fetch = values.fetch(fields)
            elif isinstance(step, FailIf):
                fn, outs = None, None
                fetch = (values.getter(step.test), values.getter(step.status))
            elif isinstance(step, Step):
                fn = imports.get(step.IMPORT)
                if fn is None:
                    raise VMError(
                        StatusCode.NOT_FOUND,
                        f"queue program of {program.function}: import {step.IMPORT} is not bound",
                    )
                fetch = values.fetch([getattr(step, p) for p in step.PARAMS])
                outs = step.out
            else:
                raise VMError(StatusCode.INVALID_ARGUMENT, f"queue program: step {k} is not a step")
            if isinstance(outs, str):
                outs = values.add(outs)
            elif outs is not None:
                outs = tuple(values.add(name) for name in outs)
            self._steps.append((step, fn, fetch, outs))
            if isinstance(step, Compute) and isinstance(outs, int):
                op = compute_op(fn, tuple(values.key(v) for v in step.args), outs, step.op)
            else:
                op = _operation(step, fn, fetch, outs, program.function)
            self._ops.append(op)
        for name in program.outputs:
            if name not in values.slots:
                raise VMError(StatusCode.INVALID_ARGUMENT, f"queue program: output {name!r} is never made")
        outputs = [values.slots[name] for name in program.outputs]
        self._outputs = itemgetter(*outputs) if outputs else None
        self.output_slots = outputs
        self._inputs = len(program.inputs)
        self._packed = program.packed
        self._tail = None  # (the template after the inputs: made at the first call)
        self._host_loop = None  # (a loop call's runner: made at its first call)

    def _env(self, args) -> list:
        if self._packed:
            (args,) = args
        if len(args) != self._inputs:
            raise VMError(
                StatusCode.INVALID_ARGUMENT,
                f"queue program of {self.program.function}: {len(args)} inputs, expected {self._inputs}",
            )
        tail = self._tail
        if tail is None:  # (every slot is known once binding is over)
            tail = self._tail = self._values.template(self._inputs)
        env = list(args)
        env += tail
        return env

    def __call__(self, *args):
        env = self._env(args)
        for op in self._ops:
            op(env)
        return None if self._outputs is None else self._outputs(env)

    def outputs_of(self, env: list):
        """The outputs of a call whose values list is `env` (one value, a tuple of several,
        or None)."""
        return None if self._outputs is None else self._outputs(env)

    def step(self, *args):
        """A call of a loop's program (QueueProgram.carried): here, the call itself."""
        return self(*args)

    def loop(self, *args):
        """A loop call (QueueProgram.loop, exec/host_loops.py): the iterations of the
        loop whose body this program is, from these registers, while its test holds."""
        runner = self._host_loop
        if runner is None:
            from .host_loops import HostLoop

            runner = self._host_loop = HostLoop(self.program, self)
        return runner(args)

    @staticmethod
    def results(*values):
        """The loop's results at its exit (exec/loops.py): the values themselves here."""
        return loops_results(*values)

    def resume(self, env: dict, start: int):
        """Runs steps `start`.. on the values in `env`; returns the outputs (one value,
        a tuple of several, or None)."""
        for op in self._ops[start:]:
            op(env)
        return None if self._outputs is None else self._outputs(env)


__all__ = ["GeneralProgram", "compute_function"]

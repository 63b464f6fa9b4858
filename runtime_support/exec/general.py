"""The general path of the queue-program executor: the reference (docs/design/host-path.md §5.1).

It runs a program's steps in order through the context's bound imports, exactly the calls
the VM function would make, so its results and errors are the imports' own. Its state is
one dict of named values, so it can start at any step: `resume(values, k)` runs steps k..
and returns the outputs (a fast path that declines after step k hands over there).

    run = bind_program(QUEUE_0, ctx, _IMPORTS)     # once per program and context, at load
    buffer0, status0 = run(r3, i22)                  # per call: the inputs, in order

Each step is prepared once at bind: its import resolved by name, each field turned into a
getter over the values dict (a name), a constant, or a rodata buffer; nothing is looked
up by name per call but the values themselves.
"""

from __future__ import annotations

from operator import itemgetter

from ..errors import StatusCode, VMError
from ..vm import numerics
from .program import Compute, FailIf, QueueProgram, Rodata
from .steps import Step


def _select(condition, true_value, false_value):
    return true_value if condition else false_value


def compute_function(mnemonic: str):
    """The Python function of a `Compute` step's VM op (the numerics helper the generated
    code would call for it)."""
    if mnemonic.startswith("select."):
        return _select
    fn = getattr(numerics, mnemonic.replace(".", "_"), None)
    if fn is None or not callable(fn):
        raise VMError(StatusCode.INVALID_ARGUMENT, f"queue program: no VM op {mnemonic!r} to compute")
    return fn


class _Getter:
    """Turns a field's value (program.py: a name, a constant, a rodata segment, a span)
    into a function of the values dict."""

    def __init__(self, names: set[str], rodata) -> None:
        self.names, self.rodata = names, rodata

    def __call__(self, value):
        if isinstance(value, str):
            if value not in self.names:
                raise VMError(StatusCode.INVALID_ARGUMENT, f"queue program: {value!r} is read before it is made")
            return itemgetter(value)
        if isinstance(value, tuple):
            items = [self(v) for v in value]
            if value and all(isinstance(v, tuple) for v in value):
                # (rows of several operands, a dispatch's bindings: tuples, as the VM passes them)
                return lambda env: [tuple(g(env)) for g in items]
            return lambda env: [g(env) for g in items]
        if isinstance(value, Rodata):
            if not 0 <= value.ordinal < len(self.rodata):
                raise VMError(StatusCode.OUT_OF_RANGE, f"queue program: rodata {value.ordinal} out of range")
            segment = self.rodata[value.ordinal]
            return lambda env: segment
        return lambda env: value


class GeneralProgram:
    """A queue program bound to one context's imports; calling it runs every step."""

    def __init__(self, program: QueueProgram, imports: dict, rodata) -> None:
        self.program = program
        names = set(program.inputs)
        get = self._get = _Getter(names, rodata)
        self._steps = []
        for k, step in enumerate(program.steps):
            if isinstance(step, Compute):
                fn, args = compute_function(step.op), [get(a) for a in step.args]
                outs = step.out
            elif isinstance(step, FailIf):
                fn, args, outs = None, [get(step.test), get(step.status)], None
            elif isinstance(step, Step):
                fn = imports.get(step.IMPORT)
                if fn is None:
                    raise VMError(
                        StatusCode.NOT_FOUND,
                        f"queue program of {program.function}: import {step.IMPORT} is not bound",
                    )
                args = [get(getattr(step, p)) for p in step.PARAMS]
                outs = step.out
            else:
                raise VMError(StatusCode.INVALID_ARGUMENT, f"queue program: step {k} is not a step")
            for name in (outs,) if isinstance(outs, str) else outs or ():
                names.add(name)
            self._steps.append((step, fn, args, outs))
        for name in program.outputs:
            if name not in names:
                raise VMError(StatusCode.INVALID_ARGUMENT, f"queue program: output {name!r} is never made")
        self._outputs = itemgetter(*program.outputs) if program.outputs else None

    def __call__(self, *args):
        if self.program.packed:
            (args,) = args
        return self.resume(dict(zip(self.program.inputs, args)), 0)

    def resume(self, env: dict, start: int):
        """Runs steps `start`.. on the values in `env`; returns the outputs (one value,
        a tuple of several, or None)."""
        function = self.program.function
        for entry in self._steps[start:]:
            run_step(entry, env, function)
        return None if self._outputs is None else self._outputs(env)


def run_step(entry, env: dict, function: str) -> None:
    """One prepared step (step, function, argument getters, output names) on `env`."""
    step, fn, args, outs = entry
    if fn is None:  # FailIf
        if bool(args[0](env)) != step.negate:
            raise VMError(args[1](env), step.message, function=function, location=step.location)
        return
    result = fn(*[a(env) for a in args])
    if outs is None:
        return
    if isinstance(outs, str):
        env[outs] = result
    else:
        env.update(zip(outs, result))


def bind_program(program: QueueProgram, ctx, imports) -> GeneralProgram:
    """`program` bound to `ctx`: its imports (by full name, from the module's import
    table `imports`, aligned with `ctx.imports`) and its rodata. The fast path
    (fast.py) where the program has one, unless PYREE_QUEUE_FAST=0 (the general path
    alone: what the property tests compare it with)."""
    from ..env_knobs import flag_knob
    from .fast import FastProgram, has_fast_path

    by_name = {decl[0]: fn for decl, fn in zip(imports, ctx.imports) if fn is not None}
    if flag_knob("PYREE_QUEUE_FAST", True) and has_fast_path(program):
        return FastProgram(program, by_name, ctx.rodata)
    return GeneralProgram(program, by_name, ctx.rodata)


__all__ = ["GeneralProgram", "bind_program", "compute_function", "run_step"]

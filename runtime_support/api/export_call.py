"""The per-call path of a synchronous export: plain closures, specialised by arity.

`export_function(...)` returns the function a context exposes as `ctx.NAME` for a
synchronous export: it converts the numpy arguments (abi.tensor_argument's converters),
takes the context's call lock, calls the generated function, gives argument copies back
to their converters where the translator proved the function keeps no reference to them
(Export.unkept_arguments), and converts the results (abi.tensor_result's converters,
zero-copy only where the translator proved the result fresh: Export.fresh_results).

No source is written at run time: arities 0 to 3 have a closure each, written out below
(a call through `*args` costs several times a plain one); longer ones loop. A wrong
argument count or a closed context goes to `general`, which raises as before.

An export with undeclared types (iree-turbine's) passes `learn`: after its first call
that returns, `learn(args, result)` gives converters specialised to what that call had,
and the closure's own cells are rebound to them (`nonlocal`), so what callers already hold
(`fn = ctx.main`) takes the specialised path from then on.
"""

from __future__ import annotations

from runtime_support.errors import VMError
from runtime_support.hal.buffer_view import HalBufferView


class Plan:
    """What one export's closure runs, all fixed at load: `converters` (one per argument),
    `give_backs` (per argument: the converter's give_back where the copy may be reused,
    else None), `result` (the converter of a single tensor result, or None), and
    `to_numpy` (every other result shape: none, several, scalars)."""

    __slots__ = ("converters", "give_backs", "result", "result_type", "to_numpy")

    def __init__(self, converters, give_backs, result, result_type, to_numpy) -> None:
        self.converters = tuple(converters)
        self.give_backs = tuple(give_backs)
        self.result, self.result_type, self.to_numpy = result, result_type, to_numpy


def export_function(ctx, name, fn, plan: Plan, general, closed_error, from_vm, learn=None):
    """The export closure for `plan` (see the module docstring)."""
    make = _BY_ARITY.get(len(plan.converters), _any_arity)
    export, rebind = make(ctx, name, fn, plan, general, closed_error, from_vm)
    export.plan = plan
    export.learned = learn is None
    if learn is not None:
        _teach(export, rebind, learn)
    return export


def _teach(export, rebind, learn):
    """Wraps the closure's first successful call: `learn` runs once, then the closure's
    cells are rebound to its plan (the same function object, no frame added)."""
    state = {"pending": True}

    def learned(args, result):
        if state["pending"]:
            state["pending"] = False
            plan = learn(args, result)
            export.plan = plan
            export.learned = True
            rebind(plan)

    rebind(export.plan, learned)


def _result(result, rc, rtype, to_numpy, from_vm):
    if rc is not None:
        if type(result) is HalBufferView:
            return rc(result)
        return from_vm(result, rtype)
    return to_numpy(result)


def _arity0(ctx, name, fn, plan, general, closed_error, from_vm):
    acquire, release = ctx._lock.acquire, ctx._lock.release
    rc = rtype = to_numpy = learned = None

    def rebind(plan, on_first=None):
        nonlocal rc, rtype, to_numpy, learned
        rc, rtype, to_numpy = plan.result, plan.result_type, plan.to_numpy
        learned = on_first

    rebind(plan)

    def export(*args):
        if args or ctx._closed:
            return general(*args)
        acquire()
        if ctx._closed:  # (close() ran while this call waited for the lock)
            release()
            raise closed_error(name)
        try:
            result = fn()
        except VMError as e:
            raise e.with_context(name, None)
        finally:
            release()
        if learned is not None:
            learned(args, result)
        if rc is not None:
            if type(result) is HalBufferView:
                return rc(result)
            return from_vm(result, rtype)
        return to_numpy(result)

    return export, rebind


def _arity1(ctx, name, fn, plan, general, closed_error, from_vm):
    acquire, release = ctx._lock.acquire, ctx._lock.release
    c0 = g0 = rc = rtype = to_numpy = learned = None

    def rebind(plan, on_first=None):
        nonlocal c0, g0, rc, rtype, to_numpy, learned
        (c0,), (g0,) = plan.converters, plan.give_backs
        rc, rtype, to_numpy = plan.result, plan.result_type, plan.to_numpy
        learned = on_first

    rebind(plan)

    def export(*args):
        if len(args) != 1 or ctx._closed:
            return general(*args)
        (v0,) = args
        v0 = c0(v0)
        acquire()
        if ctx._closed:
            release()
            raise closed_error(name)
        try:
            result = fn(v0)
        except VMError as e:
            raise e.with_context(name, None)
        finally:
            release()
        if learned is not None:
            learned(args, result)
        if g0 is not None:
            g0(v0)
        if rc is not None:
            if type(result) is HalBufferView:
                return rc(result)
            return from_vm(result, rtype)
        return to_numpy(result)

    return export, rebind


def _arity2(ctx, name, fn, plan, general, closed_error, from_vm):
    acquire, release = ctx._lock.acquire, ctx._lock.release
    c0 = c1 = g0 = g1 = rc = rtype = to_numpy = learned = None

    def rebind(plan, on_first=None):
        nonlocal c0, c1, g0, g1, rc, rtype, to_numpy, learned
        (c0, c1), (g0, g1) = plan.converters, plan.give_backs
        rc, rtype, to_numpy = plan.result, plan.result_type, plan.to_numpy
        learned = on_first

    rebind(plan)

    def export(*args):
        if len(args) != 2 or ctx._closed:
            return general(*args)
        v0, v1 = args
        v0 = c0(v0)
        v1 = c1(v1)
        acquire()
        if ctx._closed:
            release()
            raise closed_error(name)
        try:
            result = fn(v0, v1)
        except VMError as e:
            raise e.with_context(name, None)
        finally:
            release()
        if learned is not None:
            learned(args, result)
        if g0 is not None:
            g0(v0)
        if g1 is not None:
            g1(v1)
        if rc is not None:
            if type(result) is HalBufferView:
                return rc(result)
            return from_vm(result, rtype)
        return to_numpy(result)

    return export, rebind


def _arity3(ctx, name, fn, plan, general, closed_error, from_vm):
    acquire, release = ctx._lock.acquire, ctx._lock.release
    c0 = c1 = c2 = g0 = g1 = g2 = rc = rtype = to_numpy = learned = None

    def rebind(plan, on_first=None):
        nonlocal c0, c1, c2, g0, g1, g2, rc, rtype, to_numpy, learned
        (c0, c1, c2), (g0, g1, g2) = plan.converters, plan.give_backs
        rc, rtype, to_numpy = plan.result, plan.result_type, plan.to_numpy
        learned = on_first

    rebind(plan)

    def export(*args):
        if len(args) != 3 or ctx._closed:
            return general(*args)
        v0, v1, v2 = args
        v0 = c0(v0)
        v1 = c1(v1)
        v2 = c2(v2)
        acquire()
        if ctx._closed:
            release()
            raise closed_error(name)
        try:
            result = fn(v0, v1, v2)
        except VMError as e:
            raise e.with_context(name, None)
        finally:
            release()
        if learned is not None:
            learned(args, result)
        if g0 is not None:
            g0(v0)
        if g1 is not None:
            g1(v1)
        if g2 is not None:
            g2(v2)
        if rc is not None:
            if type(result) is HalBufferView:
                return rc(result)
            return from_vm(result, rtype)
        return to_numpy(result)

    return export, rebind


def _any_arity(ctx, name, fn, plan, general, closed_error, from_vm):
    acquire, release = ctx._lock.acquire, ctx._lock.release
    arity = len(plan.converters)
    converters = give_backs = rc = rtype = to_numpy = learned = None

    def rebind(plan, on_first=None):
        nonlocal converters, give_backs, rc, rtype, to_numpy, learned
        converters = plan.converters
        give_backs = tuple((i, g) for i, g in enumerate(plan.give_backs) if g is not None)
        rc, rtype, to_numpy = plan.result, plan.result_type, plan.to_numpy
        learned = on_first

    rebind(plan)

    def export(*args):
        if len(args) != arity or ctx._closed:
            return general(*args)
        values = [c(v) for c, v in zip(converters, args)]
        acquire()
        if ctx._closed:
            release()
            raise closed_error(name)
        try:
            result = fn(*values)
        except VMError as e:
            raise e.with_context(name, None)
        finally:
            release()
        if learned is not None:
            learned(args, result)
        for i, g in give_backs:
            g(values[i])
        return _result(result, rc, rtype, to_numpy, from_vm)

    return export, rebind


_BY_ARITY = {0: _arity0, 1: _arity1, 2: _arity2, 3: _arity3}

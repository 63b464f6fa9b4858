"""The closures of a queue program's integer `Compute` steps (exec/general.py binds them
for every program; exec/host_loops.py for a loop call's ops between its calls): each
op's numerics helper, by the op's VM mnemonic, with its operands read straight from
their slots of the call's values list."""

from __future__ import annotations

from ..errors import StatusCode, VMError
from ..vm import numerics


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


_M32, _M64 = numerics.M32, numerics.M64
_S32, _S64 = 0x80000000, 0x8000000000000000


def inline_op(mnemonic: str, keys: tuple, out: int):
    """The closure of a loop's commonest integer ops (its counter, compares and test)
    with their numerics helper's expression written inline (one call less per op and
    iteration); None for the other ops. tests/runtime/test_host_loop_calls.py checks each
    against the helper."""
    if len(keys) == 2:
        a, b = keys
        if mnemonic in ("and.i32", "and.i64"):
            def op(env) -> None:
                env[out] = env[a] & env[b]
        elif mnemonic in ("or.i32", "or.i64"):
            def op(env) -> None:
                env[out] = env[a] | env[b]
        elif mnemonic in ("xor.i32", "xor.i64"):
            def op(env) -> None:
                env[out] = env[a] ^ env[b]
        elif mnemonic in ("cmp.lt.i32.s", "cmp.lt.i64.s"):
            def op(env) -> None:
                env[out] = 1 if env[a] < env[b] else 0
        elif mnemonic in ("cmp.eq.i32", "cmp.eq.i64"):
            def op(env) -> None:
                env[out] = 1 if env[a] == env[b] else 0
        elif mnemonic in ("cmp.ne.i32", "cmp.ne.i64"):
            def op(env) -> None:
                env[out] = 1 if env[a] != env[b] else 0
        elif mnemonic == "add.i32":
            def op(env) -> None:
                env[out] = ((env[a] + env[b] + _S32) & _M32) - _S32
        elif mnemonic == "add.i64":
            def op(env) -> None:
                env[out] = ((env[a] + env[b] + _S64) & _M64) - _S64
        else:
            return None
        return op
    if len(keys) == 1:
        (a,) = keys
        if mnemonic in ("cmp.nz.i32", "cmp.nz.i64"):
            def op(env) -> None:
                env[out] = 1 if env[a] else 0
        elif mnemonic == "ext.i32.i64.s":
            def op(env) -> None:
                env[out] = env[a]
        elif mnemonic == "trunc.i64.i32":
            def op(env) -> None:
                env[out] = ((env[a] + _S32) & _M32) - _S32
        else:
            return None
        return op
    return None


def compute_op(fn, keys: tuple, out: int, mnemonic: str | None = None):
    """A Compute step's closure by its operand count: its operands read straight from
    their slots (a program's integer ops run per call, several per loop iteration); the
    op written inline where `inline_op` has it."""
    inline = inline_op(mnemonic, keys, out) if mnemonic is not None else None
    if inline is not None:
        return inline
    if len(keys) == 1:
        (a,) = keys

        def compute1(env) -> None:
            env[out] = fn(env[a])

        return compute1
    if len(keys) == 2:
        a, b = keys

        def compute2(env) -> None:
            env[out] = fn(env[a], env[b])

        return compute2
    if len(keys) == 3:
        a, b, c = keys

        def compute3(env) -> None:
            env[out] = fn(env[a], env[b], env[c])

        return compute3

    def compute(env) -> None:
        env[out] = fn(*[env[k] for k in keys])

    return compute

"""Per-dispatch submission groups whose fences are private: one call in generated code.

For each dispatch with a transient result, IREE's compiler ends a block with

    %f0 = vm.call @hal.fence.create(%dev, %flags0)
    %buf = vm.call @hal.device.queue.alloca(%dev, %aff, %wait, %f0, ...)
    %f1 = vm.call @hal.fence.create(%dev, %flags1)
    vm.call.variadic @hal.device.queue.execute.indirect(%dev, %aff2, %f0, %f1, %cmd, %flags, table...)
    vm.call.variadic.yieldable @hal.fence.await(%timeout, %flags2, %f1) -> ^next(%status)

(or its last three ops alone, the execute then waiting on any fence; or the same three
with `hal.device.queue.execute`, no table, for a one-shot command buffer). A group is found
when the ops are consecutive at the end of the block, the await is its terminator, every
call goes to a required import with the cconv runtime_support/hal/fused.py serves, one
device register feeds them all, and the fences are private: each fence register appears
only where the pattern puts it, is not live after its last use (nothing stores, returns,
passes, moves or joins it later) and is distinct from the other refs of the group. The
code generator then emits one call of the fused helper (runtime_support/hal/fused.py).

    find(module, fn, live) -> {block index: Submission}
"""

from __future__ import annotations

from dataclasses import dataclass

from translator.analyses.calls import callee  # noqa: F401  (chains.py, arguments.py)
from translator.analyses.liveness import RefLiveness
from translator.ir import Function, Op, Reg

# The imports a group calls and the cconv the fused helper expects of each.
FENCE_CREATE = ("hal.fence.create", "0rI_r")
QUEUE_ALLOCA = ("hal.device.queue.alloca", "0rIrrIiiII_r")
EXECUTE_INDIRECT = ("hal.device.queue.execute.indirect", "0rIrrrICrIID_v")
QUEUE_EXECUTE = ("hal.device.queue.execute", "0rIrrrI_v")
FENCE_AWAIT = ("hal.fence.await", "0iICrD_i")

# Fixed operands of execute.indirect before its (buffer, offset, length) table entries
# (analyses/chains.py and codegen/ops.py read the table by it too).
EXECUTE_FIXED = 6


@dataclass(frozen=True)
class Submission:
    """One group: the ops it replaces (the block's last ones, `await_op` its terminator)."""

    kind: str  # the fused helper: "alloca_execute_indirect", "execute_indirect", "execute"
    ops: tuple[Op, ...]  # non-terminator ops, in order
    await_op: Op
    slots: tuple[int, ...]  # table entries whose buffer is the alloca's result

    @property
    def alloca(self) -> Op | None:
        return self.ops[1] if self.kind == "alloca_execute_indirect" else None

    @property
    def execute(self) -> Op:
        return self.ops[-1]


def _ords(regs) -> list[int]:
    return [r.ordinal for r in regs if r.is_ref]


def _one_ref(regs: list[Reg]) -> int | None:
    """The ordinal of a single ref result."""
    return regs[0].ordinal if len(regs) == 1 and regs[0].is_ref else None


def _match(module, ops: list[Op], term: Op, live: RefLiveness, out_live) -> Submission | None:
    with_alloca = len(ops) == 4
    callees = [callee(module, op) for op in ops]
    direct = callees[-1] == QUEUE_EXECUTE and not with_alloca  # no table, no alloca form
    want = ([FENCE_CREATE, QUEUE_ALLOCA] if with_alloca else []) + [
        FENCE_CREATE, QUEUE_EXECUTE if direct else EXECUTE_INDIRECT
    ]
    if callees != want or callee(module, term) != FENCE_AWAIT:
        return None
    execute = ops[-1]
    create1 = ops[-2]
    ex = execute["operands"]
    if len(ex) < EXECUTE_FIXED or (len(ex) - EXECUTE_FIXED) % 3 or (direct and len(ex) != EXECUTE_FIXED):
        return None
    dev, _aff, wait, signal, cmd, _flags = ex[:EXECUTE_FIXED]
    entries = [ex[i : i + 3] for i in range(EXECUTE_FIXED, len(ex), 3)]
    if not (dev.is_ref and wait.is_ref and signal.is_ref and cmd.is_ref):
        return None
    f1 = _one_ref(create1["results"])
    await_ops = term["operands"]
    if (
        f1 is None
        or create1["operands"][0].ordinal != dev.ordinal
        or not create1["operands"][0].is_ref
        or signal.ordinal != f1
        or len(term["results"]) != 1
        or len(await_ops) != 3
        or not await_ops[2].is_ref
        or await_ops[2].ordinal != f1
    ):
        return None
    group_refs = {dev.ordinal, f1}
    f0 = buf = None
    if with_alloca:
        create0, alloca = ops[0], ops[1]
        f0, buf = _one_ref(create0["results"]), _one_ref(alloca["results"])
        al = alloca["operands"]
        if (
            len(al) != 9
            or f0 is None
            or buf is None
            or len({dev.ordinal, f0, f1, buf}) != 4
            or create0["operands"][0].ordinal != dev.ordinal
            or not create0["operands"][0].is_ref
            or not (al[0].is_ref and al[0].ordinal == dev.ordinal)
            or not (al[2].is_ref and al[2].ordinal not in (f0, buf))
            or not (al[3].is_ref and al[3].ordinal == f0)
            or wait.ordinal != f0
            or cmd.ordinal in (f0, f1, buf)
        ):
            return None
        # f0: signalled by the alloca, awaited by the execute, nowhere else, dead after.
        if (
            _ords(al).count(f0) != 1
            or _ords(create1["operands"]).count(f0)
            or _ords(ex).count(f0) != 1
            or f0 in live.after(execute)
        ):
            return None
        group_refs |= {f0, buf}
    elif wait.ordinal == f1 or cmd.ordinal == f1 or dev.ordinal == f1:
        return None
    # f1: signalled by the execute, awaited by the terminator, nowhere else, dead after.
    if _ords(ex).count(f1) != 1 or f1 in out_live:
        return None
    slots = []
    for k, (b, _o, _n) in enumerate(entries):
        if not b.is_ref or b.ordinal in (f0, f1):
            return None
        if buf is not None and b.ordinal == buf:
            slots.append(k)
    kind = "alloca_execute_indirect" if with_alloca else "execute" if direct else "execute_indirect"
    return Submission(kind, tuple(ops), term, tuple(slots))


def find(module, fn: Function, live: RefLiveness) -> dict[int, Submission]:
    """Block index -> the submission group that ends it (the longest form first)."""
    out: dict[int, Submission] = {}
    for block in fn.blocks:
        term = block.ops[-1]
        if callee(module, term) != FENCE_AWAIT:
            continue
        body = block.ops[:-1]
        for n in (4, 2):
            if len(body) >= n:
                found = _match(module, body[-n:], term, live, live.live_out(block.index))
                if found is not None:
                    out[block.index] = found
                    break
    return out


__all__ = ["EXECUTE_FIXED", "Submission", "callee", "find"]

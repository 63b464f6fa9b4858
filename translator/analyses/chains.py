"""Queue-operation chains linked by private fences: one call in generated code.

Besides the per-dispatch groups that end in an await (analyses/submissions.py), IREE's
compiler emits runs like this one, inside a block, whose last fence outlives the run
(a loop carries it, or an await after other work waits on it):

    %fa = hal.fence.create(%dev)            ; once per transient buffer ...
    %ba = hal.device.queue.alloca(%dev, %aff, %wait, %fa, ...)
    %fj = hal.fence.join([%fa, %fb])        ; ... joined when there are several
    %fx = hal.fence.create(%dev)
    hal.device.queue.execute.indirect(%dev, %aff, %fj, %fx, %cmd, %flags, table...)
    %fd = hal.fence.create(%dev)            ; optional: a buffer returned in queue order
    hal.device.queue.dealloca(%dev, %aff, %fx, %fd, %ba)

(the dealloca may signal an outside fence instead, as PyTorch models' `main_async` does
with the fence its caller passes: then every fence of the run is private.)

A chain is found when the ops are consecutive and non-terminators, each calls a required
import with the cconv runtime_support/hal/fused.py's `chain` serves, one device register
feeds them all, every alloca waits on the same outside fence, the join joins exactly the
alloca fences in order, and every fence the run creates except the last signal fence is
private: used only where the pattern puts it and held by no register live after the run.
The allocated buffers and the last fence are the call's results. The analysis follows
values, not registers: IREE reuses a register for a later fence within the run.

    find(module, fn, live, skip) -> {pc of the first op: Chain}
"""

from __future__ import annotations

from dataclasses import dataclass

from translator.analyses.liveness import RefLiveness
from translator.analyses.submissions import (
    EXECUTE_FIXED,
    EXECUTE_INDIRECT,
    FENCE_CREATE,
    QUEUE_ALLOCA,
    callee,
)
from translator.ir import Function, Op

FENCE_JOIN = ("hal.fence.join", "0ICrD_r")
QUEUE_DEALLOCA = ("hal.device.queue.dealloca", "0rIrrrI_v")



@dataclass(frozen=True)
class Chain:
    """One run: its ops in order and what the generated call needs to know of them."""

    ops: tuple[Op, ...]
    allocas: tuple[Op, ...]  # each preceded by its fence.create
    join: Op | None
    execute: Op
    dealloca: Op | None
    slots: tuple[tuple[int, int], ...]  # (table entry, alloca index) of allocated buffers
    dealloca_of: int  # the alloca whose buffer the dealloca returns; -1: an outside one
    # result registers: one per alloca, then the last fence (-1: none, or dead after)
    targets: tuple[int, ...]
    private: tuple[int, ...]  # registers the run wrote that are no result (released after)


def _ext(values: dict, reg) -> bool:
    """Whether `reg` is a ref register still holding its value from before the run."""
    return reg.is_ref and values.get(reg.ordinal, ("ext",))[0] == "ext"


def _match(module, ops: list[Op], live: RefLiveness) -> Chain | None:
    """The chain that is exactly `ops`, or None."""
    values: dict[int, tuple] = {}  # register -> ("fence", k) / ("buf", k); absent: outside
    fence_n = 0
    i = 0
    dev = wait = None
    allocas, alloca_fences = [], []

    def create(op) -> int | None:
        nonlocal fence_n, dev
        res = op["results"]
        a = op["operands"]
        if callee(module, op) != FENCE_CREATE or len(res) != 1 or not res[0].is_ref:
            return None
        if not _ext(values, a[0]) or (dev is not None and a[0].ordinal != dev):
            return None
        dev = a[0].ordinal
        fence_n += 1
        values[res[0].ordinal] = ("fence", fence_n)
        return fence_n

    def fence(reg, k) -> bool:
        return reg.is_ref and values.get(reg.ordinal) == ("fence", k)

    # (fence.create, queue.alloca)*
    while i + 1 < len(ops) and callee(module, ops[i + 1]) == QUEUE_ALLOCA:
        k = create(ops[i])
        al, res = ops[i + 1]["operands"], ops[i + 1]["results"]
        if k is None or len(al) != 9 or len(res) != 1 or not res[0].is_ref:
            return None
        if not (_ext(values, al[0]) and al[0].ordinal == dev and _ext(values, al[2]) and fence(al[3], k)):
            return None
        if wait is None:
            wait = al[2].ordinal
        elif al[2].ordinal != wait:
            return None
        values[res[0].ordinal] = ("buf", len(allocas))
        allocas.append(ops[i + 1])
        alloca_fences.append(k)
        i += 2
    if not allocas:  # (create, execute[, create, dealloca]): too little to be worth it
        return None
    join = None
    if len(allocas) >= 2:  # fence.join of exactly the alloca fences, in order
        if i >= len(ops) or callee(module, ops[i]) != FENCE_JOIN:
            return None
        join = ops[i]
        jo, res = join["operands"], join["results"]
        if len(jo) != 1 + len(allocas) or len(res) != 1 or not res[0].is_ref:
            return None
        if not all(fence(r, k) for r, k in zip(jo[1:], alloca_fences)):
            return None
        fence_n += 1
        values[res[0].ordinal] = ("fence", fence_n)
        exec_wait = ("fence", fence_n)
        i += 1
    else:
        exec_wait = ("fence", alloca_fences[0])
    # fence.create, queue.execute.indirect
    if i + 1 >= len(ops) or callee(module, ops[i + 1]) != EXECUTE_INDIRECT:
        return None
    kx = create(ops[i])
    execute = ops[i + 1]
    ex = execute["operands"]
    if kx is None or len(ex) < EXECUTE_FIXED or (len(ex) - EXECUTE_FIXED) % 3:
        return None
    if not (_ext(values, ex[0]) and ex[0].ordinal == dev and fence(ex[3], kx) and _ext(values, ex[4])):
        return None
    if not (ex[2].is_ref and values.get(ex[2].ordinal) == exec_wait):
        return None
    slots = []
    for k in range(EXECUTE_FIXED, len(ex), 3):
        b = ex[k]
        if not b.is_ref:
            return None
        v = values.get(b.ordinal, ("ext",))
        if v[0] == "fence":
            return None
        if v[0] == "buf":
            slots.append(((k - EXECUTE_FIXED) // 3, v[1]))
    i += 2
    last = kx
    dealloca, dealloca_of = None, -1
    if i < len(ops):  # [fence.create,] queue.dealloca (else it signals an outside fence)
        outside = i + 1 == len(ops)
        if not outside and i + 2 != len(ops):
            return None
        dealloca = ops[-1]
        if callee(module, dealloca) != QUEUE_DEALLOCA:
            return None
        kd = None if outside else create(ops[i])
        de = dealloca["operands"]
        if (not outside and kd is None) or len(de) != 6 or not (_ext(values, de[0]) and de[0].ordinal == dev):
            return None
        if not (fence(de[2], kx) and (_ext(values, de[3]) if outside else fence(de[3], kd)) and de[4].is_ref):
            return None
        v = values.get(de[4].ordinal, ("ext",))
        if v[0] == "fence":
            return None
        dealloca_of = v[1] if v[0] == "buf" else -1
        last = kd  # None: no fence of the run outlives it
        i = len(ops)
    if i != len(ops):
        return None
    # Results: each buffer and the last fence must still be in a register at the end
    # (else the call has no target for it); every other fence is private: dead after.
    held = {v: r for r, v in values.items()}
    targets = []
    for k in range(len(allocas)):
        r = held.get(("buf", k))
        if r is None:
            return None
        targets.append(r)
    if last is None:
        targets.append(-1)  # the dealloca signalled an outside fence: nothing to return
    elif ("fence", last) not in held:
        return None
    else:
        targets.append(held[("fence", last)])
    after = live.after(ops[-1])
    private = [r for r, v in values.items() if v[0] == "fence" and v[1] != last]
    if any(r in after for r in private):
        return None
    # A result nothing reads afterwards is not assigned (`_`): its register is released
    # with the private fences', as the unfused code's releases leave it.
    targets = [r if r in after else -1 for r in targets]
    private = [r for r in values if r not in targets]
    return Chain(
        tuple(ops), tuple(allocas), join, execute, dealloca, tuple(slots), dealloca_of,
        tuple(targets), tuple(sorted(private)),
    )


def _runs(module, ops: list[Op]):
    """Maximal runs of consecutive ops calling the imports a chain is made of."""
    kinds = {FENCE_CREATE, QUEUE_ALLOCA, FENCE_JOIN, EXECUTE_INDIRECT, QUEUE_DEALLOCA}
    run: list[Op] = []
    for op in ops:
        if callee(module, op) in kinds:
            run.append(op)
            continue
        if run:
            yield run
        run = []
    if run:
        yield run


def _split(run: list[Op], module) -> list[list[Op]]:
    """A run cut after each chain's last op: the dealloca after an execute, else the execute."""
    out, cur = [], []
    for k, op in enumerate(run):
        cur.append(op)
        if callee(module, op) == QUEUE_DEALLOCA:
            out.append(cur)
            cur = []
        elif callee(module, op) == EXECUTE_INDIRECT:
            tail = [callee(module, o) for o in run[k + 1 : k + 3]]
            if tail[:1] != [QUEUE_DEALLOCA] and tail != [FENCE_CREATE, QUEUE_DEALLOCA]:
                out.append(cur)
                cur = []
    if cur:
        out.append(cur)
    return out


def find(module, fn: Function, live: RefLiveness, skip: dict[int, int] | None = None) -> dict[int, Chain]:
    """pc of a chain's first op -> the chain. `skip`: block index -> how many ops at its
    end belong to another group (analyses/submissions.py) and are not looked at."""
    out: dict[int, Chain] = {}
    skip = skip or {}
    for block in fn.blocks:
        ops = block.ops[:-1]  # a terminator is never part of a chain
        ops = ops[: len(ops) - skip.get(block.index, 0)]
        for run in _runs(module, ops):
            for part in _split(run, module):
                # (from its first alloca's fence.create: a part may begin with other ops
                # of the kinds, such as a fence.join of outside fences the allocas wait on)
                for j in range(len(part) - 1):
                    if callee(module, part[j + 1]) != QUEUE_ALLOCA:
                        continue
                    found = _match(module, part[j:], live)
                    if found is not None:
                        out[part[j].pc] = found
                    break
    return out


__all__ = ["Chain", "FENCE_JOIN", "QUEUE_DEALLOCA", "find"]

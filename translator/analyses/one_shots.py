"""One-shot command buffers recorded and submitted in one block: one call in generated code.

With dynamic shapes, IREE's compiler records a command buffer per call, in the block that
submits and awaits it:

    [%f0 = vm.call @hal.fence.create(%dev, %flags0)
     %buf = vm.call @hal.device.queue.alloca(%dev, %aff, %wait, %f0, ...)]
    %cmd = vm.call @hal.command_buffer.create(%dev, %modes, %categories, %aff, %capacity)
    %fn = vm.call @hal.executable.lookup.function(%exe, %name)        (any number)
    vm.call.variadic @hal.command_buffer.dispatch(%cmd, %exe, %fn, %x, %y, %z, ...)
    vm.call @hal.command_buffer.execution_barrier(%cmd, ...)          (any number)
    vm.call @hal.command_buffer.copy_buffer / fill_buffer(%cmd, ...)  (any number)
    vm.call @hal.command_buffer.finalize(%cmd)
    %f1 = vm.call @hal.fence.create(%dev, %flags1)
    vm.call @hal.device.queue.execute(%dev, %aff, %f0, %f1, %cmd, %flags)
    [%f2 = vm.call @hal.fence.create(%dev, %flags2)
     vm.call @hal.device.queue.dealloca(%dev, %aff, %f1, %f2, %transient, %flags)]
    vm.call.variadic.yieldable @hal.fence.await(..., %f2 or %f1)

with integer ops computing workgroup counts and constants between the calls (with
several allocas, a fence.join of their fences is the execute's wait; with several
transients to release, a queue.dealloca of each waits on the execute's fence: those, their
fence.join and what follows stay ops after the group, which then ends at the execute,
its new fence returned by the call). In an async
export (iree-turbine's `main$async`), the execute (or the dealloca) signals a fence from
outside the group instead, and nothing in the block awaits it (the signal form). The code
generator keeps every op in its place: the calls before the execute (the steps) become
tuples appended to a list, each reading its operands where the call read them, and one
call of the `one_shot` helper (runtime_support/hal/one_shot.py) then runs the sequence.
That is the same program when:

- every op between the steps cannot fail and writes no ref but a rodata move's or a null
  (`movable`): the steps' effects (the allocation, a failing lookup) come later than in
  the VM, after ops nothing can observe (a function left by an error keeps no locals);
- no op between the steps reads what a step wrote, and a step reads what another step
  wrote only where the helper supplies it: the command buffer (left out of the steps),
  the allocas' fence (the execute's wait; their fences in the join), a new buffer (a
  dispatch binding, a copy's source or target, a fill's target, the dealloca's buffer:
  `ALLOCATED`, `ALLOCATED_1`...) and a dispatch's function (the latest lookup's result:
  `LOOKED_UP`), each still holding that step's value;
- the command buffer, the allocas' fences and the ending's new fences are dead after the
  ending (a new fence read only where the ending reads it), but for the awaited fence,
  which the call then returns (a loop's next submission may wait on it); the device
  register is not written from the first step on;
- what the call assigns afterwards (the buffers, each lookup's result) is left alone
  (`None` in `targets`) where an op after its step writes the register again, or the
  buffer is dead after the group.

    find(module, fn, live) -> {block index: [OneShot, ...]}
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from translator.analyses.liveness import RefLiveness
from translator.analyses.chains import FENCE_JOIN, QUEUE_DEALLOCA
from translator.analyses.calls import callee, typed as _typed
from translator.analyses.constants import _slots, block_constants, movable
from translator.analyses.constants import update_constants as _update_constants
from translator.analyses.submissions import (
    EXECUTE_FIXED, FENCE_AWAIT, FENCE_CREATE, QUEUE_ALLOCA, QUEUE_EXECUTE,
)
from translator.ir import Function, Op, Reg

CB_CREATE = ("hal.command_buffer.create", "0riiIi_r")
CB_FINALIZE = ("hal.command_buffer.finalize", "0r_v")
CB_BARRIER = ("hal.command_buffer.execution_barrier", "0riiI_v")
CB_DISPATCH = ("hal.command_buffer.dispatch", "0rrIiiiICiDCiirIID_v")
CB_COPY = ("hal.command_buffer.copy_buffer", "0riirIrIII_v")
CB_FILL = ("hal.command_buffer.fill_buffer", "0rrIIiIiI_v")
LOOKUP_FUNCTION = ("hal.executable.lookup.function", "0rr_I")

STEP_KINDS = {
    CB_CREATE: "create",
    CB_FINALIZE: "finalize",
    CB_BARRIER: "barrier",
    CB_DISPATCH: "dispatch",
    CB_COPY: "copy",
    CB_FILL: "fill",
    LOOKUP_FUNCTION: "lookup",
}
# The recording calls on the command buffer (its first operand).
RECORDING = frozenset({"finalize", "barrier", "dispatch", "copy", "fill"})
# Operand positions of the buffers of a copy (source, target) and of a fill (target).
COPY_BUFFERS = (3, 5)
FILL_BUFFERS = (1,)

# The allocas one group takes (runtime_support/hal/one_shot.py's NEW_BUFFERS).
MAX_ALLOCAS = 8
# Operands of a dispatch before its constants and bindings; a binding's 5 operands
# (ordinal, slot, buffer, offset, length), the buffer third.
DISPATCH_FIXED = 7
BINDING_WIDTH = 5


@dataclass(frozen=True)
class Ending:
    """How a group's command buffer is submitted (the ops right after its finalize, with
    integer ops before them): queue.execute signalling a new fence (`signal_create` its
    fence.create) or one from outside; optionally a queue.dealloca waiting on the new
    fence and signalling a new one (`dealloca_create`) or one from outside; and, where the
    last fence is new, the fence.await of it (`awaited`: right after, or the block's
    terminator: `terminal`), with integer ops that cannot fail before it (`between`: they
    stay where they are, before the helper's call at the await)."""

    signal_create: Op | None
    execute: Op
    dealloca_create: Op | None = None
    dealloca: Op | None = None
    awaited: Op | None = None
    terminal: bool = False
    between: tuple[Op, ...] = ()
    kept: bool = False  # the awaited fence is read after the await (the call returns it)
    # the last fence new and not awaited in the block (a loop carries it to its next
    # iteration): the call makes it, signals or fails it as the queue would, returns it
    carried: bool = False

    @property
    def ops(self) -> tuple[Op, ...]:
        return tuple(op for op in (self.signal_create, self.execute, self.dealloca_create,
                                   self.dealloca, self.awaited) if op is not None)

    @property
    def new_fences(self) -> list[Op]:
        return [op for op in (self.signal_create, self.dealloca_create) if op is not None]


@dataclass(frozen=True)
class OneShot:
    """One group. `steps`: (kind, ops) in order; kinds "alloca" (a fence.create and its
    queue.alloca; any number, first), "join" (their fences' fence.join, where there are
    several), "create", "lookup", "dispatch", "barrier", "copy", "fill", "finalize" (one op
    each). `markers`: per dispatch, copy and fill (by pc), the operand positions the helper
    supplies: position -> "LOOKED_UP" (a dispatch's function) or the alloca's index whose
    buffer it is. `targets`: what the call assigns: each alloca's buffer register, then
    each lookup's result register (None where the call leaves the register alone).
    `ending`: the submission; `tail_buffer`: the alloca whose buffer its dealloca
    releases (None: a buffer from outside, or no dealloca)."""

    ending: Ending
    steps: tuple[tuple[str, tuple[Op, ...]], ...]
    markers: dict[int, dict[int, object]]
    targets: tuple[Reg | None, ...]
    tail_buffer: int | None = None

    @property
    def execute(self) -> Op:
        return self.ending.execute

    @property
    def allocas(self) -> list[Op]:
        return [ops[1] for kind, ops in self.steps if kind == "alloca"]

    @property
    def pcs(self) -> frozenset[int]:
        """The pcs of the ops the group lowers itself (the steps and its ending)."""
        ending = self.ending.ops[:-1] if self.ending.terminal else self.ending.ops
        return frozenset(op.pc for _, ops in self.steps for op in ops) | {op.pc for op in ending}


def _holds(written_by: dict, r: Reg, step) -> bool:
    """Whether every slot of `r` holds `step`'s value (None: no step's value)."""
    return all(written_by.get(s) is step for s in _slots([r]))


def _collect(module, ops: list[Op], end: int, cmd: Reg):
    """The steps from the command buffer's create to its finalize, backwards from
    `ops[end]`: (index of the create, [(kind, (op,)), ...]) or None."""
    steps: list[tuple[str, tuple[Op, ...]]] = []
    for j in range(end - 1, -1, -1):
        op = ops[j]
        kind = STEP_KINDS.get(callee(module, op))
        if kind is None:
            if not (movable(op) or op.spec.fails_on_divisor):  # (divisions: checked with constants)
                return None
            continue
        if kind in RECORDING:
            first = op["operands"][0]
            if not (first.is_ref and first.ordinal == cmd.ordinal):
                return None
        if (kind == "finalize") != (not steps):  # the finalize last, and only there
            return None
        steps.append((kind, (op,)))
        if kind == "create":
            res = op["results"]
            if len(res) != 1 or not res[0].is_ref or res[0].ordinal != cmd.ordinal:
                return None
            steps.reverse()
            return j, steps
    return None


def _allocas_before(module, ops: list[Op], start: int, dev: Reg, wait: Reg):
    """The allocas the execute's `wait` stands for, before `ops[start]` (integer ops
    between): one fence.create + queue.alloca signalling `wait`, or several whose fences
    a fence.join into `wait` joins. (index of the first op, their steps) or None."""
    k = start - 1
    while k >= 0 and movable(ops[k]):
        k -= 1
    if k < 0:
        return None
    fences = [wait.ordinal]
    join = None
    if callee(module, ops[k]) == FENCE_JOIN:
        join = ops[k]
        res = join["results"]
        if len(res) != 1 or not res[0].is_ref or res[0].ordinal != wait.ordinal:
            return None
        fences = [r.ordinal for r in join["operands"][1:]]
        if not 2 <= len(fences) <= MAX_ALLOCAS or not all(r.is_ref for r in join["operands"][1:]):
            return None
        k -= 1
    steps: list[tuple[str, tuple[Op, ...]]] = []
    for _ in fences:
        while k >= 1 and movable(ops[k]):
            k -= 1
        if k < 1 or callee(module, ops[k]) != QUEUE_ALLOCA or callee(module, ops[k - 1]) != FENCE_CREATE:
            return None
        create, alloca = ops[k - 1], ops[k]
        cr, co, al, ar = create["results"], create["operands"], alloca["operands"], alloca["results"]
        if not (
            len(cr) == 1 and cr[0].is_ref
            and len(co) == 2 and co[0].is_ref and co[0].ordinal == dev.ordinal
            and len(al) == 9 and al[0].is_ref and al[0].ordinal == dev.ordinal
            and al[3].is_ref and al[3].ordinal == cr[0].ordinal
            and al[2].is_ref and al[2].ordinal != cr[0].ordinal
            and len(ar) == 1 and ar[0].is_ref
        ):  # fmt: skip
            return None
        steps.append(("alloca", (create, alloca)))
        k -= 2
    steps.reverse()
    # each alloca's fence a distinct one of the join's, in its order (or the wait itself)
    if [ops[1]["operands"][3].ordinal for _, ops in steps] != fences:
        return None
    if join is not None:
        steps.append(("join", (join,)))
    return k + 1, steps


def _buffer_positions(kind: str, op: Op) -> list[int] | None:
    """A recording call's operand positions holding buffers (None: malformed)."""
    if kind == "copy":
        return list(COPY_BUFFERS)
    if kind == "fill":
        return list(FILL_BUFFERS)
    if kind != "dispatch":
        return []
    o = op["operands"]
    segments = op.get("segment_sizes")
    if segments is None or len(segments) < 2 or len(o) < DISPATCH_FIXED:
        return None
    constants, bindings = segments[-2], segments[-1]
    base = DISPATCH_FIXED + constants
    if len(o) != base + BINDING_WIDTH * bindings:
        return None
    return [base + BINDING_WIDTH * b + 2 for b in range(bindings)]


def _match(module, ops: list[Op], ending: Ending, end: int, after, seed=None) -> OneShot | None:
    """The group submitted by `ending`, its steps before `ops[end]` (the ending's first
    op); `after`: the ref registers live after the ending."""
    execute = ending.execute
    ex = execute["operands"]
    if len(ex) != EXECUTE_FIXED or not all(r.is_ref for r in (ex[0], ex[2], ex[3], ex[4])):
        return None
    dev, wait, cmd = ex[0], ex[2], ex[4]
    found = _collect(module, ops, end, cmd)
    if found is None:
        return None
    start, steps = found
    allocas = _allocas_before(module, ops, start, dev, wait)
    if allocas is not None:  # (the allocas in the group where they can be, else left before)
        k, before = allocas
        group = _check(module, ops, ending, end, after, k, [*before, *steps], seed)
        if group is not None:
            return group
    return _check(module, ops, ending, end, after, start, steps, seed)


def _check(module, ops: list[Op], ending: Ending, end: int, after, start: int, steps,
           seed=None) -> OneShot | None:
    """The group of `steps` (from `ops[start]` to `ops[end]`), or None where the rules of
    this module's docstring do not all hold. `seed`: integer registers known to hold a
    constant on entry to the block (`block_constants`)."""
    execute = ending.execute
    ex = execute["operands"]
    dev, wait, cmd = ex[0], ex[2], ex[4]
    alloca_steps = [group for kind, group in steps if kind == "alloca"]
    allocas = [group[1] for group in alloca_steps]
    bufs = [a["results"][0].ordinal for a in allocas]
    if len(set(bufs)) != len(bufs):
        return None
    fences = [("r", group[0]["results"][0].ordinal) for group in alloca_steps]
    joined = ("r", wait.ordinal) if allocas else None
    private = {("r", cmd.ordinal), *fences} | ({joined} if joined else set())
    # (a register the ending's fence.create writes holds that fence after the ending)
    private -= {("r", create["results"][0].ordinal) for create in ending.new_fences}
    if private & {("r", n) for n in after}:
        return None
    step_ops = {id(op): kind for kind, group in steps for op in group}
    creator: dict[tuple[str, int], Op] = {}
    creator[("r", cmd.ordinal)] = next(group[0] for kind, group in steps if kind == "create")
    join = next((group[0] for kind, group in steps if kind == "join"), None)
    if allocas:
        creator[joined] = join if join is not None else alloca_steps[0][0]

    # One pass in order: `written_by` maps a slot to the step op whose value it holds.
    known: dict[int, tuple[bool, int]] = dict(seed or {})
    for op in ops[:start]:
        _update_constants(known, op)
    written_by: dict[tuple[str, int], Op] = {}
    markers: dict[int, dict[int, object]] = {}
    last_lookup = None
    lookups: list[Op] = []
    for op in ops[start:end]:
        kind = step_ops.get(id(op))
        if kind is None:
            if not movable(op, known) or _slots(op.reads()) & written_by.keys():
                return None
        else:
            try:
                o, results = _typed(module, op)
            except ValueError:  # (the verifier checks calls against their cconv)
                return None
            if kind in ("alloca", "create") and o[0].ordinal != dev.ordinal:
                return None
            supplied: dict[int, Op] = {}  # operand position -> the step it must hold
            if callee(module, op) == QUEUE_ALLOCA:
                supplied[3] = next(g[0] for g in alloca_steps if g[1] is op)  # its fence
            elif kind == "join":  # the allocas' fences, in order (_allocas_before)
                supplied.update({1 + i: g[0] for i, g in enumerate(alloca_steps)})
            elif kind in RECORDING:
                supplied[0] = creator[("r", cmd.ordinal)]
            mark: dict[int, object] = {}
            if kind == "dispatch":
                fn = o[2]
                if not fn.is_ref and ("i", fn.ordinal) in written_by:
                    supplied[2] = last_lookup
                    mark[2] = "LOOKED_UP"
            buffers = _buffer_positions(kind, op)
            if buffers is None:
                return None
            for p in buffers:
                if o[p].is_ref and o[p].ordinal in bufs:
                    k = bufs.index(o[p].ordinal)
                    supplied[p] = allocas[k]
                    mark[p] = k
            if buffers:
                markers[op.pc] = mark
            for p, r in enumerate(o):
                if p in supplied:
                    if supplied[p] is None or not _holds(written_by, r, supplied[p]):
                        return None
                elif not _holds(written_by, r, None):
                    return None  # another step's value, read as a register
            if kind == "lookup":
                last_lookup = op
                lookups.append(op)
        for s in _slots(op.writes() if kind is None else results):
            if kind is None:
                written_by.pop(s, None)  # (no longer a step's value)
            else:
                written_by[s] = op
        _update_constants(known, op)
        if ("r", dev.ordinal) in _slots(op.writes()):
            return None
    # The ending reads no step's value but the command buffer, the allocas' fence and,
    # in the dealloca, an alloca's buffer.
    tail_buffer = None
    read_before: set[tuple[str, int]] = set()  # what the ending's calls read before the await
    calls = ending.ops if ending.awaited is None else ending.ops[:-1]
    for op in (*calls, *ending.between, *([ending.awaited] if ending.awaited is not None else [])):
        if any(op is b for b in ending.between):  # as an op between the steps, and
            # one writing no operand the helper's call reads (it reads them after)
            if not movable(op, known) or _slots(op.reads()) & written_by.keys():
                return None
            written = _slots(op.writes())
            if written & read_before:
                return None  # (the helper's call reads the operand after this op)
            for slot in written:
                written_by.pop(slot, None)
            _update_constants(known, op)
            continue
        try:
            operands, results = _typed(module, op)
        except ValueError:  # (the verifier checks calls against their cconv)
            return None
        read_before |= _slots(operands)
        for p, r in enumerate(operands):
            holder = None
            if op is execute and p == 4:
                holder = creator[("r", cmd.ordinal)]
            elif op is execute and p == 2 and allocas:
                holder = creator[joined]
            elif op is ending.dealloca and p == 4 and r.ordinal in bufs:
                tail_buffer = bufs.index(r.ordinal)
                holder = allocas[tail_buffer]
            if not _holds(written_by, r, holder):
                return None
        for slot in _slots(results):  # (a new fence: no step's value from here on)
            written_by.pop(slot, None)
    targets: list[Reg | None] = [
        a["results"][0]
        if written_by.get(("r", a["results"][0].ordinal)) is a and a["results"][0].ordinal in after
        else None  # (written again, or dead: a transient the dealloca released)
        for a in allocas
    ]
    for op in lookups:
        r = _typed(module, op)[1][0]
        targets.append(r if _holds(written_by, r, op) else None)
    return OneShot(ending, tuple(steps), markers, tuple(targets), tail_buffer)


def _one_fence(module, op: Op, fence: Reg) -> bool:
    """Whether `op` is a fence.await of `fence` alone."""
    if callee(module, op) != FENCE_AWAIT:
        return False
    o = op["operands"]
    return len(o) == 3 and o[2].is_ref and o[2].ordinal == fence.ordinal


def _ending(module, ops: list[Op], e: int, live: RefLiveness, block: int, deallocas: bool = True):
    """The ending around the execute at `ops[e]` (`ops`: the block's, its terminator
    last), with the ref registers live after it: (Ending, its first op's index, live
    after) or None. A new fence is read only where the ending reads it (the execute and
    dealloca signalling it, the next waiting on it) and is dead after, but for the last
    one: awaited in the block (then it may be read after: `kept`), or not (`carried`).
    Without `deallocas`, a queue.dealloca after the execute is left out of the ending
    (it stays an op after the group, reading the fence the call returns)."""
    execute = ops[e]
    ex = execute["operands"]
    if len(ex) != EXECUTE_FIXED or not ex[3].is_ref:
        return None

    def creates(op, fence: Reg) -> bool:
        if callee(module, op) != FENCE_CREATE:
            return False
        r, o = op["results"], op["operands"]
        return (len(r) == 1 and r[0].is_ref and r[0].ordinal == fence.ordinal and len(o) == 2
                and o[0].ordinal == ex[0].ordinal)

    signal_create = ops[e - 1] if e >= 1 and creates(ops[e - 1], ex[3]) else None
    last, new = ex[3], signal_create is not None
    j = e + 1
    dealloca_create = dealloca = None
    if (
        deallocas and j + 1 < len(ops) and callee(module, ops[j + 1]) == QUEUE_DEALLOCA
        and len(ops[j + 1]["operands"]) == 6 and creates(ops[j], ops[j + 1]["operands"][3])
    ):  # fmt: skip
        dealloca_create, j = ops[j], j + 1
    if deallocas and j < len(ops) - 1 and callee(module, ops[j]) == QUEUE_DEALLOCA:
        d = ops[j]["operands"]
        if not (new and len(d) == 6 and d[2].is_ref and d[2].ordinal == last.ordinal
                and d[0].ordinal == ex[0].ordinal and d[3].is_ref):
            return None
        dealloca, last, new, j = ops[j], d[3], dealloca_create is not None, j + 1
    elif dealloca_create is not None:
        return None
    awaited, terminal, between, carried = None, False, (), False
    if new:  # the last fence new: awaited next (integer ops between), or by the terminator
        k = j
        while (
            k < len(ops) - 1 and callee(module, ops[k]) is None
            and (movable(ops[k]) or ops[k].spec.fails_on_divisor)
            and not any(r.is_ref for r in ops[k].writes())  # (integer ops only)
        ):  # fmt: skip
            k += 1
        if k < len(ops) and _one_fence(module, ops[k], last):
            awaited, terminal, between = ops[k], k == len(ops) - 1, tuple(ops[j:k])
        else:  # not awaited here: the call returns it (carried)
            carried = True
    ending = Ending(signal_create, execute, dealloca_create, dealloca, awaited, terminal, between,
                    carried=carried)
    after = live.live_out(block) if terminal else live.after(ending.ops[-1])
    # the new fences: read where the ending reads them, dead after; but the awaited one
    # may be read after the await (a loop's next submission waits on it: `kept`, the call
    # returns it, reached or failed as the await found it)
    kept = False
    for create in ending.new_fences:
        f = create["results"][0].ordinal
        if f in after:
            if carried and f == last.ordinal:
                continue  # (the call's result)
            if awaited is None or f != awaited["operands"][2].ordinal:
                return None
            kept = True
        later = ending.ops[ending.ops.index(create) + 1 :]  # (the register may hold another ref before)
        uses = [(op, p) for op in later for p, r in enumerate(op["operands"]) if r.is_ref and r.ordinal == f]
        allowed = {(id(execute), 3), (id(dealloca), 2), (id(dealloca), 3), (id(awaited), 2)}
        if any((id(op), p) not in allowed for op, p in uses):
            return None
    if kept:
        ending = dataclasses.replace(ending, kept=True)
    return ending, e - (signal_create is not None), after


def find(module, fn: Function, live: RefLiveness) -> dict[int, list[OneShot]]:
    """Block index -> its one-shot groups, one per queue.execute of a command buffer
    recorded in the block with an ending `_ending` takes. Where the ending with the
    execute's queue.dealloca is not one (IREE releases several transients with a
    dealloca each, joins their fences and may signal the caller's fence with a
    queue.barrier), the execute alone is: the call returns its new fence, and the
    deallocas after it stay ops of their own."""
    out: dict[int, list[OneShot]] = {}
    seeds = None  # block_constants(fn), made for the first group past the entry block
    for block in fn.blocks:
        ops = block.ops[:-1]
        found = []
        for e, op in enumerate(ops):
            if callee(module, op) != QUEUE_EXECUTE:
                continue
            for deallocas in (True, False):
                shape = _ending(module, block.ops, e, live, block.index, deallocas)
                if shape is None:
                    continue
                ending, first, after = shape
                if block.index and seeds is None:
                    seeds = block_constants(fn)
                group = _match(module, ops, ending, first, after,
                               seeds[block.index] if block.index else None)
                if group is not None:
                    found.append(group)
                if group is not None or ending.dealloca is None:  # (else: without it)
                    break
        if found:
            out[block.index] = found
    return out


__all__ = ["OneShot", "find", "movable"]

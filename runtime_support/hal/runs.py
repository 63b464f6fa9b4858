"""Runs of submissions as one native plan.

Where a function issues submission after submission, each awaited before the next
(translator/codegen/runs.py finds them: one `alloca_execute_indirect` or
`execute_indirect` group per dispatch, only releases and identical `if status: raise`
checks between them), generated code makes
one call for the whole run (runtime_support/hal/fused.py: `run`). `Run` is the run's
layout, a module constant of the generated package; `build` turns a run's command buffers,
as recorded, into one `Plan` (plan.py) whose commands are theirs in order, with every
binding-table reference resolved at build time:

- to the run's *outside* buffers (those it reads from before it): slots 0.. of the
  combined table, filled per call;
- to a buffer a submission allocates that outlives the run (an *output*): the next slots,
  filled per call with a new buffer, as queue.alloca would make it;
- to a buffer a submission allocates that dies inside the run (an *inner* one): a fixed
  address in an arena the combined plan owns, zero-filled per call as a new buffer is.

What each submission's own plan would check per call against its table, the build checks
once against the table the run's layout gives (offsets and lengths are among the call's
scalars, which key the cache); checks on outside buffers (range, writability) stay per
call in the combined plan. Anything the build cannot prove the same (a reference outside
its entry, an entry of the whole buffer of an outside buffer, a one-shot or Python-only
command buffer, pool != 0, a negative size) leaves the run to the general path: one
fused submission call per step, exactly the unfused behaviour.
"""

from __future__ import annotations

from ..errors import VMError
from .buffer import WHOLE_BUFFER, Allocation, HalBuffer
from .command_buffer import BufferRef, HalCommandBuffer, _Fill

# A step of `Run.steps`: indices into the call's scalars, except WAIT (into its wait
# fences) and TABLE ((source, offset index, length index) per binding-table entry).
(
    CREATE_FLAGS, AFFINITY, WAIT, POOL, MEMORY_TYPES, USAGE, SIZE, ALLOCA_FLAGS,
    CREATE_FLAGS2, EXEC_AFFINITY, EXEC_FLAGS, TIMEOUT, AWAIT_FLAGS, TABLE,
) = range(14)
# A table entry's source: k >= 0 the run's outside buffer k; OWN the buffer the step
# allocates; -2 - j the buffer step j allocated.
OWN = -1
# The alloca positions (POOL .. ALLOCA_FLAGS, and CREATE_FLAGS, AFFINITY) of a step that
# has none (an `execute_indirect` group: its dispatch writes a buffer it was given).
NO_ALLOCA = -1
_ALIGN = 64
# Inner buffers share one arena per combined plan, kept with it; past this size a run's
# inner buffers stay separate allocations (the general path), as unfused code would
# free each when it dies.
ARENA_MAX = 4 << 20
# Combined plans a context keeps per run (by the call's scalars: sizes that change with
# dynamic shapes each get one); the oldest goes first.
ENTRIES_PER_RUN = 4


class Run:
    """A run's layout (a module constant of generated code): `steps` as above, one per
    submission; `outputs`, the steps whose buffers the call returns (in the order of
    its targets), then the status."""

    __slots__ = ("steps", "outputs", "slots")

    def __init__(self, steps: tuple, outputs: tuple[int, ...]) -> None:
        self.steps = steps
        self.outputs = outputs
        # per step, its table entries holding ALLOCATED (fused.alloca_execute_indirect's
        # `slots`)
        self.slots = tuple(
            tuple(k for k, (source, _, _) in enumerate(step[TABLE]) if source == OWN)
            for step in steps
        )

    def __repr__(self) -> str:
        return f"Run({len(self.steps)} submissions, outputs {self.outputs})"


class Combined:
    """A run's plan for one set of command buffers and scalars (the cache key)."""

    __slots__ = ("cbs", "scalars", "plan", "made", "total", "arena")

    def __init__(self, cbs: tuple, scalars: tuple) -> None:
        self.cbs = cbs
        self.scalars = scalars
        self.plan = None  # None: the general path
        self.made = ()  # per output: (size, memory types, usage) of its new buffer
        self.total = 0  # bytes the run's allocas add to the allocator's count
        self.arena = None  # the inner buffers' storage (the plan also keeps it)


class _Unprovable(Exception):
    """The build cannot prove a step the same: the general path runs the run."""


def build(run: Run, cbs: tuple, scalars: tuple, outside: int, workers: int) -> Combined:
    """The combined plan of `run` for these command buffers and scalars (`outside`
    buffers before the run); its `plan` is None when any step must run on its own."""
    from .plan import build_plan

    entry = Combined(cbs, scalars)
    try:
        commands, made, total, arena_length, slot_ends = _commands(run, cbs, scalars, outside)
    except (_Unprovable, VMError, TypeError, IndexError):
        return entry
    arena = None
    if arena_length:
        if arena_length > ARENA_MAX:
            return entry
        try:
            arena = HalBuffer.over(Allocation.allocate(arena_length), 0, 0, None)
        except VMError:  # (RESOURCE_EXHAUSTED: the steps' own allocas will say so)
            return entry
        # Zero-filled first, inside the plan (so under its one-thread guard), as new
        # buffers are; a fill records no statistics.
        commands = [_Fill(BufferRef(arena, 0, 0, arena_length), 0, 4)] + [
            _at_arena(c, arena) for c in commands
        ]
    plan = build_plan(commands, workers, slot_ends)
    if plan is None:
        return entry
    entry.plan, entry.made, entry.total = plan, made, total
    entry.arena = arena
    return entry


_ARENA = object()  # a BufferRef buffer standing for the arena until it exists


def _commands(run: Run, cbs, scalars, outside: int):
    steps = run.steps
    if len(cbs) != len(steps):
        raise _Unprovable
    sizes = []  # per step, its alloca's size (None: no alloca)
    for step in steps:
        if step[SIZE] == NO_ALLOCA:
            sizes.append(None)
            continue
        size = scalars[step[SIZE]]
        if scalars[step[POOL]] != 0 or type(size) is not int or size < 0:
            raise _Unprovable  # (the import raises; or a hostile size)
        sizes.append(size)
    outputs = {j: k for k, j in enumerate(run.outputs)}
    arena_at, arena_length = {}, 0
    for j, size in enumerate(sizes):
        if size is not None and j not in outputs:
            arena_at[j] = arena_length
            arena_length += (size + _ALIGN - 1) // _ALIGN * _ALIGN
    made = tuple(
        (sizes[j], scalars[steps[j][MEMORY_TYPES]], scalars[steps[j][USAGE]]) for j in run.outputs
    )
    commands, slot_ends = [], {}
    for j, (step, cb) in enumerate(zip(steps, cbs)):
        if (
            type(cb) is not HalCommandBuffer
            or cb.recording
            or cb.one_shot
            or cb._plan is False
            or (cb.binding_count and not step[TABLE])
        ):
            raise _Unprovable
        entries = []
        for source, oi, li in step[TABLE]:
            offset, length = scalars[oi], scalars[li]
            if type(offset) is not int or type(length) is not int or offset < 0:
                raise _Unprovable
            target = j if source == OWN else -2 - source if source < OWN else None
            if target is not None:
                if not 0 <= target <= j or sizes[target] is None:
                    raise _Unprovable
                if length == WHOLE_BUFFER:
                    length = sizes[target] - offset
                if length < 0 or offset + length > sizes[target]:
                    raise _Unprovable
                where = ("arena", arena_at[target]) if target in arena_at else (
                    "slot", outside + outputs[target]
                )
            else:
                if not 0 <= source < outside or length == WHOLE_BUFFER or length < 0:
                    raise _Unprovable
                where = ("slot", source)
            if where[0] == "slot":
                slot = where[1]
                slot_ends[slot] = max(slot_ends.get(slot, 0), offset + length)
            entries.append((where, offset, length))
        _check_needs(cb, entries)
        for command in cb.commands:
            commands.append(_remap(command, entries))
    return commands, made, sum(n for n in sizes if n is not None), arena_length, slot_ends


def _check_needs(cb, entries) -> None:
    """What the step's own plan checks per call on its table (plan.Plan.checks: needed
    length and entry-offset alignment per slot), checked here on the layout's entries."""
    from .plan import plan_checks

    checks = cb._plan.checks if cb._plan else plan_checks(cb.commands)
    if checks is None:
        raise _Unprovable
    for slot, _i, end, _nonnull, _writable, align in checks:
        if slot >= len(entries):
            raise _Unprovable
        _, offset, length = entries[slot]
        if length < end or offset % align:
            raise _Unprovable


def _ref(ref: BufferRef, entries) -> BufferRef:
    """`ref` of a step's command, resolved through its table entry."""
    if ref.buffer is not None:
        return ref
    if not 0 <= ref.slot < len(entries):
        raise _Unprovable
    (kind, at), offset, length = entries[ref.slot]
    o, n = ref.offset, ref.length
    if n == WHOLE_BUFFER:
        n = length - o
    if o < 0 or n < 0 or o + n > length:
        raise _Unprovable
    if kind == "arena":
        return BufferRef(_ARENA, 0, at + offset + o, n)
    return BufferRef(None, at, offset + o, n)


def _map_refs(command, fn):
    """`command` with `fn` applied to each BufferRef it holds (alone or in a tuple)."""
    changes = {}
    for name, value in zip(command._fields, command):
        if isinstance(value, BufferRef):
            changes[name] = fn(value)
        elif type(value) is tuple and value and isinstance(value[0], BufferRef):
            changes[name] = tuple([fn(r) for r in value])
    return command._replace(**changes) if changes else command


def _remap(command, entries):
    """A step's command with its table references resolved (`_ref`)."""
    return _map_refs(command, lambda ref: _ref(ref, entries))


def _at_arena(command, arena: HalBuffer):
    """`command` with its arena placeholders made references into `arena`."""
    return _map_refs(
        command, lambda ref: ref._replace(buffer=arena) if ref.buffer is _ARENA else ref
    )


__all__ = ["ARENA_MAX", "ENTRIES_PER_RUN", "NO_ALLOCA", "OWN", "Combined", "Run", "build"]

"""The records of a queue region (translator/analyses/queue_regions.py finds them):
what the analysis hands the code generator (codegen/queue_programs.py), with no growth
or proof in them.

    Region      the ops, steps, inputs, outputs, interior and transient values, fail
                exits, carried registers, loop exits and loop call of one region
    RegionStep  one step (a `hal` call of the step table), FailExit / FailCheck its
                fail exits, Compute a movable op, Lit an operand known at translate time
    HostLoop    a loop call: a host loop whose body is one region and integer ops
"""

from __future__ import annotations

from dataclasses import dataclass, field

from runtime_support.exec import steps
from translator.ir import Op, Reg

# value id -> how describe() names it; inputs are named by their register
Value = int


def reg_name(r: Reg) -> str:
    if r.is_ref:
        return f"r{r.ordinal}"
    return f"i{r.ordinal}:{r.ordinal + 1}" if r.is_wide else f"i{r.ordinal}"


@dataclass(frozen=True)
class Lit:
    """An operand the region reads as a constant: an integer register dataflow proves
    constant there, a rodata segment (`("rodata", ordinal)`), or a null ref (None).
    `wide`: an integer's width where a register holds it (i64)."""

    value: object
    wide: bool = False


@dataclass(frozen=True)
class Compute:
    """A movable op the region computes: `out = op(*args)` (args: value ids, input
    registers, Lits)."""

    op: Op
    args: tuple
    out: Value


@dataclass(frozen=True)
class FailCheck:
    """A fail exit as the region checks it: fails when `test` is non-zero (zero, with
    `negate`), with `status` (value id, input register or Lit)."""

    exit: "FailExit"
    test: object
    status: object
    negate: bool


@dataclass(frozen=True)
class RegionStep:
    """One step: its kind (a steps.py kind class), the op, the step table row and each
    field's operand (a value id or an input register; spans: tuples)."""

    kind: type
    op: Op
    entry: steps.StepEntry
    fields: dict
    results: tuple[Value, ...]


@dataclass(frozen=True)
class FailExit:
    """A branch inside the region whose other arm only fails."""

    branch_pc: int
    fail_pc: int
    message: str
    status: Reg
    location: str | None


@dataclass
class Region:
    function: str
    blocks: tuple[int, ...]
    ops: tuple[Op, ...]  # in order, terminators crossed included
    steps: tuple[RegionStep, ...]
    movable: tuple[Op, ...]
    inputs: tuple[Reg, ...]  # live on entry, read by the region (first read order)
    outputs: tuple[tuple[Reg, Value], ...]  # register live after -> the region value it holds
    interior: tuple[Value, ...]
    transients: tuple[Value, ...]
    fail_exits: tuple[FailExit, ...]
    carried: tuple[tuple[Reg, Reg], ...] = ()  # (output register, input register)
    # Loop mode (docs/design/host-path.md §5.4), where `queue_loops.loop_exits` proves
    # it: per block the loop leaves to, the registers that may hold the loop's deferred
    # results there (the call site's `results(...)` at the block's start). Empty: no
    # loop mode.
    loop_exits: tuple[tuple[int, tuple[Reg, ...]], ...] = ()
    # Loop calls (docs/design/host-path.md §18), where `queue_loops.host_loop` proves
    # it: the loop whose body is this region and integer ops, run iteration after
    # iteration by one call (`queue_n.loop(...)`). None: no loop call.
    loop: "HostLoop | None" = None
    made_by: dict = field(default_factory=dict, repr=False)  # value -> (op, kind name)
    # What a queue program needs (translator/codegen/queue_programs.py): the region's
    # steps, computes and fail checks in order; every register the region leaves holding
    # something other than its value on entry that is live after, with what it holds
    # (value id, input register or Lit); and why a program cannot express it, if so.
    order: tuple = ()
    results: tuple[tuple[Reg, object], ...] = ()
    unsupported: str | None = None
    wide: dict = field(default_factory=dict, repr=False)  # value id -> is an i64
    live_after: frozenset = frozenset()  # ref registers (ordinals) live after the region

    @property
    def pcs(self) -> frozenset[int]:
        return frozenset(op.pc for op in self.ops)

    def describe(self) -> str:
        """One line per step (and fail exit), with inputs, outputs and interior values:
        for debugging and goldens."""

        def name(v) -> str:
            if isinstance(v, Reg):
                return reg_name(v)
            if isinstance(v, tuple):
                return "(" + " ".join(name(x) for x in v) + ")"
            return f"%{v}"

        lines = [
            f"region {self.function} 0x{self.ops[0].pc:x}-0x{self.ops[-1].pc:x} "
            f"blocks {list(self.blocks)}",
            "  in: " + " ".join(name(r) for r in self.inputs),
        ]
        fails = {f.branch_pc: f for f in self.fail_exits}
        for op in self.ops:
            step = next((s for s in self.steps if s.op is op), None)
            if step is not None:
                args = " ".join(f"{k}={name(v)}" for k, v in step.fields.items())
                res = (" -> " + " ".join(name(v) for v in step.results)) if step.results else ""
                lines.append(f"  0x{op.pc:x} {step.kind.__name__} {args}{res}")
            elif op.pc in fails:
                f = fails[op.pc]
                lines.append(f"  0x{op.pc:x} fail-exit {reg_name(f.status)} {f.message!r}")
        lines.append("  out: " + " ".join(f"{reg_name(r)}=%{v}" for r, v in self.outputs))
        lines.append("  interior: " + " ".join(f"%{v}" for v in self.interior))
        if self.transients:
            lines.append("  transient: " + " ".join(f"%{v}" for v in self.transients))
        if self.carried:
            lines.append(
                "  carried: " + " ".join(f"{reg_name(a)}->{reg_name(b)}" for a, b in self.carried)
            )
        if self.loop_exits:
            lines.append(
                "  loop exits: " + " ".join(
                    f"bb{b}(" + " ".join(reg_name(r) for r in regs) + ")" for b, regs in self.loop_exits
                )
            )
        return "\n".join(lines)


@dataclass(frozen=True)
class HostLoop:
    """A host loop whose body is one region and integer ops (docs/design/host-path.md
    §18). An iteration, from the region's call: the call, the ops `after` it (to the back
    edge's branch), the branch on `test` (back where it is non-zero, zero with `negate`)
    with the back edge's `copies` (source, destination), then the ops `before` the call
    at the loop's head. `entry`: the registers an iteration reads before it writes them,
    from the call on (the loop call's arguments after the region's inputs); `kept`: the
    registers the loop writes, other than the call's results, live after the call (what
    the loop call returns after the call's results: their values at the last call)."""

    before: tuple[Op, ...]
    after: tuple[Op, ...]
    test: Reg
    negate: bool
    copies: tuple[tuple[Reg, Reg], ...]
    entry: tuple[Reg, ...]
    kept: tuple[Reg, ...]


__all__ = [
    "Compute", "FailCheck", "FailExit", "HostLoop", "Lit", "Region", "RegionStep", "Value",
    "reg_name",
]

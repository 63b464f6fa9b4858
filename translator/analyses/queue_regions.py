"""Queue regions: the stretches of a function a queue program replaces (docs/design/host-path.md §4).

A region is a single-entry run of ops, found on the decoded IR, made of

- *steps*: calls of a `hal` import in the step table (runtime_support/exec/steps.py), with
  the (name, cconv) the `hal` module declares;
- *movable ops*: integer ops that cannot fail (or divide by a register the dataflow proves
  holds a constant other than 0 and -1; `constants.movable`), rodata moves, null refs and
  releases (`discard.refs`), which a queue program's call site keeps before the call;
- *fail exits*: a branch whose other arm only fails (`if status: raise`, `cf.assert`),
  kept as the check of the step before it.

Growth: every step not yet in a region seeds one, which takes the following ops of its
block while they are steps or movable, and goes on through a terminator into the one
successor that continues where that successor is reached from here alone and every other
successor only fails. It stops before anything else: a call of another function or a
non-step import, a ref op (select.ref, global.store.ref), a return, a branch both ways of
which go on, a loop header, and a non-step op that reads a step's result (a readback the
host computes with, or branches on, ends the region after the `Read`). Ops after the last
step that are only movable are left out (they are ordinary statements after the call).

Values, not registers: IREE reuses a register for the next fence within a few ops, so the
walk numbers each value a region op makes (`%0`, `%1`...) and reads each operand as the
value its register holds there; a register read before the region writes it is an input.

Privacy, the one proof: a value a step makes (a fence, a command buffer, a function
ordinal, a buffer) is *interior* when no register still holding it is live after the
region (ref liveness: liveness.py; integers: `_IntLiveness`) and every op of the region
that reads it is a step (releases and the fail checks' branches aside). A value that is
live after is an *output* (a buffer the caller keeps, a fence a loop waits on next, a
scalar read back): a fence stored to a global, returned or passed to a call is read by an
op the region stops before, so it is an output, never interior. An allocated buffer that
a `Dealloca` of the region releases and that is not an output is *transient*.

Loops: where the region ends before its block's back edge to a loop header (only integer
ops that cannot fail between: IREE's induction ops, `add`, `cmp`, then a `br` or a
`cond_br` one of whose edges is the back edge), every block of the loop but the region's
own writes none of the edge's destinations, and an edge copy moves an output into a
register the region reads as an input, the pair (output, input) is *carried*: the next
iteration's call reads what this one made. Where every output is carried and the rest of
the loop is integer ops and branches that read no register holding an output but through
the carry copies (`_loop_exits`), the region has *loop exits*: its call may defer its
steps (runtime_support/exec/loops.py) and each block the loop leaves to reads the last
results first.

    find(module, fn, live, info=None, locate=None) -> [Region, ...]   (in pc order)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from runtime_support.exec import steps
from runtime_support.exec.program import MAX_POSITIONAL
from translator.analyses import cfg
from translator.analyses.liveness import RefLiveness
from translator.analyses.calls import callee, typed
from translator.analyses.constants import block_constants, movable, update_constants
from translator.ir import Function, Op, Reg

# value id -> how describe() names it; inputs are named by their register
Value = int


# Steps whose results are plain integers (a view's dimension, a value read back from a
# buffer): the region goes on through integer ops that read them, which become its
# Compute steps after the step, so queue work that follows (a readback's value written
# into the next buffer, an index computed from it) stays in the same program.
_PLAIN = (steps.ViewDim, steps.Read)
_PLAIN_NAMES = tuple(k.__name__ for k in _PLAIN)


def _reg_name(r: Reg) -> str:
    if r.is_ref:
        return f"r{r.ordinal}"
    return f"i{r.ordinal}:{r.ordinal + 1}" if r.is_wide else f"i{r.ordinal}"


def _slots(r: Reg) -> tuple[tuple[str, int], ...]:
    """A register's slots: a ref one, an i32 one, an i64 (or a list/remap register of
    unknown width: reads of both are kept) two."""
    if r.is_ref:
        return (("r", r.ordinal),)
    if r.is_wide:
        return (("i", r.ordinal), ("i", r.ordinal + 1))
    return (("i", r.ordinal),)


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
    # Loop mode (docs/design/host-path.md §5.4), where `_loop_exits` proves it: per block
    # the loop leaves to, the registers that may hold the loop's deferred results there
    # (the call site's `results(...)` at the block's start). Empty: no loop mode.
    loop_exits: tuple[tuple[int, tuple[Reg, ...]], ...] = ()
    # Loop calls (docs/design/host-path.md §18), where `_host_loop` proves it: the loop
    # whose body is this region and integer ops, run iteration after iteration by one
    # call (`queue_n.loop(...)`). None: no loop call.
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
                return _reg_name(v)
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
                lines.append(f"  0x{op.pc:x} fail-exit {_reg_name(f.status)} {f.message!r}")
        lines.append("  out: " + " ".join(f"{_reg_name(r)}=%{v}" for r, v in self.outputs))
        lines.append("  interior: " + " ".join(f"%{v}" for v in self.interior))
        if self.transients:
            lines.append("  transient: " + " ".join(f"%{v}" for v in self.transients))
        if self.carried:
            lines.append(
                "  carried: " + " ".join(f"{_reg_name(a)}->{_reg_name(b)}" for a, b in self.carried)
            )
        if self.loop_exits:
            lines.append(
                "  loop exits: " + " ".join(
                    f"bb{b}(" + " ".join(_reg_name(r) for r in regs) + ")" for b, regs in self.loop_exits
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


# --------------------------------------------------------------------------- integer liveness


class _IntLiveness:
    """Integer register slots some later op may read (backward dataflow, as liveness.py
    does for refs). Call operands are typed by the import's cconv; a list or remap
    register of unknown width is read as both slots it may cover and writes neither,
    so an unknown is live rather than dead: outputs may be too many, interiors never."""

    def __init__(self, module, fn: Function, info) -> None:
        self.module = module
        index_of = {b.pc: b.index for b in fn.blocks}
        self._in: dict[int, set] = {b: set() for b in info.rpo}
        self._after: dict[int, frozenset] = {}
        self._out: dict[int, frozenset] = {}
        changed = True
        while changed:
            changed = False
            for b in reversed(info.rpo):
                new = self._block(fn.blocks[b], index_of, None)
                if new != self._in[b]:
                    self._in[b], changed = new, True
        for b in info.rpo:
            self._block(fn.blocks[b], index_of, self._after)

    def _rw(self, op: Op) -> tuple[set, set]:
        if callee(self.module, op) is not None:
            try:
                reads, writes = typed(self.module, op)
                return self._ints(reads), self._ints(writes)
            except ValueError:
                pass
        reads = self._ints(op.reads())
        writes = {s for r in op.writes() if r.bank is not None for s in _slots(r) if s[0] == "i"}
        return reads, writes

    @staticmethod
    def _ints(regs) -> set:
        out = set()
        for r in regs:
            if r.is_ref:
                continue
            out |= set(_slots(r if r.bank is not None else Reg(r.raw, "i64")))
        return out

    def _block(self, block, index_of, record) -> set:
        term = block.ops[-1]
        live: set = set()
        for pc, pairs in term.edges():
            t = index_of.get(pc)
            if t in self._in:
                edge = set(self._in[t])
                for src, _dst in reversed(pairs):
                    edge |= self._ints([src])
                live |= edge
        if record is not None:
            self._out[block.index] = frozenset(live)
        for op in reversed(block.ops):
            reads, writes = self._rw(op)
            if record is not None:
                record[op.pc] = frozenset(live)
            live = (live - writes) | reads
        return live

    def after(self, op: Op) -> frozenset:
        """Slots live after `op` (a terminator: after its edges' copies)."""
        return self._after.get(op.pc, frozenset())


# --------------------------------------------------------------------------- growth


def _step(module, op: Op) -> steps.StepEntry | None:
    c = callee(module, op)
    return None if c is None else steps.lookup(*c)


def _fail_of(fn: Function, b: int, succ, seen=None) -> Op | None:
    """The `vm.fail` block `b` only leads to (through releases and plain branches), or None."""
    seen = seen or set()
    if b in seen:
        return None
    seen.add(b)
    block = fn.blocks[b]
    if any(op.spec.emit != "discard" for op in block.ops[:-1]):
        return None
    term = block.ops[-1]
    if term.spec.emit == "fail":
        return term
    if term.spec.emit == "branch":
        return _fail_of(fn, succ[b][0], succ, seen)
    return None


class _Finder:
    def __init__(self, module, fn, live, info, locate) -> None:
        self.module, self.fn, self.live, self.info = module, fn, live, info
        self.locate = locate
        self.index_of = {b.pc: b.index for b in fn.blocks}
        self.ints = _IntLiveness(module, fn, info)
        self.constants = None  # block_constants(fn), made when a block past the entry needs it

    def known_at(self, b: int) -> dict:
        if b == 0:
            return {}
        if self.constants is None:
            self.constants = block_constants(self.fn)
        return dict(self.constants[b] or {})

    def crossing(self, b: int, term: Op):
        """(successor, [(branch, fail op)]) where the region may go on through `term`."""
        go_on, fails = [], []
        for s in self.info.succ[b]:
            f = _fail_of(self.fn, s, self.info.succ)
            if f is None:
                go_on.append(s)
            else:
                fails.append(f)
        if len(go_on) != 1:
            return None
        s = go_on[0]
        if s in self.info.loops or self.info.preds.get(s) != [b]:
            return None
        return s, fails

    def grow(self, b: int, i: int) -> list[tuple[int, Op, str]]:
        """The region's ops from `fn.blocks[b].ops[i]` (a step): (block, op, role), role
        one of step / movable / release / branch; trailing non-steps trimmed."""
        out: list[tuple[int, Op, str]] = []
        made: set = set()  # slots holding a step's result
        known = self.known_at(b)
        for op in self.fn.blocks[b].ops[:i]:
            update_constants(known, op)
        while True:
            ops = self.fn.blocks[b].ops
            op = ops[i]
            reads = {s for r in op.reads() for s in _slots(r)}
            if _step(self.module, op) is not None:
                role = "step"
            elif op.spec.is_terminator and op.spec.emit in ("branch", "cond_br", "br_table"):
                role = "branch"  # (never a call of a function: its effects are not steps)
            elif op.spec.emit == "discard":
                role = "release"
            elif movable(op, known) and not reads & made:
                role = "movable"
            else:
                break
            if role == "branch":
                # (its copies may move a step's result: only a condition is a use)
                cond = {s for r in op.reads() if r.bank is not None for s in _slots(r)}
                crossed = self.crossing(b, op)
                if crossed is None or (cond & made and not crossed[1]):
                    break  # (a branch on a step's result both ways of which go on)
                out.append((b, op, role))
                b, i = crossed[0], 0
                known = self.known_at(b)
                self._remap(made, op)
                continue
            out.append((b, op, role))
            written = {s for r in op.writes() for s in _slots(r)}
            made -= written
            if role == "step" and _step(self.module, op).kind not in _PLAIN:
                made |= written  # (a plain value: integer ops after may read it, see _PLAIN)
            update_constants(known, op)
            if op.spec.is_terminator:  # a step that ends its block (fence.await)
                crossed = self.crossing(b, op)
                if crossed is None:
                    break
                b, i = crossed[0], 0
                known = self.known_at(b)
                continue
            i += 1
        while out and out[-1][2] in ("movable", "release"):
            out.pop()
        return out

    @staticmethod
    def _remap(made: set, op: Op) -> None:
        for _pc, pairs in op.edges():
            for src, dst in pairs:
                if any(s in made for s in _slots(src)):
                    made.update(_slots(dst))
                else:
                    made.difference_update(_slots(dst))


def _region(finder: _Finder, grown) -> Region:
    module, fn = finder.module, finder.fn
    held: dict[tuple[str, int], Value] = {}  # slot -> value
    wide: dict[Value, bool] = {}
    inputs: dict[tuple[bool, int], Reg] = {}
    readers: dict[Value, list[tuple[Op, str]]] = {}
    made_by: dict[Value, tuple[Op, str]] = {}
    region_steps, movables, fail_exits = [], [], []
    order: list = []
    lits: dict[Value, Lit] = {}  # values of const, rodata and null ops
    unsupported: list[str] = []
    n = 0
    first_b, first_op, _ = grown[0]
    known = finder.known_at(first_b)
    for op in fn.blocks[first_b].ops:
        if op is first_op:
            break
        update_constants(known, op)

    def read(r: Reg, fold: bool = True):
        """The value id `r` holds, the Lit it holds (a constant), or the input register
        it still holds (a branch copy of an input is that input)."""
        vals = {held.get(s) for s in _slots(r)}
        if len(vals) == 1 and None not in vals:
            v = vals.pop()
            return lits.get(v, v) if fold and isinstance(v, int) else v
        if fold and not r.is_ref and r.bank is not None:
            wide_k, value = known.get(r.ordinal, (None, 0))
            if wide_k is not None and wide_k == r.is_wide:
                return Lit(value, wide_k)
        return inputs.setdefault((r.is_ref, r.ordinal), r)

    def peek(r: Reg):
        """The value id `r` holds, or None (nothing registered as an input)."""
        vals = {held.get(s) for s in _slots(r)}
        return vals.pop() if len(vals) == 1 and None not in vals else None

    def write(r: Reg, v) -> None:
        for s in _slots(r):
            held.pop(s, None)
        for s in _slots(r):
            held[s] = v

    def new(op: Op, what: str) -> Value:
        nonlocal n
        n += 1
        made_by[n - 1] = (op, what)
        return n - 1

    for b, op, role in grown:
        if role == "step":
            entry = _step(module, op)
            operands, results = typed(module, op)
            values = [read(r) for r in operands]
            for r, v in zip(operands, values):
                if isinstance(v, int):
                    readers.setdefault(v, []).append((op, "step"))
            fields = entry.bind(values, op.get("segment_sizes"))
            outs = []
            for r in results:
                v = new(op, entry.kind.__name__)
                wide[v] = r.is_wide
                write(r, v)
                outs.append(v)
            step = RegionStep(entry.kind, op, entry, fields, tuple(outs))
            region_steps.append(step)
            order.append(step)
            if op.spec.is_terminator and any(pairs for _, pairs in op.edges()):
                unsupported.append(f"0x{op.pc:x}: a step ending its block copies registers")
        elif role == "branch":
            for r in op.reads():
                v = peek(r)
                if isinstance(v, int):
                    readers.setdefault(v, []).append((op, "branch"))
            next_b = next(s for s in finder.info.succ[b] if _fail_of(fn, s, finder.info.succ) is None)
            next_pc = fn.blocks[next_b].pc
            edges = op.edges()
            for k, (pc, pairs) in enumerate(edges):
                if pc == next_pc:
                    continue
                f = _fail_of(fn, finder.index_of[pc], finder.info.succ)
                loc = finder.locate(f.pc) if finder.locate else None
                exit_ = FailExit(op.pc, f.pc, f["message"].decode("utf-8", "replace"), f["status"], loc)
                fail_exits.append(exit_)
                if op.spec.emit != "cond_br" or len(edges) != 2 or edges[0][0] == edges[1][0]:
                    unsupported.append(f"0x{op.pc:x}: a fail exit that is not a two-way branch")
                    continue
                status = _fail_status(fn, finder, pc, pairs, f)
                order.append(FailCheck(exit_, read(op["condition"]), read(status), negate=k == 1))
            for pc, pairs in edges:
                if pc == next_pc:  # the copies into the continuing block
                    vals = [(dst, read(src, fold=False)) for src, dst in pairs]
                    for dst, v in vals:
                        write(dst, v)
            known = finder.known_at(next_b)
        elif role == "release":
            pass  # (a release of a value or an input: nothing the program needs)
        else:
            movables.append(op)
            for r in op.reads():
                v = peek(r)
                if isinstance(v, int):
                    readers.setdefault(v, []).append((op, "movable"))
            # (in the order of the op's fields: the numerics helper's parameters)
            args = [
                read(op[f.name]) if isinstance(op[f.name], Reg) else Lit(op[f.name])
                for f in op.spec.fields if not f.write
            ]
            for r in op.writes():
                v = new(op, "movable")
                wide[v] = r.is_wide
                if op.spec.integer_const:
                    lits[v] = Lit(op["value"].value if "value" in op.values else 0, r.is_wide)
                elif op.spec.emit == "rodata":
                    lits[v] = Lit(("rodata", op["rodata"]))
                elif op.spec.emit == "null":
                    lits[v] = Lit(None)
                elif op.spec.emit in ("numeric", "select"):
                    order.append(Compute(op, tuple(args), v))
                else:
                    unsupported.append(f"0x{op.pc:x}: vm.{op.mnemonic} is not computed in a program")
                write(r, v)
        if role != "branch":
            update_constants(known, op)
            if op.spec.is_terminator:
                nxt = finder.crossing(b, op)
                if nxt is not None:
                    known = finder.known_at(nxt[0])

    # What is live after the region's last op: the continuing block's entry when the
    # last op is a crossed branch (or a step ending its block), else after the op.
    last_b, last, _ = grown[-1]
    if last.spec.is_terminator:
        nxt = finder.crossing(last_b, last)
        if nxt is not None:
            first = fn.blocks[nxt[0]].ops[0]
            # (live before `first`; RefLiveness keeps no `after` of a terminator: a block
            # of one branch has its live-out instead)
            below = finder.live.live_out(nxt[0]) if first.spec.is_terminator else finder.live.after(first)
            ref_live = (set(below) - {r.ordinal for r in first.writes() if r.is_ref}) | {
                r.ordinal for r in first.reads() if r.is_ref
            }
            rd, w = finder.ints._rw(first)  # (reads, writes)
            int_live = (set(finder.ints.after(first)) - w) | rd
        else:
            ref_live = set(finder.live.live_out(last_b))
            int_live = set(finder.ints._out.get(last_b, ()))
    else:
        ref_live = set(finder.live.after(last))
        int_live = set(finder.ints.after(last))

    step_made = {v for s in region_steps for v in s.results}
    outputs: list[tuple[Reg, Value]] = []
    seen_slot = set()
    for slot, v in sorted(held.items(), key=lambda kv: kv[0]):
        if not isinstance(v, int) or v not in step_made or slot in seen_slot:
            continue
        kind, o = slot
        live = o in ref_live if kind == "r" else slot in int_live
        if not live:
            continue
        reg = Reg(o | (0x8000 if kind == "r" else 0), None if kind == "r" else ("i64" if wide[v] else "i32"))
        seen_slot.update(_slots(reg))
        outputs.append((reg, v))
    out_values = {v for _, v in outputs}
    # privacy: an interior value is read in the region by steps only (and the fail
    # checks' branches: an await's status); one read by a movable op cannot be interior
    # (growth stops before such an op, so this holds by construction: checked here).
    interior = []
    for v in sorted(step_made - out_values):
        assert made_by[v][1] in _PLAIN_NAMES or all(role in ("step", "branch") for _, role in readers.get(v, ())), (
            f"{fn.name}: value %{v} read by a non-step op in a region"
        )
        interior.append(v)
    freed = set()
    for s in region_steps:
        if s.kind is steps.Dealloca and isinstance(s.fields.get("buffer"), int):
            freed.add(s.fields["buffer"])
    transients = tuple(v for v in interior if v in freed and made_by[v][1] == "Alloca")
    results = _results(held, wide, lits, ref_live, int_live)
    region = Region(
        function=fn.name,
        blocks=tuple(dict.fromkeys(b for b, _, _ in grown)),
        ops=tuple(op for _, op, _ in grown),
        steps=tuple(region_steps),
        movable=tuple(movables),
        inputs=tuple(inputs.values()),
        outputs=tuple(outputs),
        interior=tuple(interior),
        transients=transients,
        fail_exits=tuple(fail_exits),
        made_by=made_by,
        order=tuple(order),
        results=results,
        unsupported=unsupported[0] if unsupported else None,
        wide=wide,
        live_after=frozenset(ref_live),
    )
    region.carried = _carried(finder, region, grown)
    if region.carried:
        region.loop_exits = _loop_exits(finder, region, grown)
    if not region.loop_exits and region.unsupported is None:
        region.loop = _host_loop(finder, region, grown, ref_live, int_live)
    return region


def _fail_status(fn: Function, finder: _Finder, pc: int, pairs, fail: Op) -> Reg:
    """The register, at the branch, whose value the fail arm's `vm.fail` reports: its
    status register, traced back through the copies on the way (the branch's own and
    those of plain branches between)."""
    path = [pairs]
    b = finder.index_of[pc]
    while fn.blocks[b].ops[-1] is not fail:
        term = fn.blocks[b].ops[-1]
        path.append(term.edges()[0][1])
        b = finder.info.succ[b][0]
    status = fail["status"]
    for copies in reversed(path):
        for src, dst in copies:
            if (dst.is_ref, dst.ordinal) == (status.is_ref, status.ordinal):
                status = src
                break
    return status


def _results(held, wide, lits, ref_live, int_live) -> tuple[tuple[Reg, object], ...]:
    """Every register the region leaves holding something other than what it held on
    entry, and that is live after: (register, value id | input register | Lit)."""
    out = []
    done: set = set()
    for slot, v in sorted(held.items(), key=lambda kv: kv[0]):
        if slot in done:
            continue
        kind, o = slot
        if isinstance(v, Reg):
            if (v.is_ref, v.ordinal) == (kind == "r", o):
                continue  # (still its own value)
            is_wide = v.is_wide
        else:
            is_wide = bool(wide.get(v))
        if kind == "r":
            reg = Reg(o | 0x8000, None)
        else:
            if is_wide and held.get(("i", o + 1)) is not v:
                continue  # (the high half of a pair whose low slot is elsewhere)
            reg = Reg(o, "i64" if is_wide else "i32")
        slots = _slots(reg)
        done.update(slots)
        live = o in ref_live if kind == "r" else any(s in int_live for s in slots)
        if live:
            out.append((reg, lits.get(v, v) if isinstance(v, int) else v))
    return tuple(out)


def _back_edge(finder: _Finder, region: Region, grown, between=None):
    """(block, terminator, loop, copies) of the back edge the region's block ends in,
    where only integer ops that cannot fail (`_between`, or `between`) lie between the
    region's last op and that terminator: a plain branch to the loop's header, or a
    conditional one with one edge to it (IREE puts a loop's induction ops there: add, cmp,
    cond_br); or None."""
    fn, info = finder.fn, finder.info
    between = between or _between
    b, last, _ = grown[-1]
    if last.spec.is_terminator:
        return None
    ops = fn.blocks[b].ops
    term = ops[-1]
    if not all(between(op) for op in ops[ops.index(last) + 1 : -1]):
        return None
    if term.spec.emit not in ("branch", "cond_br"):
        return None
    edges = [(finder.index_of.get(pc), pairs) for pc, pairs in term.edges()]
    back = [(h, pairs) for h, pairs in edges if h in info.loops and b in info.loops[h].body]
    if len(back) != 1 or len({h for h, _ in edges}) != len(edges):
        return None
    h, pairs = back[0]
    return b, term, info.loops[h], pairs


def _between(op: Op) -> bool:
    """An op a deferred loop step may pass: an integer op that cannot fail or an integer
    constant, touching no ref register (nothing anyone can see happens there)."""
    if op.spec.is_terminator or not (op.spec.cannot_fail or op.spec.integer_const):
        return False
    return not any(r.is_ref for r in (*op.reads(), *op.writes()))


def _carried(finder: _Finder, region: Region, grown) -> tuple[tuple[Reg, Reg], ...]:
    """(output, input) pairs the loop's back edge carries, where the region ends before
    that edge (see the module docstring and `_back_edge`)."""
    fn = finder.fn
    found = _back_edge(finder, region, grown)
    if found is None:
        return ()
    _b, _term, loop, pairs = found
    outs = {(r.is_ref, r.ordinal): r for r, _ in region.outputs}
    ins = {(r.is_ref, r.ordinal) for r in region.inputs}
    mine = set(region.blocks)
    others = [op for x in loop.body if x not in mine for op in fn.blocks[x].ops]
    others += [op for op in fn.blocks[region.blocks[0]].ops if op.pc < region.ops[0].pc]
    written = {(r.is_ref, r.ordinal) for op in others for r in op.writes()}
    out = []
    for src, dst in pairs:
        key_s, key_d = (src.is_ref, src.ordinal), (dst.is_ref, dst.ordinal)
        if key_s in outs and key_d in ins and key_d not in written:
            out.append((outs[key_s], dst))
    return tuple(out)


def _live_in(finder: _Finder, s: int) -> frozenset[int]:
    """Ref registers live on entry to block `s`."""
    first = finder.fn.blocks[s].ops[0]
    below = finder.live.live_out(s) if first.spec.is_terminator else finder.live.after(first)
    return frozenset((set(below) - {r.ordinal for r in first.writes() if r.is_ref})
                     | {r.ordinal for r in first.reads() if r.is_ref})


def _loop_exits(finder: _Finder, region: Region, grown) -> tuple[tuple[int, tuple[Reg, ...]], ...]:
    """Where the loop mode holds (docs/design/host-path.md §5.4), the blocks the loop
    leaves to and the registers to read its results from there; else ().

    The call in the loop may then return *tokens* for its outputs and run its steps
    later, two buffers per carried one taking turns, because:
    - every output of the region is a ref the back edge carries into an input, and the
      call assigns nothing else;
    - every other op of the loop is an integer op that cannot fail or a branch (nothing
      anyone can see happens between two calls, and none of them raises), and none of
      them reads a register that may hold a token (the outputs' and the carried inputs'
      registers) but the back edge's own carry copies; no edge leaving the loop copies
      one either;
    - every iteration that reaches the back edge passes the call once (its blocks are a
      chain from its first, each reached from the one before alone), so a register of
      those holds the last call's token or the one before it (the inputs', on an exit
      before the back edge's copies), and a buffer of the call before the last is intact;
    - each block the loop leaves to is reached from the loop alone, so `results(...)` at
      its start runs on every way out; the registers it reads are those that may hold a
      token and are live there (one at least: it runs the deferred steps; registers that
      die are released by the generated code, their tokens with them)."""
    fn, info = finder.fn, finder.info
    found = _back_edge(finder, region, grown)
    if found is None:
        return ()
    b, term, loop, pairs = found
    outputs = {(r.is_ref, r.ordinal) for r, _ in region.outputs}
    carried_out = {(a.is_ref, a.ordinal) for a, _ in region.carried}
    if not outputs or any(not r.is_ref for r, _ in region.outputs) or carried_out != outputs:
        return ()
    if {(r.is_ref, r.ordinal) for r, _ in region.results} != outputs:
        return ()
    dsts = [d for _, d in region.carried]
    if len({d.ordinal for d in dsts}) != len(dsts) or not all(d.is_ref for d in dsts):
        return ()
    tokens = outputs | {(True, d.ordinal) for d in dsts}
    carry = {((a.is_ref, a.ordinal), (d.is_ref, d.ordinal)) for a, d in region.carried}
    pcs = region.pcs
    crossed = {op.pc for op in region.ops if op.spec.is_terminator}
    exits: dict[int, set] = {}  # block left to -> refs a token is copied into on the way
    for x in sorted(loop.body):
        for op in fn.blocks[x].ops:
            if op.pc in pcs and op.pc not in crossed:
                continue
            if op.spec.is_terminator:
                if op.pc in crossed:
                    continue  # (the region's own: its other arms fail inside the call)
                if op.spec.emit not in ("branch", "cond_br", "br_table"):
                    return ()
                cond = [r for r in op.reads() if r.bank is not None]
                if any((r.is_ref, r.ordinal) in tokens for r in cond):
                    return ()
                for pc, copies in op.edges():
                    t = finder.index_of.get(pc)
                    leaving = t not in loop.body
                    for src, dst in copies:
                        k_s, k_d = (src.is_ref, src.ordinal), (dst.is_ref, dst.ordinal)
                        if k_s in tokens:
                            if leaving:  # (a token copied out: read from there too)
                                exits.setdefault(t, set()).add(dst.ordinal)
                            elif not (op is term and t == loop.header and (k_s, k_d) in carry):
                                return ()
                        elif leaving and k_d in outputs:
                            return ()  # (the last token must reach the exit's results)
                    if leaving:
                        exits.setdefault(t, set())
                continue
            if not _between(op):
                return ()
    # the call once per iteration: the region's blocks a chain from its first
    for x in region.blocks[1:]:
        if len(info.preds.get(x, ())) != 1:
            return ()
    if region.blocks[0] != loop.header and not cfg.dominates(info.idom, region.blocks[0], b):
        return ()
    out = []
    for s, copied in exits.items():
        if any(p not in loop.body for p in info.preds.get(s, ())):
            return ()
        held = ({o for _, o in tokens} | copied) & _live_in(finder, s)
        if not held:
            return ()  # (nothing reads the results there: the steps would never run)
        if len(held) > MAX_POSITIONAL:
            return ()  # (the exit's `results(...)` passes each register: 10 at most)
        out.append((s, tuple(Reg(o | 0x8000, None) for o in sorted(held))))
    return tuple(out)


def _key(r: Reg) -> tuple[bool, int]:
    return (r.is_ref, r.ordinal)


def _computed(op: Op) -> bool:
    """An op a loop call computes between two calls of its region: an integer op that
    cannot fail (a numeric op or a select) or a float compare (isa.FLOAT_COMPARES: a
    convergence test), touching no ref register."""
    if op.spec.is_terminator or op.spec.emit not in ("numeric", "select"):
        return False
    if not (op.spec.cannot_fail or op.spec.float_compare):
        return False
    return not any(r.is_ref for r in (*op.reads(), *op.writes()))


def _host_loop(finder: _Finder, region: Region, grown, ref_live, int_live) -> HostLoop | None:
    """The loop call of a loop whose body is `region` and integer ops (HostLoop), or None.

    It holds where: the region's first op is in the loop's head and the loop's blocks are
    the region's; every other op of the loop is an integer op that cannot fail (`_computed`),
    before the region in the head or after it in the block of the back edge; the back edge
    is a conditional branch on an integer register; every register the region writes is
    one of its results (a value it returns, none a literal). Each iteration then runs the
    call once and the ops in the order the loop runs them, and nothing else happens in the
    loop: the runtime may run the iterations one after another (exec/host_loops.py) and hand
    the state of the last call back to the generated code, which goes on from there."""
    fn = finder.fn
    found = _back_edge(finder, region, grown, _computed)
    if found is None:
        return None
    b, term, loop, pairs = found
    if term.spec.emit != "cond_br" or set(loop.body) != set(region.blocks):
        return None
    head = region.blocks[0]
    if head != loop.header or not region.results:
        return None
    if any(isinstance(v, Lit) for _, v in region.results):
        return None
    pcs = region.pcs
    first, last = region.ops[0].pc, region.ops[-1].pc
    before, after = [], []
    for x in loop.body:
        for op in fn.blocks[x].ops:
            if op.pc in pcs or op is term:
                continue
            if x == head and op.pc < first:
                before.append(op)
            elif x == b and op.pc > last:
                after.append(op)
            else:
                return None
    if not all(_computed(op) for op in (*before, *after)):
        return None
    cond = term["condition"]
    if not isinstance(cond, Reg) or cond.is_ref:
        return None
    edges = term.edges()
    back = [k for k, (pc, _) in enumerate(edges) if finder.index_of.get(pc) == loop.header]
    if len(edges) != 2 or back not in ([0], [1]):
        return None
    copies = tuple(edges[back[0]][1])
    # From the call on: what an iteration reads before it writes it, and what it writes.
    results = {_key(r) for r, _ in region.results}
    entry: dict = {_key(r): r for r in region.inputs}
    written = set(results)
    regs: dict = {}

    def reads(rs) -> None:
        for r in rs:
            if r.bank is not None or r.is_ref:
                regs.setdefault(_key(r), r)
                if _key(r) not in written:
                    entry.setdefault(_key(r), r)

    for op in after:
        reads(op.reads())
        written.update(_key(r) for r in op.writes())
        regs.update((_key(r), r) for r in op.writes())
    reads([cond])
    reads([src for src, _ in copies])
    written.update(_key(d) for _, d in copies)
    regs.update((_key(d), d) for _, d in copies)
    for op in before:
        reads(op.reads())
        written.update(_key(r) for r in op.writes())
        regs.update((_key(r), r) for r in op.writes())
    reads(region.inputs)

    def live(k) -> bool:
        return k[1] in ref_live if k[0] else ("i", k[1]) in int_live

    kept = [regs[k] for k in sorted(written - results) if live(k)]
    extra = [r for k, r in entry.items() if k not in {_key(i) for i in region.inputs}]
    # (the kept registers are arguments too: their values at the call, for a loop call
    # that runs one iteration only)
    for r in kept:
        if _key(r) not in entry:
            entry[_key(r)] = r
            extra.append(r)
    if len(region.inputs) + len(extra) > MAX_POSITIONAL * 3:  # (a call one can read)
        return None
    return HostLoop(
        before=tuple(before), after=tuple(after), test=cond, negate=back[0] == 1,
        copies=copies, entry=tuple(extra), kept=tuple(kept),
    )


def continuing(fn: Function, info, b: int) -> int:
    """The successor of block `b` a region goes on into: the one that does not only fail."""
    return next(s for s in info.succ[b] if _fail_of(fn, s, info.succ) is None)


def find(module, fn: Function, live: RefLiveness, info=None, locate=None) -> list[Region]:
    """The function's queue regions in pc order. `info`: cfg.analyze(fn) (made when not
    given); `locate`: pc -> source location text, for the fail exits."""
    info = info if info is not None else cfg.analyze(fn)
    finder = _Finder(module, fn, live, info, locate)
    claimed: set[int] = set()
    out = []
    for b in sorted(info.rpo, key=lambda x: fn.blocks[x].pc):
        for i, op in enumerate(fn.blocks[b].ops):
            if op.pc in claimed or _step(module, op) is None:
                continue
            grown = finder.grow(b, i)
            claimed |= {o.pc for _, o, _ in grown}
            out.append(_region(finder, grown))
    out.sort(key=lambda r: r.ops[0].pc)
    return out


__all__ = [
    "continuing", "Compute", "FailCheck", "FailExit", "HostLoop", "Lit", "Region", "RegionStep", "find",
]

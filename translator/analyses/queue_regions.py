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

Loops: where the region ends before its block's back edge to a loop header, what the
loop carries from one call to the next, whether its call may defer its steps (loop
exits) and whether the whole loop is one call (HostLoop): translator/analyses/queue_loops.py.

    find(module, fn, live, info=None, locate=None) -> [Region, ...]   (in pc order)
"""

from __future__ import annotations

from runtime_support.exec import steps
from translator.analyses import cfg, queue_loops
from translator.analyses.liveness import RefLiveness
from translator.analyses.calls import callee, typed
from translator.analyses.constants import block_constants, movable, update_constants
from translator.analyses.queue_region_records import (
    Compute,
    FailCheck,
    FailExit,
    Lit,
    Region,
    RegionStep,
    Value,
)
from translator.ir import Function, Op, Reg


# Steps whose results are plain integers (a view's dimension, a value read back from a
# buffer): the region goes on through integer ops that read them, which become its
# Compute steps after the step, so queue work that follows (a readback's value written
# into the next buffer, an index computed from it) stays in the same program.
_PLAIN = (steps.ViewDim, steps.Read)
_PLAIN_NAMES = tuple(k.__name__ for k in _PLAIN)


def _slots(r: Reg) -> tuple[tuple[str, int], ...]:
    """A register's slots: a ref one, an i32 one, an i64 (or a list/remap register of
    unknown width: reads of both are kept) two."""
    if r.is_ref:
        return (("r", r.ordinal),)
    if r.is_wide:
        return (("i", r.ordinal), ("i", r.ordinal + 1))
    return (("i", r.ordinal),)


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
    region.carried = queue_loops.carried(finder, region, grown)
    if region.carried:
        region.loop_exits = queue_loops.loop_exits(finder, region, grown)
    if not region.loop_exits and region.unsupported is None:
        region.loop = queue_loops.host_loop(finder, region, grown, ref_live, int_live)
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


__all__ = ["continuing", "find"]

"""One VM function -> a statement tree (`stmt.py`).

Registers become locals named after them (`i4`, `r2`; an i64/f64 pair `i4:5` is the one
local `i4`). Control flow is structured into `While`/`If` for reducible CFGs
(`_Structurer`); anything else falls back to a block-state loop (`_dispatch_loop`).
Every op is lowered by `ops.OpRenderer`.

Nesting follows the program's structure, not its length: a conditional whose arms never
meet again emits its smaller arm as an early exit (`if c: ...; raise`) and carries on at
the same level, so a thousand fence-wait checks stay at one level.
"""

from __future__ import annotations

from dataclasses import dataclass

from translator.cconv import CConv
from translator.analyses import cfg
from translator.analyses.layout import parameter_names
from translator.analyses.liveness import RefLiveness
from translator.analyses import queue_loops, queue_regions
from translator.codegen.hal_enums import const_notes
from translator.codegen.ops import Edge, OpRenderer, Terminator
from translator.analyses.regkinds import HIGH, RegisterKinds
from translator.codegen.stmt import (
    Assign,
    Break,
    Comment,
    Continue,
    If,
    Release,
    Stmt,
    While,
)
from translator.codegen.statement_forms import STATEMENTS

# Python refuses more than 100 nested blocks; keep a margin for the function frame.
MAX_DEPTH = 90
# An early-exit arm may repeat blocks it shares with other paths (a common `vm.fail`
# block): at most this many ops of them per arm.
MAX_SHARED_OPS = 24
MAX_ARM_BLOCKS = 512


class Unstructured(Exception):
    """The structurer cannot express this CFG; use the dispatch loop."""


def _overwritten_by(op) -> frozenset[int]:
    """Ref registers `op` assigns without reading them first."""
    read = {r.ordinal for r in op.reads() if r.is_ref}
    return frozenset(r.ordinal for r in op.writes() if r.is_ref and r.ordinal not in read)


@dataclass
class FunctionTree:
    params: list[str]
    body: list[Stmt]
    structured: bool


class FunctionEmitter:
    def __init__(self, renderer: OpRenderer, fn, cc: CConv, ref_count: int, info=None) -> None:
        self.r = renderer
        self.fn = fn
        self.cc = cc
        self.ref_count = ref_count
        self.info = info if info is not None else cfg.analyze(fn)
        self.kinds = RegisterKinds(renderer.module, fn, cc, self.info, renderer.cconvs)
        self.index_of = {b.pc: b.index for b in fn.blocks}
        self._terms: dict[int, Terminator] = {}
        self.notes = const_notes(renderer.module, fn)
        self.live = RefLiveness(fn, self.info)
        # Queue programs: each region's call where its first op was; its other ops lower
        # to nothing, and a terminator it crosses goes straight on (its fail arm is the
        # program's check).
        self.sites: dict[int, object] = {}  # first op's pc -> ProgramSite
        self.site_terms: dict[int, tuple[list[Stmt], int]] = {}  # block -> (pre, successor)
        self.in_site: set[int] = set()  # the regions' other ops
        self.site_exits: dict[int, list[Stmt]] = {}  # block -> a loop program's results read there
        if renderer.programs is not None:
            self._find_sites()

    def _find_sites(self) -> None:
        fn, r = self.fn, self.r

        def locate(pc: int):
            return r.locations(fn.ordinal, pc)

        block_of = {op.pc: b.index for b in fn.blocks for op in b.ops}
        for region in queue_regions.find(r.module, fn, self.live, self.info, locate):
            first = region.ops[0]
            if region.loop is not None:
                region.loop = self._loop_without_high_halves(region.loop, first)
            site = r.programs.site(fn.name, region, r.reg, r.provenance(fn, first))
            if site is None:
                continue
            self.sites[first.pc] = site
            for b, stmts in (site.exits or {}).items():
                self.site_exits.setdefault(b, []).extend(stmts)
            self.in_site |= {op.pc for op in region.ops[1:]}
            for op in region.ops:
                if op.spec.is_terminator:
                    b = block_of[op.pc]
                    pre = site.stmts if op is first else []
                    self.site_terms[b] = (pre, queue_regions.continuing(fn, self.info, b))

    def _loop_without_high_halves(self, loop, first):
        """A loop call's registers without the high halves of 64-bit values (no locals:
        queue_loops.without_high_halves), by the slots' kinds at the region's first op
        and at the back edge's branch."""
        def high(op) -> set:
            return {k for k, kind in self.kinds.before(op).items() if kind == HIGH}

        branch = next(
            (b.ops[-1] for b in self.fn.blocks
             if any(tuple(pairs) == loop.copies for _, pairs in b.ops[-1].edges())),
            None,
        )
        return queue_loops.without_high_halves(
            loop, high(first), high(branch) if branch is not None else set()
        )

    # -- pieces shared by both strategies --------------------------------------------
    def block_ops(self, index: int) -> list[Stmt]:
        ops = self.fn.blocks[index].ops
        out: list[Stmt] = list(self.site_exits.get(index, ()))
        for op, nxt in zip(ops[:-1], ops[1:]):
            if op.pc in self.in_site:
                continue
            site = self.sites.get(op.pc)
            if site is not None:
                out += site.stmts
                continue
            overwritten = (
                _overwritten_by(nxt)
                if nxt.pc not in self.sites and nxt.pc not in self.in_site
                else frozenset()
            )
            stmts = self.r.lower_op(self.fn, op, overwritten, self.live.dies_at(op))
            note = self.notes.get(op.pc)
            if note and stmts and isinstance(stmts[0], Assign):
                stmts[0].note = note
            out += stmts
        return out

    def terminator(self, index: int) -> Terminator:
        term = self._terms.get(index)
        if term is None:
            op = self.fn.blocks[index].ops[-1]
            crossed = self.site_terms.get(index)
            if crossed is not None:  # (a queue program's: it goes on, nothing to copy)
                pre, successor = crossed
                term = Terminator(self.r.provenance(self.fn, op), list(pre), None, [Edge(None, successor, ())])
            else:
                term = self.r.lower_terminator(self.fn, op, self.index_of)
            self._terms[index] = term
        return term

    def remap(self, block: int, pairs) -> list[Stmt]:
        op = self.fn.blocks[block].ops[-1]
        return self.r.lower_remap(pairs, self.kinds.before(op), self.terminator(block).prov)

    def params(self) -> list[str]:
        return parameter_names(self.cc)

    def block_sizes(self) -> list[int]:
        return [len(b.ops) for b in self.fn.blocks]

    def ref_init(self) -> list[Stmt]:
        """Ref registers that are not arguments start out null (nullness is observable)."""
        args = {p for p in self.params() if p.startswith("r")}
        regs = [f"r{i}" for i in range(self.ref_count) if f"r{i}" not in args]
        return [Release(None, regs)] if regs else []

    def int_init(self) -> list[Stmt]:
        """Integer registers some path reads before writing start at 0, as the VM's
        zeroed register file does. Compiled programs never do this; a hostile or
        corrupted one must not end in a Python NameError. (Definite assignment over the
        CFG: a register is set on entry to a block if every predecessor sets it.)"""
        blocks = self.fn.blocks
        name = lambda r: f"i{r.ordinal}"  # noqa: E731  (an i64 pair lives in its low local)
        entry = {p for p in self.params() if p.startswith("i")}
        written, edge_writes = [], []
        for b in blocks:
            written.append({name(r) for op in b.ops for r in op.writes() if not r.is_ref})
            term = b.ops[-1]
            edge_writes.append(
                [(self.index_of.get(pc), {name(d) for _, d in pairs if not d.is_ref}) for pc, pairs in term.edges()]
            )
        everything = set(entry).union(*written).union(
            *(w for edges in edge_writes for _, w in edges)
        )
        into = [set(everything) for _ in blocks]
        into[0] = set(entry)
        changed = True
        while changed:
            changed = False
            incoming: dict[int, list[set]] = {}
            for i, edges in enumerate(edge_writes):
                out = into[i] | written[i]
                for target, w in edges:
                    if target is not None:
                        incoming.setdefault(target, []).append(out | w)
            for i in range(1, len(blocks)):
                new = set.intersection(*incoming[i]) if incoming.get(i) else set(everything)
                if new != into[i]:
                    into[i], changed = new, True
        need: set[str] = set()
        for i, b in enumerate(blocks):
            defined = set(into[i])
            for op in b.ops:
                kinds = self.kinds.before(op)  # the high half of an i64 pair has no local
                need.update(
                    name(r) for r in op.reads()
                    if not r.is_ref and name(r) not in defined and kinds.get(r.ordinal) != HIGH
                )
                defined.update(name(r) for r in op.writes() if not r.is_ref)
        return [Assign(None, (reg,), "0") for reg in sorted(need, key=lambda n: int(n[1:]))]

    def generate(self) -> FunctionTree:
        body = self.ref_init() + self.int_init()
        structured = True
        if len(self.info.succ) == 1:
            body += self.block_ops(0)
            term = self.terminator(0)
            body += term.pre + term.exit
        else:
            try:
                if not self.info.reducible:
                    raise Unstructured("irreducible control flow")
                body += _Structurer(self).run()
            except Unstructured:
                structured = False
                body += self._dispatch_loop()
        return FunctionTree(self.params(), body, structured)

    # -- fallback: block-state loop --------------------------------------------------
    def _dispatch_loop(self) -> list[Stmt]:
        """`while True:` with one flat `if block == k:` per block, each ending in a jump."""
        arms: list[Stmt] = []
        for i in self.info.rpo:
            arm = self.block_ops(i)
            term = self.terminator(i)
            arm += term.pre
            if term.exit is not None:
                arm += term.exit
            else:
                arm += self._dispatch_edges(i, term.edges)
            arms.append(If(None, f"block == {i}", arm))
        return [
            Comment(None, "Irreducible control flow: blocks dispatched by number."),
            Assign(None, ("block",), "0"),
            While(None, arms),
        ]

    def _dispatch_edges(self, i: int, edges) -> list[Stmt]:
        def goto(edge) -> list[Stmt]:
            return self.remap(i, edge.pairs) + [Assign(None, ("block",), str(edge.target)), Continue(None)]

        *tests, last = edges
        out: list[Stmt] = []
        for edge in tests:
            out.append(If(None, edge.test, goto(edge)))
        return out + goto(last)


@dataclass
class _LoopCtx:
    header: int
    exit: int | None


class _Structurer:
    """Builds a reducible CFG as nested `While`/`If` nodes.

    Jumps become: fall-through to the enclosing construct's follow block, `continue`
    (to the innermost loop header), `break` (to its exit), or inline code for a block
    region whose code never falls through (an early exit).
    """

    def __init__(self, emitter: FunctionEmitter) -> None:
        self.e = emitter
        self.info = emitter.info
        self.loops: list[_LoopCtx] = []
        self.emitted = 0
        self.budget = 4 * len(self.info.succ) + 16
        self.depth = 0
        self.pdoms = {None: cfg.region_postdominators(self.info, set(self.info.rpo), None)}
        self.sizes = emitter.block_sizes()

    def run(self) -> list[Stmt]:
        out: list[Stmt] = []
        self.chain(out, 0, stop=None)
        return out

    def ipdom(self, b: int) -> int | None:
        key = self.loops[-1].header if self.loops else None
        if key not in self.pdoms:
            body = self.info.loops[key].body
            self.pdoms[key] = cfg.region_postdominators(self.info, body, key)
        p = self.pdoms[key].get(b, cfg.EXIT)
        return None if p == cfg.EXIT else p

    def loop_exit(self, header: int) -> int | None:
        loop = self.info.loops[header]
        main = [
            x for x in loop.exits
            if not cfg.private_region(self.info, x)
            and cfg.terminal_region_size(self.info, x, self.sizes, MAX_SHARED_OPS) is None
        ]
        if len(main) > 1:
            raise Unstructured(f"loop at block {header} has several exits")
        return main[0] if main else None

    def nested(self) -> list[Stmt]:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise Unstructured("nesting deeper than Python allows")
        return []

    def jump(self, out: list[Stmt], target: int, stop: int | None) -> int | None:
        """Resolves a jump: emits continue/break or returns the block to emit next."""
        if target == stop:
            return None
        if self.loops:
            if target == self.loops[-1].header:
                out.append(Continue(None))
                return None
            if target == self.loops[-1].exit:
                out.append(Break(None))
                return None
            for outer in self.loops[:-1]:
                if target in (outer.header, outer.exit):
                    raise Unstructured("jump out of several loops")
        return target

    def chain(self, out: list[Stmt], b: int | None, stop: int | None) -> None:
        while b is not None:
            b = self.jump(out, b, stop)
            if b is None:
                return
            self.emitted += 1
            if self.emitted > self.budget:
                raise Unstructured("too much duplication")
            if b in self.info.loops and not (self.loops and self.loops[-1].header == b):
                exit_ = self.loop_exit(b)
                body = self.nested()
                self.loops.append(_LoopCtx(b, exit_))
                nxt = self.block(body, b, stop=None)
                self.chain(body, nxt, stop=None)
                self.loops.pop()
                self.depth -= 1
                out.append(While(None, body))
                b = exit_
                continue
            b = self.block(out, b, stop)

    def early_exit_cost(self, start: int) -> int | None:
        """Ops that emitting `start`'s region inline would repeat, or None when too big.

        The region is what `chain(start, stop=None)` emits: every block reachable from
        `start` up to the innermost loop's header and exit (continue/break). Blocks that
        `start` does not dominate may be emitted elsewhere too; their ops are the cost.
        """
        if self.loops and start in (self.loops[-1].header, self.loops[-1].exit):
            return 0
        cut = {self.loops[-1].header, self.loops[-1].exit} if self.loops else set()
        outer = {x for lp in self.loops[:-1] for x in (lp.header, lp.exit)}
        # Only a block entered by this edge alone owns what it dominates.
        owner = len(self.info.preds.get(start, ())) == 1
        seen, work, cost = {start}, [start], 0
        while work:
            x = work.pop()
            if x in outer:
                return None
            if not (owner and cfg.dominates(self.info.idom, start, x)):
                cost += self.sizes[x]
                if cost > MAX_SHARED_OPS:
                    return None
            for s in self.info.succ[x]:
                if s not in seen and s not in cut:
                    seen.add(s)
                    if len(seen) > MAX_ARM_BLOCKS:
                        return None
                    work.append(s)
        return cost

    def arm(self, b: int, pairs, target: int, stop: int | None) -> list[Stmt]:
        body = self.nested()
        body += self.e.remap(b, pairs)
        self.chain(body, target, stop)
        self.depth -= 1
        return body

    def block(self, out: list[Stmt], b: int, stop: int | None) -> int | None:
        """Emits block b; returns the block control falls into next (or None)."""
        e = self.e
        out += e.block_ops(b)
        term = e.terminator(b)
        out += term.pre
        if term.exit is not None:  # return / fail
            out += term.exit
            return None
        edges = term.edges
        if len(edges) == 1:
            out += e.remap(b, edges[0].pairs)
            return edges[0].target
        follow = self.ipdom(b)
        if follow is None and len(edges) == 2 and edges[0].target != edges[1].target:
            # The arms never meet again: emit the cheaper arm that never falls through
            # as `if: <arm>` and carry on with the other one at this level.
            t, f = edges
            costs = [(self.early_exit_cost(x.target), k) for k, x in enumerate(edges)]
            costs = [(c, k) for c, k in costs if c is not None]
            if costs:
                _, k = min(costs)
                dead, live = (t, f) if k == 0 else (f, t)
                test = t.test if k == 0 else STATEMENTS["Not"].format(test=t.test)
                out.append(If(term.prov, test, self.arm(b, dead.pairs, dead.target, None)))
                out += e.remap(b, live.pairs)
                return live.target
        if follow is not None and self.loops and follow == self.loops[-1].header:
            follow = None
        arm_stop = follow if follow is not None else stop
        arms = [(edge.test, self.arm(b, edge.pairs, edge.target, arm_stop)) for edge in edges]
        # if / elif ... / else: the last edge is the `else`.
        node_body = arms[-1][1]
        for k in range(len(arms) - 2, -1, -1):
            node = If(term.prov if k == 0 else None, arms[k][0], arms[k][1], node_body)
            node_body = [node]
        out += node_body
        return follow

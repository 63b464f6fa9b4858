"""One VM function -> the lines of one Python function.

Registers become locals named after them (`i4`, `r2`; an i64/f64 pair `i4:5` is the one
local `i4`). Control flow is structured into `while`/`if` for reducible CFGs
(`_Structurer`); anything else falls back to a block-state loop (`_emit_dispatch_loop`).
Every op is rendered from its mnemonic by `ops.render_op`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from translator.cconv import CConv
from translator.codegen import cfg
from translator.codegen.ops import OpRenderer
from translator.codegen.regtypes import RegisterKinds
from translator.ir import Function


class Unstructured(Exception):
    """The structurer cannot express this CFG; use the dispatch loop."""


@dataclass
class FunctionCode:
    name: str
    params: list[str]
    docstring: str | None
    body: list[str]  # lines, indented relative to the function body
    structured: bool
    locals_: list[str] = field(default_factory=list)


class _Writer:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 0

    def line(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    def extend(self, lines: list[str]) -> None:
        for text in lines:
            self.line(text)


def parameter_names(cc: CConv) -> list[str]:
    names, n, r = [], 0, 0
    for item in cc.arguments:
        if item == "r":
            names.append(f"r{r}")
            r += 1
        elif item in ("I", "F"):
            n += n & 1
            names.append(f"i{n}")
            n += 2
        else:
            names.append(f"i{n}")
            n += 1
    return names


def _overwritten_by(op) -> frozenset[int]:
    """Ref registers `op` assigns without reading them first."""
    read = {r.ordinal for r in op.reads() if r.is_ref}
    return frozenset(r.ordinal for r in op.writes() if r.is_ref and r.ordinal not in read)


class FunctionEmitter:
    def __init__(self, renderer: OpRenderer, fn: Function, cc: CConv, ref_count: int) -> None:
        self.r = renderer
        self.fn = fn
        self.cc = cc
        self.ref_count = ref_count
        self.info = cfg.analyze(fn)
        self.kinds = RegisterKinds(renderer.module, fn, cc, self.info, renderer.cconvs)

    # -- pieces shared by both strategies --------------------------------------------
    def block_ops(self, w: _Writer, index: int) -> None:
        block = self.fn.blocks[index]
        body = block.ops[:-1]
        for op, nxt in zip(body, block.ops[1:]):
            w.extend(self.r.render_op(self.fn, op, self.kinds.before(op), _overwritten_by(nxt)))

    def remap(self, w: _Writer, block: int, pairs) -> None:
        term = self.fn.blocks[block].ops[-1]
        w.extend(self.r.render_remap(pairs, self.kinds.before(term)))

    def params(self) -> list[str]:
        return parameter_names(self.cc)

    def ref_init(self) -> list[str]:
        """Ref registers that are not arguments start out null (nullness is observable)."""
        args = {p for p in self.params() if p.startswith("r")}
        regs = [f"r{i}" for i in range(self.ref_count) if f"r{i}" not in args]
        if not regs:
            return []
        return [" = ".join(regs) + " = None"]

    def generate(self) -> FunctionCode:
        w = _Writer()
        w.extend(self.ref_init())
        structured = True
        if len(self.fn.blocks) == 1:
            self.block_ops(w, 0)
            w.extend(self.r.render_terminator(self.fn, self.fn.blocks[0].ops[-1], self.kinds))
        else:
            try:
                if not self.info.reducible:
                    raise Unstructured("irreducible control flow")
                body = _Writer()
                _Structurer(self, body).run()
                w.lines += body.lines
            except Unstructured:
                structured = False
                body = _Writer()
                self._emit_dispatch_loop(body)
                w.lines += body.lines
        return FunctionCode(self.fn.name, self.params(), None, w.lines, structured)

    # -- fallback: block-state loop --------------------------------------------------
    def _emit_dispatch_loop(self, w: _Writer) -> None:
        w.line("# Irreducible control flow: blocks dispatched by number.")
        w.line("block = 0")
        w.line("while True:")
        w.depth += 1
        for i in self.info.rpo:
            w.line(f"{'if' if i == self.info.rpo[0] else 'elif'} block == {i}:")
            w.depth += 1
            self.block_ops(w, i)
            term = self.fn.blocks[i].ops[-1]
            for kind, payload in self.r.terminator_edges(self.fn, term, self.kinds):
                if kind == "line":
                    w.line(payload)
                elif kind == "indent":
                    w.depth += payload
                elif kind == "goto":
                    target, pairs = payload
                    self.remap(w, i, pairs)
                    w.line(f"block = {target}")
                    w.line("continue")
            w.depth -= 1
        w.depth -= 1


@dataclass
class _LoopCtx:
    header: int
    exit: int | None


class _Structurer:
    """Emits a reducible CFG as nested `while True:` / `if` blocks.

    Jumps become: fall-through to the enclosing construct's follow block, `continue`
    (to the innermost loop header), `break` (to its exit), or inline code for a block
    region that only this edge enters.
    """

    def __init__(self, emitter: FunctionEmitter, w: _Writer) -> None:
        self.e = emitter
        self.info = emitter.info
        self.w = w
        self.loops: list[_LoopCtx] = []
        self.emitted = 0
        self.budget = 4 * len(emitter.fn.blocks) + 16
        all_nodes = set(self.info.rpo)
        self.pdoms = {None: cfg.region_postdominators(self.info, all_nodes, None)}

    def run(self) -> None:
        self.chain(0, stop=None)

    def ipdom(self, b: int) -> int | None:
        key = self.loops[-1].header if self.loops else None
        if key not in self.pdoms:
            body = self.info.loops[key].body
            self.pdoms[key] = cfg.region_postdominators(self.info, body, key)
        p = self.pdoms[key].get(b, cfg.EXIT)
        return None if p == cfg.EXIT else p

    def loop_exit(self, header: int) -> int | None:
        loop = self.info.loops[header]
        main = [x for x in loop.exits if not cfg.private_region(self.info, x)]
        if len(main) > 1:
            raise Unstructured(f"loop at block {header} has several exits")
        return main[0] if main else None

    def is_dead_end(self, b: int) -> bool:
        """A block region only this edge enters, ending in return/fail without loops."""
        if b in self.info.loops or len(self.info.preds.get(b, ())) != 1:
            return False
        if self.loops and b in (self.loops[-1].header, self.loops[-1].exit):
            return False
        return cfg.private_region(self.info, b) and not any(
            h for h in self.info.loops if cfg.dominates(self.info.idom, b, h)
        )

    def jump(self, target: int, stop: int | None) -> int | None:
        """Resolves a jump: emits continue/break or returns the block to emit next."""
        if target == stop:
            return None
        if self.loops:
            if target == self.loops[-1].header:
                self.w.line("continue")
                return None
            if target == self.loops[-1].exit:
                self.w.line("break")
                return None
            for outer in self.loops[:-1]:
                if target in (outer.header, outer.exit):
                    raise Unstructured("jump out of several loops")
        return target

    def chain(self, b: int | None, stop: int | None) -> None:
        while b is not None:
            b = self.jump(b, stop)
            if b is None:
                return
            self.emitted += 1
            if self.emitted > self.budget:
                raise Unstructured("too much duplication")
            if b in self.info.loops and not (self.loops and self.loops[-1].header == b):
                exit_ = self.loop_exit(b)
                self.w.line("while True:")
                self.w.depth += 1
                self.loops.append(_LoopCtx(b, exit_))
                nxt = self.block(b, stop=None)
                self.chain(nxt, stop=None)
                self.loops.pop()
                self.w.depth -= 1
                b = exit_
                continue
            b = self.block(b, stop)

    def block(self, b: int, stop: int | None) -> int | None:
        """Emits block b; returns the block control falls into next (or None)."""
        e, w = self.e, self.w
        e.block_ops(w, b)
        term = e.fn.blocks[b].ops[-1]
        edges = list(e.r.terminator_edges(e.fn, term, e.kinds))
        while edges and edges[0][0] == "line" and edges[0][1].startswith("#"):
            w.line(edges.pop(0)[1])  # the terminator's source location
        gotos = [p for k, p in edges if k == "goto"]
        if not gotos:  # return / fail
            for kind, payload in edges:
                if kind == "line":
                    w.line(payload)
                elif kind == "indent":
                    w.depth += payload
            return None
        if len(gotos) == 1 and not any(k == "indent" for k, _ in edges):
            for kind, payload in edges:
                if kind == "line":
                    w.line(payload)
            target, pairs = gotos[0]
            e.remap(w, b, pairs)
            return target
        # A conditional: if/elif/else arms that meet again at the follow block.
        follow = self.ipdom(b)
        if follow is None and term.mnemonic == "cond_br" and len(gotos) == 2:
            # Early exit: when one arm is a private region that never comes back
            # (a failure path, a return), emit `if: <that arm>` and carry on unnested.
            (t_true, p_true), (t_false, p_false) = gotos
            cond = edges[0][1][3:-1]  # "if X:" -> X
            for dead, dead_pairs, live, live_pairs, test in (
                (t_true, p_true, t_false, p_false, cond),
                (t_false, p_false, t_true, p_true, f"not {cond}"),
            ):
                if dead != live and self.is_dead_end(dead):
                    w.line(f"if {test}:")
                    w.depth += 1
                    e.remap(w, b, dead_pairs)
                    self.chain(dead, stop)
                    w.depth -= 1
                    e.remap(w, b, live_pairs)
                    return live
        if follow is not None and self.loops and follow == self.loops[-1].header:
            follow = None
        arm_stop = follow if follow is not None else stop
        depth0 = w.depth
        for kind, payload in edges:
            if kind == "line":
                w.line(payload)
            elif kind == "indent":
                w.depth += payload
            else:
                target, pairs = payload
                e.remap(w, b, pairs)
                start = w.lines.__len__()
                self.chain(target, arm_stop)
                if len(w.lines) == start:
                    w.line("pass")
        w.depth = depth0
        return follow

"""VM ops -> statement-tree nodes (`stmt.py`).

Each op is lowered by the emitter its ISA row names (`emit` column: `_emit_<kind>` for an
op inside a block, `_end_<kind>` for a terminator), from the op's fields as `isa.OpSpec`
names them. Scalar
arithmetic calls the bit-exact helpers of `runtime_support.vm.numerics` (named after the
mnemonic: `add.i32` -> `add_i32`); buffer and list ops call `runtime_support.vm.buffer` /
`.list` helpers named the same way; ops whose semantics is one Python expression are
written inline, in the form `runtime_support.vm.numerics.INLINE` gives beside the function.
"""

from __future__ import annotations

import math

from dataclasses import dataclass

from translator.codegen.escape import comment_text, string_literal as lit
from translator.codegen.names import HELPER_MODULES, NameTable
from translator.analyses.regkinds import HIGH
from translator.codegen.stmt import (
    Assign,
    Call,
    Comment,
    If,
    Provenance,
    Raise,
    Release,
    Return,
    Stmt,
)
from translator.ir import IMPORT_BIT, Function, Op, Reg
from runtime_support.vm.numerics import INLINE as NUMERIC_INLINE


def helper_name(mnemonic: str) -> str:
    return mnemonic.replace(".", "_")


def _float_literal(value: float, bits: int, width: int) -> str:
    if math.isfinite(value):
        return repr(value)
    fn = "from_bits_f32" if width == 32 else "from_bits_f64"
    return f"{fn}(0x{bits:0{width // 4}X})"


@dataclass
class Edge:
    """One way out of a block: taken when `test` holds (None: otherwise / always)."""

    test: str | None
    target: int  # block index
    pairs: tuple  # remap (src, dst) register pairs


@dataclass
class Terminator:
    """A block's terminator, lowered: statements, then an exit or edges to blocks."""

    prov: Provenance
    pre: list[Stmt]  # statements before control leaves (a yieldable call)
    exit: list[Stmt] | None  # return / raise; None when the block branches
    edges: list[Edge]


class OpRenderer:
    # mnemonic -> inline form (runtime_support.vm.numerics.INLINE; a VMVX kernel's are
    # numerics_ftz.INLINE: generate's `numeric_inline`)
    numeric_inline = NUMERIC_INLINE

    """Lowers the ops of one module; collects which runtime helpers the module uses."""

    def __init__(self, module, names: NameTable, cconvs, numeric_ops: set[str], locations) -> None:
        self.module = module
        self.names = names
        self.cconvs = cconvs
        self.numeric_ops = numeric_ops
        self.locations = locations
        self.helpers: dict[str, set[str]] = {k: set() for k in HELPER_MODULES}
        self.helpers["context"] = set()
        # (slot, type ordinal) of ref-global loads that are plain reads
        # (translator/analyses/ref_globals.py); set by the caller for the whole module.
        self.unchecked_ref_loads: frozenset = frozenset()
        # Queue programs (codegen/queue_programs.py): a ProgramTable where queue regions
        # become programs, else None (--no-fuse: one import call per op).
        self.programs = None

    def use(self, module: str, name: str) -> str:
        self.helpers[module].add(name)
        return name

    # -- registers ----------------------------------------------------------------
    @staticmethod
    def reg(r: Reg) -> str:
        return f"{'r' if r.is_ref else 'i'}{r.ordinal}"

    def field_text(self, op: Op, name: str) -> str:
        v = op.values[name]
        if isinstance(v, Reg):
            return self.reg(v)
        return str(v)

    def reads(self, op: Op) -> frozenset[str]:
        return frozenset(self.reg(r) for r in op.reads())

    def moves_after(
        self,
        op: Op,
        prov: Provenance,
        overwritten: frozenset[int] = frozenset(),
        dead: frozenset[int] = frozenset(),
    ) -> list[Stmt]:
        """Release of ref operands read with the move bit (ownership moved away) or read
        for the last time (`dead`, from analyses/liveness.py).

        Registers in `overwritten` are assigned by the very next statement, which
        releases the old value just the same, so they need no separate release.
        """
        written = {w.ordinal for w in op.writes() if w.is_ref} | overwritten
        moved = []
        for f in op.spec.fields:
            if f.write:
                continue
            v = op.values[f.name]
            regs = [v] if f.kind == "register" else (v if f.kind == "list" and f.bank != "segments" else ())
            for r in regs:
                if (
                    isinstance(r, Reg)
                    and r.is_ref
                    and (r.move or r.ordinal in dead)
                    and r.ordinal not in written
                ):
                    name = self.reg(r)
                    if name not in moved:
                        moved.append(name)
        return [Release(prov, moved)] if moved else []

    # -- provenance -----------------------------------------------------------------
    def provenance(self, fn: Function, op: Op) -> Provenance:
        k = fn.ordinal
        callee = None
        if "callee_ordinal" in op.values:
            c = op["callee_ordinal"]
            callee = (
                self.module.imports[c & ~IMPORT_BIT].full_name
                if c & IMPORT_BIT
                else "@" + self.module.function_display_name(c)
            )
        return Provenance(
            fn.name, op.pc, op.mnemonic, self.locations(k, op.pc), self.locations.file_of(k, op.pc), callee
        )

    # -- ops ------------------------------------------------------------------------
    def lower_op(
        self, fn: Function, op: Op, overwritten: frozenset[int] = frozenset(), dead: frozenset[int] = frozenset()
    ) -> list[Stmt]:
        prov = self.provenance(fn, op)
        return self._lower(fn, op, prov) + self.moves_after(op, prov, overwritten, dead)

    def _assign(self, op: Op, prov: Provenance, expr: str) -> list[Stmt]:
        return [Assign(prov, tuple(self.reg(r) for r in op.writes()), expr, self.reads(op))]

    def _call_stmt(self, op: Op, prov: Provenance, expr: str) -> list[Stmt]:
        return self._assign(op, prov, expr) if op.writes() else [Call(prov, expr, self.reads(op))]

    def _lower(self, fn: Function, op: Op, prov: Provenance) -> list[Stmt]:
        emit = getattr(self, f"_emit_{op.spec.emit}", None)
        if emit is None or op.spec.is_terminator:
            raise NotImplementedError(f"no Python rendering for vm.{op.mnemonic}")
        return emit(fn, op, prov)

    # One emitter per `emit` kind of the ISA table (isa.EMIT_KINDS).
    def _emit_const(self, fn: Function, op: Op, prov: Provenance) -> list[Stmt]:
        imm = op.get("value")
        if imm is None:  # const.<type>.zero
            bank = op.spec.fields[-1].bank
            return self._assign(op, prov, "0.0" if bank in ("f32", "f64") else "0")
        if imm.type in ("i32", "i64"):
            return self._assign(op, prov, str(imm.value))
        width = 32 if imm.type == "f32" else 64
        if not math.isfinite(imm.value):
            self.use("numerics", "from_bits_f32" if width == 32 else "from_bits_f64")
        return self._assign(op, prov, _float_literal(imm.value, imm.bits, width))

    def _emit_null(self, fn: Function, op: Op, prov: Provenance) -> list[Stmt]:
        return [Release(prov, [self.reg(r) for r in op.writes()])]

    def _emit_rodata(self, fn: Function, op: Op, prov: Provenance) -> list[Stmt]:
        return self._assign(op, prov, self.names.rodata(op["rodata"]))

    def _operands(self, op: Op) -> dict[str, str]:
        return {fs.name: self.field_text(op, fs.name) for fs in op.spec.fields if not fs.write}

    def _emit_numeric(self, fn: Function, op: Op, prov: Provenance) -> list[Stmt]:
        operands = self._operands(op)
        form = self.numeric_inline.get(op.mnemonic)
        if form is not None:
            return self._assign(op, prov, form.format(**operands))
        helper = self.use("numerics", helper_name(op.mnemonic))
        return self._assign(op, prov, f"{helper}({', '.join(operands.values())})")

    def _emit_select(self, fn: Function, op: Op, prov: Provenance) -> list[Stmt]:
        f = lambda name: self.field_text(op, name)  # noqa: E731
        return self._assign(op, prov, f"{f('true_value')} if {f('condition')} else {f('false_value')}")

    def _emit_switch(self, fn: Function, op: Op, prov: Provenance, wrap: str | None = None) -> list[Stmt]:
        regs = [self.reg(r) for r in op["values"]]
        if wrap is not None:
            regs = [f"{wrap}({r})" for r in regs]
        n = len(regs)
        default = self.field_text(op, "default_value")
        if n == 0:
            return self._assign(op, prov, default)
        tup = f"({regs[0]},)" if n == 1 else f"({', '.join(regs)})"
        idx = self.field_text(op, "index")
        return self._assign(op, prov, f"{tup}[{idx}] if 0 <= {idx} < {n} else {default}")

    def _emit_switch_i64(self, fn: Function, op: Op, prov: Provenance) -> list[Stmt]:
        # IREE 3.13 reads each listed i64 value as its low 32 bits, sign-extended
        # (observed with iree-run-module); the default keeps all 64 bits.
        return self._emit_switch(fn, op, prov, wrap=self.use("numerics", "wrap_i32"))

    def _emit_list_alloc(self, fn: Function, op: Op, prov: Provenance) -> list[Stmt]:
        t = self.module.types[op["element_type"]]
        inner = t[len("!vm.list<") : -1] if t.startswith("!vm.list<") else t
        if inner == "!vm.opaque":  # the element type of variant lists
            inner = "?"
        size = self.field_text(op, "initial_capacity")
        return self._assign(op, prov, f"{self.use('list', 'list_alloc')}({lit(inner)}, {size})")

    def _emit_list(self, fn: Function, op: Op, prov: Provenance) -> list[Stmt]:
        args = [
            self.field_text(op, fs.name) if fs.kind != "type" else lit(self.module.types[op[fs.name]])
            for fs in op.spec.fields
            if not fs.write
        ]
        return self._call_stmt(op, prov, f"{self.use('list', helper_name(op.mnemonic))}({', '.join(args)})")

    def _emit_buffer(self, fn: Function, op: Op, prov: Provenance) -> list[Stmt]:
        args = ", ".join(self._operands(op).values())
        return self._call_stmt(op, prov, f"{self.use('buffer', helper_name(op.mnemonic))}({args})")

    def _emit_assign(self, fn: Function, op: Op, prov: Provenance) -> list[Stmt]:
        return self._assign(op, prov, self.field_text(op, "source"))

    def _emit_cast(self, fn: Function, op: Op, prov: Provenance) -> list[Stmt]:
        t = self.module.types[op["result_type"]]
        operand = self.field_text(op, "operand")
        return self._assign(op, prov, f"{self.use('globals', 'cast_any_ref')}({operand}, {lit(t)})")

    def _emit_call(self, fn: Function, op: Op, prov: Provenance) -> list[Stmt]:
        return self._call(op, prov)

    def _emit_import_resolved(self, fn: Function, op: Op, prov: Provenance) -> list[Stmt]:
        name = self.names.import_name(op["import_ordinal"] & ~IMPORT_BIT)
        return self._assign(op, prov, f"int({name} is not None)")

    def _emit_discard(self, fn: Function, op: Op, prov: Provenance) -> list[Stmt]:
        regs = list(dict.fromkeys(self.reg(r) for r in op["refs"]))
        return [Release(prov, regs)] if regs else []

    def _emit_comment(self, fn: Function, op: Op, prov: Provenance) -> list[Stmt]:
        name = op["event_name"].decode("utf-8", errors="replace")
        return [Comment(prov, f"vm.{op.mnemonic} {name!r}")]

    def _emit_fail(self, fn: Function, op: Op, prov: Provenance) -> list[Stmt]:
        return [If(prov, self.field_text(op, "status"), [self._raise(fn, op, prov)])]

    def _raise(self, fn: Function, op: Op, prov: Provenance) -> Raise:
        msg = op["message"].decode("utf-8", errors="replace")
        self.use("context", "vm_fail")
        loc = None if prov.location is None else comment_text(prov.location)
        return Raise(prov, self.field_text(op, "status"), msg, fn.name, loc)

    def _emit_global(self, fn: Function, op: Op, prov: Provenance) -> list[Stmt]:
        """A value global lives at a byte offset of `rwdata`, a ref global at an ordinal of
        `refs`; the address is an immediate or (indirect) a register, as the fields say."""
        value = next(fs for fs in op.spec.fields if fs.name in ("value", "result"))
        address = op.spec.fields[0]
        where = self.field_text(op, address.name) if address.is_register else str(op[address.name])
        load = value.write
        if value.bank == "ref":
            t = lit(self.module.types[op["type_def"]])
            if load:
                if not address.is_register and (op[address.name], op["type_def"]) in self.unchecked_ref_loads:
                    # analyses/ref_globals.py proved every store to it has this type
                    stmts = self._assign(op, prov, f"refs.get({where})")
                    stmts[0].note = self.module.types[op["type_def"]]  # e.g. `# !hal.device`
                    return stmts
                return self._assign(op, prov, f"{self.use('globals', 'global_load_ref')}(refs, {where}, {t})")
            helper = self.use("globals", "global_store_ref")
            return [Call(prov, f"{helper}(refs, {where}, {t}, {self.reg(op['value'])})", self.reads(op))]
        if load:
            return self._assign(op, prov, f"{self.use('globals', f'global_load_{value.bank}')}(rwdata, {where})")
        helper = self.use("globals", f"global_store_{value.bank}")
        return [Call(prov, f"{helper}(rwdata, {where}, {self.reg(op['value'])})", self.reads(op))]

    # -- calls ------------------------------------------------------------------------
    def call_expr(self, op: Op) -> str:
        callee = op["callee_ordinal"]
        regs = [self.reg(r) for r in op["operands"]]
        if callee & IMPORT_BIT:
            imp = self.module.imports[callee & ~IMPORT_BIT]
            name = self.names.import_name(imp.ordinal)
            cc = imp.signature.cconv
            segments = op.get("segment_sizes")
            if segments is None:
                args = regs
            else:
                args, pos = [], 0
                for size, item in zip(segments, cc.arguments):
                    if isinstance(item, tuple):
                        elems = []
                        for _ in range(size):
                            group = regs[pos : pos + len(item)]
                            pos += len(item)
                            elems.append(group[0] if len(item) == 1 else "(" + ", ".join(group) + ")")
                        args.append("[" + ", ".join(elems) + "]")
                    else:
                        args.append(regs[pos])
                        pos += 1
            return f"{name}({', '.join(args)})"
        return f"{self.names.function(callee)}({', '.join(regs)})"

    def _call(self, op: Op, prov: Provenance) -> list[Stmt]:
        expr = self.call_expr(op)
        outs = tuple(self.reg(r) for r in op["results"])
        if not outs:
            return [Call(prov, expr, self.reads(op))]
        return [Assign(prov, outs, expr, self.reads(op))]

    # -- control flow -----------------------------------------------------------------
    def lower_remap(self, pairs, kinds, prov: Provenance | None) -> list[Stmt]:
        """Sequential slot copies, as the VM does them; i64 halves travel with the low slot."""
        out: list[Stmt] = []
        kinds = dict(kinds)  # copies are sequential: a later pair may read an earlier dst
        for src, dst in pairs:
            if src.is_ref:
                if src.ordinal == dst.ordinal:
                    continue
                s, d = f"r{src.ordinal}", f"r{dst.ordinal}"
                out.append(Assign(prov, (d,), s, frozenset((s,))))
                if src.move:
                    out.append(Release(prov, [s]))
                continue
            kind = kinds.get(src.ordinal)
            # A source no path wrote (kind None) is still copied: it reads the zero its
            # function starts it at (FunctionEmitter.int_init), as IREE's zeroed registers.
            if kind == HIGH or src.ordinal == dst.ordinal:
                continue
            kinds[dst.ordinal] = kind
            s, d = f"i{src.ordinal}", f"i{dst.ordinal}"
            out.append(Assign(prov, (d,), s, frozenset((s,))))
        return out

    def lower_terminator(self, fn: Function, term: Op, index_of: dict[int, int]) -> Terminator:
        prov = self.provenance(fn, term)
        emit = getattr(self, f"_end_{term.spec.emit}", None)
        if emit is None or not term.spec.is_terminator:
            raise NotImplementedError(f"terminator vm.{term.mnemonic}")
        return emit(fn, term, prov, index_of)

    # One per terminator `emit` kind of the ISA table; edges in `Op.edges()` order.
    def _edges(self, term: Op, index_of: dict[int, int], tests: list[str | None]) -> list[Edge]:
        return [Edge(t, index_of[pc], pairs) for t, (pc, pairs) in zip(tests, term.edges())]

    def _end_return(self, fn, term, prov, index_of) -> Terminator:
        return Terminator(prov, [], [Return(prov, tuple(self.reg(r) for r in term["operands"]))], [])

    def _end_fail(self, fn, term, prov, index_of) -> Terminator:
        return Terminator(prov, [], [self._raise(fn, term, prov)], [])

    def _end_branch(self, fn, term, prov, index_of) -> Terminator:
        return Terminator(prov, [], None, self._edges(term, index_of, [None]))

    def _end_cond_br(self, fn, term, prov, index_of) -> Terminator:
        return Terminator(prov, [], None, self._edges(term, index_of, [self.field_text(term, "condition"), None]))

    def _end_br_table(self, fn, term, prov, index_of) -> Terminator:
        # Op.edges(): the default first, then the cases; the default is the final `else`.
        idx = self.field_text(term, "index")
        default, *cases = self._edges(term, index_of, [None] + [f"{idx} == {i}" for i in range(len(term["cases"]))])
        return Terminator(prov, [], None, cases + [default])

    def _end_call_yield(self, fn, term, prov, index_of) -> Terminator:
        pre = self._call(term, prov) + self.moves_after(term, prov)
        return Terminator(prov, pre, None, self._edges(term, index_of, [None]))


__all__ = ["Edge", "OpRenderer", "Terminator", "helper_name"]


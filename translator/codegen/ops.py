"""VM ops -> statement-tree nodes (`stmt.py`).

Lowering is by mnemonic family, from the op's fields as `isa.OpSpec` names them. Scalar
arithmetic calls the bit-exact helpers of `runtime_support.vm.numerics` (named after the
mnemonic: `add.i32` -> `add_i32`); buffer and list ops call `runtime_support.vm.buffer` /
`.list` helpers named the same way; a few trivially exact ops are written inline.
"""

from __future__ import annotations

import math

from dataclasses import dataclass

from translator.codegen.escape import comment_text, string_literal as lit
from translator.codegen.names import NameTable
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

# Runtime helper modules by mnemonic family.
NUMERIC_INLINE = {
    "and.i32": "{left} & {right}",
    "or.i32": "{left} | {right}",
    "xor.i32": "{left} ^ {right}",
    "and.i64": "{left} & {right}",
    "or.i64": "{left} | {right}",
    "xor.i64": "{left} ^ {right}",
    "not.i32": "~{operand}",
    "not.i64": "~{operand}",
    "cmp.eq.i32": "int({left} == {right})",
    "cmp.ne.i32": "int({left} != {right})",
    "cmp.lt.i32.s": "int({left} < {right})",
    "cmp.nz.i32": "int({operand} != 0)",
    "cmp.eq.i64": "int({left} == {right})",
    "cmp.ne.i64": "int({left} != {right})",
    "cmp.lt.i64.s": "int({left} < {right})",
    "cmp.nz.i64": "int({operand} != 0)",
    "cmp.eq.ref": "int({left} is {right})",
    "cmp.ne.ref": "int({left} is not {right})",
    "cmp.nz.ref": "int({operand} is not None)",
    "ext.i32.i64.s": "{operand}",
}

# Families rendered as `result = helper(fields...)` with the helper named after the
# mnemonic, from the named runtime module.
HELPER_MODULES = {
    "numerics": "runtime_support.vm.numerics",
    "buffer": "runtime_support.vm.buffer",
    "list": "runtime_support.vm.list",
    "globals": "runtime_support.vm.globals",
}


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

    def moves_after(self, op: Op, prov: Provenance, overwritten: frozenset[int] = frozenset()) -> list[Stmt]:
        """Release of ref operands read with the move bit (ownership moved away).

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
                if isinstance(r, Reg) and r.is_ref and r.move and r.ordinal not in written:
                    name = self.reg(r)
                    if name not in moved:
                        moved.append(name)
        return [Release(prov, moved)] if moved else []

    # -- provenance -----------------------------------------------------------------
    def provenance(self, fn: Function, op: Op) -> Provenance:
        k = fn.ordinal
        return Provenance(fn.name, op.pc, op.mnemonic, self.locations(k, op.pc), self.locations.file_of(k, op.pc))

    # -- ops ------------------------------------------------------------------------
    def lower_op(self, fn: Function, op: Op, overwritten: frozenset[int] = frozenset()) -> list[Stmt]:
        prov = self.provenance(fn, op)
        return self._lower(fn, op, prov) + self.moves_after(op, prov, overwritten)

    def _assign(self, op: Op, prov: Provenance, expr: str) -> list[Stmt]:
        return [Assign(prov, tuple(self.reg(r) for r in op.writes()), expr, self.reads(op))]

    def _call_stmt(self, op: Op, prov: Provenance, expr: str) -> list[Stmt]:
        return self._assign(op, prov, expr) if op.writes() else [Call(prov, expr, self.reads(op))]

    def _lower(self, fn: Function, op: Op, prov: Provenance) -> list[Stmt]:
        m = op.mnemonic
        v = op.values
        f = lambda name: self.field_text(op, name)  # noqa: E731
        assign = lambda expr: self._assign(op, prov, expr)  # noqa: E731

        if m.startswith("const."):
            if m == "const.ref.zero":
                return [Release(prov, [self.reg(r) for r in op.writes()])]
            if m.endswith(".zero"):
                return assign( ("0.0" if "f" in m.split(".")[1] else "0"))
            if m == "const.ref.rodata":
                return assign(self.names.rodata(v["rodata"]))
            imm = v["value"]
            if imm.type in ("i32", "i64"):
                return assign(str(imm.value))
            width = 32 if imm.type == "f32" else 64
            if not math.isfinite(imm.value):
                self.use("numerics", "from_bits_f32" if width == 32 else "from_bits_f64")
            return assign(_float_literal(imm.value, imm.bits, width))
        if m in NUMERIC_INLINE:
            return assign(NUMERIC_INLINE[m].format(**{fs.name: f(fs.name) for fs in op.spec.fields if not fs.write}))
        if m in self.numeric_ops:
            args = ", ".join(f(fs.name) for fs in op.spec.fields if not fs.write)
            return assign(f"{self.use('numerics', helper_name(m))}({args})")
        if m.startswith("select."):
            return assign(f"{f('true_value')} if {f('condition')} else {f('false_value')}")
        if m.startswith("switch."):
            values = ", ".join(self.reg(r) for r in v["values"])
            if m == "switch.i64":
                # IREE 3.13 reads each listed i64 value as its low 32 bits, sign-extended
                # (observed with iree-run-module); the default keeps all 64 bits.
                wrap = self.use("numerics", "wrap_i32")
                values = ", ".join(f"{wrap}({self.reg(r)})" for r in v["values"])
            n = len(v["values"])
            if n == 0:
                return assign(f("default_value"))
            tup = f"({values},)" if n == 1 else f"({values})"
            idx = f("index")
            return assign(f"{tup}[{idx}] if 0 <= {idx} < {n} else {f('default_value')}")
        if m.startswith("global."):
            return self._global(op, prov, f)
        if m.startswith("list."):
            if m == "list.alloc":
                t = self.module.types[v["element_type"]]
                inner = t[len("!vm.list<") : -1] if t.startswith("!vm.list<") else t
                if inner == "!vm.opaque":  # the element type of variant lists
                    inner = "?"
                return assign(f"{self.use('list', 'list_alloc')}({lit(inner)}, {f('initial_capacity')})")
            args = [f(fs.name) if fs.kind != "type" else lit(self.module.types[v[fs.name]]) for fs in op.spec.fields if not fs.write]
            return self._call_stmt(op, prov, f"{self.use('list', helper_name(m))}({', '.join(args)})")
        if m.startswith("buffer."):
            args = ", ".join(f(fs.name) for fs in op.spec.fields if not fs.write)
            return self._call_stmt(op, prov, f"{self.use('buffer', helper_name(m))}({args})")
        if m == "assign.ref":
            return assign(f("source"))
        if m == "cast.any.ref":
            t = self.module.types[v["result_type"]]
            return assign(f"{self.use('globals', 'cast_any_ref')}({f('operand')}, {lit(t)})")
        if m in ("call", "call.variadic"):
            return self._call(op, prov)
        if m == "import.resolved":
            name = self.names.import_name(v["import_ordinal"] & ~IMPORT_BIT)
            return assign(f"int({name} is not None)")
        if m == "discard.refs":
            regs = list(dict.fromkeys(self.reg(r) for r in v["refs"]))
            return [Release(prov, regs)] if regs else []
        if m in ("trace", "print"):
            name = v["event_name"].decode("utf-8", errors="replace")
            return [Comment(prov, f"vm.{m} {name!r}")]
        if m == "fail":
            return [If(prov, f("status"), [self._raise(fn, op, prov)])]
        raise NotImplementedError(f"no Python rendering for vm.{m}")

    def _raise(self, fn: Function, op: Op, prov: Provenance) -> Raise:
        msg = op["message"].decode("utf-8", errors="replace")
        self.use("context", "vm_fail")
        loc = None if prov.location is None else comment_text(prov.location)
        return Raise(prov, self.field_text(op, "status"), msg, fn.name, loc)

    def _global(self, op: Op, prov: Provenance, f) -> list[Stmt]:
        m = op.mnemonic
        kind, bank = m.split(".")[1], m.split(".")[-1]
        indirect = ".indirect." in m
        reads = self.reads(op)
        if bank == "ref":
            t = self.module.types[op["type_def"]]
            where = f("global") if indirect else str(op["global"])
            if kind == "load":
                if not indirect and (op["global"], op["type_def"]) in self.unchecked_ref_loads:
                    return self._assign(op, prov, f"refs.get({where})")
                return self._assign(op, prov, f"{self.use('globals', 'global_load_ref')}(refs, {where}, {lit(t)})")
            return [Call(prov, f"{self.use('globals', 'global_store_ref')}(refs, {where}, {lit(t)}, {f('value')})", reads)]
        where = f("byte_offset") if indirect else str(op["byte_offset"])
        if kind == "load":
            return self._assign(op, prov, f"{self.use('globals', f'global_load_{bank}')}(rwdata, {where})")
        return [Call(prov, f"{self.use('globals', f'global_store_{bank}')}(rwdata, {where}, {f('value')})", reads)]

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
            if kind == HIGH or src.ordinal == dst.ordinal or kind is None:
                continue
            kinds[dst.ordinal] = kind
            s, d = f"i{src.ordinal}", f"i{dst.ordinal}"
            out.append(Assign(prov, (d,), s, frozenset((s,))))
        return out

    def lower_terminator(self, fn: Function, term: Op, index_of: dict[int, int]) -> Terminator:
        prov = self.provenance(fn, term)
        m = term.mnemonic
        if m == "return":
            return Terminator(prov, [], [Return(prov, tuple(self.reg(r) for r in term["operands"]))], [])
        if m == "fail":
            return Terminator(prov, [], [self._raise(fn, term, prov)], [])
        if m in ("br", "yield", "break"):
            return Terminator(prov, [], None, [Edge(None, index_of[term["dest_pc"]], term["operands"])])
        if m == "cond_br":
            cond = self.field_text(term, "condition")
            return Terminator(
                prov,
                [],
                None,
                [
                    Edge(cond, index_of[term["true_dest_pc"]], term["true_operands"]),
                    Edge(None, index_of[term["false_dest_pc"]], term["false_operands"]),
                ],
            )
        if m == "br_table":
            idx = self.field_text(term, "index")
            edges = [Edge(f"{idx} == {i}", index_of[pc], pairs) for i, (pc, pairs) in enumerate(term["cases"])]
            edges.append(Edge(None, index_of[term["default_dest_pc"]], term["default_operands"]))
            return Terminator(prov, [], None, edges)
        if m in ("call.yieldable", "call.variadic.yieldable"):
            pre = self._call(term, prov) + self.moves_after(term, prov)
            return Terminator(prov, pre, None, [Edge(None, index_of[term["dest_pc"]], ())])
        raise NotImplementedError(f"terminator vm.{m}")


__all__ = ["Edge", "OpRenderer", "Terminator", "helper_name"]

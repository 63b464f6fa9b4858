"""VM ops -> Python statements.

Rendering is by mnemonic family, from the op's fields as `isa.OpSpec` names them. Scalar
arithmetic calls the bit-exact helpers of `runtime_support.vm.numerics` (named after the
mnemonic: `add.i32` -> `add_i32`); buffer and list ops call `runtime_support.vm.buffer` /
`.list` helpers named the same way; a few trivially exact ops are written inline.
"""

from __future__ import annotations

import math

from translator.codegen.escape import comment_text, string_literal as lit
from translator.codegen.names import NameTable
from translator.codegen.regtypes import HIGH
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


class OpRenderer:
    """Renders ops of one module; collects which runtime helpers the module uses."""

    def __init__(self, module, names: NameTable, cconvs, numeric_ops: set[str], locations) -> None:
        self.module = module
        self.names = names
        self.cconvs = cconvs
        self.numeric_ops = numeric_ops
        self.locations = locations
        self.helpers: dict[str, set[str]] = {k: set() for k in HELPER_MODULES}
        self.helpers["context"] = set()
        self.current_function: str = ""

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

    def moves_after(self, op: Op, overwritten: frozenset[int] = frozenset()) -> list[str]:
        """`rX = None` for ref operands read with the move bit (ownership moved away).

        Registers in `overwritten` are assigned by the very next statement, which
        releases the old value just the same, so they need no separate line.
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
        return [" = ".join(moved) + " = None"] if moved else []

    # -- locations ----------------------------------------------------------------
    def location(self, op: Op) -> str | None:
        return self.locations(self.current_function_ordinal, op.pc)

    # -- ops ------------------------------------------------------------------------
    def render_op(
        self, fn: Function, op: Op, kinds, overwritten: frozenset[int] = frozenset()
    ) -> list[str]:
        self.current_function = fn.name
        self.current_function_ordinal = fn.ordinal
        lines = []
        loc = self.location(op)
        if loc:
            lines.append(f"# {loc}")
        lines += self._render(fn, op, kinds)
        lines += self.moves_after(op, overwritten)
        return lines

    def _assign(self, op: Op, expr: str) -> list[str]:
        outs = [self.reg(r) for r in op.writes()]
        return [f"{', '.join(outs)} = {expr}"]

    def _render(self, fn: Function, op: Op, kinds) -> list[str]:
        m = op.mnemonic
        v = op.values
        f = lambda name: self.field_text(op, name)  # noqa: E731

        if m.startswith("const."):
            if m.endswith(".zero"):
                return self._assign(op, "None" if m == "const.ref.zero" else ("0.0" if "f" in m.split(".")[1] else "0"))
            if m == "const.ref.rodata":
                return self._assign(op, self.names.rodata(v["rodata"]))
            imm = v["value"]
            if imm.type in ("i32", "i64"):
                return self._assign(op, str(imm.value))
            width = 32 if imm.type == "f32" else 64
            if not math.isfinite(imm.value):
                self.use("numerics", "from_bits_f32" if width == 32 else "from_bits_f64")
            return self._assign(op, _float_literal(imm.value, imm.bits, width))
        if m in NUMERIC_INLINE:
            expr = NUMERIC_INLINE[m].format(**{fs.name: f(fs.name) for fs in op.spec.fields if not fs.write})
            return self._assign(op, expr)
        if m in self.numeric_ops:
            args = ", ".join(f(fs.name) for fs in op.spec.fields if not fs.write)
            return self._assign(op, f"{self.use('numerics', helper_name(m))}({args})")
        if m.startswith("select."):
            return self._assign(op, f"{f('true_value')} if {f('condition')} else {f('false_value')}")
        if m.startswith("switch."):
            values = ", ".join(self.reg(r) for r in v["values"])
            if m == "switch.i64":
                # IREE 3.13 reads each listed i64 value as its low 32 bits, sign-extended
                # (observed with iree-run-module); the default keeps all 64 bits.
                wrap = self.use("numerics", "wrap_i32")
                values = ", ".join(f"{wrap}({self.reg(r)})" for r in v["values"])
            n = len(v["values"])
            if n == 0:
                return self._assign(op, f("default_value"))
            tup = f"({values},)" if n == 1 else f"({values})"
            idx = f("index")
            return self._assign(op, f"{tup}[{idx}] if 0 <= {idx} < {n} else {f('default_value')}")
        if m.startswith("global."):
            return self._global(op, f)
        if m.startswith("list."):
            if m == "list.alloc":
                t = self.module.types[v["element_type"]]
                inner = t[len("!vm.list<") : -1] if t.startswith("!vm.list<") else t
                if inner == "!vm.opaque":  # the element type of variant lists
                    inner = "?"
                return self._assign(op, f"{self.use('list', 'list_alloc')}({lit(inner)}, {f('initial_capacity')})")
            args = [f(fs.name) if fs.kind != "type" else repr(self.module.types[v[fs.name]]) for fs in op.spec.fields if not fs.write]
            call = f"{self.use('list', helper_name(m))}({', '.join(args)})"
            return self._assign(op, call) if op.writes() else [call]
        if m.startswith("buffer."):
            args = ", ".join(f(fs.name) for fs in op.spec.fields if not fs.write)
            call = f"{self.use('buffer', helper_name(m))}({args})"
            return self._assign(op, call) if op.writes() else [call]
        if m == "assign.ref":
            return self._assign(op, f("source"))
        if m == "cast.any.ref":
            t = self.module.types[v["result_type"]]
            return self._assign(op, f"{self.use('globals', 'cast_any_ref')}({f('operand')}, {lit(t)})")
        if m in ("call", "call.variadic"):
            return self._call(op)
        if m == "import.resolved":
            name = self.names.import_name(v["import_ordinal"] & ~IMPORT_BIT)
            return self._assign(op, f"int({name} is not None)")
        if m == "discard.refs":
            regs = list(dict.fromkeys(self.reg(r) for r in v["refs"]))
            return [" = ".join(regs) + " = None"] if regs else []
        if m in ("trace", "print"):
            name = v["event_name"].decode("utf-8", errors="replace")
            return [f"pass  # vm.{m} {comment_text(repr(name))}"]
        if m == "fail":
            return [f"if {f('status')}:", f"    raise {self._fail_expr(op)}"]
        raise NotImplementedError(f"no Python rendering for vm.{m}")

    def _fail_expr(self, op: Op) -> str:
        msg = op["message"].decode("utf-8", errors="replace")
        loc = self.location(op)
        self.use("context", "vm_fail")
        return f"vm_fail({self.field_text(op, 'status')}, {lit(msg)}, {lit(self.current_function)}, {lit(loc) if loc is not None else None})"

    def _global(self, op: Op, f) -> list[str]:
        m = op.mnemonic
        kind, bank = m.split(".")[1], m.split(".")[-1]
        indirect = ".indirect." in m
        if bank == "ref":
            t = self.module.types[op["type_def"]]
            where = f("global") if indirect else str(op["global"])
            if kind == "load":
                return self._assign(op, f"{self.use('globals', 'global_load_ref')}(refs, {where}, {lit(t)})")
            return [f"{self.use('globals', 'global_store_ref')}(refs, {where}, {lit(t)}, {f('value')})"]
        where = f("byte_offset") if indirect else str(op["byte_offset"])
        if kind == "load":
            return self._assign(op, f"{self.use('globals', f'global_load_{bank}')}(rwdata, {where})")
        return [f"{self.use('globals', f'global_store_{bank}')}(rwdata, {where}, {f('value')})"]

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

    def _call(self, op: Op) -> list[str]:
        expr = self.call_expr(op)
        outs = [self.reg(r) for r in op["results"]]
        if not outs:
            return [expr]
        return [f"{', '.join(outs)} = {expr}"]

    # -- control flow -----------------------------------------------------------------
    def render_remap(self, pairs, kinds) -> list[str]:
        """Sequential slot copies, as the VM does them; i64 halves travel with the low slot."""
        lines = []
        for src, dst in pairs:
            if src.is_ref:
                if src.ordinal == dst.ordinal:
                    continue
                lines.append(f"r{dst.ordinal} = r{src.ordinal}")
                if src.move:
                    lines.append(f"r{src.ordinal} = None")
                continue
            kind = kinds.get(src.ordinal)
            if kind == HIGH or src.ordinal == dst.ordinal or kind is None:
                continue
            lines.append(f"i{dst.ordinal} = i{src.ordinal}")
        return lines

    def render_terminator(self, fn: Function, term: Op, kinds) -> list[str]:
        """The terminator of a single-block function (return or fail)."""
        out = []
        for kind, payload in self.terminator_edges(fn, term, kinds):
            if kind != "line":
                raise AssertionError("branch in a single-block function")
            out.append(payload)
        return out

    def terminator_edges(self, fn: Function, term: Op, kinds_obj):
        """Lines, indentation changes and gotos for a block's terminator.

        Yields ("line", text), ("indent", +1/-1) and ("goto", (block index, remap pairs)).
        """
        self.current_function = fn.name
        self.current_function_ordinal = fn.ordinal
        index_of = {b.pc: b.index for b in fn.blocks}
        m = term.mnemonic
        loc = self.location(term)
        if loc:
            yield "line", f"# {loc}"
        if m == "return":
            vals = [self.reg(r) for r in term["operands"]]
            yield "line", "return " + ", ".join(vals) if vals else "return"
        elif m == "fail":
            yield "line", f"raise {self._fail_expr(term)}"
        elif m in ("br", "yield", "break"):
            yield "goto", (index_of[term["dest_pc"]], term["operands"])
        elif m == "cond_br":
            yield "line", f"if {self.field_text(term, 'condition')}:"
            yield "indent", 1
            yield "goto", (index_of[term["true_dest_pc"]], term["true_operands"])
            yield "indent", -1
            yield "line", "else:"
            yield "indent", 1
            yield "goto", (index_of[term["false_dest_pc"]], term["false_operands"])
            yield "indent", -1
        elif m == "br_table":
            idx = self.field_text(term, "index")
            for i, (pc, pairs) in enumerate(term["cases"]):
                yield "line", f"{'if' if i == 0 else 'elif'} {idx} == {i}:"
                yield "indent", 1
                yield "goto", (index_of[pc], pairs)
                yield "indent", -1
            if term["cases"]:
                yield "line", "else:"
                yield "indent", 1
            yield "goto", (index_of[term["default_dest_pc"]], term["default_operands"])
            if term["cases"]:
                yield "indent", -1
        elif m in ("call.yieldable", "call.variadic.yieldable"):
            for line in self._call(term):
                yield "line", line
            for line in self.moves_after(term):
                yield "line", line
            yield "goto", (index_of[term["dest_pc"]], ())
        else:
            raise NotImplementedError(f"terminator vm.{m}")


__all__ = ["OpRenderer", "helper_name"]

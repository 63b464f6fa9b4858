"""Disassembly text in the format of IREE 3.13's `iree-dump-module --output=disassembly`.

Every instruction is printed from its `isa.OpSpec`: the table's template (or the default
`results = vm.MNEMONIC reads`) with each field rendered by kind. Where the reference tool
is known to be wrong (`switch.ref`, `cast.ui64.f32`; vm-bytecode.md §8.4) we print the
correct decoding.
"""

from __future__ import annotations

import math
import re

from translator import isa
from translator.cconv import parse_cconv
from translator.decoder import decode_function
from translator.errors import InvalidModuleError
from translator.ir import IMPORT_BIT, Function, Imm, Op, Reg
from translator.module import Module

# `{name}` is a field; `{{` and `}}` are literal braces (as in str.format).
_FIELD_RE = re.compile(r"\{\{|\}\}|\{(\w+)\}")


def _c_float(value: float, digits: int) -> str:
    """C printf `%.<digits>g` for finite values, with C spellings of nan/inf."""
    if math.isnan(value):
        return "-nan" if math.copysign(1.0, value) < 0 else "nan"
    if math.isinf(value):
        return "-inf" if value < 0 else "inf"
    return "%.*g" % (digits, value)


class Disassembler:
    """Renders functions of one module; holds the name tables the text needs."""

    def __init__(self, module: Module) -> None:
        self.module = module

    # -- operands ------------------------------------------------------------------
    @staticmethod
    def typed_reg(reg: Reg, f: isa.FieldSpec | None, *, lowercase: bool = False) -> str:
        if reg.is_ref:
            upper = reg.move and not lowercase and (f is None or f.move)
            return f"%{'R' if upper else 'r'}{reg.ordinal}"
        n = reg.ordinal
        if f is not None and f.bank in ("i64", "f64"):
            return f"%i{n}:{n + 1}"
        return f"%i{n}"

    def list_reg(self, reg: Reg) -> str:
        if reg.is_ref:
            return f"%{'R' if reg.move else 'r'}{reg.ordinal}"
        return f"%i{reg.ordinal}"

    def remap(self, pairs) -> str:
        return ", ".join(f"{self.list_reg(s)}->{self.list_reg(d)}" for s, d in pairs)

    def block_ref(self, fn: Function, pc: int) -> str:
        b = fn.block_at(pc)
        return f"^bb{b.index}" if b is not None else f"^bb<pc 0x{pc:08X}>"

    def callee(self, ordinal: int) -> str:
        m = self.module
        if ordinal & IMPORT_BIT:
            i = ordinal & ~IMPORT_BIT
            if i < len(m.imports):
                return "@" + m.imports[i].full_name
            return f"@<import {i}>"
        name = m.runtime_function_name(ordinal) if ordinal < m.function_count else None
        if name:
            return f"@{m.name}.{name}"
        return f"@{m.name}:{ordinal}"

    def type_name(self, index: int) -> str:
        types = self.module.types
        return types[index] if index < len(types) else f"<type {index}>"

    def imm(self, imm: Imm) -> str:
        if imm.type == "i32":
            return f"{imm.value}  // 0x{imm.bits:08X}"
        if imm.type == "i64":
            return f"{imm.value}  // 0x{imm.bits:016X}"
        if imm.type == "f32":
            return _c_float(imm.value, 9)
        return _c_float(imm.value, 17)

    def render_field(self, fn: Function, op: Op, f: isa.FieldSpec) -> str:
        v = op.values[f.name]
        k = f.kind
        if k == "register":
            return self.typed_reg(v, f, lowercase=op.spec.emit == "null")
        if k == "list":
            if f.bank == "segments":
                return ", ".join(str(x) for x in v)
            return ", ".join(self.list_reg(r) for r in v)
        if k == "remap":
            return self.remap(v)
        if k == "pc":
            return self.block_ref(fn, v)
        if k == "cases":
            return "".join(
                f", {i}: {self.block_ref(fn, pc)}({self.remap(pairs)})"
                for i, (pc, pairs) in enumerate(v)
            )
        if k == "func":
            return self.callee(v)
        if k == "type":
            return self.type_name(v)
        if k == "rodata":
            segs = self.module.rodata
            size = len(segs[v]) if v < len(segs) else 0
            return f"{v}  // {size}b"
        if k == "imm":
            return self.imm(v)
        if k == "str":
            return '"' + v.decode("utf-8", errors="replace") + '"'
        return str(v)  # global, u16

    # -- instructions -------------------------------------------------------------
    def op_text(self, fn: Function, op: Op) -> str:
        spec = op.spec
        rendered = {f.name: self.render_field(fn, op, f) for f in spec.fields}
        if spec.template is None:
            writes = [rendered[f.name] for f in spec.fields if f.write]
            reads = [rendered[f.name] for f in spec.fields if not f.write]
            text = f"vm.{spec.mnemonic}"
            if reads:
                text += " " + ", ".join(reads)
            if writes:
                text = ", ".join(writes) + " = " + text
            return text
        template = spec.template
        if template.startswith("{results} = ") and not op.values["results"]:
            template = template[len("{results} = ") :]
        text = _FIELD_RE.sub(lambda m: rendered[m.group(1)] if m.group(1) else m.group(0)[0], template)
        return text.rstrip()

    def function_header(self, k: int) -> str:
        m = self.module
        cc = parse_cconv(m.signatures[k].calling_convention)
        args = []
        n = 0
        r = 0
        names = {"i": "i32", "f": "f32", "I": "i64", "F": "f64"}
        for item in cc.arguments:
            if item == "r":
                args.append(f"%r{r}: !vm.ref<?>")
                r += 1
            elif item in ("I", "F"):
                args.append(f"%i{n}:{n + 1}: {names[item]}")
                n += 2
            elif item in ("i", "f"):
                args.append(f"%i{n}: {names[item]}")
                n += 1
            else:  # spans never appear on internal functions; print something sane
                args.append(f"%<span {item}>")
        results = [("!vm.ref<?>" if t == "r" else names.get(t, str(t))) for t in cc.results]
        return (
            f"vm.func @{m.function_display_name(k)}({', '.join(args)}) -> "
            f"({', '.join(results)}) {{"
        )

    def function_lines(self, fn: Function, *, offsets: bool = False) -> list[str]:
        """The instruction lines (block labels included) of one function."""
        lines = []
        for block in fn.blocks:
            prefix = f"[{block.pc:08X}]" if offsets else ""
            lines.append(f"{prefix}^bb{block.index}:")
            for op in block.ops:
                prefix = f"[{op.pc:08X}]" if offsets else ""
                lines.append(f"{prefix}  {self.op_text(fn, op)}")
        return lines

    def module_text(self, *, offsets: bool = False, functions=None) -> str:
        """The whole `--output=disassembly` text.

        `functions` optionally supplies already-decoded functions (by ordinal).
        """
        m = self.module
        out = [f"vm.module @{m.name} version {m.version}"]
        out += [f"vm.type {t}" for t in m.types if t]
        for imp in m.imports:
            opt = "optional " if imp.optional else ""
            out.append(f'vm.import {opt}@{imp.full_name} cconv "{imp.signature.calling_convention}"')
        out += [f"vm.rodata[{s.ordinal}] = {bytes(s.data).hex().upper()}" for s in m.rodata]
        if len(out) > 1:
            out.append("")
        for k in range(m.function_count):
            display = m.function_display_name(k)
            for name in m.export_names_of(k):
                out.append(f"vm.export @{name}" if name == display else f"vm.export @{name} = @{display}")
            out.append(self.function_header(k))
            try:
                fn = functions[k] if functions is not None else decode_function(m, k)
            except InvalidModuleError as e:
                out.append(f"  // error: {e.reason}")
            else:
                out += self.function_lines(fn, offsets=offsets)
            out.append("}")
            out.append("")
        if m.function_count:
            out.pop()  # one blank line *between* functions; none after the last one
        return "\n".join(out) + "\n"


def disassemble(module: Module, *, offsets: bool = False) -> str:
    return Disassembler(module).module_text(offsets=offsets)

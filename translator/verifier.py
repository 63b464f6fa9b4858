"""Structural verification of decoded functions.

Checks what the decoder cannot see one instruction at a time: register ordinals against
the function's register counts, branch targets on block markers, ordinals of imports,
functions, rodata, globals and types, call operand/result lists and variadic segment
counts against the callee's calling convention, block counts, terminators, feature
bits, and that no value register is read as an integer where it holds a float or the
other way round (analyses/banks.py). Every failure raises
`InvalidModuleError(function=..., pc=...)`.
"""

from __future__ import annotations

from translator import isa
from translator.analyses.banks import BankMismatch, check_banks
from translator.analyses.layout import argument_registers
from translator.cconv import CConv, parse_cconv
from translator.errors import InvalidModuleError, quote_name
from translator.ir import IMPORT_BIT, Function, Op, Reg
from translator.module import FEATURE_EXT_F32, FEATURE_EXT_F64, Module

_VALUE_WIDTH = {"i32": 4, "f32": 4, "i64": 8, "f64": 8}
_SET_FEATURE = {isa.EXT_F32: FEATURE_EXT_F32, isa.EXT_F64: FEATURE_EXT_F64}
_CCONV_BANK = {"i": "i32", "f": "f32", "I": "i64", "F": "f64", "r": "ref"}


class _FunctionVerifier:
    def __init__(self, module: Module, fn: Function, cconvs: list[CConv], import_cconvs):
        self.m = module
        self.fn = fn
        d = module.descriptors[fn.ordinal]
        self.desc = d
        self.cconvs = cconvs
        self.import_cconvs = import_cconvs
        self.block_pcs = {b.pc for b in fn.blocks}
        self.op: Op | None = None
        # pc -> register lists typed by a calling convention ([(reg, code)] read, written).
        self.list_banks: dict[int, tuple[list, list]] = {}

    def fail(self, reason: str) -> InvalidModuleError:
        pc = self.op.pc if self.op is not None else 0
        return InvalidModuleError(reason, function=self.fn.name, pc=pc)

    # -- registers ------------------------------------------------------------------
    def check_reg(self, reg: Reg, bank: str | None) -> None:
        if reg.is_ref:
            if bank not in (None, "ref"):
                raise self.fail(f"expected a {bank} register, got ref register r{reg.ordinal}")
            if reg.ordinal >= self.desc.ref_register_count:
                raise self.fail(
                    f"ref register r{reg.ordinal} out of range "
                    f"(function has {self.desc.ref_register_count})"
                )
            return
        if bank == "ref":
            raise self.fail(f"expected a ref register, got value register i{reg.ordinal}")
        width = 2 if bank in ("i64", "f64") else 1
        if width == 2 and reg.ordinal & 1:
            raise self.fail(f"64-bit register i{reg.ordinal} is not even-aligned")
        if reg.ordinal + width > self.desc.i32_register_count:
            raise self.fail(
                f"register i{reg.ordinal} out of range "
                f"(function has {self.desc.i32_register_count} i32 registers)"
            )

    def check_remap(self, pairs) -> None:
        for src, dst in pairs:
            if src.is_ref != dst.is_ref:
                raise self.fail("branch remap mixes ref and value registers")
            self.check_reg(src, None)
            self.check_reg(dst, None)

    def check_target(self, pc: int) -> None:
        if pc not in self.block_pcs:
            raise self.fail(f"branch target pc 0x{pc:08X} is not the start of a block")

    # -- calls ----------------------------------------------------------------------
    def callee_cconv(self, ordinal: int) -> tuple[str, CConv]:
        if ordinal & IMPORT_BIT:
            i = ordinal & ~IMPORT_BIT
            if i >= len(self.m.imports):
                raise self.fail(f"import ordinal {i} out of range ({len(self.m.imports)} imports)")
            return self.m.imports[i].full_name, self.import_cconvs[i]
        if ordinal >= self.m.function_count:
            raise self.fail(
                f"function ordinal {ordinal} out of range ({self.m.function_count} functions)"
            )
        return self.m.function_display_name(ordinal), self.cconvs[ordinal]

    def check_typed_list(self, regs, items, what: str, name: str) -> None:
        if len(regs) != len(items):
            raise self.fail(f"call to {name}: expected {len(items)} {what}, got {len(regs)}")
        for reg, item in zip(regs, items):
            self.check_reg(reg, _CCONV_BANK[item])

    def check_call(self, op: Op) -> None:
        name, cc = self.callee_cconv(op["callee_ordinal"])
        results = op["results"]
        self.check_typed_list(results, cc.results, "results", name)
        operands = op["operands"]
        if "segment_sizes" not in op.values:
            if cc.has_spans:
                raise self.fail(f"call to {name} needs call.variadic (its cconv has spans)")
            self.check_typed_list(operands, cc.arguments, "operands", name)
            self.list_banks[op.pc] = (list(zip(operands, cc.arguments)), list(zip(results, cc.results)))
            return
        if not op["callee_ordinal"] & IMPORT_BIT:
            raise self.fail("call.variadic to an internal function")
        segments = op["segment_sizes"]
        if len(segments) != len(cc.arguments):
            raise self.fail(
                f"call to {name}: {len(segments)} segment sizes for "
                f"{len(cc.arguments)} arguments"
            )
        flat: list[str] = []
        for size, item in zip(segments, cc.arguments):
            if isinstance(item, tuple):
                if size == 0xFFFF:
                    raise self.fail(f"call to {name}: span argument without a count")
                flat.extend(list(item) * size)
            else:
                if size != 0xFFFF:
                    raise self.fail(f"call to {name}: non-span argument with a count {size}")
                flat.append(item)
        self.check_typed_list(operands, flat, "operands", name)
        self.list_banks[op.pc] = (list(zip(operands, flat)), list(zip(results, cc.results)))

    # -- ops ------------------------------------------------------------------------
    def check_op(self, op: Op) -> None:
        self.op = op
        m = self.m
        spec = op.spec
        feature = _SET_FEATURE.get(spec.opcode_set)
        if feature and not self.desc.requirements & feature:
            raise self.fail(
                f"{spec.mnemonic} needs the {spec.opcode_set} extension but the function "
                "does not declare it"
            )
        for f in spec.fields:
            v = op.values[f.name]
            k = f.kind
            if k == "register":
                self.check_reg(v, f.bank)
            elif k == "list" and f.bank != "segments" and f.name not in ("operands", "results"):
                bank = None if f.bank == "any" else f.bank
                for reg in v:
                    self.check_reg(reg, bank)
            elif k == "remap":
                self.check_remap(v)
            elif k == "pc":
                self.check_target(v)
            elif k == "cases":
                for pc, pairs in v:
                    self.check_target(pc)
                    self.check_remap(pairs)
            elif k == "rodata" and v >= len(m.rodata):
                raise self.fail(f"rodata ordinal {v} out of range ({len(m.rodata)} segments)")
            elif k == "type" and v >= len(m.types):
                raise self.fail(f"type ordinal {v} out of range ({len(m.types)} types)")
            elif k == "global":
                self.check_global(spec, v)
            elif k == "func" and f.name == "import_ordinal":
                if not v & IMPORT_BIT or (v & ~IMPORT_BIT) >= len(m.imports):
                    raise self.fail(f"import.resolved of invalid import ordinal 0x{v:08X}")
        emit = spec.emit
        if emit in isa.CALL_KINDS:
            self.check_call(op)
        elif emit == "return":
            cc = self.cconvs[self.fn.ordinal]
            self.check_typed_list(op["operands"], cc.results, "return values", self.fn.name)
            self.list_banks[op.pc] = (list(zip(op["operands"], cc.results)), [])
        elif emit == "discard":
            for reg in op["refs"]:
                if not reg.is_ref:
                    raise self.fail("discard.refs of a value register")
                self.check_reg(reg, "ref")
        elif emit == "comment":  # trace / print
            for reg in op["operands"]:
                self.check_reg(reg, None)

    def check_global(self, spec: isa.OpSpec, value: int) -> None:
        # The bank is the value field's (a global op's only value/result register).
        bank = next(f.bank for f in spec.fields if f.name in ("value", "result"))
        if bank == "ref":
            if value >= self.m.global_ref_count:
                raise self.fail(
                    f"ref global {value} out of range ({self.m.global_ref_count} ref globals)"
                )
            return
        width = _VALUE_WIDTH[bank]
        if value % width or value + width > self.m.global_bytes_capacity:
            raise self.fail(
                f"global byte offset {value} invalid for {bank} "
                f"(capacity {self.m.global_bytes_capacity} bytes)"
            )

    def run(self) -> None:
        fn = self.fn
        if len(fn.blocks) != self.desc.block_count:
            self.op = None
            raise self.fail(
                f"function has {len(fn.blocks)} blocks but its descriptor says "
                f"{self.desc.block_count}"
            )
        if fn.blocks[0].pc != 0:
            raise self.fail("function does not start with a block marker")
        for block in fn.blocks:
            if not block.ops:
                self.op = None
                raise InvalidModuleError(
                    f"block ^bb{block.index} is empty", function=fn.name, pc=block.pc
                )
            for op in block.ops:
                self.check_op(op)
            last = block.ops[-1]
            if not last.spec.is_terminator:
                self.op = last
                raise self.fail(f"block ^bb{block.index} does not end with a terminator")
            for op in block.ops[:-1]:
                if op.spec.is_terminator and op.spec.emit != "fail":
                    self.op = op
                    raise self.fail(f"terminator {op.mnemonic} in the middle of a block")
        try:
            check_banks(
                fn,
                argument_registers(self.cconvs[fn.ordinal]),
                lambda op: self.list_banks.get(op.pc, ((), ())),
            )
        except BankMismatch as e:
            self.op = e.op
            raise self.fail(e.reason) from None


def verify_function(module: Module, fn: Function, cconvs=None, import_cconvs=None) -> None:
    if cconvs is None:
        cconvs = function_cconvs(module)
    if import_cconvs is None:
        import_cconvs = [parse_cconv(i.signature.calling_convention, i.full_name) for i in module.imports]
    _FunctionVerifier(module, fn, cconvs, import_cconvs).run()


def function_cconvs(module: Module) -> list[CConv]:
    out = []
    for k, sig in enumerate(module.signatures):
        cc = parse_cconv(sig.calling_convention, module.function_display_name(k))
        if cc.has_spans:
            raise InvalidModuleError(
                "internal functions cannot take variadic spans",
                function=module.function_display_name(k),
            )
        out.append(cc)
    return out


# The VM's module lifecycle hooks: the runtime calls them by name with no arguments and
# takes no results (IREE's context does the same with an empty argument buffer; a hook
# that declares arguments would read past it).
LIFECYCLE_EXPORTS = ("__init", "__deinit")


def verify_exports(module: Module, cconvs: list[CConv]) -> None:
    """Exports name functions that exist; lifecycle hooks take and return nothing."""
    for e in module.exports:
        if not 0 <= e.internal_ordinal < len(cconvs):
            raise InvalidModuleError(
                f"export {quote_name(e.local_name)} names function {e.internal_ordinal} "
                f"of {len(cconvs)}"
            )
        cc = cconvs[e.internal_ordinal]
        if e.local_name in LIFECYCLE_EXPORTS and (cc.arguments or cc.results):
            raise InvalidModuleError(
                f"export {e.local_name} has calling convention {cc.text!r}; the runtime "
                "calls it with no arguments and no results ('0v_v')",
                function=module.function_display_name(e.internal_ordinal),
            )


def verify_module(module: Module, functions: list[Function]) -> None:
    cconvs = function_cconvs(module)
    import_cconvs = [parse_cconv(i.signature.calling_convention, i.full_name) for i in module.imports]
    for fn in functions:
        verify_function(module, fn, cconvs, import_cconvs)

"""pyree's opcode table for IREE VM bytecode 17.0 (iree-base-compiler 3.13.0).

One row per opcode: opcode set, opcode byte, mnemonic, operand fields in encoding order,
and (where it differs from the default) the `iree-dump-module` text template. The
decoder, verifier, disassembler and code generator are all driven by this table; none of
them switches on opcodes to find out how to *decode* an instruction.

Field notation (one token per field, `kind:name`):

    i32 i64 f32 f64 ref   register read of that bank      ref*: move bit meaningful
    >i32 ... >ref*        register written
    global                u32 byte offset (value globals) or ordinal (ref globals)
    func                  u32 function ordinal (bit 31 = import)
    rodata                u32 rodata segment ordinal
    type                  u32 index into the module type table
    str                   u16 length + bytes
    imm.i32 imm.i64 imm.f32 imm.f64   immediate constant
    list.<T>              register list (align 2, u16 count, u16 each); T in
                          i32 i64 f32 f64 ref* any; `segments` = list of counts
    >list.any             result register list
    pc                    u32 branch target (pc of a block marker)
    remap                 branch remap list (align 2, u16 count, (u16 src, u16 dst) each)
    u16                   u16 count
    cases                 br_table cases: `u16` previous field many (pc, remap) pairs

Templates use `{name}` for a field's text; the default template is
`{results} = vm.MNEMONIC {reads...}` with the reads joined by ", ".

The test suite checks this table against the upstream ISA description
(`../shared/reference/isa.json`) so that a new or renumbered opcode is noticed.
"""

from __future__ import annotations

from dataclasses import dataclass

CORE = "core"
EXT_F32 = "ext_f32"
EXT_F64 = "ext_f64"

PREFIX_EXT_F32 = 0xE0
PREFIX_EXT_F64 = 0xE1
BLOCK_MARKER = 0x79

PREFIX_OF_SET = {EXT_F32: PREFIX_EXT_F32, EXT_F64: PREFIX_EXT_F64}
SET_OF_PREFIX = {v: k for k, v in PREFIX_OF_SET.items()}

REGISTER_BANKS = ("i32", "i64", "f32", "f64", "ref")


@dataclass(frozen=True)
class FieldSpec:
    kind: str  # register | global | func | rodata | type | str | imm | list | pc | remap | u16 | cases
    name: str
    bank: str | None = None  # register bank / immediate type / list element type
    write: bool = False
    move: bool = False  # a ref field where the move bit is meaningful

    @property
    def is_register(self) -> bool:
        return self.kind == "register"


@dataclass(frozen=True)
class OpSpec:
    opcode_set: str
    opcode: int
    mnemonic: str
    fields: tuple[FieldSpec, ...]
    template: str | None

    @property
    def key(self) -> tuple[str, int]:
        return (self.opcode_set, self.opcode)

    @property
    def is_terminator(self) -> bool:
        return self.mnemonic in TERMINATORS

    def field(self, name: str) -> FieldSpec:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)


TERMINATORS = frozenset(
    {
        "br",
        "cond_br",
        "br_table",
        "return",
        "fail",
        "yield",
        "call.yieldable",
        "call.variadic.yieldable",
        "break",
        "cond_break",
    }
)


def _parse_field(token: str) -> FieldSpec:
    kind, _, name = token.partition(":")
    write = kind.startswith(">")
    kind = kind.lstrip(">")
    move = kind.endswith("*")
    kind = kind.rstrip("*")
    if kind in REGISTER_BANKS:
        return FieldSpec("register", name, kind, write, move)
    if kind.startswith("imm."):
        return FieldSpec("imm", name, kind[4:])
    if kind.startswith("list."):
        return FieldSpec("list", name, kind[5:], write, move)
    if kind in ("global", "func", "rodata", "type", "str", "pc", "remap", "u16", "cases"):
        return FieldSpec(kind, name)
    raise ValueError(f"bad field token {token!r}")


# Common field layouts.
_UN = "{b}:operand >{o}:result"
_BIN = "{b}:left {b}:right >{o}:result"
_TER = "{b}:first {b}:second {b}:third >{o}:result"


def _f(layout: str, b: str, o: str | None = None) -> str:
    return layout.format(b=b, o=o or b)


# Templates shared by families.
_T_GLOAD = "{result} = vm.{m} .rwdata[{byte_offset}]"
_T_GSTORE = "vm.{m} {value}, .rwdata[{byte_offset}]"
_T_GLOAD_REF = "{value} = vm.{m} .refs[{global}] : {type_def}"
_T_GSTORE_REF = "vm.{m} {value}, .refs[{global}] : {type_def}"
_T_SELECT = "{result} = vm.{m} {condition} ? {true_value} : {false_value}"
_T_SWITCH = "{result} = vm.{m} {index}[{values}] else {default_value}"
_T_BSTORE = "vm.{m} {value}, {target_buffer}, {target_offset}"

# (opcode, mnemonic, fields, template or None)
_CORE_ROWS: list[tuple[int, str, str, str | None]] = []
_F32_ROWS: list[tuple[int, str, str, str | None]] = []
_F64_ROWS: list[tuple[int, str, str, str | None]] = []


def _row(rows, opcode, mnemonic, fields, template=None):
    rows.append((opcode, mnemonic, fields, template))


def _build_core() -> None:
    r = _CORE_ROWS
    for base, bank in ((0x00, "i32"), (0x04, "i64")):
        _row(r, base + 0, f"global.load.{bank}", f"global:byte_offset >{bank}:result", _T_GLOAD)
        _row(r, base + 1, f"global.store.{bank}", f"global:byte_offset {bank}:value", _T_GSTORE)
        _row(r, base + 2, f"global.load.indirect.{bank}", f"i32:byte_offset >{bank}:result", _T_GLOAD)
        _row(r, base + 3, f"global.store.indirect.{bank}", f"i32:byte_offset {bank}:value", _T_GSTORE)
    _row(r, 0x08, "global.load.ref", "global:global type:type_def >ref*:value", _T_GLOAD_REF)
    _row(r, 0x09, "global.store.ref", "global:global type:type_def ref*:value", _T_GSTORE_REF)
    _row(r, 0x0A, "global.load.indirect.ref", "i32:global type:type_def >ref*:value", _T_GLOAD_REF)
    _row(r, 0x0B, "global.store.indirect.ref", "i32:global type:type_def ref*:value", _T_GSTORE_REF)
    _row(r, 0x0C, "const.i32.zero", ">i32:result")
    _row(r, 0x0D, "const.i32", "imm.i32:value >i32:result")
    _row(r, 0x0E, "const.i64.zero", ">i64:result")
    _row(r, 0x0F, "const.i64", "imm.i64:value >i64:result")
    _row(r, 0x10, "const.ref.zero", ">ref*:result")
    _row(r, 0x11, "const.ref.rodata", "rodata:rodata >ref*:value")
    _row(r, 0x12, "list.alloc", "type:element_type i32:initial_capacity >ref*:result",
         "{result} = vm.{m} {initial_capacity} : !vm.list<{element_type}>")
    _row(r, 0x13, "list.reserve", "ref:list i32:minimum_capacity")
    _row(r, 0x14, "list.size", "ref:list >i32:result")
    _row(r, 0x15, "list.resize", "ref:list i32:new_size")
    _row(r, 0x16, "list.get.i32", "ref:list i32:index >i32:result")
    _row(r, 0x17, "list.set.i32", "ref:list i32:index i32:value")
    _row(r, 0x18, "list.get.i64", "ref:list i32:index >i64:result")
    _row(r, 0x19, "list.set.i64", "ref:list i32:index i64:value")
    _row(r, 0x1A, "list.get.ref", "ref:list i32:index type:type_def >ref*:result",
         "{result} = vm.{m} {list}, {index} : {type_def}")
    _row(r, 0x1B, "list.set.ref", "ref:list i32:index ref*:value")
    _row(r, 0x1C, "select.i32", "i32:condition i32:true_value i32:false_value >i32:result", _T_SELECT)
    _row(r, 0x1D, "select.i64", "i32:condition i64:true_value i64:false_value >i64:result", _T_SELECT)
    _row(r, 0x1E, "select.ref",
         "i32:condition type:true_value_type_def ref*:true_value ref*:false_value >ref*:result",
         _T_SELECT + " -> {true_value_type_def}")
    _row(r, 0x1F, "switch.i32", "i32:index i32:default_value list.i32:values >i32:result", _T_SWITCH)
    _row(r, 0x20, "switch.i64", "i32:index i64:default_value list.i64:values >i64:result", _T_SWITCH)
    _row(r, 0x21, "switch.ref",
         "i32:index type:type_def ref*:default_value list.ref*:values >ref*:result", _T_SWITCH)
    arith = ["add", "sub", "mul", "div.{b}.s", "div.{b}.u", "rem.{b}.s", "rem.{b}.u"]
    for base, bank in ((0x22, "i32"), (0x2A, "i64")):
        for i, name in enumerate(arith):
            m = name.format(b=bank) if "{b}" in name else f"{name}.{bank}"
            _row(r, base + i, m, _f(_BIN, bank))
        _row(r, base + 7, f"fma.{bank}", _f(_TER, bank))
    for base, bank in ((0x32, "i32"), (0x36, "i64")):
        _row(r, base, f"not.{bank}", _f(_UN, bank))
        for i, name in enumerate(("and", "or", "xor")):
            _row(r, base + 1 + i, f"{name}.{bank}", _f(_BIN, bank))
    for base, bank in ((0x3A, "i32"), (0x3D, "i64")):
        for i, name in enumerate(("shl.{b}", "shr.{b}.s", "shr.{b}.u")):
            _row(r, base + i, name.format(b=bank), f"{bank}:operand i32:amount >{bank}:result")
    _row(r, 0x40, "trunc.i32.i8", _f(_UN, "i32"))
    _row(r, 0x41, "trunc.i32.i16", _f(_UN, "i32"))
    _row(r, 0x42, "trunc.i64.i32", _f(_UN, "i64", "i32"))
    for i, m in enumerate(("ext.i8.i32.s", "ext.i8.i32.u", "ext.i16.i32.s", "ext.i16.i32.u")):
        _row(r, 0x43 + i, m, _f(_UN, "i32"))
    _row(r, 0x47, "ext.i32.i64.s", _f(_UN, "i32", "i64"))
    _row(r, 0x48, "ext.i32.i64.u", _f(_UN, "i32", "i64"))
    for base, bank in ((0x49, "i32"), (0x4E, "i64")):
        for i, name in enumerate(("cmp.eq.{b}", "cmp.ne.{b}", "cmp.lt.{b}.s", "cmp.lt.{b}.u")):
            _row(r, base + i, name.format(b=bank), _f(_BIN, bank, "i32"))
        _row(r, base + 4, f"cmp.nz.{bank}", _f(_UN, bank, "i32"))
    _row(r, 0x53, "cmp.eq.ref", "ref:left ref:right >i32:result")
    _row(r, 0x54, "cmp.ne.ref", "ref:left ref:right >i32:result")
    _row(r, 0x55, "cmp.nz.ref", "ref:operand >i32:result")
    _row(r, 0x56, "br", "pc:dest_pc remap:operands", "vm.br {dest_pc}({operands})")
    _row(r, 0x57, "cond_br",
         "i32:condition pc:true_dest_pc remap:true_operands pc:false_dest_pc remap:false_operands",
         "vm.cond_br {condition}, {true_dest_pc}({true_operands}), "
         "{false_dest_pc}({false_operands})")
    _row(r, 0x58, "call", "func:callee_ordinal list.any:operands >list.any:results",
         "{results} = vm.call {callee_ordinal}({operands})")
    _row(r, 0x59, "call.variadic",
         "func:callee_ordinal list.segments:segment_sizes list.any:operands >list.any:results",
         "{results} = vm.call.variadic {callee_ordinal} segments[{segment_sizes}]({operands})")
    _row(r, 0x5A, "return", "list.any:operands", "vm.return {operands}")
    _row(r, 0x5B, "fail", "i32:status str:message", "vm.fail {status}, {message}")
    _row(r, 0x5C, "import.resolved", "func:import_ordinal >i32:result",
         "{result} = vm.import.resolved {import_ordinal}")
    _row(r, 0x5D, "yield", "pc:dest_pc remap:operands", "vm.yield {dest_pc}({operands})")
    _row(r, 0x5E, "trace", "str:event_name list.any:operands", "vm.trace {event_name}({operands})")
    _row(r, 0x5F, "print", "str:event_name list.any:operands", "vm.print {event_name}({operands})")
    _row(r, 0x60, "cond_break", "i32:condition pc:dest_pc remap:operands",
         "vm.cond_break {condition}, {dest_pc}({operands})")
    _row(r, 0x61, "break", "pc:dest_pc remap:operands", "vm.break {dest_pc}({operands})")
    loads = ("i8.u", "i8.s", "i16.u", "i16.s", "i32")
    for i, w in enumerate(loads):
        _row(r, 0x62 + i, f"buffer.load.{w}", "ref:source_buffer i64:source_offset >i32:result")
    _row(r, 0x67, "buffer.load.i64", "ref:source_buffer i64:source_offset >i64:result")
    for i, w in enumerate(("i8", "i16", "i32")):
        _row(r, 0x68 + i, f"buffer.store.{w}", "ref:target_buffer i64:target_offset i32:value",
             _T_BSTORE)
    _row(r, 0x6B, "buffer.store.i64", "ref:target_buffer i64:target_offset i64:value", _T_BSTORE)
    _row(r, 0x6C, "buffer.alloc", "i64:length i32:alignment >ref*:result")
    _row(r, 0x6D, "buffer.clone", "ref:source i64:offset i64:length i32:alignment >ref*:result")
    _row(r, 0x6E, "buffer.length", "ref:buffer >i64:result")
    _row(r, 0x6F, "buffer.copy",
         "ref:source_buffer i64:source_offset ref:target_buffer i64:target_offset i64:length")
    _row(r, 0x70, "buffer.compare",
         "ref:lhs_buffer i64:lhs_offset ref:rhs_buffer i64:rhs_offset i64:length >i32:result")
    for i, w in enumerate(("i8", "i16", "i32")):
        _row(r, 0x71 + i, f"buffer.fill.{w}",
             "ref:target_buffer i64:target_offset i64:length i32:value")
    _row(r, 0x74, "buffer.fill.i64", "ref:target_buffer i64:target_offset i64:length i64:value")
    _row(r, 0x75, "ctlz.i32", _f(_UN, "i32"))
    _row(r, 0x76, "ctlz.i64", _f(_UN, "i64"))
    _row(r, 0x77, "abs.i32", _f(_UN, "i32"))
    _row(r, 0x78, "abs.i64", _f(_UN, "i64"))
    # 0x79 is the block marker (see BLOCK_MARKER); it has no row.
    for base, bank in ((0x7A, "i32"), (0x7E, "i64")):
        for i, name in enumerate(("min.{b}.s", "min.{b}.u", "max.{b}.s", "max.{b}.u")):
            _row(r, base + i, name.format(b=bank), _f(_BIN, bank))
    _row(r, 0x82, "cast.any.ref", "ref*:operand type:result_type >ref*:result",
         "{result} = vm.{m} {operand} : !vm.ref<?> -> {result_type}")
    _row(r, 0x83, "br_table",
         "i32:index pc:default_dest_pc remap:default_operands u16:table_size cases:cases",
         "vm.br_table {index} {{ default: {default_dest_pc}({default_operands}){cases} }}")
    _row(r, 0x84, "buffer.hash", "ref:source_buffer i64:source_offset i64:length >i64:result")
    _row(r, 0x85, "discard.refs", "list.any:refs", "vm.discard.refs {refs}")
    _row(r, 0x86, "assign.ref", "ref*:source >ref*:result")
    _row(r, 0x87, "call.yieldable",
         "func:callee_ordinal list.any:operands pc:dest_pc >list.any:results",
         "vm.call.yieldable {callee_ordinal}({operands}) -> {dest_pc}({results})")
    _row(r, 0x88, "call.variadic.yieldable",
         "func:callee_ordinal list.segments:segment_sizes list.any:operands pc:dest_pc "
         ">list.any:results",
         "vm.call.variadic.yieldable {callee_ordinal} segments[{segment_sizes}]({operands})"
         " -> {dest_pc}({results})")


def _build_ext(rows, b: str) -> None:
    """Rows shared by ext_f32 (b = f32) and ext_f64 (b = f64), up to the casts."""
    _row(rows, 0x00, f"global.load.{b}", f"global:byte_offset >{b}:result", _T_GLOAD)
    _row(rows, 0x01, f"global.store.{b}", f"global:byte_offset {b}:value", _T_GSTORE)
    _row(rows, 0x02, f"global.load.indirect.{b}", f"i32:byte_offset >{b}:result", _T_GLOAD)
    _row(rows, 0x03, f"global.store.indirect.{b}", f"i32:byte_offset {b}:value", _T_GSTORE)
    _row(rows, 0x04, f"const.{b}.zero", f">{b}:result")
    _row(rows, 0x05, f"const.{b}", f"imm.{b}:value >{b}:result")
    _row(rows, 0x06, f"list.get.{b}", f"ref:list i32:index >{b}:result")
    _row(rows, 0x07, f"list.set.{b}", f"ref:list i32:index {b}:value")
    _row(rows, 0x08, f"select.{b}", f"i32:condition {b}:true_value {b}:false_value >{b}:result",
         _T_SELECT)
    _row(rows, 0x09, f"switch.{b}", f"i32:index {b}:default_value list.{b}:values >{b}:result",
         _T_SWITCH)
    for i, name in enumerate(("add", "sub", "mul", "div", "rem")):
        _row(rows, 0x0A + i, f"{name}.{b}", _f(_BIN, b))
    _row(rows, 0x0F, f"fma.{b}", _f(_TER, b))
    for i, name in enumerate(("abs", "neg", "ceil", "floor")):
        _row(rows, 0x10 + i, f"{name}.{b}", _f(_UN, b))


_MATH = [
    ("atan", 1), ("atan2", 2), ("cos", 1), ("sin", 1), ("exp", 1), ("exp2", 1),
    ("expm1", 1), ("log", 1), ("log10", 1), ("log1p", 1), ("log2", 1), ("pow", 2),
    ("rsqrt", 1), ("sqrt", 1), ("tanh", 1), ("erf", 1),
]
_FCMP = ["cmp.eq.{b}.o", "cmp.eq.{b}.u", "cmp.ne.{b}.o", "cmp.ne.{b}.u",
         "cmp.lt.{b}.o", "cmp.lt.{b}.u", "cmp.lte.{b}.o", "cmp.lte.{b}.u"]


def _build_math(rows, b: str, base: int) -> int:
    """Transcendentals, compares, cmp.nan, buffer access; returns the next opcode."""
    op = base
    for name, arity in _MATH:
        _row(rows, op, f"{name}.{b}", _f(_UN if arity == 1 else _BIN, b))
        op += 1
    for name in _FCMP:
        _row(rows, op, name.format(b=b), _f(_BIN, b, "i32"))
        op += 1
    _row(rows, op, f"cmp.nan.{b}", _f(_UN, b, "i32"))
    _row(rows, op + 1, f"buffer.load.{b}", f"ref:source_buffer i64:source_offset >{b}:result")
    _row(rows, op + 2, f"buffer.store.{b}", f"ref:target_buffer i64:target_offset {b}:value",
         _T_BSTORE)
    _row(rows, op + 3, f"buffer.fill.{b}",
         f"ref:target_buffer i64:target_offset i64:length {b}:value")
    _row(rows, op + 4, f"round.{b}", _f(_UN, b))
    _row(rows, op + 5, f"min.{b}", _f(_BIN, b))
    _row(rows, op + 6, f"max.{b}", _f(_BIN, b))
    _row(rows, op + 7, f"round.{b}.even", _f(_UN, b))
    return op + 8


def _build_f32() -> None:
    r = _F32_ROWS
    _build_ext(r, "f32")
    casts = [
        ("cast.si32.f32", "i32", "f32"), ("cast.ui32.f32", "i32", "f32"),
        ("cast.f32.si32", "f32", "i32"), ("cast.f32.ui32", "f32", "i32"),
        ("bitcast.i32.f32", "i32", "f32"), ("bitcast.f32.i32", "f32", "i32"),
    ]
    for i, (m, src, dst) in enumerate(casts):
        _row(r, 0x14 + i, m, _f(_UN, src, dst))
    op = _build_math(r, "f32", 0x1A)
    for i, (m, src, dst) in enumerate([
        ("cast.f32.si64", "f32", "i64"), ("cast.f32.ui64", "f32", "i64"),
        ("cast.si64.f32", "i64", "f32"), ("cast.ui64.f32", "i64", "f32"),
    ]):
        _row(r, op + i, m, _f(_UN, src, dst))


def _build_f64() -> None:
    r = _F64_ROWS
    _build_ext(r, "f64")
    casts = [
        ("trunc.f64.f32", "f64", "f32"), ("ext.f32.f64", "f32", "f64"),
        ("cast.si32.f64", "i32", "f64"), ("cast.ui32.f64", "i32", "f64"),
        ("cast.f64.si32", "f64", "i32"), ("cast.f64.ui32", "f64", "i32"),
        ("cast.si64.f64", "i64", "f64"), ("cast.ui64.f64", "i64", "f64"),
        ("cast.f64.si64", "f64", "i64"), ("cast.f64.ui64", "f64", "i64"),
        ("bitcast.i64.f64", "i64", "f64"), ("bitcast.f64.i64", "f64", "i64"),
    ]
    for i, (m, src, dst) in enumerate(casts):
        _row(r, 0x14 + i, m, _f(_UN, src, dst))
    _build_math(r, "f64", 0x20)


def _make_table() -> dict[tuple[str, int], OpSpec]:
    _build_core()
    _build_f32()
    _build_f64()
    table: dict[tuple[str, int], OpSpec] = {}
    for opset, rows in ((CORE, _CORE_ROWS), (EXT_F32, _F32_ROWS), (EXT_F64, _F64_ROWS)):
        for opcode, mnemonic, fields, template in rows:
            key = (opset, opcode)
            if key in table:
                raise AssertionError(f"duplicate opcode {key}")
            specs = tuple(_parse_field(t) for t in fields.split())
            if template is not None:
                template = template.replace("{m}", mnemonic)
            table[key] = OpSpec(opset, opcode, mnemonic, specs, template)
    return table


OPCODES: dict[tuple[str, int], OpSpec] = _make_table()
BY_MNEMONIC: dict[str, OpSpec] = {s.mnemonic: s for s in OPCODES.values()}

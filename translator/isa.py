"""pyree's opcode table for IREE VM bytecode 17.0 (iree-base-compiler 3.13.0).

One literal row per opcode (`grep 0x2A` finds `add.i64`): opcode set, opcode byte,
mnemonic, operand fields in encoding order, whether it ends a block (`T`), its successor
edges with their remaps, and (where it differs from the default) the `iree-dump-module`
text template. The decoder, verifier, disassembler, CFG analysis and code generator are
all driven by this table; none of them switches on opcodes to find out how to decode an
instruction or where control goes next.

Emit column: how the code generator lowers the op, the name of its emitter in
translator/codegen/ops.py (`EMIT_KINDS` says what each means); the verifier, CFG analysis
and disassembler ask it too (`calls`, `fail`, `null`) rather than matching mnemonics.

Edges column: space-separated `pc_field(remap_field)` (remap omitted: `pc_field()`), or
`cases` for br_table's (pc, remap) pairs, in the order `Op.edges()` yields them.

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


# Emit kinds: what each op lowers to in generated code (translator/codegen/ops.py).
EMIT_KINDS = {
    "const": "a literal",
    "null": "a null ref (the register released)",
    "rodata": "the rodata segment's local",
    "numeric": "runtime_support.vm.numerics: its INLINE form, else a call of the function",
    "select": "a conditional expression",
    "switch": "a tuple indexed with a default",
    "switch_i64": "switch, each listed value read as its low 32 bits (as IREE 3.13 does)",
    "global": "a load/store helper of runtime_support.vm.globals",
    "list": "a helper of runtime_support.vm.list",
    "list_alloc": "list_alloc with the element type",
    "buffer": "a helper of runtime_support.vm.buffer",
    "assign": "a plain assignment",
    "cast": "cast_any_ref with the target type",
    "call": "a call of an import or of a generated function",
    "import_resolved": "whether the import's local is bound",
    "discard": "releases",
    "comment": "a comment (trace/print events)",
    "fail": "`if status: raise vm_fail(...)`; as a terminator, the raise",
    "return": "return (terminator)",
    "branch": "an unconditional edge (terminator)",
    "cond_br": "a two-way edge (terminator)",
    "br_table": "an if/elif chain of edges (terminator)",
    "call_yield": "a call, then an edge (terminator)",
    "unsupported": "rejected by the decoder",
}
CALL_KINDS = frozenset({"call", "call_yield"})


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
    is_terminator: bool = False
    edges: tuple[tuple[str, str | None], ...] = ()  # (pc field, remap field); ("cases", None)
    emit: str = ""  # how the code generator lowers it: one of EMIT_KINDS

    @property
    def key(self) -> tuple[str, int]:
        return (self.opcode_set, self.opcode)

    @property
    def cannot_fail(self) -> bool:
        """An integer op whose semantics cannot fail (see CANNOT_FAIL)."""
        return self.mnemonic in CANNOT_FAIL

    @property
    def float_compare(self) -> bool:
        """An f32 compare (see FLOAT_COMPARES): it cannot fail."""
        return self.mnemonic in FLOAT_COMPARES

    @property
    def fails_on_divisor(self) -> bool:
        """An integer division or remainder (see FAILS_ON_DIVISOR)."""
        return self.mnemonic in FAILS_ON_DIVISOR

    @property
    def integer_const(self) -> bool:
        """An integer constant: its one register field gets `value` (0 without one)."""
        return self.emit == "const" and self.fields[-1].bank in ("i32", "i64")

    def field(self, name: str) -> FieldSpec:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)


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


# Templates shared by families (`{m}` is the row's mnemonic).
_T_GLOAD = "{result} = vm.{m} .rwdata[{byte_offset}]"
_T_GSTORE = "vm.{m} {value}, .rwdata[{byte_offset}]"
_T_GLOAD_REF = "{value} = vm.{m} .refs[{global}] : {type_def}"
_T_GSTORE_REF = "vm.{m} {value}, .refs[{global}] : {type_def}"
_T_SELECT = "{result} = vm.{m} {condition} ? {true_value} : {false_value}"
_T_SWITCH = "{result} = vm.{m} {index}[{values}] else {default_value}"
_T_BSTORE = "vm.{m} {value}, {target_buffer}, {target_offset}"

# (set, opcode, mnemonic, fields, terminator, edges, emit, template)
ROWS: tuple[tuple[str, int, str, str, str, str, str, str | None], ...] = (
    # -- core ------------------------------------------------------------
    (CORE, 0x00, "global.load.i32", "global:byte_offset >i32:result", "", "", "global", _T_GLOAD),
    (CORE, 0x01, "global.store.i32", "global:byte_offset i32:value", "", "", "global", _T_GSTORE),
    (CORE, 0x02, "global.load.indirect.i32", "i32:byte_offset >i32:result", "", "", "global", _T_GLOAD),
    (CORE, 0x03, "global.store.indirect.i32", "i32:byte_offset i32:value", "", "", "global", _T_GSTORE),
    (CORE, 0x04, "global.load.i64", "global:byte_offset >i64:result", "", "", "global", _T_GLOAD),
    (CORE, 0x05, "global.store.i64", "global:byte_offset i64:value", "", "", "global", _T_GSTORE),
    (CORE, 0x06, "global.load.indirect.i64", "i32:byte_offset >i64:result", "", "", "global", _T_GLOAD),
    (CORE, 0x07, "global.store.indirect.i64", "i32:byte_offset i64:value", "", "", "global", _T_GSTORE),
    (CORE, 0x08, "global.load.ref", "global:global type:type_def >ref*:value", "", "", "global", _T_GLOAD_REF),
    (CORE, 0x09, "global.store.ref", "global:global type:type_def ref*:value", "", "", "global", _T_GSTORE_REF),
    (CORE, 0x0A, "global.load.indirect.ref", "i32:global type:type_def >ref*:value", "", "", "global", _T_GLOAD_REF),
    (CORE, 0x0B, "global.store.indirect.ref", "i32:global type:type_def ref*:value", "", "", "global", _T_GSTORE_REF),
    (CORE, 0x0C, "const.i32.zero", ">i32:result", "", "", "const", None),
    (CORE, 0x0D, "const.i32", "imm.i32:value >i32:result", "", "", "const", None),
    (CORE, 0x0E, "const.i64.zero", ">i64:result", "", "", "const", None),
    (CORE, 0x0F, "const.i64", "imm.i64:value >i64:result", "", "", "const", None),
    (CORE, 0x10, "const.ref.zero", ">ref*:result", "", "", "null", None),
    (CORE, 0x11, "const.ref.rodata", "rodata:rodata >ref*:value", "", "", "rodata", None),
    (CORE, 0x12, "list.alloc", "type:element_type i32:initial_capacity >ref*:result", "", "", "list_alloc", '{result} = vm.list.alloc {initial_capacity} : !vm.list<{element_type}>'),
    (CORE, 0x13, "list.reserve", "ref:list i32:minimum_capacity", "", "", "list", None),
    (CORE, 0x14, "list.size", "ref:list >i32:result", "", "", "list", None),
    (CORE, 0x15, "list.resize", "ref:list i32:new_size", "", "", "list", None),
    (CORE, 0x16, "list.get.i32", "ref:list i32:index >i32:result", "", "", "list", None),
    (CORE, 0x17, "list.set.i32", "ref:list i32:index i32:value", "", "", "list", None),
    (CORE, 0x18, "list.get.i64", "ref:list i32:index >i64:result", "", "", "list", None),
    (CORE, 0x19, "list.set.i64", "ref:list i32:index i64:value", "", "", "list", None),
    (CORE, 0x1A, "list.get.ref", "ref:list i32:index type:type_def >ref*:result", "", "", "list", '{result} = vm.list.get.ref {list}, {index} : {type_def}'),
    (CORE, 0x1B, "list.set.ref", "ref:list i32:index ref*:value", "", "", "list", None),
    (CORE, 0x1C, "select.i32", "i32:condition i32:true_value i32:false_value >i32:result", "", "", "select", _T_SELECT),
    (CORE, 0x1D, "select.i64", "i32:condition i64:true_value i64:false_value >i64:result", "", "", "select", _T_SELECT),
    (CORE, 0x1E, "select.ref", "i32:condition type:true_value_type_def ref*:true_value ref*:false_value >ref*:result", "", "", "select", '{result} = vm.select.ref {condition} ? {true_value} : {false_value} -> {true_value_type_def}'),
    (CORE, 0x1F, "switch.i32", "i32:index i32:default_value list.i32:values >i32:result", "", "", "switch", _T_SWITCH),
    (CORE, 0x20, "switch.i64", "i32:index i64:default_value list.i64:values >i64:result", "", "", "switch_i64", _T_SWITCH),
    (CORE, 0x21, "switch.ref", "i32:index type:type_def ref*:default_value list.ref*:values >ref*:result", "", "", "switch", _T_SWITCH),
    (CORE, 0x22, "add.i32", "i32:left i32:right >i32:result", "", "", "numeric", None),
    (CORE, 0x23, "sub.i32", "i32:left i32:right >i32:result", "", "", "numeric", None),
    (CORE, 0x24, "mul.i32", "i32:left i32:right >i32:result", "", "", "numeric", None),
    (CORE, 0x25, "div.i32.s", "i32:left i32:right >i32:result", "", "", "numeric", None),
    (CORE, 0x26, "div.i32.u", "i32:left i32:right >i32:result", "", "", "numeric", None),
    (CORE, 0x27, "rem.i32.s", "i32:left i32:right >i32:result", "", "", "numeric", None),
    (CORE, 0x28, "rem.i32.u", "i32:left i32:right >i32:result", "", "", "numeric", None),
    (CORE, 0x29, "fma.i32", "i32:first i32:second i32:third >i32:result", "", "", "numeric", None),
    (CORE, 0x2A, "add.i64", "i64:left i64:right >i64:result", "", "", "numeric", None),
    (CORE, 0x2B, "sub.i64", "i64:left i64:right >i64:result", "", "", "numeric", None),
    (CORE, 0x2C, "mul.i64", "i64:left i64:right >i64:result", "", "", "numeric", None),
    (CORE, 0x2D, "div.i64.s", "i64:left i64:right >i64:result", "", "", "numeric", None),
    (CORE, 0x2E, "div.i64.u", "i64:left i64:right >i64:result", "", "", "numeric", None),
    (CORE, 0x2F, "rem.i64.s", "i64:left i64:right >i64:result", "", "", "numeric", None),
    (CORE, 0x30, "rem.i64.u", "i64:left i64:right >i64:result", "", "", "numeric", None),
    (CORE, 0x31, "fma.i64", "i64:first i64:second i64:third >i64:result", "", "", "numeric", None),
    (CORE, 0x32, "not.i32", "i32:operand >i32:result", "", "", "numeric", None),
    (CORE, 0x33, "and.i32", "i32:left i32:right >i32:result", "", "", "numeric", None),
    (CORE, 0x34, "or.i32", "i32:left i32:right >i32:result", "", "", "numeric", None),
    (CORE, 0x35, "xor.i32", "i32:left i32:right >i32:result", "", "", "numeric", None),
    (CORE, 0x36, "not.i64", "i64:operand >i64:result", "", "", "numeric", None),
    (CORE, 0x37, "and.i64", "i64:left i64:right >i64:result", "", "", "numeric", None),
    (CORE, 0x38, "or.i64", "i64:left i64:right >i64:result", "", "", "numeric", None),
    (CORE, 0x39, "xor.i64", "i64:left i64:right >i64:result", "", "", "numeric", None),
    (CORE, 0x3A, "shl.i32", "i32:operand i32:amount >i32:result", "", "", "numeric", None),
    (CORE, 0x3B, "shr.i32.s", "i32:operand i32:amount >i32:result", "", "", "numeric", None),
    (CORE, 0x3C, "shr.i32.u", "i32:operand i32:amount >i32:result", "", "", "numeric", None),
    (CORE, 0x3D, "shl.i64", "i64:operand i32:amount >i64:result", "", "", "numeric", None),
    (CORE, 0x3E, "shr.i64.s", "i64:operand i32:amount >i64:result", "", "", "numeric", None),
    (CORE, 0x3F, "shr.i64.u", "i64:operand i32:amount >i64:result", "", "", "numeric", None),
    (CORE, 0x40, "trunc.i32.i8", "i32:operand >i32:result", "", "", "numeric", None),
    (CORE, 0x41, "trunc.i32.i16", "i32:operand >i32:result", "", "", "numeric", None),
    (CORE, 0x42, "trunc.i64.i32", "i64:operand >i32:result", "", "", "numeric", None),
    (CORE, 0x43, "ext.i8.i32.s", "i32:operand >i32:result", "", "", "numeric", None),
    (CORE, 0x44, "ext.i8.i32.u", "i32:operand >i32:result", "", "", "numeric", None),
    (CORE, 0x45, "ext.i16.i32.s", "i32:operand >i32:result", "", "", "numeric", None),
    (CORE, 0x46, "ext.i16.i32.u", "i32:operand >i32:result", "", "", "numeric", None),
    (CORE, 0x47, "ext.i32.i64.s", "i32:operand >i64:result", "", "", "numeric", None),
    (CORE, 0x48, "ext.i32.i64.u", "i32:operand >i64:result", "", "", "numeric", None),
    (CORE, 0x49, "cmp.eq.i32", "i32:left i32:right >i32:result", "", "", "numeric", None),
    (CORE, 0x4A, "cmp.ne.i32", "i32:left i32:right >i32:result", "", "", "numeric", None),
    (CORE, 0x4B, "cmp.lt.i32.s", "i32:left i32:right >i32:result", "", "", "numeric", None),
    (CORE, 0x4C, "cmp.lt.i32.u", "i32:left i32:right >i32:result", "", "", "numeric", None),
    (CORE, 0x4D, "cmp.nz.i32", "i32:operand >i32:result", "", "", "numeric", None),
    (CORE, 0x4E, "cmp.eq.i64", "i64:left i64:right >i32:result", "", "", "numeric", None),
    (CORE, 0x4F, "cmp.ne.i64", "i64:left i64:right >i32:result", "", "", "numeric", None),
    (CORE, 0x50, "cmp.lt.i64.s", "i64:left i64:right >i32:result", "", "", "numeric", None),
    (CORE, 0x51, "cmp.lt.i64.u", "i64:left i64:right >i32:result", "", "", "numeric", None),
    (CORE, 0x52, "cmp.nz.i64", "i64:operand >i32:result", "", "", "numeric", None),
    (CORE, 0x53, "cmp.eq.ref", "ref:left ref:right >i32:result", "", "", "numeric", None),
    (CORE, 0x54, "cmp.ne.ref", "ref:left ref:right >i32:result", "", "", "numeric", None),
    (CORE, 0x55, "cmp.nz.ref", "ref:operand >i32:result", "", "", "numeric", None),
    (CORE, 0x56, "br", "pc:dest_pc remap:operands", "T", "dest_pc(operands)", "branch", 'vm.br {dest_pc}({operands})'),
    (CORE, 0x57, "cond_br", "i32:condition pc:true_dest_pc remap:true_operands pc:false_dest_pc remap:false_operands", "T", "true_dest_pc(true_operands) false_dest_pc(false_operands)", "cond_br", 'vm.cond_br {condition}, {true_dest_pc}({true_operands}), {false_dest_pc}({false_operands})'),
    (CORE, 0x58, "call", "func:callee_ordinal list.any:operands >list.any:results", "", "", "call", '{results} = vm.call {callee_ordinal}({operands})'),
    (CORE, 0x59, "call.variadic", "func:callee_ordinal list.segments:segment_sizes list.any:operands >list.any:results", "", "", "call", '{results} = vm.call.variadic {callee_ordinal} segments[{segment_sizes}]({operands})'),
    (CORE, 0x5A, "return", "list.any:operands", "T", "", "return", 'vm.return {operands}'),
    (CORE, 0x5B, "fail", "i32:status str:message", "T", "", "fail", 'vm.fail {status}, {message}'),
    (CORE, 0x5C, "import.resolved", "func:import_ordinal >i32:result", "", "", "import_resolved", '{result} = vm.import.resolved {import_ordinal}'),
    (CORE, 0x5D, "yield", "pc:dest_pc remap:operands", "T", "dest_pc(operands)", "branch", 'vm.yield {dest_pc}({operands})'),
    (CORE, 0x5E, "trace", "str:event_name list.any:operands", "", "", "comment", 'vm.trace {event_name}({operands})'),
    (CORE, 0x5F, "print", "str:event_name list.any:operands", "", "", "comment", 'vm.print {event_name}({operands})'),
    (CORE, 0x60, "cond_break", "i32:condition pc:dest_pc remap:operands", "T", "dest_pc(operands)", "unsupported", 'vm.cond_break {condition}, {dest_pc}({operands})'),
    (CORE, 0x61, "break", "pc:dest_pc remap:operands", "T", "dest_pc(operands)", "branch", 'vm.break {dest_pc}({operands})'),
    (CORE, 0x62, "buffer.load.i8.u", "ref:source_buffer i64:source_offset >i32:result", "", "", "buffer", None),
    (CORE, 0x63, "buffer.load.i8.s", "ref:source_buffer i64:source_offset >i32:result", "", "", "buffer", None),
    (CORE, 0x64, "buffer.load.i16.u", "ref:source_buffer i64:source_offset >i32:result", "", "", "buffer", None),
    (CORE, 0x65, "buffer.load.i16.s", "ref:source_buffer i64:source_offset >i32:result", "", "", "buffer", None),
    (CORE, 0x66, "buffer.load.i32", "ref:source_buffer i64:source_offset >i32:result", "", "", "buffer", None),
    (CORE, 0x67, "buffer.load.i64", "ref:source_buffer i64:source_offset >i64:result", "", "", "buffer", None),
    (CORE, 0x68, "buffer.store.i8", "ref:target_buffer i64:target_offset i32:value", "", "", "buffer", _T_BSTORE),
    (CORE, 0x69, "buffer.store.i16", "ref:target_buffer i64:target_offset i32:value", "", "", "buffer", _T_BSTORE),
    (CORE, 0x6A, "buffer.store.i32", "ref:target_buffer i64:target_offset i32:value", "", "", "buffer", _T_BSTORE),
    (CORE, 0x6B, "buffer.store.i64", "ref:target_buffer i64:target_offset i64:value", "", "", "buffer", _T_BSTORE),
    (CORE, 0x6C, "buffer.alloc", "i64:length i32:alignment >ref*:result", "", "", "buffer", None),
    (CORE, 0x6D, "buffer.clone", "ref:source i64:offset i64:length i32:alignment >ref*:result", "", "", "buffer", None),
    (CORE, 0x6E, "buffer.length", "ref:buffer >i64:result", "", "", "buffer", None),
    (CORE, 0x6F, "buffer.copy", "ref:source_buffer i64:source_offset ref:target_buffer i64:target_offset i64:length", "", "", "buffer", None),
    (CORE, 0x70, "buffer.compare", "ref:lhs_buffer i64:lhs_offset ref:rhs_buffer i64:rhs_offset i64:length >i32:result", "", "", "buffer", None),
    (CORE, 0x71, "buffer.fill.i8", "ref:target_buffer i64:target_offset i64:length i32:value", "", "", "buffer", None),
    (CORE, 0x72, "buffer.fill.i16", "ref:target_buffer i64:target_offset i64:length i32:value", "", "", "buffer", None),
    (CORE, 0x73, "buffer.fill.i32", "ref:target_buffer i64:target_offset i64:length i32:value", "", "", "buffer", None),
    (CORE, 0x74, "buffer.fill.i64", "ref:target_buffer i64:target_offset i64:length i64:value", "", "", "buffer", None),
    (CORE, 0x75, "ctlz.i32", "i32:operand >i32:result", "", "", "numeric", None),
    (CORE, 0x76, "ctlz.i64", "i64:operand >i64:result", "", "", "numeric", None),
    (CORE, 0x77, "abs.i32", "i32:operand >i32:result", "", "", "numeric", None),
    (CORE, 0x78, "abs.i64", "i64:operand >i64:result", "", "", "numeric", None),
    (CORE, 0x7A, "min.i32.s", "i32:left i32:right >i32:result", "", "", "numeric", None),
    (CORE, 0x7B, "min.i32.u", "i32:left i32:right >i32:result", "", "", "numeric", None),
    (CORE, 0x7C, "max.i32.s", "i32:left i32:right >i32:result", "", "", "numeric", None),
    (CORE, 0x7D, "max.i32.u", "i32:left i32:right >i32:result", "", "", "numeric", None),
    (CORE, 0x7E, "min.i64.s", "i64:left i64:right >i64:result", "", "", "numeric", None),
    (CORE, 0x7F, "min.i64.u", "i64:left i64:right >i64:result", "", "", "numeric", None),
    (CORE, 0x80, "max.i64.s", "i64:left i64:right >i64:result", "", "", "numeric", None),
    (CORE, 0x81, "max.i64.u", "i64:left i64:right >i64:result", "", "", "numeric", None),
    (CORE, 0x82, "cast.any.ref", "ref*:operand type:result_type >ref*:result", "", "", "cast", '{result} = vm.cast.any.ref {operand} : !vm.ref<?> -> {result_type}'),
    (CORE, 0x83, "br_table", "i32:index pc:default_dest_pc remap:default_operands u16:table_size cases:cases", "T", "default_dest_pc(default_operands) cases", "br_table", 'vm.br_table {index} {{ default: {default_dest_pc}({default_operands}){cases} }}'),
    (CORE, 0x84, "buffer.hash", "ref:source_buffer i64:source_offset i64:length >i64:result", "", "", "buffer", None),
    (CORE, 0x85, "discard.refs", "list.any:refs", "", "", "discard", 'vm.discard.refs {refs}'),
    (CORE, 0x86, "assign.ref", "ref*:source >ref*:result", "", "", "assign", None),
    (CORE, 0x87, "call.yieldable", "func:callee_ordinal list.any:operands pc:dest_pc >list.any:results", "T", "dest_pc()", "call_yield", 'vm.call.yieldable {callee_ordinal}({operands}) -> {dest_pc}({results})'),
    (CORE, 0x88, "call.variadic.yieldable", "func:callee_ordinal list.segments:segment_sizes list.any:operands pc:dest_pc >list.any:results", "T", "dest_pc()", "call_yield", 'vm.call.variadic.yieldable {callee_ordinal} segments[{segment_sizes}]({operands}) -> {dest_pc}({results})'),
    # -- ext_f32 ------------------------------------------------------------
    (EXT_F32, 0x00, "global.load.f32", "global:byte_offset >f32:result", "", "", "global", _T_GLOAD),
    (EXT_F32, 0x01, "global.store.f32", "global:byte_offset f32:value", "", "", "global", _T_GSTORE),
    (EXT_F32, 0x02, "global.load.indirect.f32", "i32:byte_offset >f32:result", "", "", "global", _T_GLOAD),
    (EXT_F32, 0x03, "global.store.indirect.f32", "i32:byte_offset f32:value", "", "", "global", _T_GSTORE),
    (EXT_F32, 0x04, "const.f32.zero", ">f32:result", "", "", "const", None),
    (EXT_F32, 0x05, "const.f32", "imm.f32:value >f32:result", "", "", "const", None),
    (EXT_F32, 0x06, "list.get.f32", "ref:list i32:index >f32:result", "", "", "list", None),
    (EXT_F32, 0x07, "list.set.f32", "ref:list i32:index f32:value", "", "", "list", None),
    (EXT_F32, 0x08, "select.f32", "i32:condition f32:true_value f32:false_value >f32:result", "", "", "select", _T_SELECT),
    (EXT_F32, 0x09, "switch.f32", "i32:index f32:default_value list.f32:values >f32:result", "", "", "switch", _T_SWITCH),
    (EXT_F32, 0x0A, "add.f32", "f32:left f32:right >f32:result", "", "", "numeric", None),
    (EXT_F32, 0x0B, "sub.f32", "f32:left f32:right >f32:result", "", "", "numeric", None),
    (EXT_F32, 0x0C, "mul.f32", "f32:left f32:right >f32:result", "", "", "numeric", None),
    (EXT_F32, 0x0D, "div.f32", "f32:left f32:right >f32:result", "", "", "numeric", None),
    (EXT_F32, 0x0E, "rem.f32", "f32:left f32:right >f32:result", "", "", "numeric", None),
    (EXT_F32, 0x0F, "fma.f32", "f32:first f32:second f32:third >f32:result", "", "", "numeric", None),
    (EXT_F32, 0x10, "abs.f32", "f32:operand >f32:result", "", "", "numeric", None),
    (EXT_F32, 0x11, "neg.f32", "f32:operand >f32:result", "", "", "numeric", None),
    (EXT_F32, 0x12, "ceil.f32", "f32:operand >f32:result", "", "", "numeric", None),
    (EXT_F32, 0x13, "floor.f32", "f32:operand >f32:result", "", "", "numeric", None),
    (EXT_F32, 0x14, "cast.si32.f32", "i32:operand >f32:result", "", "", "numeric", None),
    (EXT_F32, 0x15, "cast.ui32.f32", "i32:operand >f32:result", "", "", "numeric", None),
    (EXT_F32, 0x16, "cast.f32.si32", "f32:operand >i32:result", "", "", "numeric", None),
    (EXT_F32, 0x17, "cast.f32.ui32", "f32:operand >i32:result", "", "", "numeric", None),
    (EXT_F32, 0x18, "bitcast.i32.f32", "i32:operand >f32:result", "", "", "numeric", None),
    (EXT_F32, 0x19, "bitcast.f32.i32", "f32:operand >i32:result", "", "", "numeric", None),
    (EXT_F32, 0x1A, "atan.f32", "f32:operand >f32:result", "", "", "numeric", None),
    (EXT_F32, 0x1B, "atan2.f32", "f32:left f32:right >f32:result", "", "", "numeric", None),
    (EXT_F32, 0x1C, "cos.f32", "f32:operand >f32:result", "", "", "numeric", None),
    (EXT_F32, 0x1D, "sin.f32", "f32:operand >f32:result", "", "", "numeric", None),
    (EXT_F32, 0x1E, "exp.f32", "f32:operand >f32:result", "", "", "numeric", None),
    (EXT_F32, 0x1F, "exp2.f32", "f32:operand >f32:result", "", "", "numeric", None),
    (EXT_F32, 0x20, "expm1.f32", "f32:operand >f32:result", "", "", "numeric", None),
    (EXT_F32, 0x21, "log.f32", "f32:operand >f32:result", "", "", "numeric", None),
    (EXT_F32, 0x22, "log10.f32", "f32:operand >f32:result", "", "", "numeric", None),
    (EXT_F32, 0x23, "log1p.f32", "f32:operand >f32:result", "", "", "numeric", None),
    (EXT_F32, 0x24, "log2.f32", "f32:operand >f32:result", "", "", "numeric", None),
    (EXT_F32, 0x25, "pow.f32", "f32:left f32:right >f32:result", "", "", "numeric", None),
    (EXT_F32, 0x26, "rsqrt.f32", "f32:operand >f32:result", "", "", "numeric", None),
    (EXT_F32, 0x27, "sqrt.f32", "f32:operand >f32:result", "", "", "numeric", None),
    (EXT_F32, 0x28, "tanh.f32", "f32:operand >f32:result", "", "", "numeric", None),
    (EXT_F32, 0x29, "erf.f32", "f32:operand >f32:result", "", "", "numeric", None),
    (EXT_F32, 0x2A, "cmp.eq.f32.o", "f32:left f32:right >i32:result", "", "", "numeric", None),
    (EXT_F32, 0x2B, "cmp.eq.f32.u", "f32:left f32:right >i32:result", "", "", "numeric", None),
    (EXT_F32, 0x2C, "cmp.ne.f32.o", "f32:left f32:right >i32:result", "", "", "numeric", None),
    (EXT_F32, 0x2D, "cmp.ne.f32.u", "f32:left f32:right >i32:result", "", "", "numeric", None),
    (EXT_F32, 0x2E, "cmp.lt.f32.o", "f32:left f32:right >i32:result", "", "", "numeric", None),
    (EXT_F32, 0x2F, "cmp.lt.f32.u", "f32:left f32:right >i32:result", "", "", "numeric", None),
    (EXT_F32, 0x30, "cmp.lte.f32.o", "f32:left f32:right >i32:result", "", "", "numeric", None),
    (EXT_F32, 0x31, "cmp.lte.f32.u", "f32:left f32:right >i32:result", "", "", "numeric", None),
    (EXT_F32, 0x32, "cmp.nan.f32", "f32:operand >i32:result", "", "", "numeric", None),
    (EXT_F32, 0x33, "buffer.load.f32", "ref:source_buffer i64:source_offset >f32:result", "", "", "buffer", None),
    (EXT_F32, 0x34, "buffer.store.f32", "ref:target_buffer i64:target_offset f32:value", "", "", "buffer", _T_BSTORE),
    (EXT_F32, 0x35, "buffer.fill.f32", "ref:target_buffer i64:target_offset i64:length f32:value", "", "", "buffer", None),
    (EXT_F32, 0x36, "round.f32", "f32:operand >f32:result", "", "", "numeric", None),
    (EXT_F32, 0x37, "min.f32", "f32:left f32:right >f32:result", "", "", "numeric", None),
    (EXT_F32, 0x38, "max.f32", "f32:left f32:right >f32:result", "", "", "numeric", None),
    (EXT_F32, 0x39, "round.f32.even", "f32:operand >f32:result", "", "", "numeric", None),
    (EXT_F32, 0x3A, "cast.f32.si64", "f32:operand >i64:result", "", "", "numeric", None),
    (EXT_F32, 0x3B, "cast.f32.ui64", "f32:operand >i64:result", "", "", "numeric", None),
    (EXT_F32, 0x3C, "cast.si64.f32", "i64:operand >f32:result", "", "", "numeric", None),
    (EXT_F32, 0x3D, "cast.ui64.f32", "i64:operand >f32:result", "", "", "numeric", None),
    # -- ext_f64 ------------------------------------------------------------
    (EXT_F64, 0x00, "global.load.f64", "global:byte_offset >f64:result", "", "", "global", _T_GLOAD),
    (EXT_F64, 0x01, "global.store.f64", "global:byte_offset f64:value", "", "", "global", _T_GSTORE),
    (EXT_F64, 0x02, "global.load.indirect.f64", "i32:byte_offset >f64:result", "", "", "global", _T_GLOAD),
    (EXT_F64, 0x03, "global.store.indirect.f64", "i32:byte_offset f64:value", "", "", "global", _T_GSTORE),
    (EXT_F64, 0x04, "const.f64.zero", ">f64:result", "", "", "const", None),
    (EXT_F64, 0x05, "const.f64", "imm.f64:value >f64:result", "", "", "const", None),
    (EXT_F64, 0x06, "list.get.f64", "ref:list i32:index >f64:result", "", "", "list", None),
    (EXT_F64, 0x07, "list.set.f64", "ref:list i32:index f64:value", "", "", "list", None),
    (EXT_F64, 0x08, "select.f64", "i32:condition f64:true_value f64:false_value >f64:result", "", "", "select", _T_SELECT),
    (EXT_F64, 0x09, "switch.f64", "i32:index f64:default_value list.f64:values >f64:result", "", "", "switch", _T_SWITCH),
    (EXT_F64, 0x0A, "add.f64", "f64:left f64:right >f64:result", "", "", "numeric", None),
    (EXT_F64, 0x0B, "sub.f64", "f64:left f64:right >f64:result", "", "", "numeric", None),
    (EXT_F64, 0x0C, "mul.f64", "f64:left f64:right >f64:result", "", "", "numeric", None),
    (EXT_F64, 0x0D, "div.f64", "f64:left f64:right >f64:result", "", "", "numeric", None),
    (EXT_F64, 0x0E, "rem.f64", "f64:left f64:right >f64:result", "", "", "numeric", None),
    (EXT_F64, 0x0F, "fma.f64", "f64:first f64:second f64:third >f64:result", "", "", "numeric", None),
    (EXT_F64, 0x10, "abs.f64", "f64:operand >f64:result", "", "", "numeric", None),
    (EXT_F64, 0x11, "neg.f64", "f64:operand >f64:result", "", "", "numeric", None),
    (EXT_F64, 0x12, "ceil.f64", "f64:operand >f64:result", "", "", "numeric", None),
    (EXT_F64, 0x13, "floor.f64", "f64:operand >f64:result", "", "", "numeric", None),
    (EXT_F64, 0x14, "trunc.f64.f32", "f64:operand >f32:result", "", "", "numeric", None),
    (EXT_F64, 0x15, "ext.f32.f64", "f32:operand >f64:result", "", "", "numeric", None),
    (EXT_F64, 0x16, "cast.si32.f64", "i32:operand >f64:result", "", "", "numeric", None),
    (EXT_F64, 0x17, "cast.ui32.f64", "i32:operand >f64:result", "", "", "numeric", None),
    (EXT_F64, 0x18, "cast.f64.si32", "f64:operand >i32:result", "", "", "numeric", None),
    (EXT_F64, 0x19, "cast.f64.ui32", "f64:operand >i32:result", "", "", "numeric", None),
    (EXT_F64, 0x1A, "cast.si64.f64", "i64:operand >f64:result", "", "", "numeric", None),
    (EXT_F64, 0x1B, "cast.ui64.f64", "i64:operand >f64:result", "", "", "numeric", None),
    (EXT_F64, 0x1C, "cast.f64.si64", "f64:operand >i64:result", "", "", "numeric", None),
    (EXT_F64, 0x1D, "cast.f64.ui64", "f64:operand >i64:result", "", "", "numeric", None),
    (EXT_F64, 0x1E, "bitcast.i64.f64", "i64:operand >f64:result", "", "", "numeric", None),
    (EXT_F64, 0x1F, "bitcast.f64.i64", "f64:operand >i64:result", "", "", "numeric", None),
    (EXT_F64, 0x20, "atan.f64", "f64:operand >f64:result", "", "", "numeric", None),
    (EXT_F64, 0x21, "atan2.f64", "f64:left f64:right >f64:result", "", "", "numeric", None),
    (EXT_F64, 0x22, "cos.f64", "f64:operand >f64:result", "", "", "numeric", None),
    (EXT_F64, 0x23, "sin.f64", "f64:operand >f64:result", "", "", "numeric", None),
    (EXT_F64, 0x24, "exp.f64", "f64:operand >f64:result", "", "", "numeric", None),
    (EXT_F64, 0x25, "exp2.f64", "f64:operand >f64:result", "", "", "numeric", None),
    (EXT_F64, 0x26, "expm1.f64", "f64:operand >f64:result", "", "", "numeric", None),
    (EXT_F64, 0x27, "log.f64", "f64:operand >f64:result", "", "", "numeric", None),
    (EXT_F64, 0x28, "log10.f64", "f64:operand >f64:result", "", "", "numeric", None),
    (EXT_F64, 0x29, "log1p.f64", "f64:operand >f64:result", "", "", "numeric", None),
    (EXT_F64, 0x2A, "log2.f64", "f64:operand >f64:result", "", "", "numeric", None),
    (EXT_F64, 0x2B, "pow.f64", "f64:left f64:right >f64:result", "", "", "numeric", None),
    (EXT_F64, 0x2C, "rsqrt.f64", "f64:operand >f64:result", "", "", "numeric", None),
    (EXT_F64, 0x2D, "sqrt.f64", "f64:operand >f64:result", "", "", "numeric", None),
    (EXT_F64, 0x2E, "tanh.f64", "f64:operand >f64:result", "", "", "numeric", None),
    (EXT_F64, 0x2F, "erf.f64", "f64:operand >f64:result", "", "", "numeric", None),
    (EXT_F64, 0x30, "cmp.eq.f64.o", "f64:left f64:right >i32:result", "", "", "numeric", None),
    (EXT_F64, 0x31, "cmp.eq.f64.u", "f64:left f64:right >i32:result", "", "", "numeric", None),
    (EXT_F64, 0x32, "cmp.ne.f64.o", "f64:left f64:right >i32:result", "", "", "numeric", None),
    (EXT_F64, 0x33, "cmp.ne.f64.u", "f64:left f64:right >i32:result", "", "", "numeric", None),
    (EXT_F64, 0x34, "cmp.lt.f64.o", "f64:left f64:right >i32:result", "", "", "numeric", None),
    (EXT_F64, 0x35, "cmp.lt.f64.u", "f64:left f64:right >i32:result", "", "", "numeric", None),
    (EXT_F64, 0x36, "cmp.lte.f64.o", "f64:left f64:right >i32:result", "", "", "numeric", None),
    (EXT_F64, 0x37, "cmp.lte.f64.u", "f64:left f64:right >i32:result", "", "", "numeric", None),
    (EXT_F64, 0x38, "cmp.nan.f64", "f64:operand >i32:result", "", "", "numeric", None),
    (EXT_F64, 0x39, "buffer.load.f64", "ref:source_buffer i64:source_offset >f64:result", "", "", "buffer", None),
    (EXT_F64, 0x3A, "buffer.store.f64", "ref:target_buffer i64:target_offset f64:value", "", "", "buffer", _T_BSTORE),
    (EXT_F64, 0x3B, "buffer.fill.f64", "ref:target_buffer i64:target_offset i64:length f64:value", "", "", "buffer", None),
    (EXT_F64, 0x3C, "round.f64", "f64:operand >f64:result", "", "", "numeric", None),
    (EXT_F64, 0x3D, "min.f64", "f64:left f64:right >f64:result", "", "", "numeric", None),
    (EXT_F64, 0x3E, "max.f64", "f64:left f64:right >f64:result", "", "", "numeric", None),
    (EXT_F64, 0x3F, "round.f64.even", "f64:operand >f64:result", "", "", "numeric", None),
)


def _parse_edges(text: str) -> tuple[tuple[str, str | None], ...]:
    out = []
    for token in text.split():
        if token == "cases":
            out.append(("cases", None))
            continue
        pc, _, rest = token.partition("(")
        out.append((pc, rest.rstrip(")") or None))
    return tuple(out)


def _make_table() -> dict[tuple[str, int], OpSpec]:
    table: dict[tuple[str, int], OpSpec] = {}
    for opset, opcode, mnemonic, fields, term, edges, emit, template in ROWS:
        key = (opset, opcode)
        if key in table:
            raise AssertionError(f"duplicate opcode {key}")
        specs = tuple(_parse_field(t) for t in fields.split())
        names = {f.name for f in specs}
        parsed = _parse_edges(edges)
        for pc, remap in parsed:
            if pc not in names or (remap is not None and remap not in names):
                raise AssertionError(f"{mnemonic}: edge {pc}({remap}) names no field")
        if template is not None:
            template = template.replace("{m}", mnemonic)
        if emit not in EMIT_KINDS:
            raise AssertionError(f"{mnemonic}: unknown emit kind {emit!r}")
        table[key] = OpSpec(opset, opcode, mnemonic, specs, template, term == "T", parsed, emit)
    return table


# Integer ops (and bit casts) whose semantics (runtime_support.vm.numerics) cannot fail,
# whatever their operands: a queue region's steps' effects may pass them (analyses/constants.py
# `movable`: workgroup counts between a command buffer's recording calls, the byte length of a
# dynamic-shape argument between its checks).
CANNOT_FAIL = frozenset({
    "add.i32", "sub.i32", "mul.i32", "and.i32", "or.i32", "xor.i32", "not.i32",
    "add.i64", "sub.i64", "mul.i64", "and.i64", "or.i64", "xor.i64", "not.i64",
    "fma.i32", "fma.i64", "abs.i32", "abs.i64", "ctlz.i32", "ctlz.i64",
    "min.i32.s", "min.i32.u", "max.i32.s", "max.i32.u",
    "min.i64.s", "min.i64.u", "max.i64.s", "max.i64.u",
    "shl.i32", "shr.i32.s", "shr.i32.u", "shl.i64", "shr.i64.s", "shr.i64.u",
    "trunc.i64.i32", "trunc.i32.i8", "trunc.i32.i16", "ext.i32.i64.s", "ext.i32.i64.u",
    "ext.i8.i32.s", "ext.i8.i32.u", "ext.i16.i32.s", "ext.i16.i32.u",
    "cmp.eq.i32", "cmp.ne.i32", "cmp.lt.i32.s", "cmp.lt.i32.u", "cmp.nz.i32",
    "cmp.eq.i64", "cmp.ne.i64", "cmp.lt.i64.s", "cmp.lt.i64.u", "cmp.nz.i64",
    "select.i32", "select.i64",
    "bitcast.f32.i32", "bitcast.i32.f32", "bitcast.f64.i64", "bitcast.i64.f64",
    "const.i32", "const.i64", "const.i32.zero", "const.i64.zero",
})  # fmt: skip

# Float compares (f32): they cannot fail either (a NaN compares as runtime_support/vm/
# numerics.py says), but stay out of CANNOT_FAIL, whose ops constant folding and region
# growth move: a loop call's test may read them (analyses/queue_loops.py `_computed`).
FLOAT_COMPARES = frozenset({
    "cmp.eq.f32.o", "cmp.eq.f32.u", "cmp.ne.f32.o", "cmp.ne.f32.u",
    "cmp.lt.f32.o", "cmp.lt.f32.u", "cmp.lte.f32.o", "cmp.lte.f32.u", "cmp.nan.f32",
})  # fmt: skip

# Integer divisions and remainders: they fail only on a zero divisor or, signed, on -1
# (INT_MIN / -1); one by a register known to hold another constant cannot fail.
FAILS_ON_DIVISOR = frozenset({
    "div.i32.s", "div.i32.u", "div.i64.s", "div.i64.u",
    "rem.i32.s", "rem.i32.u", "rem.i64.s", "rem.i64.u",
})  # fmt: skip

OPCODES: dict[tuple[str, int], OpSpec] = _make_table()
BY_MNEMONIC: dict[str, OpSpec] = {s.mnemonic: s for s in OPCODES.values()}
TERMINATORS = frozenset(s.mnemonic for s in OPCODES.values() if s.is_terminator)

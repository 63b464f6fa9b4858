"""Bytecode -> op IR, driven by the opcode table in `translator.isa`.

Decoding is linear from pc 0 to the function's `bytecode_length`; every read is bounds
checked and a problem raises `InvalidModuleError` naming the function and pc. Semantic
checks (ordinals, register counts, branch targets) are the verifier's job.
"""

from __future__ import annotations

import struct

from translator import isa
from translator.errors import InvalidModuleError
from translator.ir import Block, Function, Imm, Op, Reg
from translator.module import Module

_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")

_IMM_SIZES = {"i32": 4, "f32": 4, "i64": 8, "f64": 8}


class _Reader:
    __slots__ = ("code", "pc", "end", "fn", "op_pc")

    def __init__(self, code: memoryview, fn: str) -> None:
        self.code = code
        self.pc = 0
        self.end = len(code)
        self.fn = fn
        self.op_pc = 0

    def fail(self, reason: str) -> InvalidModuleError:
        return InvalidModuleError(reason, function=self.fn, pc=self.op_pc)

    def need(self, n: int) -> None:
        if self.pc + n > self.end:
            raise self.fail(
                f"bytecode data overrun: instruction needs {n} more byte(s) at pc "
                f"0x{self.pc:08X} but the function ends at 0x{self.end:08X}"
            )

    def u8(self) -> int:
        self.need(1)
        v = self.code[self.pc]
        self.pc += 1
        return v

    def u16(self) -> int:
        self.need(2)
        v = _U16.unpack_from(self.code, self.pc)[0]
        self.pc += 2
        return v

    def u32(self) -> int:
        self.need(4)
        v = _U32.unpack_from(self.code, self.pc)[0]
        self.pc += 4
        return v

    def u64(self) -> int:
        self.need(8)
        v = _U64.unpack_from(self.code, self.pc)[0]
        self.pc += 8
        return v

    def align2(self) -> None:
        if self.pc & 1:
            self.need(1)
            self.pc += 1

    def bytes(self, n: int) -> bytes:
        self.need(n)
        v = bytes(self.code[self.pc : self.pc + n])
        self.pc += n
        return v


def _read_remap(r: _Reader) -> tuple[tuple[Reg, Reg], ...]:
    r.align2()
    count = r.u16()
    r.need(4 * count)
    return tuple((Reg(r.u16()), Reg(r.u16())) for _ in range(count))


def _read_field(r: _Reader, f: isa.FieldSpec, values: dict) -> object:
    kind = f.kind
    if kind == "register":
        return Reg(r.u16(), f.bank)
    if kind in ("global", "func", "rodata", "type", "pc"):
        return r.u32()
    if kind == "imm":
        bits = r.u32() if _IMM_SIZES[f.bank] == 4 else r.u64()
        return Imm(f.bank, bits)
    if kind == "list":
        r.align2()
        count = r.u16()
        r.need(2 * count)
        if f.bank == "segments":
            return tuple(r.u16() for _ in range(count))
        bank = None if f.bank == "any" else ("ref" if f.bank == "ref" else f.bank)
        return tuple(Reg(r.u16(), bank) for _ in range(count))
    if kind == "remap":
        return _read_remap(r)
    if kind == "str":
        n = r.u16()
        return r.bytes(n)
    if kind == "u16":
        return r.u16()
    if kind == "cases":
        count = values["table_size"]
        cases = []
        for _ in range(count):
            pc = r.u32()
            cases.append((pc, _read_remap(r)))
        return tuple(cases)
    raise AssertionError(kind)


def decode_op(r: _Reader) -> Op | None:
    """Decodes the instruction at r.pc; returns None for a block marker."""
    r.op_pc = start = r.pc
    opcode = r.u8()
    if opcode == isa.BLOCK_MARKER:
        return None
    opset = isa.CORE
    if opcode in isa.SET_OF_PREFIX:
        opset = isa.SET_OF_PREFIX[opcode]
        opcode = r.u8()
    spec = isa.OPCODES.get((opset, opcode))
    if spec is None:
        where = f"{opset} " if opset != isa.CORE else ""
        raise r.fail(f"unknown {where}opcode 0x{opcode:02X}")
    if spec.emit == "unsupported":  # vm.cond_break
        # 3.13's compiler omits the condition register and its runtime rejects the
        # module (vm-bytecode.md §8.3): a debug-only op we treat as malformed input.
        raise r.fail("vm.cond_break is not supported (3.13 encodes it inconsistently)")
    values: dict = {}
    for f in spec.fields:
        values[f.name] = _read_field(r, f, values)
    return Op(start, r.pc - start, spec, values)


def decode_function(module: Module, k: int) -> Function:
    """Decodes internal function k into blocks of ops."""
    if not 0 <= k < module.function_count:
        raise InvalidModuleError(f"function ordinal {k} out of range")
    name = module.function_display_name(k)
    code = module.function_bytecode(k)
    r = _Reader(code, name)
    blocks: list[Block] = []
    current: Block | None = None
    while r.pc < r.end:
        op = decode_op(r)
        if op is None:
            current = Block(len(blocks), r.op_pc)
            blocks.append(current)
            continue
        if current is None:
            raise r.fail("function does not start with a block marker")
        current.ops.append(op)
    if not blocks:
        raise InvalidModuleError("function has no blocks", function=name, pc=0)
    return Function(k, name, blocks, len(code))


def decode_module(module: Module) -> list[Function]:
    return [decode_function(module, k) for k in range(module.function_count)]

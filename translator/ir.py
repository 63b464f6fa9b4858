"""The op IR: what `decoder` produces from a function's bytecode.

An `Op` keeps the `isa.OpSpec` it was decoded with and one value per field, keyed by the
field name, so that analyses and the code generator read operands by name
(`op["left"]`, `op["dest_pc"]`) instead of by position.

Field values by kind:
    register          Reg
    list (registers)  tuple[Reg, ...]        (`segments` lists: tuple[int, ...])
    remap             tuple[tuple[Reg, Reg], ...]   (src, dst) pairs, applied in order
    cases             tuple[tuple[int, tuple[tuple[Reg, Reg], ...]], ...]   (pc, remap)
    imm               Imm
    str               bytes (raw; never decoded implicitly)
    pc, global, func, rodata, type, u16   int
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

from runtime_support.vm.numerics import wrap_i32, wrap_i64
from translator.isa import OpSpec

REF_BIT = 0x8000
MOVE_BIT = 0x4000
REF_ORDINAL_MASK = 0x3FFF
VALUE_ORDINAL_MASK = 0x7FFF

IMPORT_BIT = 0x80000000


@dataclass(frozen=True, slots=True)
class Reg:
    """A register reference as encoded (u16), with the bank of the field it sits in.

    `bank` is one of i32/i64/f32/f64/ref for typed fields, or None in register lists
    and remaps, where the encoding carries no type.
    """

    raw: int
    bank: str | None = None

    @property
    def is_ref(self) -> bool:
        return bool(self.raw & REF_BIT)

    @property
    def ordinal(self) -> int:
        return self.raw & (REF_ORDINAL_MASK if self.is_ref else VALUE_ORDINAL_MASK)

    @property
    def move(self) -> bool:
        return self.is_ref and bool(self.raw & MOVE_BIT)

    @property
    def is_wide(self) -> bool:
        return self.bank in ("i64", "f64")


@dataclass(frozen=True, slots=True)
class Imm:
    """An immediate constant: `bits` is the raw encoding (u32 or u64)."""

    type: str  # i32 | i64 | f32 | f64
    bits: int

    @property
    def value(self) -> int | float:
        if self.type == "i32":
            return wrap_i32(self.bits)
        if self.type == "i64":
            return wrap_i64(self.bits)
        if self.type == "f32":
            return struct.unpack("<f", struct.pack("<I", self.bits))[0]
        return struct.unpack("<d", struct.pack("<Q", self.bits))[0]


@dataclass(slots=True)
class Op:
    pc: int
    length: int
    spec: OpSpec
    values: dict[str, Any]

    @property
    def mnemonic(self) -> str:
        return self.spec.mnemonic

    def __getitem__(self, name: str) -> Any:
        return self.values[name]

    def get(self, name: str, default: Any = None) -> Any:
        return self.values.get(name, default)

    def reads(self) -> list[Reg]:
        """Every register this op reads, in field order (lists and remap sources included)."""
        out: list[Reg] = []
        for f in self.spec.fields:
            v = self.values[f.name]
            if f.kind == "register" and not f.write:
                out.append(v)
            elif f.kind == "list" and not f.write and f.bank != "segments":
                out.extend(v)
            elif f.kind == "remap":
                out.extend(src for src, _ in v)
            elif f.kind == "cases":
                for _, remap in v:
                    out.extend(src for src, _ in remap)
        return out

    def writes(self) -> list[Reg]:
        out: list[Reg] = []
        for f in self.spec.fields:
            v = self.values[f.name]
            if f.kind == "register" and f.write:
                out.append(v)
            elif f.kind == "list" and f.write:
                out.extend(v)
        return out

    def edges(self) -> list[tuple[int, tuple]]:
        """(target pc, remap pairs) of each successor edge, as the ISA table lists them."""
        out = []
        for pc_field, remap_field in self.spec.edges:
            if pc_field == "cases":
                out.extend(self.values["cases"])
            else:
                out.append((self.values[pc_field], self.values[remap_field] if remap_field else ()))
        return out

    def branch_targets(self) -> list[int]:
        """pcs of the block markers this op may transfer control to."""
        out = []
        for f in self.spec.fields:
            if f.kind == "pc":
                out.append(self.values[f.name])
            elif f.kind == "cases":
                out.extend(pc for pc, _ in self.values[f.name])
        return out


@dataclass(slots=True)
class Block:
    index: int
    pc: int  # pc of the block marker
    ops: list[Op] = field(default_factory=list)


@dataclass
class Function:
    ordinal: int
    name: str
    blocks: list[Block]
    bytecode_length: int

    def ops(self):
        for b in self.blocks:
            yield from b.ops

    def block_at(self, pc: int) -> Block | None:
        for b in self.blocks:
            if b.pc == pc:
                return b
        return None

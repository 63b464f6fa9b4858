"""Decoder and verifier on real modules: positive structure checks and byte mutations.

Every negative test compiles a real module with iree-compile 3.13, patches a few bytes of
the file (an operand of one instruction, or a field of a FunctionDescriptor found in the
FlatBuffer by its values) and checks that reading + decoding + verifying raises
`InvalidModuleError` naming the function and the pc of the offending instruction.
A seeded random-mutation fuzz of the bytecode region checks that nothing but
InvalidModuleError (or success) ever comes out.
"""

from __future__ import annotations

import random
import re
import struct
from pathlib import Path

import pytest
from conftest import corpus_cases, e2e_cases

from translator import isa
from translator.decoder import decode_function
from translator.disasm import Disassembler
from translator.errors import InvalidModuleError
from translator.ir import IMPORT_BIT
from translator.reader import read_module
from translator.verifier import function_cconvs, verify_function

VM_FLAGS = ("--compile-mode=vm", "--iree-vm-target-extension-f32", "--iree-vm-target-extension-f64")
VM_FLAGS_F32 = ("--compile-mode=vm", "--iree-vm-target-extension-f32")
LLVM_CPU_FLAGS = (
    "--iree-hal-target-device=local",
    "--iree-hal-local-target-device-backends=llvm-cpu",
    "--iree-llvmcpu-target-cpu=generic",
)

# One VM module exercising every operand kind the verifier checks: value/ref registers,
# i64 pairs, value and ref globals, rodata, types, an ext_f32 op, branches with remaps,
# internal calls (kept out of line), an import call and a variadic import call.
NEG_MODULE = """
vm.module @neg {
  vm.global.i32 mutable @gi : i32
  vm.global.i64 mutable @gl : i64
  vm.global.ref mutable @gr : !vm.buffer
  vm.rodata private @ro dense<[1, 2, 3, 4]> : tensor<4xi8>
  vm.import private @ext.one(%a : i32) -> i32
  vm.import private @ext.var(%a : i32, %rest : i32 ...) -> i32
  vm.func private @callee1(%a : i32) -> i32 attributes {inlining_policy = #util.inline.never} {
    %c = vm.add.i32 %a, %a : i32
    vm.return %c : i32
  }
  vm.func private @callee2(%a : i32, %b : i32) -> i32 attributes {inlining_policy = #util.inline.never} {
    %c = vm.mul.i32 %a, %b : i32
    vm.return %c : i32
  }
  vm.func @main(%n : i32, %w : i64, %x : f32) -> (i32, i64, f32, !vm.buffer, !vm.list<i32>) {
    %zero = vm.const.i32.zero
    %one = vm.const.i32 1
    %w2 = vm.add.i64 %w, %w : i64
    %x2 = vm.add.f32 %x, %x : f32
    %g = vm.global.load.i32 @gi : i32
    %gl = vm.global.load.i64 @gl : i64
    %w3 = vm.add.i64 %w2, %gl : i64
    %buf = vm.const.ref.rodata @ro : !vm.buffer
    vm.global.store.ref %buf, @gr : !vm.buffer
    %buf2 = vm.global.load.ref @gr : !vm.buffer
    %lst = vm.list.alloc %one : (i32) -> !vm.list<i32>
    %imp = vm.call @ext.one(%n) : (i32) -> i32
    %var = vm.call.variadic @ext.var(%n, [%one, %g]) : (i32, i32 ...) -> i32
    %c1 = vm.call @callee1(%imp) : (i32) -> i32
    vm.br ^loop(%zero, %c1 : i32, i32)
  ^loop(%i : i32, %acc : i32):
    %acc2 = vm.add.i32 %acc, %var : i32
    %i2 = vm.add.i32 %i, %one : i32
    %cond = vm.cmp.lt.i32.s %i2, %n : i32
    vm.cond_br %cond, ^loop(%i2, %acc2 : i32, i32), ^exit(%acc2 : i32)
  ^exit(%r : i32):
    %r2 = vm.call @callee2(%r, %r) : (i32, i32) -> i32
    vm.return %r2, %w3, %x2, %buf2, %lst : i32, i64, f32, !vm.buffer, !vm.list<i32>
  }
  vm.export @main
}
"""

COND_BREAK_MODULE = """
vm.module @cb {
  vm.func @f(%a: i32) -> i32 {
    vm.cond_break %a, ^bb1(%a : i32)
  ^bb1(%b: i32):
    vm.return %b : i32
  }
  vm.export @f
}
"""

# A host program with dispatches: HAL imports, variadic calls, many blocks.
TENSOR_PROGRAM = """
func.func @f(%a: tensor<?xf32>, %b: tensor<?xf32>, %n: i32) -> (tensor<?xf32>, i32) {
  %0 = arith.addf %a, %b : tensor<?xf32>
  %1 = arith.muli %n, %n : i32
  return %0, %1 : tensor<?xf32>, i32
}
"""


# -- compiling ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def compile_src(compile_mlir, tmp_path_factory):
    """`(source text, flags) -> Path`: writes the source to a file, compiles it (cached)."""
    src_dir = tmp_path_factory.mktemp("decoder-src")

    def _compile(source: str, flags, name: str) -> Path:
        path = src_dir / f"{name}.mlir"
        path.write_text(source)
        return compile_mlir(path, flags)

    return _compile


@pytest.fixture(scope="module")
def neg_bytes(compile_src) -> bytes:
    return compile_src(NEG_MODULE, VM_FLAGS_F32, "neg").read_bytes()


@pytest.fixture(scope="module")
def cond_break_bytes(compile_src) -> bytes:
    return compile_src(COND_BREAK_MODULE, VM_FLAGS, "cond_break").read_bytes()


@pytest.fixture(scope="module")
def tensor_bytes(compile_src) -> bytes:
    return compile_src(TENSOR_PROGRAM, LLVM_CPU_FLAGS, "tensor").read_bytes()


# -- helpers --------------------------------------------------------------------------


def decode_and_verify(data: bytes):
    """read + decode + verify every function, the way `pyree-translate --dump` does."""
    module = read_module(data)
    cconvs = function_cconvs(module)
    functions = []
    for k in range(module.function_count):
        fn = decode_function(module, k)
        verify_function(module, fn, cconvs)
        functions.append(fn)
    return module, functions


def function_file_offset(data: bytes, module, k: int) -> int:
    """Absolute file offset of function k's bytecode (its bytes are unique in the file)."""
    code = bytes(module.function_bytecode(k))
    pos = data.find(code)
    assert pos >= 0 and data.find(code, pos + 1) < 0, f"function {k} bytes not unique"
    return pos


def descriptor_file_offset(data: bytes, module, k: int) -> int:
    """Absolute file offset of FunctionDescriptor k in the FlatBuffer (found by value)."""
    d = module.descriptors[k]
    packed = struct.pack(
        "<iiIhhhh",
        d.bytecode_offset,
        d.bytecode_length,
        d.requirements,
        d.reserved,
        d.block_count,
        d.i32_register_count,
        d.ref_register_count,
    )
    pos = data.find(packed)
    assert pos >= 0 and data.find(packed, pos + 1) < 0, f"descriptor {k} not unique"
    return pos


_FIXED = {"global": 4, "func": 4, "rodata": 4, "type": 4, "pc": 4, "register": 2, "u16": 2}


def field_offsets(op) -> dict[str, int]:
    """pc of each field of a decoded op (lists/remaps: the pc of their u16 count)."""
    pos = op.pc + (1 if op.spec.opcode_set == isa.CORE else 2)
    out: dict[str, int] = {}
    for f in op.spec.fields:
        v = op.values[f.name]
        if f.kind in _FIXED:
            out[f.name] = pos
            pos += _FIXED[f.kind]
        elif f.kind == "imm":
            out[f.name] = pos
            pos += 4 if f.bank in ("i32", "f32") else 8
        elif f.kind == "str":
            out[f.name] = pos
            pos += 2 + len(v)
        elif f.kind in ("list", "remap"):
            pos += pos & 1
            out[f.name] = pos
            pos += 2 + (2 if f.kind == "list" else 4) * len(v)
        elif f.kind == "cases":
            out[f.name] = pos
            for _, pairs in v:
                pos += 4
                pos += pos & 1
                pos += 2 + 4 * len(pairs)
        else:  # pragma: no cover
            raise AssertionError(f.kind)
    assert pos == op.pc + op.length, (op.mnemonic, pos, op.pc, op.length)
    return out


def find_op(fn, mnemonic: str, nth: int = 0):
    ops = [op for op in fn.ops() if op.mnemonic == mnemonic]
    assert len(ops) > nth, f"{fn.name} has no {mnemonic} #{nth}"
    return ops[nth]


class Patcher:
    """Locates function `k` of a module and patches bytes of one of its instructions."""

    def __init__(self, data: bytes, k: int) -> None:
        self.data = data
        self.module, self.functions = decode_and_verify(data)
        self.k = k
        self.fn = self.functions[k]
        self.base = function_file_offset(data, self.module, k)

    def op(self, mnemonic: str, nth: int = 0):
        return find_op(self.fn, mnemonic, nth)

    def patch(self, pc: int, fmt: str, value: int) -> bytes:
        out = bytearray(self.data)
        struct.pack_into(fmt, out, self.base + pc, value)
        return bytes(out)

    def patch_field(self, op, field: str, value: int, fmt: str | None = None) -> bytes:
        f = op.spec.field(field)
        if fmt is None:
            fmt = "<H" if f.kind in ("register", "list", "remap", "u16") else "<I"
        return self.patch(field_offsets(op)[field], fmt, value)

    def patch_descriptor(self, **changes) -> bytes:
        d = self.module.descriptors[self.k]
        pos = descriptor_file_offset(self.data, self.module, self.k)
        layout = {
            "bytecode_length": (4, "<i"),
            "requirements": (8, "<I"),
            "block_count": (14, "<h"),
            "i32_register_count": (16, "<h"),
            "ref_register_count": (18, "<h"),
        }
        out = bytearray(self.data)
        for name, value in changes.items():
            off, fmt = layout[name]
            assert hasattr(d, name)
            struct.pack_into(fmt, out, pos + off, value)
        return bytes(out)


def expect_invalid(data: bytes, *, function: str | None, pc: int | None, reason: str):
    with pytest.raises(InvalidModuleError) as info:
        decode_and_verify(data)
    e = info.value
    assert re.search(reason, e.reason), f"reason {e.reason!r} does not match {reason!r}"
    if function is not None:
        assert e.function == function, str(e)
        assert f"function {function}" in str(e)
    if pc is not None:
        assert e.pc == pc, f"{e} (expected pc 0x{pc:08X})"
        assert f"pc 0x{pc:08X}" in str(e)
    return e


MAIN = 2  # internal ordinal of @main in NEG_MODULE (callee1 = 0, callee2 = 1)


@pytest.fixture(scope="module")
def main_patcher(neg_bytes) -> Patcher:
    p = Patcher(neg_bytes, MAIN)
    assert p.fn.name == "main"
    assert [len(b.ops) > 0 for b in p.fn.blocks] == [True, True, True]
    return p


# -- positive ----------------------------------------------------------------------


def _all_modules(neg_bytes, tensor_bytes, corpus_vmfbs):
    yield "neg", neg_bytes
    yield "tensor", tensor_bytes
    yield from corpus_vmfbs


@pytest.fixture(scope="module")
def corpus_vmfbs(compile_mlir):
    """(case id, bytes) of every corpus module and every IREE e2e compile case."""
    cases = list(corpus_cases()) + list(e2e_cases())
    return [(case.id, compile_mlir(case.source, case.flags).read_bytes()) for case in cases]


def test_decoding_ends_exactly_at_bytecode_length(neg_bytes, tensor_bytes, corpus_vmfbs):
    checked = 0
    for name, data in _all_modules(neg_bytes, tensor_bytes, corpus_vmfbs):
        module = read_module(data)
        for k in range(module.function_count):
            d = module.descriptors[k]
            fn = decode_function(module, k)
            # Back to back from pc 0: markers (1 byte) and ops tile [0, bytecode_length).
            pc = 0
            for block in fn.blocks:
                assert block.pc == pc, (name, k)
                pc += 1
                for op in block.ops:
                    assert op.pc == pc, (name, k, op.mnemonic)
                    pc += op.length
            assert pc == d.bytecode_length == fn.bytecode_length, (name, k)
            assert len(fn.blocks) == d.block_count, (name, k)
            assert fn.blocks[0].pc == 0
            # And the padding to 8 bytes that follows is zeros, not code.
            tail = module.bytecode[d.bytecode_offset + d.bytecode_length :]
            pad = (-d.bytecode_length) % 8
            assert bytes(tail[:pad]) == b"\0" * min(pad, len(tail))
            checked += 1
    assert checked >= 100


def test_real_modules_verify(neg_bytes, tensor_bytes, corpus_vmfbs):
    for name, data in _all_modules(neg_bytes, tensor_bytes, corpus_vmfbs):
        module, functions = decode_and_verify(data)
        assert [len(f.blocks) for f in functions] == [d.block_count for d in module.descriptors]


def test_field_offsets_cover_every_op(neg_bytes, tensor_bytes):
    # The helper the mutations rely on must account for every byte of every op.
    for data in (neg_bytes, tensor_bytes):
        _, functions = decode_and_verify(data)
        for fn in functions:
            for op in fn.ops():
                field_offsets(op)


# -- negative: branches ----------------------------------------------------------------


def test_branch_into_middle_of_instruction(main_patcher):
    p = main_patcher
    br = p.op("br")
    target = br["dest_pc"]
    assert p.fn.block_at(target) is not None
    bad = p.patch_field(br, "dest_pc", target + 1)
    expect_invalid(
        bad, function="main", pc=br.pc, reason=rf"pc 0x{target + 1:08X} is not the start of a block"
    )


def test_cond_br_target_into_middle_of_instruction(main_patcher):
    p = main_patcher
    cbr = p.op("cond_br")
    bad = p.patch_field(cbr, "false_dest_pc", cbr.pc + 3)
    expect_invalid(bad, function="main", pc=cbr.pc, reason="is not the start of a block")


def test_branch_target_past_the_end(main_patcher):
    p = main_patcher
    br = p.op("br")
    bad = p.patch_field(br, "dest_pc", 0x7FFFFFF0)
    expect_invalid(bad, function="main", pc=br.pc, reason="not the start of a block")


# -- negative: registers ------------------------------------------------------------------


def test_register_ordinal_out_of_range(main_patcher):
    p = main_patcher
    add = p.op("add.i32")
    n = p.module.descriptors[MAIN].i32_register_count
    bad = p.patch_field(add, "left", n)
    expect_invalid(bad, function="main", pc=add.pc, reason=rf"register i{n} out of range")


def test_i64_register_pair_out_of_range(main_patcher):
    # An even i64 register N whose high half N+1 lies just past the bank: make the bank
    # odd-sized (n + 1 slots, n even) and name register n.
    p = main_patcher
    add = p.op("add.i64")
    n = p.module.descriptors[MAIN].i32_register_count
    n += n & 1
    p2 = Patcher(p.patch_descriptor(i32_register_count=n + 1), MAIN)
    assert p2.module.descriptors[MAIN].i32_register_count == n + 1
    bad = p2.patch_field(p2.op("add.i64"), "right", n)
    expect_invalid(bad, function="main", pc=add.pc, reason=rf"register i{n} out of range")


def test_ref_register_out_of_range(main_patcher):
    p = main_patcher
    op = p.op("global.load.ref")
    n = p.module.descriptors[MAIN].ref_register_count
    bad = p.patch_field(op, "value", 0x8000 | n)
    expect_invalid(bad, function="main", pc=op.pc, reason=rf"ref register r{n} out of range")


def test_i64_register_odd(main_patcher):
    p = main_patcher
    add = p.op("add.i64")
    assert add["left"].ordinal % 2 == 0
    bad = p.patch_field(add, "left", add["left"].ordinal + 1)
    expect_invalid(
        bad, function="main", pc=add.pc, reason=rf"i{add['left'].ordinal + 1} is not even-aligned"
    )


def test_ref_register_in_value_field(main_patcher):
    p = main_patcher
    add = p.op("add.i32")
    bad = p.patch_field(add, "right", 0x8000)
    expect_invalid(bad, function="main", pc=add.pc, reason="expected a i32 register, got ref")


def test_integer_read_of_a_float_register(main_patcher):
    # IREE's i32 and f32 registers share storage and its verifier checks ordinals only:
    # a mutated operand makes add.i32 read the bits of add.f32's result. The compiler
    # never emits that; pyree rejects it at translate time (its registers are Python
    # ints and floats: the generated add raised TypeError at run time).
    p = main_patcher
    addf = p.op("add.f32")
    add = p.op("add.i32", 1)
    assert add.pc > addf.pc
    reg = addf["result"].ordinal
    bad = p.patch_field(add, "left", reg)
    expect_invalid(
        bad, function="main", pc=add.pc, reason=rf"register i{reg} is read as i32 but holds an f32"
    )


def test_float_read_of_an_integer_register(main_patcher):
    p = main_patcher
    addf = p.op("add.f32")
    const = p.op("const.i32")
    assert const.pc < addf.pc
    reg = const["result"].ordinal
    bad = p.patch_field(addf, "right", reg)
    expect_invalid(
        bad, function="main", pc=addf.pc, reason=rf"register i{reg} is read as f32 but holds an i32"
    )


def test_i32_read_of_the_high_half_of_an_i64(main_patcher):
    # add.i64 writes i2:3; a call result then overwrites i2 alone. A 32-bit read of i3
    # reads the i64's high half in IREE; pyree keeps an i64 in its low slot's local, so
    # the generated code raised NameError (the fuzz harness's unset_register class).
    p = main_patcher
    wide = p.op("add.i64")
    hi = wide["result"].ordinal + 1
    add = p.op("add.i32", 0)
    bad = p.patch_field(add, "left", hi)
    expect_invalid(
        bad, function="main", pc=add.pc, reason=rf"register i{hi} is read as i32 but holds the high half of an i64"
    )


def test_i64_read_of_a_pair_that_is_not_an_i64(main_patcher):
    p = main_patcher
    addf = p.op("add.f32")
    wide = p.op("add.i64", 1)
    reg = addf["result"].ordinal
    assert reg % 2 == 0 and wide.pc > addf.pc
    bad = p.patch_field(wide, "right", reg)
    expect_invalid(
        bad, function="main", pc=wide.pc, reason=rf"register i{reg}:{reg + 1} is read as i64 but; i{reg} holds an f32"
    )


def test_bank_of_a_register_flows_across_blocks(main_patcher):
    # The loop body writes an i32 into the f32 result's register; the exit block returns
    # that register as the f32 result (its bank comes from the cconv).
    p = main_patcher
    addf = p.op("add.f32")
    loop_add = p.op("add.i32", 1)
    ret = p.op("return")
    reg = addf["result"].ordinal
    assert reg in [r.ordinal for r in ret["operands"]]
    bad = p.patch_field(loop_add, "result", reg)
    expect_invalid(
        bad, function="main", pc=ret.pc, reason=rf"register i{reg} is read as f32 but holds an i32"
    )


# -- negative: ordinals ---------------------------------------------------------------


def test_import_ordinal_out_of_range(main_patcher):
    p = main_patcher
    call = p.op("call", 0)
    assert call["callee_ordinal"] & IMPORT_BIT
    n = len(p.module.imports)
    bad = p.patch_field(call, "callee_ordinal", IMPORT_BIT | n)
    expect_invalid(bad, function="main", pc=call.pc, reason=rf"import ordinal {n} out of range")


def test_variadic_import_ordinal_out_of_range(main_patcher):
    p = main_patcher
    call = p.op("call.variadic")
    bad = p.patch_field(call, "callee_ordinal", IMPORT_BIT | 0x1234)
    expect_invalid(bad, function="main", pc=call.pc, reason=r"import ordinal 4660 out of range")


def test_internal_function_ordinal_out_of_range(main_patcher):
    p = main_patcher
    call = p.op("call", 1)
    assert not call["callee_ordinal"] & IMPORT_BIT
    n = p.module.function_count
    bad = p.patch_field(call, "callee_ordinal", n)
    expect_invalid(bad, function="main", pc=call.pc, reason=rf"function ordinal {n} out of range")


def test_rodata_ordinal_out_of_range(main_patcher):
    p = main_patcher
    op = p.op("const.ref.rodata")
    n = len(p.module.rodata)
    bad = p.patch_field(op, "rodata", n)
    expect_invalid(bad, function="main", pc=op.pc, reason=rf"rodata ordinal {n} out of range")


@pytest.mark.parametrize(
    "mnemonic, field", [("global.load.ref", "type_def"), ("list.alloc", "element_type")]
)
def test_type_ordinal_out_of_range(main_patcher, mnemonic, field):
    p = main_patcher
    op = p.op(mnemonic)
    n = len(p.module.types)
    bad = p.patch_field(op, field, n + 7)
    expect_invalid(bad, function="main", pc=op.pc, reason=rf"type ordinal {n + 7} out of range")


def test_ref_global_out_of_range(main_patcher):
    p = main_patcher
    op = p.op("global.load.ref")
    n = p.module.global_ref_count
    bad = p.patch_field(op, "global", n)
    expect_invalid(bad, function="main", pc=op.pc, reason=rf"ref global {n} out of range")


def test_value_global_out_of_range(main_patcher):
    p = main_patcher
    op = p.op("global.load.i32")
    cap = p.module.global_bytes_capacity
    bad = p.patch_field(op, "byte_offset", cap)
    expect_invalid(bad, function="main", pc=op.pc, reason=rf"global byte offset {cap} invalid")


def test_value_global_misaligned(main_patcher):
    p = main_patcher
    op = p.op("global.load.i64")
    bad = p.patch_field(op, "byte_offset", op["byte_offset"] + 4)
    expect_invalid(bad, function="main", pc=op.pc, reason="global byte offset .* invalid for i64")


# -- negative: calls ----------------------------------------------------------------


def test_call_with_too_few_operands(main_patcher):
    # call @callee1(x) retargeted at callee2(a, b): one operand for two arguments.
    p = main_patcher
    call = p.op("call", 1)
    assert call["callee_ordinal"] == 0 and len(call["operands"]) == 1
    bad = p.patch_field(call, "callee_ordinal", 1)
    expect_invalid(bad, function="main", pc=call.pc, reason=r"expected 2 operands, got 1")


def test_call_with_too_many_operands(main_patcher):
    p = main_patcher
    call = p.op("call", 2)
    assert call["callee_ordinal"] == 1 and len(call["operands"]) == 2
    bad = p.patch_field(call, "callee_ordinal", 0)
    expect_invalid(bad, function="main", pc=call.pc, reason=r"expected 1 operands, got 2")


def test_plain_call_to_variadic_import(main_patcher):
    p = main_patcher
    call = p.op("call", 0)
    var_import = next(i for i, imp in enumerate(p.module.imports) if imp.full_name == "ext.var")
    bad = p.patch_field(call, "callee_ordinal", IMPORT_BIT | var_import)
    expect_invalid(bad, function="main", pc=call.pc, reason="needs call.variadic")


@pytest.mark.parametrize(
    "segments, reason",
    [
        ((0xFFFF, 1), r"expected 2 operands, got 3"),
        ((0xFFFF, 3), r"expected 4 operands, got 3"),
        ((2, 2), r"non-span argument with a count 2"),
        ((0xFFFF, 0xFFFF), r"span argument without a count"),
    ],
)
def test_variadic_segments_inconsistent_with_cconv(main_patcher, segments, reason):
    p = main_patcher
    call = p.op("call.variadic")
    assert call["segment_sizes"] == (0xFFFF, 2)
    seg_pc = field_offsets(call)["segment_sizes"]
    out = bytearray(p.data)
    struct.pack_into("<HH", out, p.base + seg_pc + 2, *segments)
    expect_invalid(bytes(out), function="main", pc=call.pc, reason=reason)


def test_variadic_segment_count_mismatch(main_patcher):
    # Retarget the variadic call at the non-variadic import: 2 segments for 1 argument.
    p = main_patcher
    call = p.op("call.variadic")
    one = next(i for i, imp in enumerate(p.module.imports) if imp.full_name == "ext.one")
    bad = p.patch_field(call, "callee_ordinal", IMPORT_BIT | one)
    expect_invalid(bad, function="main", pc=call.pc, reason=r"2 segment sizes for 1 arguments")


def test_call_result_register_bank_mismatch(main_patcher):
    p = main_patcher
    call = p.op("call", 0)
    results_pc = field_offsets(call)["results"]
    bad = p.patch(results_pc + 2, "<H", 0x8000)
    expect_invalid(bad, function="main", pc=call.pc, reason="expected a i32 register, got ref")


def test_return_count_mismatch(neg_bytes):
    # callee1 returns one i32. Make its return list empty and end the function right
    # there (bytecode_length - 2, dropping the register): decodes, but fails the cconv.
    p = Patcher(neg_bytes, 0)
    ret = p.op("return")
    assert (
        len(ret["operands"]) == 1 and ret.pc + ret.length == p.module.descriptors[0].bytecode_length
    )
    out = bytearray(p.patch_field(ret, "operands", 0))
    pos = descriptor_file_offset(p.data, p.module, 0)
    struct.pack_into("<i", out, pos + 4, p.module.descriptors[0].bytecode_length - 2)
    expect_invalid(
        bytes(out), function=p.fn.name, pc=ret.pc, reason=r"expected 1 return values, got 0"
    )


def test_return_count_changed_in_place(neg_bytes):
    # Same, without fixing up the length: the dropped register is decoded as the next
    # instruction (opcode 0x00, global.load.i32), which runs off the end of the function.
    p = Patcher(neg_bytes, 0)
    ret = p.op("return")
    bad = p.patch_field(ret, "operands", 0)
    field_pc = field_offsets(ret)["operands"]
    expect_invalid(bad, function=p.fn.name, pc=field_pc + 2, reason="overrun")


def test_return_register_bank_mismatch(main_patcher):
    p = main_patcher
    ret = p.op("return")
    list_pc = field_offsets(ret)["operands"]
    bad = p.patch(list_pc + 2, "<H", 0x8000)  # first result is an i32
    expect_invalid(bad, function="main", pc=ret.pc, reason="expected a i32 register, got ref")


# -- negative: opcodes ----------------------------------------------------------------


def _unused(opset: str) -> int:
    used = {o for (s, o) in isa.OPCODES if s == opset}
    if opset == isa.CORE:
        used |= {isa.BLOCK_MARKER, *isa.SET_OF_PREFIX}
    return next(o for o in range(0x80, 0x100) if o not in used)


def test_unknown_opcode(main_patcher):
    p = main_patcher
    op = p.op("add.i32", 1)
    code = _unused(isa.CORE)
    bad = p.patch(op.pc, "<B", code)
    expect_invalid(bad, function="main", pc=op.pc, reason=rf"unknown opcode 0x{code:02X}")


def test_unknown_ext_opcode(main_patcher):
    p = main_patcher
    op = p.op("add.f32")
    assert op.spec.opcode_set == isa.EXT_F32
    code = _unused(isa.EXT_F32)
    bad = p.patch(op.pc + 1, "<B", code)
    expect_invalid(bad, function="main", pc=op.pc, reason=rf"unknown ext_f32 opcode 0x{code:02X}")


def test_unknown_ext_f64_opcode(main_patcher):
    p = main_patcher
    op = p.op("add.f32")
    code = _unused(isa.EXT_F64)
    out = bytearray(p.data)
    out[p.base + op.pc : p.base + op.pc + 2] = bytes([isa.PREFIX_EXT_F64, code])
    expect_invalid(
        bytes(out), function="main", pc=op.pc, reason=rf"unknown ext_f64 opcode 0x{code:02X}"
    )


def test_cond_break_opcode_patched_in(main_patcher):
    p = main_patcher
    op = p.op("add.i32", 1)
    bad = p.patch(op.pc, "<B", 0x60)
    expect_invalid(bad, function="main", pc=op.pc, reason="cond_break")


def test_cond_break_compiled_by_iree(cond_break_bytes):
    # 3.13's compiler writes cond_break without its condition register (§8.3).
    module = read_module(cond_break_bytes)
    assert bytes(module.function_bytecode(0))[1] == 0x60
    expect_invalid(cond_break_bytes, function="f", pc=1, reason="cond_break is not supported")


def test_extension_op_without_feature_bit(main_patcher):
    p = main_patcher
    d = p.module.descriptors[MAIN]
    assert d.requirements & 0x1
    op = p.op("add.f32")
    bad = p.patch_descriptor(requirements=d.requirements & ~0x1)
    expect_invalid(bad, function="main", pc=op.pc, reason="needs the ext_f32 extension")


def test_block_marker_as_first_byte_required(main_patcher):
    p = main_patcher
    bad = p.patch(0, "<B", 0x0C)  # const.i32.zero where ^bb0's marker was
    with pytest.raises(InvalidModuleError) as info:
        decode_and_verify(bad)
    assert info.value.function == "main" and info.value.pc is not None


# -- negative: lengths and block counts -------------------------------------------------------


def test_instruction_truncated_by_bytecode_length(main_patcher):
    p = main_patcher
    d = p.module.descriptors[MAIN]
    last = p.fn.blocks[-1].ops[-1]
    assert last.pc + last.length == d.bytecode_length
    bad = p.patch_descriptor(bytecode_length=d.bytecode_length - 1)
    e = expect_invalid(bad, function="main", pc=last.pc, reason="overrun")
    assert f"0x{d.bytecode_length - 1:08X}" in e.reason


@pytest.mark.parametrize("cut", [1, 2, 3, 5])
def test_instruction_truncated_mid_operand(main_patcher, cut):
    # Cut inside the variadic call: the function now ends `cut` bytes into it.
    p = main_patcher
    call = p.op("call.variadic")
    bad = p.patch_descriptor(bytecode_length=call.pc + cut)
    expect_invalid(bad, function="main", pc=call.pc, reason="overrun")


def test_truncated_inside_ext_prefix(main_patcher):
    p = main_patcher
    op = p.op("add.f32")
    bad = p.patch_descriptor(bytecode_length=op.pc + 1)
    expect_invalid(bad, function="main", pc=op.pc, reason="overrun")


def test_block_count_mismatch(main_patcher):
    p = main_patcher
    d = p.module.descriptors[MAIN]
    bad = p.patch_descriptor(block_count=d.block_count + 1)
    expect_invalid(
        bad,
        function="main",
        pc=0,
        reason=rf"has {d.block_count} blocks but its descriptor says {d.block_count + 1}",
    )


def test_function_ending_without_terminator(main_patcher):
    # Cut the function right after a complete instruction that is not a terminator.
    p = main_patcher
    last_block = p.fn.blocks[-1]
    op = last_block.ops[-2]
    assert not op.spec.is_terminator
    bad = p.patch_descriptor(bytecode_length=op.pc + op.length)
    expect_invalid(bad, function="main", pc=op.pc, reason="does not end with a terminator")


def test_register_count_shrunk(main_patcher):
    p = main_patcher
    bad = p.patch_descriptor(i32_register_count=0)
    e = expect_invalid(bad, function="main", pc=None, reason="out of range")
    assert e.pc is not None


# -- fuzz ------------------------------------------------------------------------------


def _mutate(rng: random.Random, buf: bytearray, lo: int, hi: int) -> None:
    for _ in range(rng.choice((1, 1, 1, 2, 3, 5))):
        i = rng.randrange(lo, hi)
        kind = rng.randrange(6)
        if kind == 0:
            buf[i] = rng.randrange(256)
        elif kind == 1:
            buf[i] ^= 1 << rng.randrange(8)
        elif kind == 2:
            buf[i] = rng.choice((0x00, 0xFF, 0x80, 0x7F, 0x79, 0xE0, 0xE1, 0x60))
        elif kind == 3 and i + 1 < hi:
            buf[i], buf[i + 1] = buf[i + 1], buf[i]
        elif kind == 4:
            j = rng.randrange(lo, hi)
            buf[i] = buf[j]
        else:
            buf[i] = (buf[i] + rng.choice((-2, -1, 1, 2))) & 0xFF


@pytest.mark.parametrize("which, count", [("neg", 3000), ("tensor", 2000)])
def test_fuzz_bytecode_region(neg_bytes, tensor_bytes, which, count):
    data = neg_bytes if which == "neg" else tensor_bytes
    module, _ = decode_and_verify(data)
    spans = []
    for k in range(module.function_count):
        base = function_file_offset(data, module, k)
        spans.append((base, base + module.descriptors[k].bytecode_length))
    rng = random.Random(0x5EED + len(which))
    outcomes = {"ok": 0, "invalid": 0}
    for i in range(count):
        buf = bytearray(data)
        lo, hi = rng.choice(spans)
        _mutate(rng, buf, lo, hi)
        try:
            m, functions = decode_and_verify(bytes(buf))
            dis = Disassembler(m)
            for fn in functions:
                dis.function_lines(fn, offsets=True)
        except InvalidModuleError as e:
            outcomes["invalid"] += 1
            assert e.reason
            if e.function is not None:
                assert e.pc is not None or "blocks" in e.reason, str(e)
        except Exception as e:  # noqa: BLE001 - the point of the test
            raise AssertionError(f"mutation {i} of {which}: {type(e).__name__}: {e}") from e
        else:
            outcomes["ok"] += 1
    print(f"fuzz {which}: {outcomes}")
    # The mutations must exercise both sides.
    assert outcomes["invalid"] > count // 4, outcomes
    assert outcomes["ok"] > 0, outcomes

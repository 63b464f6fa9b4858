"""The statement-tree passes and tables of translator/codegen, on small hand-made trees."""

from __future__ import annotations

from pathlib import Path

import pytest

from translator.codegen import hal_enums
from translator.codegen.passes import MessageTable, tidy_ifs, tidy_releases, trim_ref_init
from translator.codegen.printer import Printer
from translator.codegen.stmt import Assign, Call, Continue, If, Provenance, Raise, Release, Return, While


def _print(body):
    return Printer().function_body(body)


def test_hal_enum_names_equal_the_runtime_constants():
    assert hal_enums.NAMES == hal_enums.runtime_names()
    assert hal_enums.describe("element_type", 553648160) == "FLOAT_32"
    assert hal_enums.describe("buffer_usage", 3075) == "TRANSFER | DISPATCH_STORAGE"
    assert hal_enums.describe("memory_type", 48) == "DEVICE_LOCAL"
    assert hal_enums.describe("element_type", 0x7F000001) is None


def test_ref_init_keeps_only_refs_read_before_written():
    body = [
        Release(None, ["r1", "r2", "r3"]),
        Assign(None, ("r1",), "f()"),
        Call(None, "g(r2)", frozenset({"r2"})),
        If(None, "x", [Assign(None, ("r3",), "h()")]),
        Return(None, ("r3",)),
    ]
    assert _print(trim_ref_init(body))[0] == "r2 = r3 = None"


def test_releases_of_known_null_refs_are_dropped_and_chains_merged():
    body = [
        Release(None, ["r0", "r1"]),
        Release(None, ["r0"]),  # already None
        Assign(None, ("r2",), "f()"),
        Release(None, ["r2"]),
        Release(None, ["r3"]),  # merged into the line above
        Release(None, ["r4"]),
        Assign(None, ("r4",), "r5", frozenset({"r5"})),  # overwrites r4 at once
        While(None, [Release(None, ["r1"]), Assign(None, ("r1",), "g()"), Continue(None)]),
        Return(None, ()),
    ]
    assert _print(tidy_releases(body)) == [
        "r0 = r1 = None",
        "r2 = f()",
        "r2 = r3 = None",
        "r4 = r5",
        "while True:",
        "    r1 = g()",  # its release is dropped: overwritten by the very next statement
        "    continue",
        "return",
    ]


def test_releases_just_before_a_raise_are_dropped():
    """A raise ends the frame like a return; it reads no ref, so none is kept."""
    body = [
        Assign(None, ("r1",), "f()"),
        If(None, "i0", [Release(None, ["r1", "r2"]), Release(None, ["r3"]), Raise(None, "i0", "m", "f", None)]),
        Return(None, ("r1",)),
    ]
    assert _print(tidy_releases(body)) == [
        "r1 = f()",
        "if i0:",
        "    raise vm_fail(i0, 'm', 'f', None)",
        "return r1",
    ]


def _prov(pc, op, callee=None):
    return Provenance("f", pc, op, None, None, callee)


def test_provenance_comments_one_per_statement_group():
    """One VM comment per straight run up to a control statement, naming its calls; a
    lone control statement gets none."""
    body = [
        Assign(_prov(0x10, "const.i32"), ("i0",), "4"),
        Assign(_prov(0x18, "call", "hal.fence.create"), ("r1",), "hal_fence_create(r0, i0)"),
        Release(_prov(0x18, "call", "hal.fence.create"), ["r0"]),
        Assign(_prov(0x22, "call", "hal.fence.await"), ("i1",), "hal_fence_await(r1)"),
        If(_prov(0x30, "cond_br"), "i1", [Raise(_prov(0x40, "fail"), "i1", "m", "f", None)]),
        Assign(_prov(0x50, "add.i32"), ("i2",), "add_i32(i0, i0)"),
        Return(_prov(0x58, "return"), ("i2",)),
    ]
    assert Printer(provenance=True).function_body(body) == [
        "# pc 0x10-0x30 hal.fence.create, hal.fence.await",
        "i0 = 4",
        "r1 = hal_fence_create(r0, i0)",
        "r0 = None",
        "i1 = hal_fence_await(r1)",
        "if i1:",
        "    raise vm_fail(i1, 'm', 'f', None)",
        "# pc 0x50-0x58 vm.add.i32",
        "i2 = add_i32(i0, i0)",
        "return i2",
    ]
    assert not any("# pc" in line for line in Printer().function_body(body))


def test_empty_if_arm_is_inverted_and_long_messages_hoisted():
    raise_ = Raise(None, "i0", "x" * 100, "f", None)
    body = [If(None, "i1", [], [raise_]), If(None, "i2", [Raise(None, "i0", "x" * 100, "g", None)])]
    tidy_ifs(body)
    table = MessageTable()
    table.hoist(body)
    assert table.constants() == [("MESSAGE_0", "x" * 100)]
    assert _print(body) == [
        "if not i1:",
        "    raise vm_fail(i0, MESSAGE_0, 'f', None)",
        "if i2:",
        "    raise vm_fail(i0, MESSAGE_0, 'g', None)",
    ]


def test_long_release_chains_are_split_so_black_never_wraps_them():
    lines = _print([Release(None, [f"r{k}" for k in range(20)])])
    assert len(lines) == 3 and all(line.endswith(" = None") and len(line) < 100 for line in lines)


def test_location_trees_are_formatted_within_a_budget():
    """A hostile vmfb can make a fused location exponentially wide (each of 10 levels fuses
    the next level 50 times: 50^9 paths); formatting visits a bounded number of nodes."""
    import time
    import types

    from translator.codegen.render import _format_location
    from translator.module import FileLineColLoc, FusedLoc

    locations = [FusedLoc(None, (k + 1,) * 50) for k in range(10)] + [FileLineColLoc("a.mlir", 3, 4)]
    module = types.SimpleNamespace(locations=locations)
    started = time.monotonic()
    _format_location(module, 0)
    assert time.monotonic() - started < 1.0
    assert _format_location(module, 10) == "a.mlir:3:4"
    assert _format_location(module, 9) == "a.mlir:3:4"  # a real fused location still formats


UNSET_REGISTER = """
vm.module @u {
  vm.export @f
  vm.func @f(%a: i32, %b: i32) -> i32 {
    %c = vm.const.i32 7
    %d = vm.add.i32 %a, %c : i32
    %e = vm.mul.i32 %d, %b : i32
    vm.return %e : i32
  }
}
"""


def test_a_register_read_before_any_write_is_zero_as_in_iree(compile_mlir, tmp_path):
    """Patch `%i2 = vm.const.i32 7` to write %i0 instead: vm.add then reads %i2, which
    nothing wrote. IREE reads its zeroed register file; the translation must too (it raised
    NameError before)."""
    iree_rt = pytest.importorskip("iree.runtime")
    from differential import load_package
    from translator.codegen import write_package
    from translator.reader import read_module

    src = tmp_path / "u.mlir"
    src.write_text(UNSET_REGISTER)
    data = Path(compile_mlir(src, ("--compile-mode=vm",))).read_bytes()
    const = b"\x07\x00\x00\x00\x02\x00"  # the i32 value 7, then result register 2
    assert data.count(const) == 1
    i = data.find(const)
    data = data[: i + 4] + b"\x00\x00" + data[i + 6 :]
    instance = iree_rt.VmInstance()
    module = iree_rt.VmModule.copy_buffer(instance, data)
    context = iree_rt.VmContext(instance, [module])
    invoke = iree_rt.FunctionInvoker(context, iree_rt.get_device("local-sync"), module.lookup_function("f"))
    pkg = load_package(write_package(read_module(data), tmp_path / "out", "u"))
    ctx = pkg.load(device="local-sync")
    for a, b in ((3, 5), (-4, 9)):
        assert ctx.f(a, b) == invoke(a, b) == 7 * b


def test_a_branch_remap_from_an_unwritten_register_copies_its_zero(compile_mlir, tmp_path):
    """vm_calls' fib loop enters with `br ^head(%i2->%i4, %i1->%i3)`. Patch the first
    source to %i5, which nothing has written there: IREE copies its zeroed register, so fib
    runs with a = b = 0. The translation dropped the copy (the source had no register kind)
    and the loop raised UnboundLocalError (fuzz input vm_calls-c9163369097bfb5f.vmfb:3892)."""
    import struct

    iree_rt = pytest.importorskip("iree.runtime")
    import numpy as np

    from conftest import corpus_cases
    from differential import load_package
    from translator.codegen import write_package
    from translator.decoder import decode_function
    from translator.reader import read_module

    case = next(c for c in corpus_cases() if c.name == "vm_calls")
    data = bytearray(Path(compile_mlir(case.source, case.flags)).read_bytes())
    module = read_module(bytes(data))
    for k in range(module.function_count):
        fn = decode_function(module, k)
        brs = [op for op in fn.ops() if op.mnemonic == "br" and op["operands"]]
        if brs and [(s.ordinal, d.ordinal) for s, d in brs[0]["operands"]][:1] == [(2, 4)]:
            break
    else:
        raise AssertionError("vm_calls has no fib loop entry remap i2->i4")
    br = brs[0]
    assert all(r.ordinal != 5 for op in fn.ops() if op.pc < br.pc for r in op.writes())
    code = bytes(module.function_bytecode(k))
    base = bytes(data).find(code)
    assert base >= 0 and bytes(data).find(code, base + 1) < 0
    remap = br.pc + 5  # opcode, u32 target, then the remap list (2-aligned)
    remap += remap & 1
    assert struct.unpack_from("<HHH", data, base + remap) == (len(br["operands"]), 2, 4)
    struct.pack_into("<H", data, base + remap + 2, 5)
    data = bytes(data)

    instance = iree_rt.VmInstance()
    vm_module = iree_rt.VmModule.copy_buffer(instance, data)
    context = iree_rt.VmContext(instance, [vm_module])
    vm_args = iree_rt.VmVariantList(4)
    for push, value in ((vm_args.push_int, 7), (vm_args.push_int, 5), (vm_args.push_float, 1.5), (vm_args.push_float, 2.0)):
        push(value)
    results = iree_rt.VmVariantList(5)
    context.invoke(vm_module.lookup_function("entry"), vm_args, results)
    iree_out = [results.get_variant(i) for i in range(results.size)]
    pkg = load_package(write_package(read_module(data), tmp_path / "out", "calls"))
    ctx = pkg.load(device="local-sync")
    ours = ctx.call_vm("entry", 7, 5, 1.5, 2.0)
    assert ours[3] == int(iree_out[3]) == 0  # fib with a = b = 0
    assert [float(x) for x in ours] == [float(x) for x in iree_out]


def test_a_tuple_unpacked_into_one_target_keeps_its_comma():
    """A helper that returns a tuple (Assign.unpack) assigns even one value by unpacking:
    `r8 = f()` would bind the tuple itself."""
    body = [
        Assign(None, ("r8",), "submit(r0)", unpack=True),
        Assign(None, ("r1", "i0"), "submit(r0)", unpack=True),
        Assign(None, ("r2",), "make(r0)"),
    ]
    lines = _print(body)
    assert lines == ["(r8,) = submit(r0)", "r1, i0 = submit(r0)", "r2 = make(r0)"]
    ns = {"submit": lambda r: (r,), "r0": 7}
    exec(lines[0], ns)
    assert ns["r8"] == 7

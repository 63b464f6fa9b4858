"""Checks on the MLIR corpus itself (tests/corpus): it compiles, dumps, covers the ISA, and runs.

The corpus is the input set for the differential tests (pyree vs iree.runtime) and for the
disassembler goldens, so this file guards its promises: every program compiles with the pinned
compiler for every listed variant, the CPU variants produce the expected executable formats,
the union of the disassembly covers the opcodes listed below, and every export runs under
iree.runtime with inputs generated from its signature (except the documented exceptions).
"""

from __future__ import annotations

import binascii
import re
from collections import Counter

import pytest

from abi_inputs import inputs_for_signature
from conftest import (
    CORPUS_DIR,
    corpus_cases,
    dump_mnemonic,
    e2e_cases,
    iree_dump_functions,
    load_manifest,
    parse_dump_functions,
)

iree_runtime = pytest.importorskip("iree.runtime")
from iree_oracle import IreeSession  # noqa: E402  (needs iree.runtime)

CASES = corpus_cases()
CASE_IDS = [c.id for c in CASES]

# Opcodes the corpus must make the compiler emit (mnemonics as iree-dump-module prints them).
REQUIRED_OPCODES = {
    # control flow and calls
    "br", "cond_br", "br_table", "return", "fail", "call", "call.variadic",
    "call.variadic.yieldable", "import.resolved",
    # lists
    "list.alloc", "list.reserve", "list.resize", "list.size", "list.get.i32", "list.set.i32",
    "list.get.i64", "list.set.i64", "list.get.f32", "list.set.f32", "list.get.f64",
    "list.set.f64", "list.get.ref", "list.set.ref",
    # buffers
    "buffer.alloc", "buffer.clone", "buffer.length", "buffer.copy", "buffer.compare",
    "buffer.hash", "buffer.fill.i8", "buffer.fill.i16", "buffer.fill.i32", "buffer.fill.i64",
    "buffer.fill.f32", "buffer.fill.f64", "buffer.load.i8.u", "buffer.load.i8.s",
    "buffer.load.i16.u", "buffer.load.i16.s", "buffer.load.i32", "buffer.load.i64",
    "buffer.load.f32", "buffer.load.f64", "buffer.store.i8", "buffer.store.i16",
    "buffer.store.i32", "buffer.store.i64", "buffer.store.f32", "buffer.store.f64",
    "const.ref.rodata",
    # globals, value and ref
    "global.load.i32", "global.store.i32", "global.load.i64", "global.store.i64",
    "global.load.f32", "global.store.f32", "global.load.f64", "global.store.f64",
    "global.load.ref", "global.store.ref",
    # refs
    "const.ref.zero", "discard.refs", "select.ref", "cmp.eq.ref", "cmp.ne.ref", "cmp.nz.ref",
    "cast.any.ref", "assign.ref",
    # integer ops
    "add.i32", "sub.i32", "mul.i32", "div.i32.s", "div.i32.u", "rem.i32.s", "rem.i32.u",
    "fma.i32", "add.i64", "sub.i64", "mul.i64", "div.i64.s", "div.i64.u", "rem.i64.s",
    "rem.i64.u", "fma.i64", "not.i32", "and.i32", "or.i32", "xor.i32", "not.i64", "and.i64",
    "or.i64", "xor.i64", "shl.i32", "shr.i32.s", "shr.i32.u", "shl.i64", "shr.i64.s",
    "shr.i64.u", "trunc.i32.i8", "trunc.i32.i16", "trunc.i64.i32", "ext.i8.i32.s",
    "ext.i8.i32.u", "ext.i16.i32.s", "ext.i16.i32.u", "ext.i32.i64.s", "ext.i32.i64.u",
    "ctlz.i32", "ctlz.i64", "abs.i32", "abs.i64", "min.i32.s", "min.i32.u", "max.i32.s",
    "max.i32.u", "min.i64.s", "min.i64.u", "max.i64.s", "max.i64.u",
    "cmp.eq.i32", "cmp.ne.i32", "cmp.lt.i32.s", "cmp.lt.i32.u", "cmp.nz.i32", "cmp.eq.i64",
    "cmp.ne.i64", "cmp.lt.i64.s", "cmp.lt.i64.u", "cmp.nz.i64",
    "select.i32", "select.i64", "switch.i32", "switch.i64", "const.i32", "const.i32.zero",
    "const.i64", "const.i64.zero",
    # ext_f32
    "add.f32", "sub.f32", "mul.f32", "div.f32", "rem.f32", "fma.f32", "abs.f32", "neg.f32",
    "ceil.f32", "floor.f32", "round.f32", "round.f32.even", "min.f32", "max.f32", "sqrt.f32",
    "rsqrt.f32", "exp.f32", "exp2.f32", "expm1.f32", "log.f32", "log10.f32", "log1p.f32",
    "log2.f32", "pow.f32", "atan.f32", "atan2.f32", "sin.f32", "cos.f32", "tanh.f32",
    "erf.f32", "cmp.eq.f32.o", "cmp.eq.f32.u", "cmp.ne.f32.o", "cmp.ne.f32.u", "cmp.lt.f32.o",
    "cmp.lt.f32.u", "cmp.lte.f32.o", "cmp.lte.f32.u", "cmp.nan.f32", "select.f32",
    "switch.f32", "const.f32", "cast.si32.f32", "cast.ui32.f32", "cast.f32.si32",
    "cast.f32.ui32", "cast.si64.f32", "cast.f32.si64", "cast.f32.ui64", "bitcast.i32.f32",
    "bitcast.f32.i32",
    # ext_f64
    "add.f64", "sub.f64", "mul.f64", "div.f64", "rem.f64", "fma.f64", "abs.f64", "neg.f64",
    "ceil.f64", "floor.f64", "round.f64", "round.f64.even", "min.f64", "max.f64", "sqrt.f64",
    "exp.f64", "log.f64", "pow.f64", "atan2.f64", "sin.f64", "tanh.f64", "erf.f64",
    "cmp.eq.f64.o", "cmp.ne.f64.u", "cmp.lt.f64.o", "cmp.lte.f64.o", "cmp.nan.f64",
    "select.f64", "switch.f64", "const.f64", "cast.si64.f64", "cast.ui64.f64",
    "cast.f64.si64", "cast.f64.ui64", "bitcast.i64.f64", "bitcast.f64.i64", "ext.f32.f64",
    "trunc.f64.f32",
    # debug ops
    "print", "trace",
}

# Opcodes that iree-dump-module 3.13 cannot print (vm-bytecode.md §8.4): the corpus must still
# contain them; test_dump_issue_modules checks that the dump fails where the manifest says so.
DUMP_BROKEN_OPCODES = {"switch.ref", "cast.ui64.f32"}


def _case(case_id):
    return next(c for c in CASES if c.id == case_id)


@pytest.fixture(scope="module")
def compiled(compile_mlir):
    """case id -> vmfb path (compiles lazily; shares the session cache with other tests)."""
    cache = {}

    def get(case):
        if case.id not in cache:
            cache[case.id] = compile_mlir(case.source, case.flags)
        return cache[case.id]

    return get


@pytest.fixture(scope="module")
def dumps(compiled):
    cache = {}

    def get(case):
        if case.id not in cache:
            cache[case.id] = iree_dump_functions(compiled(case))
        return cache[case.id]

    return get


# --- the manifest -------------------------------------------------------------------------------


def test_manifest_matches_files():
    manifest = load_manifest()
    programs = manifest["programs"]
    names = [p["name"] for p in programs]
    assert len(names) == len(set(names)), "duplicate program names"
    assert len(programs) >= 45
    on_disk = sorted(p.name for p in CORPUS_DIR.glob("*.mlir"))
    assert sorted(p["source"] for p in programs) == on_disk
    for prog in programs:
        first = (CORPUS_DIR / prog["source"]).read_text().splitlines()[0]
        assert first.startswith("// Covers"), f"{prog['source']}: first line must say what it covers"
        assert prog["variants"], prog["name"]
        for v in prog["variants"]:
            assert v in manifest["variants"], (prog["name"], v)
        assert (prog["kind"] == "vm") == (prog["variants"] == ["vm"]), prog["name"]


def test_manifest_variant_subsets():
    programs = load_manifest()["programs"]
    count = Counter(v for p in programs for v in p["variants"])
    assert count["system-dylib"] >= 8
    assert count["vmvx"] >= 8
    assert count["vm"] >= 10
    assert count["embedded-elf"] >= 35


# --- compiling ----------------------------------------------------------------------------------


@pytest.mark.parametrize("case_id", CASE_IDS)
def test_compiles(case_id, compiled):
    path = compiled(_case(case_id))
    data = path.read_bytes()
    assert data[:4] == b"PK\x03\x04", "expected the polyglot ZIP container"
    assert b"IREE" in data[:256]


def _rodata_segments(case, dumps):
    segs = []
    for line in dumps(case).preamble:
        m = re.match(r"vm\.rodata\[(\d+)\] = ([0-9A-F]*)$", line)
        if m:
            segs.append(binascii.unhexlify(m.group(2)))
    return segs


@pytest.mark.parametrize("case_id", [c.id for c in CASES if c.kind != "vm"])
def test_executable_format(case_id, dumps):
    """Tensor programs carry the variant's executable format; host-only programs have none."""
    case = _case(case_id)
    segs = _rodata_segments(case, dumps)
    formats = {s.decode() for s in segs if re.fullmatch(rb"[a-z0-9-]+-(x86_64|bytecode-fb)", s)}
    expected = {case.executable_format} if case.kind == "tensor" else set()
    assert formats == expected, formats


# --- the disassembly ----------------------------------------------------------------------------


@pytest.mark.parametrize("case_id", CASE_IDS)
def test_dump_parses(case_id, dumps):
    case = _case(case_id)
    funcs = dumps(case)
    if case.dump_issue:
        # Documented iree-dump-module bug: the tool must really fail (else drop the note).
        assert funcs.returncode != 0 or funcs.stderr, case.dump_issue
        return
    assert funcs.returncode == 0, funcs.stderr
    assert funcs.ordered, "no functions in the dump"
    for header, lines in funcs.ordered:
        assert lines and lines[0] == "^bb0:", header
        for line in lines:
            assert line.startswith("^bb") or dump_mnemonic(line), (header, line)


def test_opcode_coverage(dumps):
    seen = Counter()
    for case in CASES:
        for _, lines in dumps(case).ordered:
            seen.update(m for m in map(dump_mnemonic, lines) if m)
    missing = sorted(REQUIRED_OPCODES - set(seen))
    assert not missing, f"corpus no longer emits: {missing}"
    assert any(op.endswith("f32") for op in seen) and any(op.endswith("f64") for op in seen)


def test_dump_broken_opcodes_present(compiled):
    """The two ops iree-dump-module cannot print are in the corpus (checked on the source)."""
    texts = {c.name: c.source.read_text() for c in CASES if c.dump_issue}
    joined = "\n".join(texts.values())
    assert "vm.switch.ref" in joined
    assert "vm.cast.ui64.f32" in joined and "arith.uitofp %l : i64 to f32" in joined


# --- running under iree.runtime -----------------------------------------------------------------


def _exports(session):
    return [n for n in session.module.function_names if not n.startswith("__")]


@pytest.mark.parametrize("case_id", CASE_IDS)
def test_exports_run(case_id, compiled):
    case = _case(case_id)
    session = IreeSession(compiled(case))
    exports = _exports(session)
    assert exports, "module has no exports"
    ran = 0
    for name in exports:
        if name in case.run_exceptions:
            continue
        sig = session.signature(name)
        for seed in (0, 1):
            inputs = inputs_for_signature(sig, seed=seed)
            if name in case.expected_failures:
                with pytest.raises(Exception, match=re.escape(case.expected_failures[name]["error"])):
                    session.call(name, inputs, signature=sig)
                continue
            results = session.call(name, inputs, signature=sig)
            assert len(results) == len(sig.results), name
        ran += 1
    assert ran, "no export was run"


# --- helpers used by everybody --------------------------------------------------------------------

_SAMPLE_DUMP = """\
vm.module @m version 0
vm.type i32
vm.rodata[0] = 6869

vm.export @f
vm.func @f(%i0: i32) -> (i32) {
^bb0:
  %i1 = vm.const.i32 1  // 0x00000001
  %i0 = vm.add.i32   %i0, %i1
  vm.return %i0
}

vm.func @m.f(%i0: i32) -> () {
^bb0:
  vm.return
}

vm.export @g
vm.export @h = @g
vm.func @g() -> () {
^bb0:
  vm.br ^bb1()
^bb1:
  vm.return
}

vm.func @m.f(%i0: i32) -> () {
^bb0:
  vm.return
}
"""


def test_parse_dump_functions():
    funcs = parse_dump_functions(_SAMPLE_DUMP)
    assert [h for h, _ in funcs.ordered] == [
        "vm.func @f(%i0: i32) -> (i32) {",
        "vm.func @m.f(%i0: i32) -> () {",
        "vm.func @g() -> () {",
        "vm.func @m.f(%i0: i32) -> () {",
    ]
    assert funcs["vm.func @f(%i0: i32) -> (i32) {"] == [
        "^bb0:",
        "%i1 = vm.const.i32 1 // 0x00000001",
        "%i0 = vm.add.i32 %i0, %i1",
        "vm.return %i0",
    ]
    assert "vm.func @m.f(%i0: i32) -> () { #2" in funcs
    assert funcs.exports["vm.func @g() -> () {"] == ["vm.export @g", "vm.export @h = @g"]
    assert funcs.preamble == ["vm.module @m version 0", "vm.type i32", "vm.rodata[0] = 6869"]
    assert [h for h, _ in funcs.by_name("m.f")] == [funcs.ordered[1][0]] * 2
    assert dump_mnemonic("[00000012] %i0 = vm.add.i32 %i0, %i1") == "add.i32"
    assert dump_mnemonic("vm.call.variadic @hal.x segments[1](%i0)") == "call.variadic"
    assert dump_mnemonic("^bb3:") is None


def test_e2e_cases_resolve():
    cases = e2e_cases()
    if not cases:
        pytest.skip("shared/iree-e2e is not present")
    for case in cases:
        assert case.source.is_file(), case.source
        assert case.functions and "--iree-hal-target-device=local" in case.flags

"""`pyree-translate --dump` disassembly against `iree-dump-module --output=disassembly`.

For every function of every corpus module and every IREE e2e compile case
(../shared/iree-e2e/cases.json; skipped when absent), our function header line, export
lines and instruction lines must equal the reference tool's after collapsing whitespace,
with and without bytecode offsets. When the reference run succeeds, the whole text must
also be byte-identical.

Exceptions are listed explicitly below: the functions where iree-dump-module 3.13 is
known to be wrong (`switch.ref`, `cast.ui64.f32`; vm-bytecode.md §8.4). For those the test
checks that the reference really fails there, and checks our text against hand-decoded
text instead. Functions after such a function in the same module are never printed by the
reference; they are listed too and checked against hand-written text.

One `iree-dump-module --bytecode_offsets` run per module: the no-offsets reference is that
text with the `[%08X]` prefixes removed (test_reference_without_offsets_is_stripped_text
checks this equivalence on a few modules).
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field

import pytest
from conftest import (
    corpus_cases,
    e2e_cases,
    iree_dump_text,
    parse_dump_functions,
)

from translator.cli import dump_text
from translator.decoder import decode_function
from translator.reader import read_module_file

# -- the documented iree-dump-module bugs ---------------------------------------------------------
# (program or e2e case name, function display name) -> what is wrong with the reference, the
# hand-decoded text (with offsets), and the hand-decoded bytes of the instruction it chokes on.

BUGGY_OPS = ("switch.ref", "cast.ui64.f32")


@dataclass(frozen=True)
class KnownBug:
    op: str  # the instruction the reference tool cannot print
    stderr: str  # regex the reference tool's stderr must match
    expected: tuple[str, ...]  # our text, with offsets (whitespace-collapsed)
    op_pc: int
    op_bytes: str  # hex of that instruction's bytes


KNOWN_REFERENCE_BUGS: dict[tuple[str, str], KnownBug] = {
    # switch.ref: 21 | index u16 | type u32 | default u16 | list (count, regs) | result u16.
    # The reference reads it without the type field, misparses everything after and fails
    # the block count check: header printed, no body.
    ("vm_switch_ref", "pick"): KnownBug(
        op="switch.ref",
        stderr=r"invalid descriptor block count 3; found \d+ blocks",
        op_pc=0x15,
        op_bytes="21 0000 02000000 00c0 0200 0180 0280 0280",
        expected=(
            "[00000000]^bb0:",
            "[00000001] %i2:3 = vm.const.i64.zero",
            "[00000004] %r0 = vm.const.ref.zero",
            "[00000007] %r1 = vm.const.ref.rodata 0 // 4b",
            "[0000000E] %r2 = vm.const.ref.rodata 1 // 2b",
            "[00000015] %r2 = vm.switch.ref %i0[%r1, %r2] else %R0",
            "[00000026] %i0 = vm.cmp.nz.ref %r2",
            "[0000002B] %i1 = vm.cmp.nz.i32 %i0",
            "[00000030] vm.cond_br %i1, ^bb1(), ^bb2()",
            "[00000040]^bb1:",
            "[00000041] %i4:5 = vm.buffer.length %r2",
            "[00000046] vm.discard.refs %r2",
            "[0000004C] vm.return %i4, %i0",
            "[00000054]^bb2:",
            "[00000055] vm.discard.refs %r2",
            "[0000005A] vm.return %i2, %i0",
        ),
    ),
    # cast.ui64.f32 (E0 3D | operand u16 | result u16): "unhandled ext opcode", the
    # reference stops printing (header without body, nothing after it).
    ("vm_cast_ui64_f32", "ui64_to_f32"): KnownBug(
        op="cast.ui64.f32",
        stderr=r"unhandled ext opcode",
        op_pc=0x08,
        op_bytes="e0 3d 0000 0300",
        expected=(
            "[00000000]^bb0:",
            "[00000001] %i2 = vm.const.i32 1 // 0x00000001",
            "[00000008] %i3 = vm.cast.ui64.f32 %i0:1",
            "[0000000E] vm.return %i3, %i2",
        ),
    ),
    ("arith_cast_ui64_f32", "ui64_to_f32"): KnownBug(
        op="cast.ui64.f32",
        stderr=r"unhandled ext opcode",
        op_pc=0x13,
        op_bytes="e0 3d 0000 0400",
        expected=(
            "[00000000]^bb0:",
            "[00000001] %i2:3 = vm.const.i64 -4096 // 0xFFFFFFFFFFFFF000",
            "[0000000C] %i2:3 = vm.mul.i64 %i0:1, %i2:3",
            "[00000013] %i4 = vm.cast.ui64.f32 %i0:1",
            "[00000019] %i0 = vm.cast.ui64.f32 %i2:3",
            "[0000001F] vm.return %i4, %i0",
        ),
    ),
}

# Functions the reference never prints because it aborted on an earlier function of the
# same module: (program, function) -> our expected text (with offsets) and header.
REFERENCE_ABORTED: dict[tuple[str, str], tuple[str, tuple[str, ...]]] = {
    ("vm_cast_ui64_f32", "after"): (
        "vm.func @after(%i0: i32) -> (i32) {",
        (
            "[00000000]^bb0:",
            "[00000001] %i0 = vm.add.i32 %i0, %i0",
            "[00000008] vm.return %i0",
        ),
    ),
}

# Floors for the number of functions compared (both offset modes count once).
MIN_CORPUS_FUNCTIONS = 250
MIN_E2E_FUNCTIONS = 650

_OFFSET_RE = re.compile(r"^\[[0-9A-F]{8}\]\s*")


def strip_offset(line: str) -> str:
    return _OFFSET_RE.sub("", line)


@dataclass
class Stats:
    modules: int = 0
    functions: int = 0  # functions compared against the reference text
    matched: int = 0
    known_bugs: int = 0
    aborted: int = 0
    failures: list = field(default_factory=list)


STATS = {"corpus": Stats(), "e2e": Stats()}
_RESULTS: dict = {}


@pytest.fixture(scope="module", autouse=True)
def _summary_line(request):
    """Prints the totals in pytest's terminal summary."""

    class _Reporter:
        def pytest_terminal_summary(self, terminalreporter):
            for kind, s in STATS.items():
                if s.modules:
                    terminalreporter.write_line(
                        f"disasm differential ({kind}): {s.modules} modules, {s.functions} "
                        f"functions compared x2 (with/without offsets), {s.matched} identical, "
                        f"{s.known_bugs} known iree-dump-module bugs, {s.aborted} not printed "
                        f"by it, {len(s.failures)} mismatches"
                    )

    plugin = _Reporter()
    if not request.config.pluginmanager.is_registered(plugin):
        request.config.pluginmanager.register(plugin, "pyree-disasm-differential-summary")
    yield


def compare_module(kind: str, case_id: str, name: str, vmfb) -> Stats:
    """Compares every function of one module; returns this module's stats (cached).

    `case_id` identifies the compiled module; `name` (the program) keys the bug lists.
    """
    key = (kind, case_id)
    if key in _RESULTS:
        return _RESULTS[key]
    s = Stats(modules=1)
    run = iree_dump_text(vmfb, offsets=True)  # the one reference run for this module
    ref = parse_dump_functions(run.stdout)
    ref.returncode, ref.stderr = run.returncode, run.stderr
    module = read_module_file(vmfb)
    ours_text = dump_text(module, output="disassembly", offsets=True)
    ours_plain_text = dump_text(module, output="disassembly", offsets=False)
    ours = parse_dump_functions(ours_text)
    ours_plain = parse_dump_functions(ours_plain_text)
    n = module.function_count
    assert len(ours.ordered) == n == len(ours_plain.ordered)
    ref_keys = list(ref.keys())
    our_keys = list(ours.keys())
    if ref.preamble != ours.preamble:
        s.failures.append((case_id, "<preamble>", ref.preamble, ours.preamble))
    module_has_bug = False
    for k in range(n):
        fname = module.function_display_name(k)
        header, lines = ours.ordered[k]
        plain_header, plain_lines = ours_plain.ordered[k]
        assert plain_header == header
        assert plain_lines == [strip_offset(x) for x in lines], (name, fname)
        mnemonics = {op.mnemonic for op in decode_function(module, k).ops()}
        bug = KNOWN_REFERENCE_BUGS.get((name, fname))
        if bug is not None:
            module_has_bug = True
            s.known_bugs += 1
            check_known_bug(name, fname, bug, module, k, ours.ordered[k], ref)
            assert ref.exports[ref_keys[k]] == ours.exports[our_keys[k]], (name, fname)
            continue
        if mnemonics & set(BUGGY_OPS):
            s.failures.append(
                (
                    case_id,
                    fname,
                    "uses " + "/".join(sorted(mnemonics & set(BUGGY_OPS))),
                    "not listed in KNOWN_REFERENCE_BUGS",
                )
            )
            continue
        if (name, fname) in REFERENCE_ABORTED:
            s.aborted += 1
            exp_header, exp_lines = REFERENCE_ABORTED[(name, fname)]
            assert module_has_bug, (name, fname)
            assert k >= len(ref.ordered), f"{name}: the reference did print {fname}"
            assert header == exp_header and lines == list(exp_lines), (name, fname, header, lines)
            continue
        if k >= len(ref.ordered):
            s.failures.append(
                (case_id, fname, "missing from the reference output", ref.stderr[-300:])
            )
            continue
        s.functions += 1
        ref_header, ref_lines = ref.ordered[k]
        problems = []
        if ref_header != header:
            problems.append(("header", ref_header, header))
        if ref.exports[ref_keys[k]] != ours.exports[our_keys[k]]:
            problems.append(("exports", ref.exports[ref_keys[k]], ours.exports[our_keys[k]]))
        if ref_lines != lines:
            problems.append(("offsets", *_first_diff(ref_lines, lines)))
        ref_plain = [strip_offset(x) for x in ref_lines]
        if ref_plain != plain_lines:
            problems.append(("no offsets", *_first_diff(ref_plain, plain_lines)))
        if problems:
            s.failures.append((case_id, fname, problems))
        else:
            s.matched += 1
    if not module_has_bug:
        # The reference ran cleanly: the whole text must be identical, byte for byte.
        if ref.returncode != 0:
            s.failures.append(
                (case_id, "<module>", f"iree-dump-module failed: {ref.stderr[-300:]}")
            )
        elif not s.failures and run.stdout != ours_text:
            s.failures.append(
                (
                    name,
                    "<module>",
                    "whole text differs",
                    *_first_diff(run.stdout.splitlines(), ours_text.splitlines()),
                )
            )
    _RESULTS[key] = s
    total = STATS[kind]
    total.modules += 1
    total.functions += s.functions
    total.matched += s.matched
    total.known_bugs += s.known_bugs
    total.aborted += s.aborted
    total.failures += s.failures
    return s


def _first_diff(ref, ours):
    for i, (a, b) in enumerate(zip(ref, ours)):
        if a != b:
            return (f"line {i}", f"ref:  {a}", f"ours: {b}")
    return (f"length {len(ref)} vs {len(ours)}",)


def check_known_bug(name, fname, bug: KnownBug, module, k, ours_fn, ref):
    header, lines = ours_fn
    # Our decoding: the hand-decoded text, and it ends exactly at the function's end.
    assert lines == list(bug.expected), f"{name}.{fname}: ours\n" + "\n".join(lines)
    fn = decode_function(module, k)
    d = module.descriptors[k]
    ends = [op.pc + op.length for op in fn.ops()]
    assert max(ends) == d.bytecode_length == fn.bytecode_length
    assert len(fn.blocks) == d.block_count
    ops = [op for op in fn.ops() if op.mnemonic == bug.op]
    assert ops and ops[0].pc == bug.op_pc
    code = bytes(module.function_bytecode(k))
    want = bytes.fromhex(bug.op_bytes.replace(" ", ""))
    assert code[ops[0].pc : ops[0].pc + ops[0].length] == want, code[ops[0].pc :].hex(" ")
    # The reference tool really is wrong there: it fails, and what it printed for this
    # function (header at most) is not the function's text.
    assert ref.returncode != 0, f"{name}: iree-dump-module no longer fails"
    assert re.search(bug.stderr, ref.stderr), ref.stderr
    assert k == len(ref.ordered) - 1, f"{name}: reference printed functions after {fname}"
    ref_header, ref_lines = ref.ordered[k]
    assert ref_header == header
    assert ref_lines != lines
    assert not any(bug.op in line for line in ref_lines)
    # Whatever it printed before failing is a prefix of ours (a body-less function here).
    assert lines[: len(ref_lines)] == ref_lines or not ref_lines


# -- the tests ----------------------------------------------------------------------------


CORPUS = corpus_cases()
E2E = e2e_cases()


@pytest.mark.parametrize("case", CORPUS, ids=[c.id for c in CORPUS])
def test_corpus_module_disassembly_matches_iree(case, compile_mlir):
    vmfb = compile_mlir(case.source, case.flags)
    s = compare_module("corpus", case.id, case.name, vmfb)
    assert not s.failures, s.failures
    if case.dump_issue:
        assert s.known_bugs, f"{case.id} has a dump_issue but no listed known bug"


@pytest.mark.skipif(not E2E, reason="../shared/iree-e2e is absent")
@pytest.mark.parametrize("case", E2E, ids=[c.id for c in E2E])
def test_e2e_module_disassembly_matches_iree(case, compile_mlir):
    vmfb = compile_mlir(case.source, case.flags)
    s = compare_module("e2e", case.id, case.id, vmfb)
    assert not s.failures, s.failures


def test_every_known_bug_is_seen(compile_mlir):
    names = {c.name for c in CORPUS} | {c.id for c in E2E}
    for prog, fname in list(KNOWN_REFERENCE_BUGS) + list(REFERENCE_ABORTED):
        assert prog in names, f"{prog} is no longer in the corpus"
    seen = set()
    for c in CORPUS:
        if c.name in {p for p, _ in KNOWN_REFERENCE_BUGS}:
            s = compare_module("corpus", c.id, c.name, compile_mlir(c.source, c.flags))
            assert not s.failures
            seen.add(c.name)
    assert seen == {p for p, _ in KNOWN_REFERENCE_BUGS}


def test_function_count(compile_mlir):
    """Every module compared (cached), totals above a floor, pass rate 100%."""
    for c in CORPUS:
        compare_module("corpus", c.id, c.name, compile_mlir(c.source, c.flags))
    for c in E2E:
        compare_module("e2e", c.id, c.id, compile_mlir(c.source, c.flags))
    corpus = STATS["corpus"]
    print(
        f"corpus: {corpus.functions} functions in {corpus.modules} modules, "
        f"{corpus.matched} identical, {corpus.known_bugs} known bugs, {corpus.aborted} unprinted"
    )
    assert corpus.functions >= MIN_CORPUS_FUNCTIONS
    assert corpus.matched == corpus.functions
    assert corpus.known_bugs == sum(p == c.name for c in CORPUS for p, _ in KNOWN_REFERENCE_BUGS)
    assert corpus.aborted == sum(p == c.name for c in CORPUS for p, _ in REFERENCE_ABORTED)
    if E2E:
        e2e = STATS["e2e"]
        print(f"e2e: {e2e.functions} functions in {e2e.modules} modules, {e2e.matched} identical")
        assert e2e.functions >= MIN_E2E_FUNCTIONS
        assert e2e.matched == e2e.functions


def test_reference_without_offsets_is_stripped_text(compile_mlir):
    # The equivalence the single-run strategy relies on, checked on real runs.
    for c in [c for c in CORPUS if not c.dump_issue][:6]:
        vmfb = compile_mlir(c.source, c.flags)
        with_offsets = iree_dump_text(vmfb, offsets=True).stdout
        without = iree_dump_text(vmfb, offsets=False).stdout
        assert _strip_lines(with_offsets) == without.splitlines(), c.id


def _strip_lines(text: str) -> list[str]:
    """`--bytecode_offsets` text -> the text without it (the prefix goes, the indent stays)."""
    return [re.sub(r"^\[[0-9A-F]{8}\]", "", line) for line in text.splitlines()]


def test_cli_dump_is_dump_text(compile_mlir):
    # The in-process dump_text used above is what `pyree-translate --dump` prints.
    c = next(c for c in CORPUS if c.name == "vm_switch_ref")
    vmfb = compile_mlir(c.source, c.flags)
    import sys
    from pathlib import Path

    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "translator.cli",
            "--dump",
            "--dump-output",
            "disassembly",
            "--bytecode-offsets",
            str(vmfb),
        ],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout == dump_text(read_module_file(vmfb), output="disassembly", offsets=True)

"""The fuzz harness (tests/fuzz.py) in its CI form: 2,000 structure-aware mutants of a
few corpus modules, translated and, where that succeeds, run with time and memory bounded.
No input may end in a translator internal error, a runtime traceback, a hang, a multi-line
error or a crash that does not follow a change to machine code.

The long form is one command (see tests/fuzz.py):

    python -m tests.fuzz --inputs 100000 --jobs 2 --out fuzz-report.json
"""

from __future__ import annotations

import json
import os

import pytest

from conftest import corpus_cases
from fuzz import SeedInfo, fuzz, mutate

INPUTS = int(os.environ.get("PYREE_FUZZ_INPUTS", "2000"))
# Small modules that cover the module structure (imports, exports, rodata, globals, lists,
# buffers, refs, branches) and embedded-ELF executables (dispatches, several kernels).
SEEDS = [
    ("vm_list", "vm"),
    ("vm_buffer", "vm"),
    ("vm_calls", "vm"),
    ("vm_globals", "vm"),
    ("vm_branches", "vm"),
    ("globals_refs", "embedded-elf"),
    ("tensor_elementwise", "embedded-elf"),
    ("multi_dispatch", "embedded-elf"),
    ("util_list", "embedded-elf"),
    ("dyn_shape_1d", "embedded-elf"),
]


@pytest.fixture(scope="module")
def seeds(compile_mlir):
    cases = {(c.name, c.variant): c for c in corpus_cases()}
    return [compile_mlir(cases[k].source, cases[k].flags) for k in SEEDS]


def test_mutations_cover_the_structure(seeds):
    """Every kind of mutation the harness claims is reachable from these seeds."""
    import random

    kinds = set()
    for path in seeds:
        info = SeedInfo(path, path.read_bytes())
        rng = random.Random(0)
        for _ in range(300):
            _, notes = mutate(info, rng)
            kinds |= {n.split("@")[0].split(" ")[0] for n in notes}
    assert {"fb", "bytecode", "byte", "elf_header", "elf_phdr", "elf_phdr_code",
            "elf_dynamic", "elf_dynamic_reloc", "elf_reloc", "elf_reloc_type"} <= kinds, kinds


def test_fuzz_ci(seeds, tmp_path):
    report = fuzz(seeds, INPUTS, jobs=2)
    (tmp_path / "report.json").write_text(json.dumps(report, indent=1))
    counts = report["counts"]
    assert sum(counts.values()) == INPUTS
    # The harness reached every stage: rejections, clean runs, and loads.
    assert counts.get("rejected", 0) and counts.get("ran", 0)
    assert report["bug_count"] == 0, json.dumps(report["bugs"][:5], indent=1)


def test_translation_classes():
    """Each diagnostic is one line: a warning before the error is still a clean rejection;
    a message broken over lines by a vmfb string is not."""
    from fuzz import classify_translation

    warning = "pyree-translate: warning: in.vmfb: executable format 'vmvx-bytecode-fb' ...\n"
    error = "pyree-translate: error: in.vmfb: function f pc 0x00000010: bad\n"
    assert classify_translation(1, error) == ("rejected", "")
    assert classify_translation(1, warning + error) == ("rejected", "")
    assert classify_translation(1, warning + warning + error) == ("rejected", "")
    for broken in ("f\nx", "f\rx", "f\u2028x", "f\x85x", "f\fx"):
        text = f"pyree-translate: error: in.vmfb: export {broken}: bad\n"
        assert classify_translation(1, text)[0] == "rejected_multiline", repr(broken)
        assert classify_translation(1, warning + text)[0] == "rejected_multiline", repr(broken)
    assert classify_translation(0, "pyree-translate: wrote m\n  1 functions\n")[0] == "ok"
    internal = "pyree-translate: internal error: in.vmfb: KeyError: 3 (in translator/x.py:1 f)\n"
    assert classify_translation(1, internal)[0] == "translator_internal"


def test_final_classes():
    """A run over its time is a bug unless IREE times out on the same file too, or only
    bytecode changed; crashes are judged by what IREE does and what was mutated."""
    from fuzz import final_class

    mixed = ["byte@1439=0x37", "bytecode byte@1048=0x7d"]
    hang = {"class": "hang", "detail": "over 15s CPU", "mutations": mixed}
    assert final_class(dict(hang, iree="hang")) == "program_timeout"
    assert final_class(dict(hang, iree="ok")) == "hang"
    assert final_class(dict(hang, mutations=mixed[1:], iree="ok")) == "program_timeout"
    translator = {"class": "hang", "detail": "translator over its time", "mutations": mixed[1:]}
    assert final_class(dict(translator, iree="hang")) == "hang"
    crash = {"class": "crash:SIGSEGV", "mutations": ["fb 'x'@4=0x0"]}
    assert final_class(dict(crash, iree="crash:SIGSEGV")) == "iree_crash:SIGSEGV"
    assert final_class(dict(crash, iree="ok")) == "crash:SIGSEGV"
    assert final_class(dict(crash, iree="ok", mutations=["elf_reloc@8(+100)=0x1"])) == "code_crash:SIGSEGV"
    exit127 = {"class": "crash:exit127", "mutations": ["elf_reloc_type@8(+100)=0x5"], "system_dylib": True}
    assert final_class(dict(exit127, iree="crash:exit127")) == "iree_crash:exit127"

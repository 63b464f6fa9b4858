"""Differential: every corpus program, translated by pyree and run, equals iree.runtime.

For each program and CPU build (embedded-elf, system-dylib, VM-level), every export is
called with the same deterministic inputs under `iree.runtime` (local-sync) and under
the translated package (local-sync, and `local` for the embedded-elf build); results
must be bit-identical, and where IREE fails pyree must fail too.
"""

from __future__ import annotations

import numpy as np
import pytest

from conftest import corpus_cases
from differential import DEVICE_CASES, check_against_iree, load_package, same_results
from iree_oracle import IreeSession
from translator.codegen import generate, write_package
from translator.reader import read_module_file


@pytest.mark.parametrize(
    "case,device", DEVICE_CASES, ids=[f"{c.id}-{d}" for c, d in DEVICE_CASES]
)
def test_translated_matches_iree_runtime(case, device, compile_mlir, tmp_path):
    check_against_iree(case, device, compile_mlir, tmp_path)


def test_control_flow_is_structured(compile_mlir):
    """The block-state fallback is rare: count it over the whole corpus."""
    structured = fallback = 0
    for case in corpus_cases(variants=("embedded-elf", "vm")):
        pkg = generate(read_module_file(compile_mlir(case.source, case.flags)), "pkg")
        structured += pkg.structured_functions
        fallback += pkg.fallback_functions
    print(f"multi-block functions: {structured} structured, {fallback} block-state fallback")
    assert structured > 0
    assert fallback <= max(1, structured // 20)


def test_vmvx_build_loads_and_runs_translated_kernels(compile_mlir, tmp_path):
    """A VMVX build (issue #26) translates every kernel into a Python module of the
    package and runs: no LoaderError (tests/runtime/test_vmvx.py compares all of them with IREE)."""
    cases = corpus_cases(variants=("vmvx",))
    assert cases, "the corpus must keep at least one vmvx build"
    case = next(c for c in cases if c.name == "tensor_matmul")
    vmfb = compile_mlir(case.source, case.flags)
    pkg_dir = write_package(read_module_file(vmfb), tmp_path, "pkg")
    assert sorted(p.name for p in pkg_dir.glob("vmvx_*.py")), "no kernel module written"
    pkg = load_package(pkg_dir)
    session = IreeSession(vmfb)
    a = np.arange(15, dtype=np.float32).reshape(3, 5) / 7
    b = np.arange(20, dtype=np.float32).reshape(5, 4) / 3
    expected = session.call("matmul", [a, b], session.signature("matmul"))
    actual = pkg.load(device="local-sync").matmul(a, b)
    assert same_results(expected[0], actual)

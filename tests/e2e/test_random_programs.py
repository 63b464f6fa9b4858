"""Random structured programs (tests/support/random_programs.py), translated and run, must give
`iree.runtime`'s results on the same vmfb: equal values, or both fail.

CI runs PROGRAMS (200) functions, BATCH per compiled module. More:

    PYREE_RANDOM_PROGRAMS=5000 PYREE_RANDOM_SEED=7 python -m pytest -q tests/e2e/test_random_programs.py

(each batch is one module; batches are compiled, translated and compared in turn).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from conftest import load_manifest
from iree_oracle import IreeSession
from random_programs import inputs, module
from differential import load_package
from translator.codegen import generate, write_package
from translator.reader import read_module_file

PROGRAMS = int(os.environ.get("PYREE_RANDOM_PROGRAMS", "200"))
SEED = int(os.environ.get("PYREE_RANDOM_SEED", "0"))
BATCH = 50
FLAGS = tuple(load_manifest()["variants"]["embedded-elf"]["flags"])


@pytest.mark.parametrize("batch", range((PROGRAMS + BATCH - 1) // BATCH))
def test_random_programs_match_iree(batch, compile_mlir, tmp_path):
    seed = SEED * 100003 + batch
    count = min(BATCH, PROGRAMS - batch * BATCH)
    text, names = module(seed, count)
    src = tmp_path / f"random_{seed}.mlir"
    src.write_text(text)
    vmfb = compile_mlir(src, FLAGS)
    m = read_module_file(vmfb)
    assert generate(m, "pkg").fallback_functions == 0  # structured programs stay structured
    pkg = load_package(write_package(m, tmp_path, "pkg"))
    ctx = pkg.load(device="local-sync")
    session = IreeSession(vmfb)
    failures = compared = 0
    for name in names:
        for args in inputs(seed * 1000 + names.index(name)):
            args = [np.int32(x) for x in args]
            try:
                expected, expected_error = session.call(name, list(args))[0], None
            except Exception as e:  # IREE's failure is the expected behaviour
                expected, expected_error = None, e
            try:
                actual, actual_error = ctx.call(name, *args), None
            except Exception as e:
                actual, actual_error = None, e
            where = f"{name}{tuple(int(a) for a in args)} (module: python -m tests.support.random_programs {seed} {count})"
            if expected_error is not None:
                assert actual_error is not None, f"{where}: IREE failed ({expected_error}), pyree gave {actual!r}"
                failures += 1
                continue
            assert actual_error is None, f"{where}: pyree failed: {actual_error!r}"
            assert int(np.int32(actual)) == int(np.int32(expected)), f"{where}: IREE {expected} != pyree {actual}"
            compared += 1
    assert compared > 0
    print(f"batch {batch}: {count} programs, {compared} results equal, {failures} failures on both sides")

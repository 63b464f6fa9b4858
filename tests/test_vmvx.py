"""VMVX executables (issue #26): the corpus's VMVX builds, translated (every kernel into
Python at translate time) and run, equal iree.runtime bit for bit.

Each `vmvx` corpus program runs in two builds: the default one (scalar kernels that
import nothing) and `--iree-vmvx-enable-microkernels` (kernels calling the `vmvx`
module's 2-D tile ops), on `local-sync` and `local`.
"""

from __future__ import annotations

import dataclasses

import pytest

from conftest import corpus_cases
from test_translate_run import test_translated_matches_iree_runtime as _differential

UKERNELS = "--iree-vmvx-enable-microkernels"


def _builds():
    out = []
    for case in corpus_cases(variants=("vmvx",)):
        out.append(case)
        out.append(dataclasses.replace(case, id=f"{case.name}@vmvx-ukernels", flags=case.flags + (UKERNELS,)))
    return out


BUILDS = _builds()
DEVICE_CASES = [(c, d) for c in BUILDS for d in ("local-sync", "local")]


@pytest.mark.parametrize("case,device", DEVICE_CASES, ids=[f"{c.id}-{d}" for c, d in DEVICE_CASES])
def test_vmvx_build_matches_iree_runtime(case, device, compile_mlir, tmp_path):
    _differential(case, device, compile_mlir, tmp_path)

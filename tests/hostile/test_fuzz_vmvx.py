"""The VMVX fuzz harness (tests/fuzz_vmvx.py) in its CI form: a few hundred mutated
executables nested in VMVX-built corpus modules (translated, then loaded and called in
bounded forked children) and a few thousand direct calls of the `vmvx` module's imports
with hostile tile operands. No input may end in anything but a clean rejection (a
one-line typed error) or success: no translator internal error, traceback, MemoryError,
hang or crash.

The long form is one command (see tests/fuzz_vmvx.py):

    python -m tests.fuzz_vmvx --nested 5000 --tile 50000 --jobs 2 --out fuzz-vmvx-report.json
"""

from __future__ import annotations

import json
import os
import random

import pytest

from conftest import corpus_cases
from fuzz_vmvx import NESTED_KINDS, SEED_BUILDS, UKERNELS, NestedSeed, fuzz_vmvx, mutate_nested

NESTED = int(os.environ.get("PYREE_FUZZ_VMVX_NESTED", "400"))
TILE = int(os.environ.get("PYREE_FUZZ_VMVX_TILE", "2400"))


@pytest.fixture(scope="module")
def seeds(compile_mlir):
    cases = {c.name: c for c in corpus_cases(variants=("vmvx",))}
    return [compile_mlir(cases[n].source, cases[n].flags + ((UKERNELS,) if uk else ()))
            for n, uk in SEED_BUILDS]


def test_nested_mutations_cover_the_executable(seeds):
    """Every kind of nested mutation is reachable from these seeds."""
    kinds = set()
    for path in seeds:
        seed = NestedSeed(path, path.read_bytes())
        assert seed.exes, path
        rng = random.Random(0)
        for _ in range(200):
            kinds |= {n.split("@")[0].split(" ")[0] for n in mutate_nested(seed, rng)[1]}
    assert set(NESTED_KINDS) <= kinds, kinds


def test_fuzz_vmvx_ci(seeds, tmp_path):
    report = fuzz_vmvx(seeds, NESTED, TILE, jobs=2, batch=-(-NESTED // 2))
    (tmp_path / "report.json").write_text(json.dumps(report, indent=1))
    counts = report["counts"]
    assert sum(counts.values()) == NESTED + TILE, counts
    assert report["bug_count"] == 0, json.dumps(report["bugs"][:5], indent=1)
    # Every stage is reached: rejected executables, translated ones run, tile calls that
    # succeed and ones refused.
    for cls in ("rejected", "ran", "ok", "vm_error"):
        assert counts.get(cls, 0) > 0, counts
    ops = {k.removeprefix("op ") for k in report["by_mutation"] if k.startswith("op ")}
    assert {"mmt4d", "pack", "unpack", "query_tile_sizes.2d", "divs.2d.i32", "copy.2d.x64"} <= ops, ops


def test_found_tile_operand_bugs_are_vm_errors():
    """What the tile family found: an operand whose strides revisit elements claims more
    elements than pyree maps (was a MemoryError), an empty tile with a huge other size
    (was one), an mmt4d with K0 = 0 and a huge K (was a 2**31-step loop)."""
    import time

    from runtime_support.errors import StatusCode, VMError
    from runtime_support.modules.vmvx import VmvxModule
    from runtime_support.vm.buffer import VMBuffer

    vmvx = VmvxModule()

    def buf(n):
        return VMBuffer(bytearray(n))

    with pytest.raises(VMError) as e:
        vmvx.copy_2d_x8(buf(8), 0, 0, 0, buf(8), 0, 0, 0, 2**32 - 1, 2**32 - 1)
    assert e.value.code == StatusCode.RESOURCE_EXHAUSTED and "vmvx.copy.2d.x8: in:" in str(e.value)
    vmvx.neg_2d_f32(buf(256), 0, 2**31 - 2, 1, buf(16), 0, 2**31 - 2, 1, 0, 2**31 - 1)  # (empty)
    t0 = time.monotonic()
    out = buf(64)
    out.data[0] = 5
    vmvx.mmt4d(buf(64), 0, 0, buf(64), 0, 0, out, 0, 1, 1, 1, 2**31 - 1, 1, 1, 0, 0x201)
    assert out.data[0] == 0 and time.monotonic() - t0 < 5

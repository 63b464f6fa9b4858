"""The parameter-archive fuzz harness (tests/fuzz_params.py) in its CI form: a few
thousand structure-aware mutants of valid .irpa, .safetensors and .gguf archives, opened
as `load(parameters=...)` opens them, in forked children with bounded address space and
time. No input may end in a traceback, a hang, a MemoryError or a crash, and every
mutation kind must be reached.

The long form is one command:

    python -m tests.fuzz_params --inputs 100000 --jobs 2 --out fuzz-params-report.json
"""

from __future__ import annotations

import json
import os

from fuzz_params import KINDS, fuzz

INPUTS = int(os.environ.get("PYREE_FUZZ_PARAMS_INPUTS", "3000"))


def test_fuzz_params_ci():
    report = fuzz(INPUTS, jobs=2, batch=-(-INPUTS // 2))
    assert report["done"] == INPUTS
    assert report["bug_count"] == 0, json.dumps(report["bugs"][:5], indent=1)
    assert set(KINDS) <= set(report["by_mutation"]), sorted(report["by_mutation"])
    # Both outcomes occur: the mutants are neither all refused nor all harmless.
    assert report["counts"].get("loaded", 0) > 0 and report["counts"].get("rejected", 0) > 0

"""The CLI fuzz harness (tests/fuzz_cli.py) in its CI form: a few thousand mutated command
lines, flagfiles, `--input` SPECs and .npy files through pyree-run's parsers, in forked
children with bounded memory and time. No input may end in a traceback, a multi-line
usage error, a hang, an escaped MemoryError or a crash; every mutation kind is reached.

The long form is one command (see tests/fuzz_cli.py):

    python -m tests.fuzz_cli --inputs 100000 --jobs 2 --out fuzz-cli-report.json
"""

from __future__ import annotations

import os

from fuzz_cli import MUTATIONS, fuzz, generate

INPUTS = int(os.environ.get("PYREE_FUZZ_CLI_INPUTS", "3000"))


def test_inputs_replay_from_their_index():
    a, b = generate(1234), generate(1234)
    assert a == b and a["kinds"]


def test_fuzz_cli_ci():
    report = fuzz(INPUTS, jobs=2)
    assert report["done"] == INPUTS
    assert report["bug_count"] == 0, report["bugs"][:5]
    reached = set(report["by_mutation"])
    expected = {k for kinds in MUTATIONS.values() for k in kinds}
    assert expected <= reached, expected - reached
    assert report["counts"].get("parsed") and report["counts"].get("rejected")

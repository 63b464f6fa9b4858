"""Queue regions (translator/analyses/queue_regions.py, docs/design/host-path.md §4).

- coverage: every group the existing matchers find (submissions, chains, one-shots,
  argument checks) lies inside exactly one region, in every corpus and bench program;
- beyond the matchers: small programs of the shapes they miss, each one region;
- privacy: a fence or command buffer that escapes is an output, never interior.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import REPO_ROOT, corpus_cases
from translator.analyses import arguments, chains, one_shots, queue_regions, submissions
from translator.analyses.liveness import RefLiveness
from translator.pipeline import Pipeline
from runtime_support.exec import steps

LLVM_CPU = (
    "--iree-hal-target-device=local",
    "--iree-hal-local-target-device-backends=llvm-cpu",
    "--iree-llvmcpu-target-cpu=generic",
)
BENCH = sorted((REPO_ROOT / "bench" / "programs").glob("*.mlir"))
CORPUS = corpus_cases(variants=["embedded-elf"])


def regions_of(pipeline: Pipeline):
    """(k, fn, live, regions) per function, the analyses invoked as codegen does."""
    for k, fn in enumerate(pipeline.functions):
        live = RefLiveness(fn, pipeline.cfg(k))
        yield k, fn, live, queue_regions.find(pipeline.module, fn, live, pipeline.cfg(k))


def matcher_groups(module, fn, live):
    """(matcher, pcs) of each group the existing mechanisms find."""
    subs = submissions.find(module, fn, live)
    for g in subs.values():
        yield "submission", {op.pc for op in (*g.ops, g.await_op)}
    for g in chains.find(module, fn, live, {k: len(g.ops) for k, g in subs.items()}).values():
        yield "chain", {op.pc for op in g.ops}
    for gs in one_shots.find(module, fn, live).values():
        for g in gs:
            ops = [op for _, group in g.steps for op in group] + [*g.ending.ops, *g.ending.between]
            yield "one_shot", {op.pc for op in ops}
    for g in arguments.find(module, fn).values():
        yield "argument", {op.pc for op in g.ops}


def check_coverage(path) -> int:
    p = Pipeline.from_file(path)
    groups = 0
    for _k, fn, live, regions in regions_of(p):
        pcs = [r.pcs for r in regions]
        for a in range(len(pcs)):  # regions never overlap
            for b in range(a + 1, len(pcs)):
                assert not pcs[a] & pcs[b], (fn.name, a, b)
        for kind, group in matcher_groups(p.module, fn, live):
            inside = [r for r in regions if group <= r.pcs]
            assert len(inside) == 1, f"{fn.name}: a {kind} group at {sorted(group)} is in no one region"
            groups += 1
    return groups


@pytest.mark.parametrize("case", CORPUS, ids=lambda c: c.id)
def test_corpus_matcher_groups_lie_in_one_region(case, compile_mlir):
    check_coverage(compile_mlir(case.source, case.flags))


@pytest.mark.parametrize("src", BENCH, ids=lambda p: p.stem)
def test_bench_matcher_groups_lie_in_one_region(src, compile_mlir):
    assert check_coverage(compile_mlir(src, LLVM_CPU)) > 0  # (every bench program has some)

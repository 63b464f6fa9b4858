"""Watching native plans in tests: the replay plans one_shot.py runs, and a plan's
dispatch records (where the runner keeps its inline and pool estimates)."""

from __future__ import annotations

from runtime_support.hal.plan import Plan
from runtime_support.loaders import native


def replay_runs(monkeypatch) -> list:
    """Each replay plan the one-shot fast path runs (Plan.run_values), in order, as
    (plan, whether it ran)."""
    runs = []
    run_values = Plan.run_values

    def spy(plan, workers, values):
        ran = run_values(plan, workers, values)
        runs.append((plan, ran))
        return ran

    monkeypatch.setattr(Plan, "run_values", spy)
    return runs


def dispatch_records(plan) -> list[int]:
    """The word offsets of a plan's dispatch records."""
    at, out = 0, []
    while at < len(plan.words) and plan.words[at]:
        if plan.words[at] == native.OP_DISPATCH:
            out.append(at)
        at += plan.words[at + 1]
    return out

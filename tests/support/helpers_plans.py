"""Watching native plans in tests: the plans queue programs' segments launch, and a
plan's dispatch records (where the runner keeps its inline and pool estimates)."""

from __future__ import annotations

from runtime_support.exec.plan import Plan
from runtime_support.native import layout as native_layout


def launched_plans(monkeypatch) -> list:
    """Each plan launched (Plan.launch: a queue program's segment, runtime_support/exec),
    in order."""
    plans = []
    launch = Plan.launch

    def spy(plan, workers):
        plans.append(plan)
        return launch(plan, workers)

    monkeypatch.setattr(Plan, "launch", spy)
    return plans


def plans_per_call(calls, launched: list) -> list:
    """For each `(key, thunk)` of `calls`: runs it and collects (key, the ids of the plans
    it launched), in order."""
    out = []
    for key, thunk in calls:
        before = len(launched)
        thunk()
        out.append((key, tuple(id(p) for p in launched[before:])))
    return out


def one_plan_per_key(per_call) -> bool:
    """Whether every call launched plans, the calls of one key the same ones and calls of
    different keys different ones."""
    by_key: dict = {}
    for key, ids in per_call:
        if not ids or by_key.setdefault(key, ids) != ids:
            return False
    seen: set = set()
    for ids in by_key.values():
        if seen & set(ids):
            return False
        seen |= set(ids)
    return True


def dispatch_records(plan) -> list[int]:
    """The word offsets of a plan's dispatch records."""
    at, out = 0, []
    while at < len(plan.words) and plan.words[at]:
        if plan.words[at] == native_layout.OP_DISPATCH:
            out.append(at)
        at += plan.words[at + 1]
    return out

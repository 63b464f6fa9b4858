"""The outcome tally the fuzz harnesses of parsers share (tests/fuzz_cli.py,
tests/fuzz_params.py): counts per outcome class, per mutation kind, and the bug inputs.

    tally = Tally(is_bug)
    tally.add(result, kinds)     result: a dict with "class"; kinds: its mutation kinds
    tally.fields()               the report's counts, by_mutation, bug_count and bugs
"""

from __future__ import annotations

from typing import Callable, Iterable

BUGS_KEPT = 200  # bug inputs a report lists (bug_count counts them all)


class Tally:
    def __init__(self, is_bug: Callable[[str], bool]) -> None:
        self.is_bug = is_bug
        self.counts: dict[str, int] = {}
        self.by_mutation: dict[str, dict[str, int]] = {}
        self.bugs: list[dict] = []

    def add(self, result: dict, kinds: Iterable[str]) -> None:
        cls = result["class"]
        self.counts[cls] = self.counts.get(cls, 0) + 1
        for k in kinds:
            per_class = self.by_mutation.setdefault(k, {})
            per_class[cls] = per_class.get(cls, 0) + 1
        if self.is_bug(cls):
            self.bugs.append(result)

    def fields(self) -> dict:
        return {
            "counts": dict(sorted(self.counts.items())),
            "by_mutation": dict(sorted(self.by_mutation.items())),
            "bug_count": len(self.bugs),
            "bugs": self.bugs[:BUGS_KEPT],
        }

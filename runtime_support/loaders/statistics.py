"""Per-dispatch statistics: how often each executable export ran and for how long.

Off by default. While off, a dispatch pays one attribute read (`enabled`); the native
plan runner is handed no statistics array and times nothing. `pyree-run
--print_statistics` turns it on (`enable()`), runs, and prints `table()`.
Times are wall-clock nanoseconds around the whole grid (all workers).
"""

from __future__ import annotations

import threading
import time

enabled = False
clock = time.perf_counter_ns

_lock = threading.Lock()
_entries: dict[str, list[int]] = {}  # export name -> [count, total ns]


def enable(on: bool = True) -> None:
    global enabled
    enabled = bool(on)


def reset() -> None:
    with _lock:
        _entries.clear()


def record(name: str, nanoseconds: int, count: int = 1) -> None:
    with _lock:
        entry = _entries.get(name)
        if entry is None:
            _entries[name] = [count, nanoseconds]
        else:
            entry[0] += count
            entry[1] += nanoseconds


def snapshot() -> dict[str, tuple[int, int]]:
    """export name -> (count, total nanoseconds)."""
    with _lock:
        return {name: (c, ns) for name, (c, ns) in _entries.items()}


def table() -> str:
    """A plain-text table, slowest export first."""
    rows = sorted(snapshot().items(), key=lambda item: -item[1][1])
    total = sum(ns for _, (_, ns) in rows) or 1
    width = max([len("export")] + [len(name) for name, _ in rows])
    lines = [
        f"{'export':<{width}}  {'count':>8}  {'total ms':>10}  {'mean us':>9}  {'share':>6}",
    ]
    for name, (count, ns) in rows:
        lines.append(
            f"{name:<{width}}  {count:>8}  {ns / 1e6:>10.3f}  {ns / 1e3 / count:>9.2f}  "
            f"{100 * ns / total:>5.1f}%"
        )
    lines.append(f"{'(all)':<{width}}  {sum(c for _, (c, _) in rows):>8}  {total / 1e6 if rows else 0:>10.3f}")
    return "\n".join(lines)

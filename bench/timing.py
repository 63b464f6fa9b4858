"""Interleaved per-call timing of two callables on the same inputs."""

from __future__ import annotations

import statistics
import time


def first_call(fn, args) -> tuple[object, float]:
    t0 = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t0


def interleave(a, b, args, *, min_time: float, min_reps: int, max_reps: int, warmup: int = 2):
    """Per-call seconds of a(*args) and b(*args), called alternately (the order flips each
    round, so neither side always runs right after the other's cache traffic) until both
    have run `min_reps` times and `min_time` seconds have passed, or `max_reps` rounds."""
    for _ in range(warmup):
        a(*args)
        b(*args)
    ta, tb = [], []
    clock = time.perf_counter
    start = clock()
    for i in range(max_reps):
        if i & 1:
            t0 = clock(); b(*args); t1 = clock(); a(*args); t2 = clock()  # noqa: E702
            tb.append(t1 - t0)
            ta.append(t2 - t1)
        else:
            t0 = clock(); a(*args); t1 = clock(); b(*args); t2 = clock()  # noqa: E702
            ta.append(t1 - t0)
            tb.append(t2 - t1)
        if i + 1 >= min_reps and clock() - start >= min_time:
            break
    return ta, tb


def stats(samples: list[float]) -> dict:
    return {
        "median_us": statistics.median(samples) * 1e6,
        "min_us": min(samples) * 1e6,
        "max_us": max(samples) * 1e6,
        "reps": len(samples),
    }


def paired_ratio(a: list[float], b: list[float]) -> float:
    """The median over rounds of a[i] / b[i], each pair timed back to back in one round of
    `interleave`: a drift of the machine's speed (this VM's drifts up to 2x within minutes)
    scales both calls of a round alike and cancels in their ratio, where the ratio of the
    two medians mixes rounds run at different speeds."""
    return statistics.median(x / y for x, y in zip(a, b) if y > 0)

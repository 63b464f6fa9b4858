"""The per-plan `run(table, workers)` of a native plan (plan.py), written once per plan.

Per execution a plan checks each binding-table slot it uses (range, null, writability,
alignment), writes the slot's (address, length) into its native table and calls the
runner. A loop over a tuple of per-slot checks spends most of its time on the loop itself
and on unpacking the check tuples; this writes, once per plan at finalize time, one
function with every slot's checks unrolled and their constants inlined. Each check that
could fail still runs, in the same order, and a failing one still declines (returns False
before touching memory) so the Python path runs and raises the exact error.
"""

from __future__ import annotations

import functools
import linecache
import zlib

from ..loaders import native, statistics
from .buffer import WHOLE_BUFFER


def _slot_lines(slot: int, i: int, end: int, writable: bool, align: int):
    """The checks and stores of one table slot (`table` is a non-empty sequence)."""
    # A null entry always declines: IREE's submission validation rejects a slot a
    # command uses without a buffer (INVALID_ARGUMENT), which the Python path raises.
    lines = [
        f"b, o, n = table[{slot}]",
        "if b is None:",
        "    return False",
        "size = b.length",
        f"if n == {WHOLE_BUFFER}:",
        "    n = size - o",
        # (end >= 0, so a negative length fails too)
        f"if o < 0 or n < {end} or o + n > size:",
        "    return False",
        "a = b.allocation",
    ]
    if writable:
        lines += ["if a.readonly:", "    return False"]
    if align > 1:
        lines += [f"if o % {align}:", "    return False"]
    lines += [f"t[{i}] = a.address + b.offset + o", f"t[{i + 1}] = n"]
    return lines


def compile_run(plan):
    """`plan.run(table, workers) -> bool`: runs the plan; False (nothing done) when the
    Python path must run instead (a check fails, an executable was closed, or another
    thread is running this plan)."""
    ns = {
        "acquire": plan._lock.acquire,
        "release": plan._lock.release,
        "t": plan.table,
        "run_plan": plan.run_plan,
        "args_address": plan.args_address,
        "plan": plan,
        "native": native,
        "statistics": statistics,
    }
    body = []
    for k, exe in enumerate(plan.executables):
        ns[f"e{k}"] = exe
        body += [f"if e{k}._closed:", "    return False"]
    fill = []
    for slot, i, end, _nonnull, writable, align in plan.checks:
        fill += _slot_lines(slot, i, end, writable, align)
    if plan.checks:
        empty = ["return False"] if plan.needs_table else [
            f"t[{i}] = t[{i + 1}] = 0" for _, i, *_ in plan.checks
        ]
        body += ["if not table:"] + [f"    {x}" for x in empty]
        body += ["else:", f"    if {plan.max_slot} >= len(table):", "        return False"]
        body += [f"    {x}" for x in fill]
    if plan.parallel:
        body += [
            "if workers != plan._workers or native._pool is not plan._pool:",
            "    plan._use_workers(workers)",
        ]
    body += [
        "if statistics.enabled:",
        "    plan._run_counted()",
        "    return True",
        "result = run_plan(args_address)",
        "if result:",
        "    plan._raise(result)",
        "return True",
    ]
    source = "\n".join(
        ["def run(table, workers):", "    if not acquire(False):", "        return False",
         "    try:"]
        + [f"        {x}" for x in body]
        + ["    finally:", "        release()"]
    )
    exec(_compiled(source), ns)
    return ns["run"]


@functools.lru_cache(maxsize=256)
def _compiled(source: str):
    """The code of a runner's source: plans of one shape (a model's command buffers often
    share it) compile once, which keeps the first call's plan building cheap."""
    filename = f"<plan runner {zlib.crc32(source.encode()):08x}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    return compile(source, filename, "exec")

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
import struct
import zlib

from ..loaders import native, statistics
from .buffer import WHOLE_BUFFER


def _slot_lines(slot: int, k: int, end: int, writable: bool, align: int):
    """The checks of one table slot (`table` is a non-empty sequence), leaving its
    table entry in `a{k}` (address) and `n{k}` (length).

    The common case (an explicit length, at least `end`) takes the fewest bytecodes:
    WHOLE_BUFFER (-1) is below every `end` (>= 0), so it is resolved inside the length
    check. A null entry (None has no `length`) raises AttributeError, which the caller
    turns into declining: IREE's submission validation rejects a slot a command uses
    without a buffer (INVALID_ARGUMENT), which the Python path raises."""
    n = f"n{k}"
    lines = [
        f"b, o, {n} = table[{slot}]",
        f"if {n} < {end}:",
        f"    if {n} != {WHOLE_BUFFER}:",
        "        return False",
        f"    {n} = b.length - o",
        f"    if {n} < {end}:",
        "        return False",
        # (the usual offset is 0: one test, then the length alone against the buffer's)
        "if o:",
        f"    if o < 0 or o + {n} > b.length:",
        "        return False",
        f"    a{k} = b.address + o",
        f"elif {n} > b.length:",
        "    return False",
        "else:",
        f"    a{k} = b.address",
    ]
    if writable:
        lines += ["if b.allocation.readonly:", "    return False"]
    if align > 1:
        lines += [f"if o % {align}:", "    return False"]
    return lines


def _table_format(checks) -> str:
    """The struct format that writes every checked slot's (address, length) into the
    table in one call (about half the cost of an item store per word); slots no
    command uses are written as zeros."""
    used = {slot for slot, *_ in checks}
    return "=" + "".join("qq" if slot in used else "16x" for slot in range(max(used) + 1))


def compile_run(plan):
    """`plan.run(table, workers) -> bool`: runs the plan; False (nothing done) when the
    Python path must run instead (a check fails, an executable was closed, or another
    thread is running this plan).

    One thread at a time runs a plan (its table and dispatch states are shared): the
    guard is a one-token list, taken by `pop` and given back by `append` (each one C
    call, atomic under the GIL or the list's own lock), about a third of what a Lock's
    `acquire(False)` and `release` cost (acquire parses its arguments by keyword)."""
    ns = {
        "take": plan._token.pop,
        "give": plan._token.append,
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
    fill, values = [], []
    for k, (slot, _i, end, _nonnull, writable, align) in enumerate(plan.checks):
        fill += _slot_lines(slot, k, end, writable, align)
        values += [f"a{k}", f"n{k}"]
    if plan.checks:
        ns["fill_table"] = struct.Struct(_table_format(plan.checks)).pack_into
        fill.append(f"fill_table(t, 0, {', '.join(values)})")
        empty = ["return False"] if plan.needs_table else [
            f"t[{i}] = t[{i + 1}] = 0" for _, i, *_ in plan.checks
        ]
        body += ["if not table:"] + [f"    {x}" for x in empty]
        body += ["else:", f"    if {plan.max_slot} >= len(table):", "        return False"]
        body += ["    try:"] + [f"        {x}" for x in fill]
        body += ["    except AttributeError:  # a null entry", "        return False"]
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
        ["def run(table, workers):", "    try:", "        take()", "    except IndexError:",
         "        return False  # another thread is running this plan", "    try:"]
        + [f"        {x}" for x in body]
        + ["    finally:", "        give(1)"]
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

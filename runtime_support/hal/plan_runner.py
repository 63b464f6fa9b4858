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


def _slot_lines(b: str, o: str, n: str, a: str, end: int, writable: bool, align: int,
                decline: str, length: str | None = None) -> list[str]:
    """The checks of one table slot whose entry is unpacked into `b, o, n` (buffer,
    offset, length), leaving its (address, length) in `a` and `n`; a failing check runs
    `decline`.

    The common case (an explicit length, at least `end`) takes the fewest bytecodes:
    WHOLE_BUFFER (-1) is below every `end` (>= 0), so it is resolved inside the length
    check. A null entry (None has no `length`) raises AttributeError, which the caller
    turns into declining: IREE's submission validation rejects a slot a command uses
    without a buffer (INVALID_ARGUMENT), which the Python path raises.

    `length`: the buffer's length where the caller knows it (a buffer it has just
    allocated, never read-only), else the buffer's `length` is read."""
    fresh = length is not None
    length = length or f"{b}.length"
    lines = [
        f"if {n} < {end}:",
        f"    if {n} != {WHOLE_BUFFER}:",
        f"        {decline}",
        f"    {n} = {length} - {o}",
        f"    if {n} < {end}:",
        f"        {decline}",
        # (the usual offset is 0: one test, then the length alone against the buffer's)
        f"if {o}:",
        f"    if {o} < 0 or {o} + {n} > {length}:",
        f"        {decline}",
        f"    {a} = {b}.address + {o}",
        f"elif {n} > {length}:",
        f"    {decline}",
        "else:",
        f"    {a} = {b}.address",
    ]
    if writable and not fresh:
        lines += [f"if {b}.allocation.readonly:", f"    {decline}"]
    if align > 1:
        lines += [f"if {o} % {align}:", f"    {decline}"]
    return lines


def _table_format(checks) -> str:
    """The struct format that writes every checked slot's (address, length) into the
    table in one call (about half the cost of an item store per word); slots no
    command uses are written as zeros."""
    used = {slot for slot, *_ in checks}
    return "=" + "".join("qq" if slot in used else "16x" for slot in range(max(used) + 1))


def _namespace(plan) -> dict:
    """What a plan's compiled functions read: its guard, table, runner and arguments."""
    return {
        "take": plan._token.pop,
        "give": plan._token.append,
        "t": plan.table,
        "run_plan": plan.run_plan,
        "args_address": plan.args_address,
        "plan": plan,
        "native": native,
        "statistics": statistics,
    }


def _closed_lines(plan, ns: dict, decline: str) -> list[str]:
    """A closed executable's plan must not run (its code is unmapped)."""
    lines = []
    for k, exe in enumerate(plan.executables):
        ns[f"e{k}"] = exe
        lines += [f"if e{k}._closed:", f"    {decline}"]
    return lines


def _fill_lines(plan, ns: dict, decline: str, unpack: bool, lengths=None) -> list[str]:
    """Every checked slot's checks on its table entry in b{slot}, o{slot}, n{slot}
    (`unpack`: read from `table` first), then the native table written in one call.
    `lengths`: {slot: the length of a buffer the caller has just allocated there}."""
    lines, values = [], []
    for slot, _i, end, _nonnull, writable, align in plan.checks:
        b, o, n, a = f"b{slot}", f"o{slot}", f"n{slot}", f"a{slot}"
        if unpack:
            lines.append(f"{b}, {o}, {n} = table[{slot}]")
        known = (lengths or {}).get(slot)
        lines += _slot_lines(b, o, n, a, end, writable, align, decline, known)
        values += [a, n]
    ns["fill_table"] = struct.Struct(_table_format(plan.checks)).pack_into
    return lines + [f"fill_table(t, 0, {', '.join(values)})"]


def _launch_lines(plan) -> list[str]:
    """The runner called (counted per command while statistics are on); a failing
    command raises its error."""
    lines = []
    if plan.parallel:
        # (the first device's pool by name, as ever; a later device's by its ordinal)
        current = (f"native.current_pool({plan.pool_ordinal})" if plan.pool_ordinal
                   else "native._pool")
        lines += [
            f"if workers != plan._workers or {current} is not plan._pool:",
            "    plan._use_workers(workers)",
        ]
    return lines + [
        "if statistics.enabled:",
        "    plan._run_counted()",
        "else:",
        "    result = run_plan(args_address)",
        "    if result:",
        "        plan._raise(result)",
    ]


def compile_run(plan):
    """`plan.run(table, workers) -> bool`: runs the plan; False (nothing done) when the
    Python path must run instead (a check fails, an executable was closed, or another
    thread is running this plan).

    One thread at a time runs a plan (its table and dispatch states are shared): the
    guard is a one-token list, taken by `pop` and given back by `append` (each one C
    call, atomic under the GIL or the list's own lock), about a third of what a Lock's
    `acquire(False)` and `release` cost (acquire parses its arguments by keyword)."""
    ns = _namespace(plan)
    body = _closed_lines(plan, ns, "return False")
    if plan.checks:
        fill = _fill_lines(plan, ns, "return False", unpack=True)
        empty = ["return False"] if plan.needs_table else [
            f"t[{i}] = t[{i + 1}] = 0" for _, i, *_ in plan.checks
        ]
        body += ["if not table:"] + [f"    {x}" for x in empty]
        body += ["else:", f"    if {plan.max_slot} >= len(table):", "        return False"]
        body += ["    try:"] + [f"        {x}" for x in fill]
        body += ["    except AttributeError:  # a null entry", "        return False"]
    body += _launch_lines(plan) + ["return True"]
    source = "\n".join(
        ["def run(table, workers):", "    try:", "        take()", "    except IndexError:",
         "        return False  # another thread is running this plan", "    try:"]
        + [f"        {x}" for x in body]
        + ["    finally:", "        give(1)"]
    )
    exec(_compiled(source), ns)
    return ns["run"]


def image_of(plan):
    """`image(table, t) -> bool`, plan.run's checks of `table` (the same lines) with the
    words they pass written into `t`, an array like plan.table, instead of the plan's
    table; False (t partly written) where one fails. Compiled once per plan: for
    replays that check a table once and then run it many times (chain_loop.py)."""
    image = plan.image
    if image is None:
        ns = _namespace(plan)
        fill = _fill_lines(plan, ns, "return False", unpack=True)  # (`t`: the argument)
        lines = ["def image(table, t):", f"    if {plan.max_slot} >= len(table):",
                 "        return False", "    try:"]
        lines += [f"        {x}" for x in fill]
        lines += ["    except (AttributeError, TypeError, ValueError):  # a null or odd entry",
                  "        return False", "    return True"]
        exec(_compiled("\n".join(lines)), ns)
        image = plan.image = ns["image"]
    return image


@functools.lru_cache(maxsize=256)
def _compiled(source: str):
    """The code of a runner's source: plans of one shape (a model's command buffers often
    share it) compile once, which keeps the first call's plan building cheap."""
    filename = f"<plan runner {zlib.crc32(source.encode()):08x}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    return compile(source, filename, "exec")

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

from ..errors import VMError
from ..loaders import native, statistics
from .buffer import WHOLE_BUFFER, HalBuffer
from .queue import _internal


def _slot_lines(b: str, o: str, n: str, a: str, end: int, writable: bool, align: int,
                decline: str) -> list[str]:
    """The checks of one table slot whose entry is unpacked into `b, o, n` (buffer,
    offset, length), leaving its (address, length) in `a` and `n`; a failing check runs
    `decline`.

    The common case (an explicit length, at least `end`) takes the fewest bytecodes:
    WHOLE_BUFFER (-1) is below every `end` (>= 0), so it is resolved inside the length
    check. A null entry (None has no `length`) raises AttributeError, which the caller
    turns into declining: IREE's submission validation rejects a slot a command uses
    without a buffer (INVALID_ARGUMENT), which the Python path raises."""
    lines = [
        f"if {n} < {end}:",
        f"    if {n} != {WHOLE_BUFFER}:",
        f"        {decline}",
        f"    {n} = {b}.length - {o}",
        f"    if {n} < {end}:",
        f"        {decline}",
        # (the usual offset is 0: one test, then the length alone against the buffer's)
        f"if {o}:",
        f"    if {o} < 0 or {o} + {n} > {b}.length:",
        f"        {decline}",
        f"    {a} = {b}.address + {o}",
        f"elif {n} > {b}.length:",
        f"    {decline}",
        "else:",
        f"    {a} = {b}.address",
    ]
    if writable:
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


def _fill_lines(plan, ns: dict, decline: str, unpack: bool) -> list[str]:
    """Every checked slot's checks on its table entry in b{slot}, o{slot}, n{slot}
    (`unpack`: read from `table` first), then the native table written in one call."""
    lines, values = [], []
    for slot, _i, end, _nonnull, writable, align in plan.checks:
        b, o, n, a = f"b{slot}", f"o{slot}", f"n{slot}", f"a{slot}"
        if unpack:
            lines.append(f"{b}, {o}, {n} = table[{slot}]")
        lines += _slot_lines(b, o, n, a, end, writable, align, decline)
        values += [a, n]
    ns["fill_table"] = struct.Struct(_table_format(plan.checks)).pack_into
    return lines + [f"fill_table(t, 0, {', '.join(values)})"]


def _launch_lines(plan) -> list[str]:
    """The runner called (counted per command while statistics are on); a failing
    command raises its error."""
    lines = []
    if plan.parallel:
        lines += [
            "if workers != plan._workers or native._pool is not plan._pool:",
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


@functools.lru_cache(maxsize=256)
def _compiled(source: str):
    """The code of a runner's source: plans of one shape (a model's command buffers often
    share it) compile once, which keeps the first call's plan building cheap."""
    filename = f"<plan runner {zlib.crc32(source.encode()):08x}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    return compile(source, filename, "exec")


# -- the fused submission's execute, per plan and call-site shape --------------------------
#
# runtime_support/hal/fused.py runs `queue.execute.indirect` of a reached wait fence as
# LocalQueue.run_now(run_command_buffer, ...): five frames (run_now, run_command_buffer,
# plan.run, _stop_draining and the helper) and the table built twice (the helper puts the
# allocated buffers into it, then plan.run reads it back). `compile_submit` writes those
# steps as one function per (plan, slots): each entry unpacked once, the allocated buffers
# used where their entries are, the queue's draining role taken and given back inline.
# Every check still runs in the same order; whatever `run` would decline, and every other
# path (a busy queue, an entry of another type), puts the buffers into the table and goes
# the way the unfused code goes.

# What a compiled submit returns besides None (ran) or a VMError (ran and failed):
TYPE = "type"  # an entry is neither a HalBuffer nor null: the import path raises (table filled)
BUSY_QUEUE = "busy"  # another thread holds the queue (table filled)
MISMATCH = "mismatch"  # the table has another shape: nothing done


class _Decline(Exception):
    """A check `run` would decline on: the Python path runs instead."""


def compile_submit(plan, entries: int, placed):
    """`submit(command_buffer, queue, table, workers, *allocated) -> MISMATCH | None |
    VMError | TYPE | BUSY_QUEUE` for tables of `entries` entries, `placed` ((entry, index
    into allocated), ...) naming the entries that hold `ALLOCATED`. MISMATCH (nothing done)
    for a table of another length; None when this plan cannot use one (no table slots,
    or slots past `entries`): the caller keeps the general steps."""
    if not plan.checks or entries <= plan.max_slot:
        return None
    own = dict(placed)
    allocated = max(own.values(), default=-1) + 1
    ns = _namespace(plan)
    ns.update(HalBuffer=HalBuffer, VMError=VMError, _internal=_internal, _Decline=_Decline,
              TYPE=TYPE, BUSY_QUEUE=BUSY_QUEUE, MISMATCH=MISMATCH)
    targets = ", ".join(
        f"(_, o{k}, n{k})" if k in own else f"(b{k}, o{k}, n{k})" for k in range(entries)
    )
    params = "".join(f", x{j}" for j in range(allocated))
    place = [f"table[{k}] = (x{j}, o{k}, n{k})" for k, j in own.items()] or ["pass"]
    typed = [f"type(b{k}) is not HalBuffer and b{k} is not None"
             for k in range(entries) if k not in own]
    lines = [
        f"def submit(cb, queue, table, workers{params}, *_):",
        "    try:",
        f"        ({targets},) = table",
        "    except (TypeError, ValueError):  # another table shape",
        "        return MISMATCH",
    ]
    lines += [f"    b{k} = x{j}" for k, j in own.items()]
    if typed:
        lines += [f"    if {' or '.join(typed)}:"] + [f"        {x}" for x in place]
        lines += ["        return TYPE"]
    # LocalQueue.run_now's draining role, taken ...
    lines += ["    lock = queue._lock", "    lock.acquire()", "    if queue._draining:",
              "        lock.release()"]
    lines += [f"        {x}" for x in place] + ["        return BUSY_QUEUE"]
    lines += ["    queue._draining = True", "    lock.release()", "    error = None"]
    # ... plan.run's steps on the unpacked entries ...
    checks = _closed_lines(plan, ns, "raise _Decline")
    checks += _fill_lines(plan, ns, "raise _Decline", unpack=False)  # (unpacked above)
    # (counted before the run, as run_command_buffer counts it before plan.run)
    run = ["cb.executions += 1"] + _launch_lines(plan)
    lines += ["    try:", "        try:", "            take()", "        except IndexError:",
              "            raise _Decline  # another thread is running this plan",
              "        try:", "            try:"]
    lines += [f"                {x}" for x in checks]
    lines += ["            except AttributeError:  # a null entry",
              "                raise _Decline"]
    lines += [f"            {x}" for x in run]
    lines += ["        finally:", "            give(1)"]
    # ... the Python path wherever plan.run declines (it raises the exact error) ...
    lines += ["    except _Decline:"] + [f"        {x}" for x in place]
    lines += ["        try:", "            cb.execute(table, workers)",
              "        except VMError as exc:", "            error = exc",
              "        except Exception as exc:  # a bug or a native failure: INTERNAL",
              "            error = _internal(NAME, exc)",
              "    except VMError as exc:", "        error = exc",
              "    except Exception as exc:", "        error = _internal(NAME, exc)"]
    # ... and given back as LocalQueue._stop_draining does.
    lines += ["    finally:", "        lock.acquire()", "        if queue._ready:",
              "            lock.release()", "            queue._drain()", "        else:",
              "            queue._draining = False", "            lock.release()",
              "    return error"]
    ns["NAME"] = "device.queue.execute.indirect"
    exec(_compiled("\n".join(lines)), ns)
    return ns["submit"]

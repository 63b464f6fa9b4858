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

import ctypes
import functools
import linecache
import struct
import zlib

from ..errors import VMError
from ..loaders import native, statistics
from .buffer import WHOLE_BUFFER, HalBuffer, fresh_buffer
from .device import LocalDevice
from .fence import REACHED, Fence
from .queue import internal_error


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


# -- the fused submission's execute, per plan and call-site shape --------------------------
#
# runtime_support/hal/fused.py runs `queue.execute.indirect` of a reached wait fence as
# LocalQueue.run_now(run_command_buffer, ...): five frames (run_now, run_command_buffer,
# plan.run, release and the helper) and the table built twice (the helper puts the
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
    ns.update(HalBuffer=HalBuffer, VMError=VMError, internal_error=internal_error, _Decline=_Decline,
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
    lines += _execute_lines(plan, ns, place) + ["    return error"]
    ns["NAME"] = "device.queue.execute.indirect"
    exec(_compiled("\n".join(lines)), ns)
    return ns["submit"]


def _execute_lines(plan, ns: dict, place: list[str], busy: str = "return BUSY_QUEUE",
                   lengths=None, guarded=()) -> list[str]:
    """The body shared by compile_submit and compile_chain, indented for a function: the
    queue's draining role taken, the plan's checks and run on the unpacked entries b{k},
    o{k}, n{k}, the Python path where the plan declines (`place` puts the allocated
    buffers into `table` first; `busy` runs, after them, where another thread holds the
    queue; `guarded` runs once the plan's guard is taken), the role given back; the
    outcome is left in `error`."""
    lines = ["    lock = queue._lock", "    lock.acquire()", "    if queue._draining:",
             "        lock.release()"]
    lines += [f"        {x}" for x in place] + [f"        {busy}"]
    lines += ["    queue._draining = True", "    lock.release()", "    error = None"]
    # ... plan.run's steps on the unpacked entries ...
    checks = _closed_lines(plan, ns, "raise _Decline")
    checks += _fill_lines(plan, ns, "raise _Decline", unpack=False, lengths=lengths)
    # (counted before the run, as run_command_buffer counts it before plan.run)
    run = ["cb.executions += 1"] + _launch_lines(plan)
    lines += ["    try:", "        try:", "            take()", "        except IndexError:",
              "            raise _Decline  # another thread is running this plan",
              "        try:", "            try:"]
    lines += [f"                {x}" for x in (*guarded, *checks)]
    lines += ["            except AttributeError:  # a null entry",
              "                raise _Decline"]
    lines += [f"            {x}" for x in run]
    lines += ["        finally:", "            give(1)"]
    # ... the Python path wherever plan.run declines (it raises the exact error) ...
    lines += ["    except _Decline:"] + [f"        {x}" for x in place]
    lines += ["        try:", "            cb.execute(table, workers)",
              "        except VMError as exc:", "            error = exc",
              "        except Exception as exc:  # a bug or a native failure: INTERNAL",
              "            error = internal_error(NAME, exc)",
              "    except VMError as exc:", "        error = exc",
              "    except Exception as exc:", "        error = internal_error(NAME, exc)"]
    # ... and given back as LocalQueue.release does.
    return lines + ["    finally:", "        lock.acquire()", "        if queue._ready:",
                    "            lock.release()", "            queue._drain()", "        else:",
                    "            queue._draining = False", "            lock.release()"]


# -- the fused queue chain, per plan and call-site shape -----------------------------------
#
# fused.chain's fast path (the allocas, the execute, the optional dealloca, on a LocalDevice
# whose queue is idle) checks its arguments in loops over the allocas and table entries,
# then calls the compiled submit above: two frames and every entry unpacked twice, which
# is most of the host cost of a loop that submits one chain per iteration. `compile_chain`
# writes the whole fast path as one function per (plan, call-site shape), with the
# allocas, entries and checks unrolled.

def _fast_namespace(plan) -> dict:
    """What compile_chain's and compile_alloca's functions read."""
    ns = _namespace(plan)
    ns.update(HalBuffer=HalBuffer, VMError=VMError, internal_error=internal_error, _Decline=_Decline,
              BUSY_QUEUE=BUSY_QUEUE, MISMATCH=MISMATCH, LocalDevice=LocalDevice,
              Fence=Fence, REACHED=REACHED, fresh=fresh_buffer, new=object.__new__,
              NAME="device.queue.execute.indirect")
    return ns


def compile_alloca(plan, entries: int, slots):
    """`alloca(device, create_flags, affinity, wait, pool, memory_types, usage, size,
    alloca_flags, create_flags2, exec_affinity, cb, exec_flags, table, slots, timeout,
    await_flags, finish)`: the fast path of fused.alloca_execute_indirect's `submit` (its
    arguments, plus `finish`) in one function, for tables of `entries` entries with the
    new buffer in the entries `slots`.

    MISMATCH (nothing done) where the fast path's checks do not all pass, or an entry is
    of another type or the table of another length: the caller goes on as before, and
    the imports raise what they raise. Else the buffer is made as the fast path makes it
    and the execution runs: (buffer, 0) when it ran, else `finish(device, create_flags,
    create_flags2, exec_affinity, cb, exec_flags, table, timeout, await_flags, buffer,
    error)`. None when this plan cannot use one (no table slots, or slots past
    `entries`)."""
    if not plan.checks or entries <= plan.max_slot or any(k >= entries for k in slots):
        return None
    own = set(slots)
    ns = _fast_namespace(plan)
    targets = ", ".join(
        f"(_, o{k}, n{k})" if k in own else f"(b{k}, o{k}, n{k})" for k in range(entries)
    )
    typed = [f"type(b{k}) is not HalBuffer and b{k} is not None"
             for k in range(entries) if k not in own]
    finish = ("finish(device, create_flags, create_flags2, exec_affinity, cb, exec_flags, "
              "table, timeout, await_flags, x0, {})")
    lines = [
        "def alloca(device, create_flags, affinity, wait, pool, memory_types, usage, size,",
        "           alloca_flags, create_flags2, exec_affinity, cb, exec_flags, table, slots,",
        "           timeout, await_flags, finish):",
        # the fast path's checks, in its order (any failing one: nothing done)
        "    if type(device) is not LocalDevice or pool or size < 0 or (",
        "        wait is not None and not (",
        "            type(wait) is Fence and (wait.state == REACHED or wait.reached_now())",
        "        )",
        "    ):",
        "        return MISMATCH",
        "    queue = device.queue",
        "    if queue._draining:",
        "        return MISMATCH",
        "    try:",
        f"        ({targets},) = table",
        "    except (TypeError, ValueError):  # another shape",
        "        return MISMATCH",
    ]
    if typed:
        lines += [f"    if {' or '.join(typed)}:", "        return MISMATCH"]
    # hal.device.queue.alloca on a LocalDevice; its signal fence is reached at once
    lines += ["    allocator = device.allocator",
              "    x0 = fresh(size, memory_types & 0xFFFFFFFF, usage & 0xFFFFFFFF, allocator)",
              "    allocator.bytes_allocated += size"]
    lines += [f"    b{k} = x0" for k in sorted(own)]
    lines += ["    workers = device.worker_count"]
    place = [f"table[{k}] = (x0, o{k}, n{k})" for k in sorted(own)] or ["pass"]
    lines += _execute_lines(plan, ns, place, busy=f"return {finish.format('BUSY_QUEUE')}",
                            lengths={k: "size" for k in own})
    lines += ["    if error is None:", "        return x0, 0  # (the await of a reached fence)",
              f"    return {finish.format('error')}"]
    exec(_compiled("\n".join(lines)), ns)
    return ns["alloca"]


# A TRANSIENT alloca up to this size runs on the call site's scratch buffer (a new one
# that size costs a page fault per 4 KiB on every call: mlp's 128 KiB, about 10 us).
_SCRATCH_MAX = 1 << 20
_ZERO_BY_COPY = 1 << 16  # scratch zero-filled from zero bytes up to here, else by memset


def _new_scratch(size: int) -> list:
    """[buffer, a C callable that zero-fills it]: a call site's scratch."""
    buffer = HalBuffer.allocate(size)
    if size <= _ZERO_BY_COPY:
        zero = functools.partial(memoryview(buffer.allocation.array).__setitem__,
                                 slice(None), bytes(size))
    else:
        zero = functools.partial(ctypes.memset, buffer.address, 0, size)
    return [buffer, zero]


def compile_chain(plan, allocas: int, entries: int, placed, transient: int = -1,
                  marker=None):
    """`chain(device, wait, allocas, join_flags, create_flags, affinity, cb, exec_flags,
    table, slots, dealloca_args, finish)`, the fast path of fused.chain's `submit` (same
    arguments, plus `finish`) for `allocas` queue.allocas and tables of `entries` entries,
    `placed` ((entry, alloca index), ...) naming the entries that hold `ALLOCATED`.

    MISMATCH (nothing done) where the fast path does not apply or the call has another
    shape: the caller goes on as before. Else the new buffers are made as the fast path
    makes them and the execution runs; its outcome, unless the common one (ran, fence
    reached), goes to `finish(device, create_flags, affinity, cb, exec_flags, table,
    dealloca_args, buffers, error)`, the fast path's own tail. None when this plan cannot
    use one (no table slots, or slots past `entries`).

    `transient` >= 0: the call's dealloca names `marker` (fused.TRANSIENT), alloca
    `transient`, which nothing reads after the call: up to _SCRATCH_MAX bytes it is the
    site's scratch buffer, zero-filled under the plan's guard as a new buffer would be,
    and None in the results (a call with another dealloca: MISMATCH)."""
    if not plan.checks or entries <= plan.max_slot or allocas < 1 or transient >= allocas:
        return None
    own = dict(placed)
    if any(j >= allocas or k >= entries for k, j in own.items()):
        return None
    ns = _fast_namespace(plan)
    made = ", ".join(f"x{j}" for j in range(allocas))
    returned = ", ".join("None" if j == transient else f"x{j}" for j in range(allocas))
    unpack_allocas = ", ".join(f"(_, _, p{j}, t{j}, u{j}, s{j}, _)" for j in range(allocas))
    targets = ", ".join(
        f"(_, o{k}, n{k})" if k in own else f"(b{k}, o{k}, n{k})" for k in range(entries)
    )
    bad_alloca = " or ".join(f"p{j} or s{j} < 0" for j in range(allocas))
    typed = [f"type(b{k}) is not HalBuffer and b{k} is not None"
             for k in range(entries) if k not in own]
    finish = ("finish(device, create_flags, affinity, cb, exec_flags, table, dealloca_args, "
              f"({made},), {{}})")
    lines = [
        "def chain(device, wait, allocas, join_flags, create_flags, affinity, cb, exec_flags,",
        "          table, slots, dealloca_args, finish):",
        # fused.chain's checks, in its order (any failing one: nothing done)
        "    if type(device) is not LocalDevice or (wait is not None and not (",
        "        type(wait) is Fence and (wait.state == REACHED or wait.reached_now())",
        "    )):",
        "        return MISMATCH",
        "    queue = device.queue",
        "    if queue._draining:",
        "        return MISMATCH",
        "    if dealloca_args is not None:",
        "        try:",
        "            d_flags, _, d_buffer, _, d_which, d_fence = dealloca_args",
        "        except (TypeError, ValueError):",
        "            return MISMATCH",
        "        if d_which < 0 and type(d_buffer) is not HalBuffer or (",
        "            d_flags is None and d_fence is not None and type(d_fence) is not Fence",
        "        ):",
        "            return MISMATCH",
        "    try:",
        f"        ({unpack_allocas},) = allocas",
        f"        ({targets},) = table",
        "    except (TypeError, ValueError):  # another shape",
        "        return MISMATCH",
        f"    if {bad_alloca}:",
        "        return MISMATCH",
    ]
    if typed:
        lines += [f"    if {' or '.join(typed)}:", "        return MISMATCH"]
    w = transient
    if w >= 0:
        ns.update(TRANSIENT=marker, scratch=[None], new_scratch=_new_scratch)
        lines += ["    if dealloca_args is None or d_buffer is not TRANSIENT"
                  f" or d_which != {w}:", "        return MISMATCH"]
    # hal.device.queue.alloca on a LocalDevice, each fence reached at once
    new = [f"x{w} = fresh(s{w}, t{w} & 0xFFFFFFFF, u{w} & 0xFFFFFFFF, allocator)"]
    lines += ["    allocator = device.allocator"]
    for j in range(allocas):
        if j == w:
            lines += [f"    sc = s{w} <= {_SCRATCH_MAX} and s{w} > 0",
                      "    if sc:",
                      "        sc = scratch[0]",
                      f"        if sc is None or sc[0].length != s{w}:",
                      f"            sc = scratch[0] = new_scratch(s{w})",
                      f"        x{w} = sc[0]",
                      "    else:"] + [f"        {x}" for x in new]
        else:
            lines += [f"    x{j} = fresh(s{j}, t{j} & 0xFFFFFFFF, u{j} & 0xFFFFFFFF, allocator)"]
        lines += [f"    allocator.bytes_allocated += s{j}"]
    lines += [f"    b{k} = x{j}" for k, j in own.items()]
    lines += ["    workers = device.worker_count"]
    place = [f"table[{k}] = (x{j}, o{k}, n{k})" for k, j in own.items()] or ["pass"]
    # (the paths through the table run after the plan's guard is given back: a new
    # buffer there, not the scratch, which another thread may be using by then)
    place = (["if sc:", f"    {new[0]}"] if w >= 0 else []) + place
    lines += _execute_lines(plan, ns, place, busy=f"return {finish.format('BUSY_QUEUE')}",
                            lengths={k: f"s{j}" for k, j in own.items()},
                            guarded=["if sc:", "    sc[1]()"] if w >= 0 else [])
    # the common outcome as fused.chain's fast path leaves it: the last fence reached
    lines += [
        "    if error is None and (dealloca_args is None or not queue._draining):",
        "        if dealloca_args is not None and d_flags is None:",
        "            if d_fence is not None:",
        "                d_fence.signal()  # the outside fence the dealloca signals",
        f"            return {returned}, d_fence",
        "        fence = new(Fence)",
        "        fence.state = REACHED",
        "        fence.error = fence.waiters = fence._set = None",
        f"        return {returned}, fence",
        f"    return {finish.format('error')}",
    ]
    exec(_compiled("\n".join(lines)), ns)
    return ns["chain"]

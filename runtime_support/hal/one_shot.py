"""One call for a one-shot command buffer recorded and submitted in one block
(translator/analyses/one_shots.py: dynamic shapes record one per call).

Generated code keeps the block's integer ops in place and, where each recording call
was, appends that call's operands to a list as a step (the command buffer left out):

    steps = [(ALLOCA, fence_flags, affinity, wait, pool, memory_types, usage, size, flags)]
    steps.append((ALLOCA, ...))                       (any number, each its own buffer)
    steps.append((JOIN, flags))                       (the allocas' fences joined)
    steps.append((CREATE, modes, categories, affinity, binding_capacity))
    steps.append((LOOKUP, executable, name))
    steps.append((DISPATCH, executable, function, x, y, z, flags, constants, bindings))
    steps.append((BARRIER, source_stage_mask, target_stage_mask, flags))
    steps.append((COPY, source_slot, target_slot, source, source_offset, target,
                  target_offset, length, flags))
    steps.append((FILL, target, offset, length, slot, pattern, pattern_length, flags))

and then calls its call site's helper, in one of two forms:

    *buffers, *functions[, fence], status = submit(device, steps, create_flags, affinity,
                                                   wait, exec_flags, timeout, await_flags,
                                                   dealloca, keep)
        (`one_shot`: fence.create, queue.execute, fence.await of the new fence; with
        `dealloca` (fence_flags, affinity, buffer, flags), a queue.dealloca of `buffer`
        waiting on that fence and signalling another new one, which the await waits on;
        with `keep`, the awaited fence comes back too: code after the await reads it)
    *buffers, *functions[, fence] = submit(device, steps, affinity, wait, signal,
                                           exec_flags, dealloca, new_flags)
        (`one_shot_signal`: queue.execute signalling `signal`, a fence from outside; or,
        with `dealloca` (fence_flags, affinity, buffer, flags), queue.execute signalling a
        new fence and queue.dealloca of `buffer` waiting on it and signalling `signal`.
        `signal` NEW_FENCE: a new fence (fence.create with `new_flags`, after the
        dealloca's) that the block does not await, returned last: a loop carries it)

The ALLOCA steps come first, with a JOIN where there are several; `wait` is then
`ALLOCA_FENCE`, their (joined) fence. A dispatch's function `LOOKED_UP` is the latest
lookup's result; a buffer `ALLOCATED` (`ALLOCATED_1`, ...) the first (second, ...) ALLOCA
step's. The call returns each ALLOCA step's buffer, each lookup's result, and the
await's status.

GENERAL path: the calls themselves through the bound imports, in order, then
command_buffer.finalize and the submission: what the unfused code does. FAST path, only
where provably the same: the imports are the `hal` module's own, the device a
`LocalDevice` whose queue no other thread runs, the waits null or reached, pool 0, sizes
>= 0, a ONE_SHOT command buffer of a capacity >= 0 with the DISPATCH category for
dispatches and TRANSFER for copies and fills, every dispatch's executable a
`HalExecutable`, every buffer a `HalBuffer` (or a new one) with its range inside it, a
fill's pattern length and alignment valid (what recording checks), a dealloca's buffer a
`HalBuffer` or a new one, and every lookup answered before by the import for that
executable and read-only name. Then it allocates as queue.alloca does and runs the
commands as the command buffer's execution runs them (command_buffer.run_direct,
HalBuffer.copy_from, HalBuffer.fill), holding the queue's draining role as queue.execute
does; the fences, the join and the command buffer, which nothing else sees, are never
made. A failure fails the await as in the unfused code; in the signal form `signal` is
left as the queue leaves it: signaled, or failed with the error (raised where `signal` is
null; a dealloca on a LocalDevice only signals). Anything else: the general path, before
anything is done (or, when another thread took the queue meanwhile, from the command
buffer's create on, the buffers and lookups already made). A call site appends tuples of
one shape every call: its fast path is compiled once, for that shape (`compile_fast`),
so each call unpacks and tests its steps in one frame. The commands then run as one
native plan from the second call whose counts, constants, lengths and fill patterns are
the same (`_Replays`): the plan a reusable command buffer of those commands would make,
with a table slot per buffer operand that gets its address each call.
"""

from __future__ import annotations

import struct

from .buffer import HalBuffer, fresh_buffer
from .command_buffer import (
    CATEGORY_DISPATCH, CATEGORY_TRANSFER, MODE_ONE_SHOT, BufferRef, _Copy, _Dispatch, _Fill,
    run_direct,
)
from .device import LocalDevice
from .executable import HalExecutable
from .fence import REACHED, Fence
from .fused import ALLOCATED, _failed, _own
from .plan_runner import MISMATCH, _compiled
from .queue import BUSY, internal_error
from ..errors import VMError
from ..vm.buffer import VMBuffer

_M32 = 0xFFFFFFFF
_EXECUTE = "device.queue.execute"
_LOOKUPS_MAX = 256  # (executable, name) answers kept per helper


class _Marker:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


# Step kinds (each step tuple's first item).
ALLOCA = _Marker("ALLOCA")
JOIN = _Marker("JOIN")
CREATE = _Marker("CREATE")
LOOKUP = _Marker("LOOKUP")
DISPATCH = _Marker("DISPATCH")
BARRIER = _Marker("BARRIER")
COPY = _Marker("COPY")
FILL = _Marker("FILL")
# Operands the helper supplies: a dispatch's function from the latest LOOKUP step, the
# execute's wait fence (the ALLOCA steps' fence, joined), and the ALLOCA steps' buffers.
LOOKED_UP = _Marker("LOOKED_UP")
ALLOCA_FENCE = _Marker("ALLOCA_FENCE")
# The signal form's `signal` where the ending's last fence is a new one the block does not
# await (a loop carries it): the call makes it (fence.create with `new_flags`) and returns it.
NEW_FENCE = _Marker("NEW_FENCE")
ALLOCATED_1 = _Marker("ALLOCATED_1")
ALLOCATED_2 = _Marker("ALLOCATED_2")
ALLOCATED_3 = _Marker("ALLOCATED_3")
ALLOCATED_4 = _Marker("ALLOCATED_4")
ALLOCATED_5 = _Marker("ALLOCATED_5")
ALLOCATED_6 = _Marker("ALLOCATED_6")
ALLOCATED_7 = _Marker("ALLOCATED_7")
NEW_BUFFERS = (ALLOCATED, ALLOCATED_1, ALLOCATED_2, ALLOCATED_3, ALLOCATED_4, ALLOCATED_5,
               ALLOCATED_6, ALLOCATED_7)  # ALLOCA step k's buffer: NEW_BUFFERS[k]
_NEW_INDEX = {id(m): k for k, m in enumerate(NEW_BUFFERS)}


def _recorder(fence_create, alloca, join, create, lookup, dispatch, barrier, copy, fill,
              finalize, answers: dict):
    """`record(device, steps, buffers=None, functions=None)`: the steps through the
    imports, then command_buffer.finalize: (command buffer, the ALLOCA steps' fence (their
    join where there are several), their buffers, the lookups' results). With `buffers`
    and `functions` (what the fast path made already), from the create on, a reached
    fence in the allocas' place. Each lookup's answer for an executable and a read-only
    name is kept in `answers`. Also the (bound import, `hal` method name) pairs used."""

    def record(device, steps, buffers=None, functions=None):
        made = buffers is not None
        buffers = list(buffers) if made else []
        looked = list(functions) if made else []
        fences = []
        function = command_buffer = fence = None
        n = 0
        for step in steps:
            kind = step[0]
            if kind is ALLOCA:
                f = fence_create(device, step[1])
                if made:
                    f.signal()  # (what the fast path's allocation left: reached)
                else:
                    buffers.append(alloca(device, step[2], step[3], f, *step[4:]))
                fences.append(f)
                fence = f
            elif kind is JOIN:
                fence = join(step[1], fences)
            elif kind is CREATE:
                command_buffer = create(device, *step[1:])
            elif kind is LOOKUP:
                if made:
                    function = looked[n]
                else:
                    function = lookup(step[1], step[2])
                    looked.append(function)
                    if type(step[1]) is HalExecutable and type(step[2]) is VMBuffer and step[2].readonly:
                        if len(answers) >= _LOOKUPS_MAX:
                            answers.clear()
                        answers[step[1], step[2]] = function
                n += 1
            elif kind is DISPATCH:
                _, executable, fn, x, y, z, flags, constants, bindings = step
                dispatch(
                    command_buffer, executable, function if fn is LOOKED_UP else fn, x, y, z,
                    flags, constants,
                    [(o, s, _new(b, buffers), off, length) for o, s, b, off, length in bindings],
                )
            elif kind is BARRIER:
                barrier(command_buffer, *step[1:])
            else:  # COPY, FILL
                operands = [_new(x, buffers) for x in step[1:]]
                (copy if kind is COPY else fill)(command_buffer, *operands)
        finalize(command_buffer)
        return command_buffer, fence, buffers, looked

    own = [(fence_create, "fence_create"), (create, "command_buffer_create"),
           (finalize, "command_buffer_finalize")]
    # (a module without dispatches, copies only, imports no dispatch: no step needs it)
    own += [(f, name) for f, name in ((alloca, "device_queue_alloca"), (join, "fence_join"),
                                      (dispatch, "command_buffer_dispatch"),
                                      (lookup, "executable_lookup_function"),
                                      (barrier, "command_buffer_execution_barrier"),
                                      (copy, "command_buffer_copy_buffer"),
                                      (fill, "command_buffer_fill_buffer"))
            if f is not None]
    return record, own


def _new(value, buffers):
    """`value`, or the ALLOCA step's buffer a NEW_BUFFERS marker names."""
    k = _NEW_INDEX.get(id(value))
    return value if k is None else buffers[k]


def one_shot(fence_create, alloca, join, create, lookup, dispatch, barrier, copy, fill,
             finalize, execute, await_, dealloca=None):
    """The helper of one call site of the await form (the execute signals a fence of its
    own that the block's terminator awaits), built per context from its bound imports
    (module.py.j2's `_bind`; those the module does not import None: then no step needs
    them)."""
    answers: dict = {}  # (executable, read-only name) -> the import's answer
    record, own = _recorder(fence_create, alloca, join, create, lookup, dispatch, barrier, copy,
                            fill, finalize, answers)

    def general(
        device, steps, create_flags, affinity, wait, exec_flags, timeout, await_flags,
        tail=None, keep=False, buffers=None, functions=None,
    ):
        command_buffer, fence, buffers, looked = record(device, steps, buffers, functions)
        f1 = fence_create(device, create_flags)
        wait = fence if wait is ALLOCA_FENCE else wait
        execute(device, affinity, wait, f1, command_buffer, exec_flags)
        if tail is not None:  # queue.dealloca after the execute, signalling a new fence
            fence_flags, dealloca_affinity, buffer, dealloca_flags = tail
            f2 = fence_create(device, fence_flags)
            dealloca(device, dealloca_affinity, f1, f2, _new(buffer, buffers), dealloca_flags)
            f1 = f2
        status = await_(timeout, await_flags, [f1])
        return (*buffers, *looked, f1, status) if keep else (*buffers, *looked, status)

    pairs = own + [(execute, "device_queue_execute"), (await_, "fence_await")]
    if dealloca is not None:
        pairs.append((dealloca, "device_queue_dealloca"))
    if not _own(pairs):
        return general

    def finish(error, buffers, looked, device, steps, create_flags, affinity, wait, exec_flags,
               timeout, await_flags, tail, keep):
        """After the fast path's allocation: another thread held the queue (the imports
        queue behind it, from the create on), or the execution failed."""
        if error is BUSY:
            return general(device, steps, create_flags, affinity, wait, exec_flags, timeout,
                           await_flags, tail, keep, buffers, looked)
        failed = Fence()
        status = _failed(error, await_, timeout, await_flags, failed)
        return (*buffers, *looked, failed, status) if keep else (*buffers, *looked, status)

    fast = None  # this call site's compiled fast path (its steps' shape is fixed), or False

    def submit(device, steps, create_flags, affinity, wait, exec_flags, timeout, await_flags,
               tail=None, keep=False):
        nonlocal fast
        run = fast
        if run is None:
            run = fast = compile_fast(steps, tail=tail, keep=keep) or False
        if run:
            result = run(device, steps, create_flags, affinity, wait, exec_flags, timeout,
                         await_flags, tail, keep, answers, finish)
            if result is not MISMATCH:
                return result
        return general(device, steps, create_flags, affinity, wait, exec_flags, timeout,
                       await_flags, tail, keep)

    submit.general = general
    return submit


def one_shot_signal(fence_create, alloca, join, create, lookup, dispatch, barrier, copy, fill,
                    finalize, execute, await_=None, dealloca=None):
    """The helper of one call site of the signal form (the execute signals a fence from
    outside the group, or a new one a queue.dealloca waits on before it signals that one:
    iree-turbine's `main$async`, nothing in the block awaits it), built as `one_shot`."""
    answers: dict = {}
    record, own = _recorder(fence_create, alloca, join, create, lookup, dispatch, barrier, copy,
                            fill, finalize, answers)

    def general(device, steps, affinity, wait, signal, exec_flags, tail=None, new_flags=0,
                buffers=None, functions=None):
        command_buffer, fence, buffers, looked = record(device, steps, buffers, functions)
        wait = fence if wait is ALLOCA_FENCE else wait
        new = signal is NEW_FENCE
        if tail is None:
            if new:
                signal = fence_create(device, new_flags)
            execute(device, affinity, wait, signal, command_buffer, exec_flags)
        else:
            fence_flags, dealloca_affinity, buffer, dealloca_flags = tail
            f1 = fence_create(device, fence_flags)
            execute(device, affinity, wait, f1, command_buffer, exec_flags)
            if new:
                signal = fence_create(device, new_flags)
            dealloca(device, dealloca_affinity, f1, signal, _new(buffer, buffers), dealloca_flags)
        return (*buffers, *looked, signal) if new else (*buffers, *looked)

    pairs = own + [(execute, "device_queue_execute")]
    if dealloca is not None:
        pairs.append((dealloca, "device_queue_dealloca"))
    if not _own(pairs):
        return general

    def finish(error, buffers, looked, device, steps, affinity, wait, signal, exec_flags, tail,
               new_flags):
        """After the fast path's allocation: another thread held the queue."""
        return general(device, steps, affinity, wait, signal, exec_flags, tail, new_flags,
                       buffers, looked)

    fast = None

    def submit(device, steps, affinity, wait, signal, exec_flags, tail=None, new_flags=0):
        nonlocal fast
        run = fast
        if run is None:
            run = fast = compile_fast(steps, signal_form=True, tail=tail,
                                      new_fence=signal is NEW_FENCE) or False
        if run:
            result = run(device, steps, affinity, wait, signal, exec_flags, tail, new_flags,
                         answers, finish)
            if result is not MISMATCH:
                return result
        return general(device, steps, affinity, wait, signal, exec_flags, tail, new_flags)

    submit.general = general
    return submit


def _tuple(items) -> str:
    items = list(items)
    return f"({items[0]},)" if len(items) == 1 else "(" + ", ".join(items) + ")"


def _reached(fence: str) -> str:
    """A test that `fence` is neither null nor reached (then: the general path)."""
    return (f"({fence} is not None and not (type({fence}) is Fence and "
            f"({fence}.state == REACHED or {fence}.reached_now())))")


def compile_fast(steps, signal_form: bool = False, tail=None, keep: bool = False,
                 new_fence: bool = False):
    """The fast path for steps of this shape, as one function: `fast(device, steps,
    create_flags, affinity, wait, exec_flags, timeout, await_flags, tail, keep, answers,
    finish)` (with `signal_form`: `fast(device, steps, affinity, wait, signal,
    exec_flags, tail, answers, finish)`, and it signals or fails `signal` as the queue
    does); `tail` the call site's dealloca, or None; `keep` (the await form): the
    awaited fence is returned too, before the status (a new reached fence: what the
    imports leave). A call site appends the same tuples every call, so
    its shape is fixed; the function still unpacks them by that shape and tests every
    marker, and returns MISMATCH (nothing done) for steps of another shape or where any
    test fails: the general path then runs. Else it allocates, runs the commands under the
    queue's draining role and returns what `submit` returns (`finish` where the queue was
    busy or, in the await form, a command failed). None for a shape it does not take."""
    if type(steps) is not list or not steps:
        return None
    allocas = 0
    while (allocas < len(steps) and type(steps[allocas]) is tuple and len(steps[allocas]) == 9
           and steps[allocas][0] is ALLOCA):
        allocas += 1
    if allocas > len(NEW_BUFFERS):
        return None
    parts: list[str] = []
    tests = ["type(device) is not LocalDevice"]
    looks: list[str] = []
    runs: list[str] = []
    looked: list[str] = []  # each lookup's local, in order
    # per command: (key locals, (address, length) locals of each buffer it uses, shape),
    # for the replay plans (_Replays)
    replays: list = []
    writable: list[str] = []  # a transfer's target, not a new buffer: not read-only
    create = allocas + (allocas > 1)  # the create's index (after a JOIN of several allocas)

    def buffer_tests(b: str, given, o: str, n: str) -> str | None:
        """Tests a buffer operand `b` (with range `o`, `n`) as recording does; its
        address expression, None for a shape not taken."""
        k = _NEW_INDEX.get(id(given))
        if k is not None:
            if k >= allocas:
                return None
            tests.extend([f"{b} is not NEW_{k}", f"not (0 <= {o} and 0 <= {n} <= size{k} - {o})"])
            return f"x{k}.address + {o}"
        tests.extend([f"type({b}) is not HalBuffer", f"not (0 <= {o} and 0 <= {n} <= {b}.length - {o})"])
        return f"{b}.address + {o}"

    for j, step in enumerate(steps):
        if type(step) is not tuple or not step:
            return None
        kind, k = step[0], f"k{j}"
        if j < allocas:
            parts.append(f"({k}, _, _, w{j}, pool{j}, types{j}, usage{j}, size{j}, _)")
            tests += [f"{k} is not ALLOCA", f"pool{j}", f"size{j} < 0", _reached(f"w{j}")]
        elif j == allocas and allocas > 1:
            if kind is not JOIN or len(step) != 2:
                return None
            parts.append(f"({k}, _)")
            tests.append(f"{k} is not JOIN")
        elif j == create:
            if kind is not CREATE or len(step) != 5:
                return None
            parts.append(f"({k}, modes, categories, _, capacity)")
            tests += [f"{k} is not CREATE", "capacity < 0", "not modes & MODE_ONE_SHOT"]
            tests.append("wait is not ALLOCA_FENCE" if allocas else _reached("wait"))
        elif j < create:
            return None
        elif kind is LOOKUP and len(step) == 3:
            parts.append(f"({k}, e{j}, n{j})")
            tests.append(f"{k} is not LOOKUP")
            # (an answer the import gave before for this executable and read-only name)
            looks += [f"f{j} = answers.get((e{j}, n{j}))", f"if f{j} is None:", "    return MISMATCH"]
            looked.append(f"f{j}")
        elif kind is DISPATCH and len(step) == 9:
            _, _, function, _, _, _, _, constants, bindings = step
            if type(constants) is not tuple or type(bindings) is not tuple or any(
                type(b) is not tuple or len(b) != 5 for b in bindings
            ):
                return None
            cs = [f"c{j}_{i}" for i in range(len(constants))]
            bs = [f"(_, _, b{j}_{i}, o{j}_{i}, l{j}_{i})" for i in range(len(bindings))]
            parts.append(f"({k}, e{j}, g{j}, x{j}, y{j}, z{j}, _, {_tuple(cs)}, {_tuple(bs)})")
            tests += [f"{k} is not DISPATCH", "categories & CATEGORY_DISPATCH != CATEGORY_DISPATCH",
                      f"type(e{j}) is not HalExecutable"]
            if function is LOOKED_UP:
                if not looked:
                    return None
                tests.append(f"g{j} is not LOOKED_UP")
                ordinal = looked[-1]
            else:
                tests.append(f"g{j} is LOOKED_UP")
                ordinal = f"g{j}"
            addresses = []
            for i, (_, _, b, _, _) in enumerate(bindings):
                address = buffer_tests(f"b{j}_{i}", b, f"o{j}_{i}", f"l{j}_{i}")
                if address is None:
                    return None
                addresses.append(address)
            lengths = [f"l{j}_{i}" for i in range(len(bindings))]
            flat = _tuple(addresses + lengths)
            masked = _tuple([f"{c} & M32" for c in cs])
            counts = f"(x{j} & M32, y{j} & M32, z{j} & M32)"
            runs.append(f"run_direct(e{j}, {ordinal}, {counts}, {masked}, {flat}, workers)")
            key = [f"e{j}", ordinal, f"x{j}", f"y{j}", f"z{j}", *cs, *lengths]
            replays.append((key, [x for pair in zip(addresses, lengths) for x in pair],
                            (DISPATCH, len(cs), len(bindings))))
        elif kind is BARRIER and len(step) == 4:
            parts.append(f"({k}, _, _, _)")
            tests.append(f"{k} is not BARRIER")
        elif kind in (COPY, FILL) and len(step) == (9 if kind is COPY else 8):
            n = f"n{j}"
            if kind is COPY:
                parts.append(f"({k}, _, _, s{j}, so{j}, t{j}, to{j}, {n}, _)")
                tests.append(f"{k} is not COPY")
                source = buffer_tests(f"s{j}", step[3], f"so{j}", n)
                target = buffer_tests(f"t{j}", step[5], f"to{j}", n)
            else:
                parts.append(f"({k}, t{j}, to{j}, {n}, _, p{j}, pl{j}, _)")
                tests += [f"{k} is not FILL", f"pl{j} not in (1, 2, 4)", f"to{j} % pl{j}", f"{n} % pl{j}"]
                source, target = "", buffer_tests(f"t{j}", step[1], f"to{j}", n)
            if source is None or target is None:
                return None
            given = step[5] if kind is COPY else step[1]
            if id(given) not in _NEW_INDEX:  # (a new buffer is writable)
                writable.append(f"not t{j}.allocation.readonly")
            if kind is COPY:
                replays.append(([n], [source, n, target, n], (COPY,)))
            else:
                replays.append(([n, f"p{j}", f"pl{j}"], [target, n], (FILL,)))
            tests.append("categories & CATEGORY_TRANSFER != CATEGORY_TRANSFER")
            # (the buffer objects: the new ones, or the operands as they are)
            buffer_of = lambda b, given: (  # noqa: E731
                f"x{_NEW_INDEX[id(given)]}" if id(given) in _NEW_INDEX else b
            )
            if kind is COPY:
                runs.append(f"{buffer_of(f't{j}', step[5])}.copy_from(to{j}, {buffer_of(f's{j}', step[3])}, so{j}, {n})")
            else:
                runs.append(f"{buffer_of(f't{j}', step[1])}.fill(to{j}, {n}, p{j}, pl{j})")
        else:
            return None
    if create >= len(steps):
        return None
    if not runs:  # (a command buffer without commands: nothing runs)
        runs.append("pass")
    buffers = [f"x{k}" for k in range(allocas)]
    made = _tuple(buffers) if buffers else "()"
    functions = _tuple(looked) if looked else "()"
    returned = "".join(f + ", " for f in buffers + looked)
    if tail is not None:  # the dealloca's buffer: what the import takes
        if type(tail) is not tuple or len(tail) != 4:
            return None
        k = _NEW_INDEX.get(id(tail[2]))
        if k is not None and k >= allocas:
            return None
        tests.append("type(tail) is not tuple or len(tail) != 4")
        tests.append(f"tail[2] is not NEW_{k}" if k is not None else "type(tail[2]) is not HalBuffer")
    else:
        tests.append("tail is not None")
    if signal_form:
        if new_fence:  # (fence.create on a LocalDevice: a new Fence, whatever the flags)
            tests.append("signal is not NEW_FENCE")
        else:
            tests.append("signal is not None and type(signal) is not Fence")
        params = passed = "device, steps, affinity, wait, signal, exec_flags, tail, new_flags"
    else:
        tests.append("keep is not True" if keep else "keep")
        params = passed = (
            "device, steps, create_flags, affinity, wait, exec_flags, timeout, await_flags, tail, "
            "keep"
        )
    # (a test repeated, one per dispatch, as the category test is: the first decides)
    tests = list(dict.fromkeys(tests))
    lines = [
        f"def fast({params}, answers, finish):",
        "    try:",
        f"        {_tuple(parts)} = steps",
        "    except (TypeError, ValueError):  # (steps of another shape)",
        "        return MISMATCH",
        "    if (",
        *[f"        {t} or" for t in tests[:-1]],
        f"        {tests[-1]}",
        "    ):",
        "        return MISMATCH",
        *[f"    {x}" for x in looks],
        "    queue = device.queue",
        "    if queue._draining:",
        "        return MISMATCH",
    ]
    if allocas:  # queue.alloca on a LocalDevice (its fence reached at once, as its wait is)
        lines.append("    allocator = device.allocator")
        for k in range(allocas):
            lines += [f"    x{k} = fresh_buffer(size{k}, types{k} & M32, usage{k} & M32, allocator)",
                      f"    allocator.bytes_allocated += size{k}"]
    # queue.execute of a reached wait: the command buffer's one execution, the queue's
    # draining role taken and given back as LocalQueue.run_now does
    ns = dict(_NAMESPACE)
    if replays:
        # The call's commands as one native plan, by their counts, constants, lengths
        # and fill patterns (_Replays): one foreign call where a shape comes again; the
        # direct runs where it is new, the plan cannot run, or a transfer's target is
        # read-only (the direct runs raise).
        key = [x for command_key, _, _ in replays for x in command_key]
        values = [x for _, pairs, _ in replays for x in pairs]
        memo = _Replays(tuple(shape for _, _, shape in replays))
        ns.update(plans=memo.plans, remember=memo.remember)
        runs = [
            f"key = {_tuple(key)}",
            "memo = plans.get(key)",
            "if memo is None:",
            "    memo = remember(key, workers)",
            f"if not (memo and {' and '.join(writable + [f'memo.run_values(workers, {_tuple(values)})'])}):",
            *[f"    {r}" for r in runs],
        ]
    lines += [
        "    lock = queue._lock",
        "    lock.acquire()",
        "    if queue._draining:",
        "        lock.release()",
        f"        return finish(BUSY, {made}, {functions}, {passed})",
        "    queue._draining = True",
        "    lock.release()",
        "    workers = device.worker_count",
        "    try:",
        *[f"        {r}" for r in runs],
        "    except VMError as exc:",
        "        error = exc",
        "    except Exception as exc:  # a bug or a native failure: INTERNAL",
        "        error = internal_error(NAME, exc)",
    ]
    if signal_form:  # the queue signals the fence, or fails it (no fence: it raises)
        if new_fence:  # (made here: nothing saw it before)
            returned += "signal, "
        lines += [
            "    else:",
            "        error = None",
            *(["    signal = Fence()"] if new_fence else []),
            "    try:",
            "        if signal is not None:",
            "            if error is None:",
            "                signal.signal()",
            "            else:",
            "                signal.fail(error)",
            "    finally:",
            "        queue.release()",
            "    if error is not None and signal is None:",
            "        raise error",
            f"    return ({returned})" if returned else "    return ()",
        ]
    else:
        lines += [
            "    else:",
            "        queue.release()",
            f"        return ({returned}{'reached_fence(), ' if keep else ''}0,)  # (the await of a reached fence)",
            "    queue.release()",
            f"    return finish(error, {made}, {functions}, {passed})",
        ]
    exec(_compiled("\n".join(lines)), ns)
    return ns["fast"]


class _Replays:
    """A call site's native plans of its commands (plan.py), by key: per dispatch its
    executable, function ordinal, workgroup counts, constants and binding lengths; per
    copy its length; per fill its length, pattern and pattern length: the values the
    direct runs would pass (run_direct, copy_from, fill), less the buffer addresses,
    which go into the plan's table per call (a slot per buffer operand: its address and
    length). A plan is made the second time a key comes (a shape that changes every
    call, a growing sequence length, never pays for one); `plans` keeps at most _PLANS,
    `seen` the last _SEEN keys. A key no plan can hold (a count past the native limits,
    a constant or binding count the export does not declare) maps to False: its calls
    take the direct runs, which raise what they raise."""

    _PLANS = 16
    _SEEN = 64

    def __init__(self, shapes: tuple) -> None:
        # per command: (DISPATCH, constant count, binding count), (COPY,) or (FILL,)
        self.shapes = shapes
        self.plans: dict = {}
        self.seen: set = set()

    def remember(self, key: tuple, workers: int):
        """The plan for `key` (False where none can run it), or False the first time."""
        if key not in self.seen:
            if len(self.seen) >= self._SEEN:
                self.seen.clear()
            self.seen.add(key)
            return False
        plan = self._build(key, workers) or False
        if len(self.plans) >= self._PLANS:
            self.plans.clear()
        self.plans[key] = plan
        return plan

    def _build(self, key: tuple, workers: int):
        from .plan import build_plan  # (as command_buffer.py: only once a plan is made)

        commands, at, slot = [], 0, 0
        for kind, *counts in self.shapes:
            if kind is COPY:
                length = key[at]
                at += 1
                commands.append(_Copy(BufferRef(None, slot, 0, length),
                                      BufferRef(None, slot + 1, 0, length)))
                slot += 2
                continue
            if kind is FILL:
                length, pattern, pattern_length = key[at : at + 3]
                at += 3
                commands.append(_Fill(BufferRef(None, slot, 0, length), pattern, pattern_length))
                slot += 1
                continue
            constants, bindings = counts
            executable, ordinal, x, y, z = key[at : at + 5]
            at += 5
            masked = tuple(c & _M32 for c in key[at : at + constants])
            at += constants
            refs = []
            for length in key[at : at + bindings]:
                refs.append(BufferRef(None, slot, 0, length))
                slot += 1
            at += bindings
            commands.append(_Dispatch(executable, ordinal, (x & _M32, y & _M32, z & _M32),
                                      masked, tuple(refs), 0))
        try:
            plan = build_plan(commands, workers)
        except OverflowError:  # (a fill pattern past 64 bits: the plan's words hold i64)
            return None
        if plan is None or plan.max_slot != slot - 1:
            return None
        plan.fill = struct.Struct("=" + "qq" * slot).pack_into
        return plan


_NAMESPACE = {
    "ALLOCA": ALLOCA, "JOIN": JOIN, "CREATE": CREATE, "LOOKUP": LOOKUP, "DISPATCH": DISPATCH,
    "BARRIER": BARRIER, "COPY": COPY, "FILL": FILL, "LOOKED_UP": LOOKED_UP,
    "ALLOCA_FENCE": ALLOCA_FENCE, "NEW_BUFFERS": NEW_BUFFERS, "MISMATCH": MISMATCH,
    "NEW_FENCE": NEW_FENCE, **{f"NEW_{k}": m for k, m in enumerate(NEW_BUFFERS)},
    "BUSY": BUSY, "M32": _M32, "MODE_ONE_SHOT": MODE_ONE_SHOT,
    "CATEGORY_DISPATCH": CATEGORY_DISPATCH, "CATEGORY_TRANSFER": CATEGORY_TRANSFER,
    "LocalDevice": LocalDevice, "HalExecutable": HalExecutable, "HalBuffer": HalBuffer,
    "Fence": Fence, "REACHED": REACHED, "VMError": VMError, "internal_error": internal_error,
    "NAME": _EXECUTE, "fresh_buffer": fresh_buffer, "run_direct": run_direct,
    "reached_fence": Fence.reached,
}

"""One call for a one-shot command buffer recorded and submitted in one block
(translator/analyses/one_shots.py: dynamic shapes record one per call).

Generated code keeps the block's integer ops in place and, where each recording call
was, appends that call's operands to a list as a step (the command buffer left out):

    steps = [(ALLOCA, fence_flags, affinity, wait, pool, memory_types, usage, size, flags)]
    steps.append((CREATE, modes, categories, affinity, binding_capacity))
    steps.append((LOOKUP, executable, name))
    steps.append((DISPATCH, executable, function, x, y, z, flags, constants, bindings))
    steps.append((BARRIER, source_stage_mask, target_stage_mask, flags))
    steps.append((COPY, source_slot, target_slot, source, source_offset, target,
                  target_offset, length, flags))
    steps.append((FILL, target, offset, length, slot, pattern, pattern_length, flags))
    buffer, *functions, status = submit(device, steps, create_flags, affinity, wait,
                                        exec_flags, timeout, await_flags)

(the ALLOCA step, a fence.create + queue.alloca pair, is optional; `wait` is then
`ALLOCA_FENCE`, its fence; a dispatch's function `LOOKED_UP` is the latest lookup's
result, a buffer `ALLOCATED` the new buffer). The call returns the new buffer (None
without an ALLOCA step), each lookup's result and the await's status.

GENERAL path: the calls themselves through the bound imports, in order, then
command_buffer.finalize, fence.create, queue.execute and fence.await: what the unfused
code does. FAST path, only where provably the same: the imports are the `hal` module's
own, the device a `LocalDevice` whose queue no other thread runs, the waits null or
reached, pool 0, a size >= 0, a ONE_SHOT command buffer of a capacity >= 0 with the
DISPATCH category for dispatches and TRANSFER for copies and fills, every dispatch's
executable a `HalExecutable`, every buffer a `HalBuffer` (or the new buffer) with its
range inside it, a fill's pattern length and alignment valid (what recording checks),
and every lookup answered before by the import for that executable and read-only name.
Then it allocates as queue.alloca does and runs the commands as the command buffer's
execution runs them (command_buffer.run_direct, HalBuffer.copy_from, HalBuffer.fill),
holding the queue's draining role as queue.execute does; a failure fails the await as
in the unfused code, and the fences and the command buffer, which nothing else sees, are
never made. Anything else: the general path, before anything is done (or, when another
thread took the queue meanwhile, from the command buffer's create on, the buffer and
lookups already made). A call site appends tuples of one shape every call: its fast path
is compiled once, for that shape (`compile_fast`), so each call unpacks and tests its
steps in one frame.
"""

from __future__ import annotations

from .buffer import HalBuffer, fresh_buffer
from .command_buffer import CATEGORY_DISPATCH, CATEGORY_TRANSFER, MODE_ONE_SHOT, run_direct
from .device import LocalDevice
from .executable import HalExecutable
from .fence import REACHED, Fence
from .fused import ALLOCATED, _failed, _own
from .plan_runner import MISMATCH, _compiled
from .queue import BUSY, _internal
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
CREATE = _Marker("CREATE")
LOOKUP = _Marker("LOOKUP")
DISPATCH = _Marker("DISPATCH")
BARRIER = _Marker("BARRIER")
COPY = _Marker("COPY")
FILL = _Marker("FILL")
# Operands the helper supplies: a dispatch's function from the latest LOOKUP step, and
# the execute's wait fence, the ALLOCA step's signal fence.
LOOKED_UP = _Marker("LOOKED_UP")
ALLOCA_FENCE = _Marker("ALLOCA_FENCE")


def _recorder(fence_create, alloca, create, lookup, dispatch, barrier, copy, fill, finalize,
              answers: dict):
    """`record(device, steps, buffer=None, functions=None)`: the steps through the
    imports, then command_buffer.finalize: (command buffer, the alloca's fence, the new
    buffer, the lookups' results). With `functions` (the fast path's buffer and lookups,
    already made), from the create on, the alloca's fence made reached. Each lookup's
    answer for an executable and a read-only name is kept in `answers`."""

    def record(device, steps, buffer=None, functions=None):
        looked = [] if functions is None else functions
        function = command_buffer = f0 = None
        n = 0
        for step in steps:
            kind = step[0]
            if kind is ALLOCA:
                f0 = fence_create(device, step[1])
                if functions is None:
                    buffer = alloca(device, step[2], step[3], f0, *step[4:])
                else:
                    f0.signal()  # (what the fast path's allocation left: reached)
            elif kind is CREATE:
                command_buffer = create(device, *step[1:])
            elif kind is LOOKUP:
                if functions is None:
                    function = lookup(step[1], step[2])
                    looked.append(function)
                    if type(step[1]) is HalExecutable and type(step[2]) is VMBuffer and step[2].readonly:
                        if len(answers) >= _LOOKUPS_MAX:
                            answers.clear()
                        answers[step[1], step[2]] = function
                else:
                    function = functions[n]
                n += 1
            elif kind is DISPATCH:
                _, executable, fn, x, y, z, flags, constants, bindings = step
                dispatch(
                    command_buffer, executable, function if fn is LOOKED_UP else fn, x, y, z,
                    flags, constants,
                    [(o, s, buffer if b is ALLOCATED else b, off, length)
                     for o, s, b, off, length in bindings],
                )
            elif kind is BARRIER:
                barrier(command_buffer, *step[1:])
            else:  # COPY, FILL
                operands = [buffer if x is ALLOCATED else x for x in step[1:]]
                (copy if kind is COPY else fill)(command_buffer, *operands)
        finalize(command_buffer)
        return command_buffer, f0, buffer, looked

    own = [(fence_create, "fence_create"), (create, "command_buffer_create"),
           (dispatch, "command_buffer_dispatch"), (finalize, "command_buffer_finalize")]
    own += [(f, name) for f, name in ((alloca, "device_queue_alloca"),
                                      (lookup, "executable_lookup_function"),
                                      (barrier, "command_buffer_execution_barrier"),
                                      (copy, "command_buffer_copy_buffer"),
                                      (fill, "command_buffer_fill_buffer"))
            if f is not None]
    return record, own


def one_shot(fence_create, alloca, create, lookup, dispatch, barrier, copy, fill, finalize,
             execute, await_):
    """The helper of one call site of the await form (the execute signals a fence of its
    own that the block's terminator awaits), built per context from its bound imports
    (module.py.j2's `_bind`; those the module does not import None: then no step needs
    them)."""
    answers: dict = {}  # (executable, read-only name) -> the import's answer
    record, own = _recorder(fence_create, alloca, create, lookup, dispatch, barrier, copy, fill,
                            finalize, answers)

    def general(
        device, steps, create_flags, affinity, wait, exec_flags, timeout, await_flags,
        buffer=None, functions=None,
    ):
        command_buffer, f0, buffer, looked = record(device, steps, buffer, functions)
        f1 = fence_create(device, create_flags)
        execute(device, affinity, f0 if wait is ALLOCA_FENCE else wait, f1, command_buffer, exec_flags)
        return (buffer, *looked, await_(timeout, await_flags, [f1]))

    if not _own(own + [(execute, "device_queue_execute"), (await_, "fence_await")]):
        return general

    def finish(error, buffer, looked, device, steps, create_flags, affinity, wait, exec_flags,
               timeout, await_flags):
        """After the fast path's allocation: another thread held the queue (the imports
        queue behind it, from the create on), or the execution failed."""
        if error is BUSY:
            return general(device, steps, create_flags, affinity, wait, exec_flags, timeout,
                           await_flags, buffer, list(looked))
        return (buffer, *looked, _failed(error, await_, timeout, await_flags))

    fast = None  # this call site's compiled fast path (its steps' shape is fixed), or False

    def submit(device, steps, create_flags, affinity, wait, exec_flags, timeout, await_flags):
        nonlocal fast
        run = fast
        if run is None:
            run = fast = compile_fast(steps) or False
        if run:
            result = run(device, steps, create_flags, affinity, wait, exec_flags, timeout,
                         await_flags, answers, finish)
            if result is not MISMATCH:
                return result
        return general(device, steps, create_flags, affinity, wait, exec_flags, timeout, await_flags)

    submit.general = general
    return submit


def one_shot_signal(fence_create, alloca, create, lookup, dispatch, barrier, copy, fill,
                    finalize, execute, await_=None):
    """The helper of one call site of the signal form (the execute signals a fence from
    outside the group, which nothing in the block awaits: iree-turbine's `main$async`):

        buffer, *functions = submit(device, steps, affinity, wait, signal, exec_flags)

    Its fast path leaves `signal` as LocalQueue leaves it: signaled, or failed with the
    execution's error (raised instead where `signal` is null)."""
    answers: dict = {}
    record, own = _recorder(fence_create, alloca, create, lookup, dispatch, barrier, copy, fill,
                            finalize, answers)

    def general(device, steps, affinity, wait, signal, exec_flags, buffer=None, functions=None):
        command_buffer, f0, buffer, looked = record(device, steps, buffer, functions)
        wait = f0 if wait is ALLOCA_FENCE else wait
        execute(device, affinity, wait, signal, command_buffer, exec_flags)
        return (buffer, *looked)

    if not _own(own + [(execute, "device_queue_execute")]):
        return general

    def finish(error, buffer, looked, device, steps, affinity, wait, signal, exec_flags):
        """After the fast path's allocation: another thread held the queue."""
        return general(device, steps, affinity, wait, signal, exec_flags, buffer, list(looked))

    fast = None

    def submit(device, steps, affinity, wait, signal, exec_flags):
        nonlocal fast
        run = fast
        if run is None:
            run = fast = compile_fast(steps, signal_form=True) or False
        if run:
            result = run(device, steps, affinity, wait, signal, exec_flags, answers, finish)
            if result is not MISMATCH:
                return result
        return general(device, steps, affinity, wait, signal, exec_flags)

    submit.general = general
    return submit


def _tuple(items) -> str:
    items = list(items)
    return f"({items[0]},)" if len(items) == 1 else "(" + ", ".join(items) + ")"


def _reached(fence: str) -> str:
    """A test that `fence` is neither null nor reached (then: the general path)."""
    return (f"({fence} is not None and not (type({fence}) is Fence and "
            f"({fence}.state == REACHED or {fence}.reached_now())))")


def compile_fast(steps, signal_form: bool = False):
    """The fast path for steps of this shape, as one function: `fast(device, steps,
    create_flags, affinity, wait, exec_flags, timeout, await_flags, answers, finish)`
    (with `signal_form`: `fast(device, steps, affinity, wait, signal, exec_flags,
    answers, finish)`, and it signals or fails `signal` as the queue does).
    A call site appends the same tuples every call, so its shape is fixed; the function
    still unpacks them by that shape and tests every marker, and returns MISMATCH
    (nothing done) for steps of another shape or where any test fails: the general path
    then runs. Else it allocates, runs the dispatches under the queue's draining role and
    returns what `submit` returns (`finish` where the queue was busy or a dispatch
    failed). None for a shape it does not take."""
    if type(steps) is not list or not steps:
        return None
    alloca = type(steps[0]) is tuple and len(steps[0]) == 9 and steps[0][0] is ALLOCA
    parts: list[str] = []
    tests = ["type(device) is not LocalDevice"]
    looks: list[str] = []
    runs: list[str] = []
    looked: list[str] = []  # each lookup's local, in order
    for j, step in enumerate(steps):
        if type(step) is not tuple or not step:
            return None
        kind, k = step[0], f"k{j}"
        if j == 0 and alloca:
            parts.append(f"({k}, _, _, w{j}, pool, types, usage, size, _)")
            tests += [f"{k} is not ALLOCA", "wait is not ALLOCA_FENCE", "pool", "size < 0",
                      _reached(f"w{j}")]
        elif j == alloca:  # (the create, first after any alloca)
            if kind is not CREATE or len(step) != 5:
                return None
            parts.append(f"({k}, modes, categories, _, capacity)")
            tests += [f"{k} is not CREATE", "capacity < 0", "not modes & MODE_ONE_SHOT"]
            if not alloca:
                tests.append(_reached("wait"))
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
                o, n = f"o{j}_{i}", f"l{j}_{i}"
                if b is ALLOCATED:
                    if not alloca:
                        return None
                    tests += [f"b{j}_{i} is not ALLOCATED", f"not (0 <= {o} and 0 <= {n} <= size - {o})"]
                    addresses.append(f"x.address + {o}")
                else:  # (what recording checks of a direct binding)
                    tests += [f"type(b{j}_{i}) is not HalBuffer",
                              f"not (0 <= {o} and 0 <= {n} <= b{j}_{i}.length - {o})"]
                    addresses.append(f"b{j}_{i}.address + {o}")
            flat = _tuple(addresses + [f"l{j}_{i}" for i in range(len(bindings))])
            masked = _tuple([f"{c} & M32" for c in cs])
            counts = f"(x{j} & M32, y{j} & M32, z{j} & M32)"
            runs.append(f"run_direct(e{j}, {ordinal}, {counts}, {masked}, {flat}, workers)")
        elif kind is BARRIER and len(step) == 4:
            parts.append(f"({k}, _, _, _)")
            tests.append(f"{k} is not BARRIER")
        elif kind in (COPY, FILL) and len(step) == (9 if kind is COPY else 8):
            if kind is COPY:
                parts.append(f"({k}, _, _, s{j}, so{j}, t{j}, to{j}, n{j}, _)")
                ranges = [(f"s{j}", f"so{j}", step[3]), (f"t{j}", f"to{j}", step[5])]
                tests += [f"{k} is not COPY"]
            else:
                parts.append(f"({k}, t{j}, to{j}, n{j}, _, p{j}, pl{j}, _)")
                ranges = [(f"t{j}", f"to{j}", step[1])]
                tests += [f"{k} is not FILL", f"pl{j} not in (1, 2, 4)", f"to{j} % pl{j}",
                          f"n{j} % pl{j}"]
            tests.append("categories & CATEGORY_TRANSFER != CATEGORY_TRANSFER")
            where = {}
            for b, o, given in ranges:
                n = f"n{j}"
                if given is ALLOCATED:
                    if not alloca:
                        return None
                    tests += [f"{b} is not ALLOCATED", f"not (0 <= {o} and 0 <= {n} <= size - {o})"]
                    where[b] = "x"
                else:  # (what recording checks of a direct buffer)
                    tests += [f"type({b}) is not HalBuffer",
                              f"not (0 <= {o} and 0 <= {n} <= {b}.length - {o})"]
                    where[b] = b
            if kind is COPY:
                runs.append(f"{where[f't{j}']}.copy_from(to{j}, {where[f's{j}']}, so{j}, n{j})")
            else:
                runs.append(f"{where[f't{j}']}.fill(to{j}, n{j}, p{j}, pl{j})")
        else:
            return None
    if not runs:  # (a command buffer without dispatches: nothing runs)
        runs.append("pass")
    functions = _tuple(looked) if looked else "()"
    if signal_form:
        tests.append("signal is not None and type(signal) is not Fence")
        params = "device, steps, affinity, wait, signal, exec_flags"
        passed = "device, steps, affinity, wait, signal, exec_flags"
    else:
        params = "device, steps, create_flags, affinity, wait, exec_flags, timeout, await_flags"
        passed = "device, steps, create_flags, affinity, wait, exec_flags, timeout, await_flags"
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
    if alloca:  # queue.alloca on a LocalDevice (its fence reached at once, as its wait is)
        lines += ["    allocator = device.allocator",
                  "    x = fresh_buffer(size, types & M32, usage & M32, allocator)",
                  "    allocator.bytes_allocated += size"]
    else:
        lines.append("    x = None")
    # queue.execute of a reached wait: the command buffer's one execution, the queue's
    # draining role taken and given back as LocalQueue.run_now does
    lines += [
        "    lock = queue._lock",
        "    lock.acquire()",
        "    if queue._draining:",
        "        lock.release()",
        f"        return finish(BUSY, x, {functions}, {passed})",
        "    queue._draining = True",
        "    lock.release()",
        "    workers = device.worker_count",
        "    try:",
        *[f"        {r}" for r in runs],
        "    except VMError as exc:",
        "        error = exc",
        "    except Exception as exc:  # a bug or a native failure: INTERNAL",
        "        error = _internal(NAME, exc)",
    ]
    returned = "".join(f + ", " for f in looked)
    if signal_form:  # the queue signals the fence, or fails it (no fence: it raises)
        lines += [
            "    else:",
            "        error = None",
            "    try:",
            "        if signal is not None:",
            "            if error is None:",
            "                signal.signal()",
            "            else:",
            "                signal.fail(error)",
            "    finally:",
            "        queue._stop_draining()",
            "    if error is not None and signal is None:",
            "        raise error",
            f"    return (x, {returned})",
        ]
    else:
        lines += [
            "    else:",
            "        queue._stop_draining()",
            f"        return (x, {returned}0)  # (the await of a reached fence)",
            "    queue._stop_draining()",
            f"    return finish(error, x, {functions}, {passed})",
        ]
    ns = dict(_NAMESPACE)
    exec(_compiled("\n".join(lines)), ns)
    return ns["fast"]


_NAMESPACE = {
    "ALLOCA": ALLOCA, "CREATE": CREATE, "LOOKUP": LOOKUP, "DISPATCH": DISPATCH,
    "BARRIER": BARRIER, "COPY": COPY, "FILL": FILL, "LOOKED_UP": LOOKED_UP,
    "ALLOCA_FENCE": ALLOCA_FENCE, "CATEGORY_TRANSFER": CATEGORY_TRANSFER,
    "ALLOCATED": ALLOCATED, "MISMATCH": MISMATCH, "BUSY": BUSY, "M32": _M32,
    "MODE_ONE_SHOT": MODE_ONE_SHOT, "CATEGORY_DISPATCH": CATEGORY_DISPATCH,
    "LocalDevice": LocalDevice, "HalExecutable": HalExecutable, "HalBuffer": HalBuffer,
    "Fence": Fence, "REACHED": REACHED, "VMError": VMError, "_internal": _internal,
    "NAME": _EXECUTE, "fresh_buffer": fresh_buffer, "run_direct": run_direct,
}

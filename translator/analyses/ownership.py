"""Which results an export may hand to its caller without a copy, and which arguments it
keeps no reference to: translate-time facts for the export wrapper (runtime_support/
context.py), in place of counting references at run time.

    facts = export_ownership(module, fn, cconv)
    facts.fresh_results     # result positions returned zero-copy
    facts.unkept_arguments  # argument positions whose copy the next call may refill

A forward dataflow over the function's ref registers tracks where each value may come
from (its origins): an argument (`arg`, k) or that argument's buffer (`argbuf`, k); a
buffer this call allocates (`buf`: hal.device.queue.alloca, hal.allocator.allocate); a
buffer view it creates (`view`: hal.buffer_view.create, whose buffer origins it
contains); a command buffer it creates (`cmd`, which retains the buffers bound into it);
a fence it creates or joins (`fence`, which retains the buffers of the queue work it
signals); anything else (`?`: globals, lists, calls, rodata). Values merge at block entries
(union), so a register reused for several values counts as holding each of them.

An origin escapes when a value that may carry it is stored (vm.global.store.ref,
vm.list.set.ref), passed to an internal function, a subspan or any import not known to
let go of its operands when it returns; a view that escapes takes its buffers with it, a
command buffer that escapes the buffers bound into it, a fence that escapes the
buffers of the queue work it signals (that work may still be pending after the call).

A result is fresh when, at every vm.return, its value can only be one view this call
created over one buffer this call allocated, neither escaped and neither reaching
another result (returned twice, or two views of one buffer). An argument is unkept when
neither it nor its buffer escapes or reaches a result (a tied operand returns the
argument's buffer). Anything the analysis cannot see through counts against both: the
runtime then copies, as iree.runtime does.
"""

from __future__ import annotations

from dataclasses import dataclass

from translator.analyses.calls import callee
from translator.ir import Function

OTHER = ("?",)

# Imports that read or write through their ref operands during the call and keep none
# of them afterwards (a synchronous export's queue work has finished when it returns).
_TRANSIENT = frozenset(
    {
        "hal.buffer.assert",
        "hal.buffer.length",
        "hal.buffer.load",
        "hal.buffer.store",
        "hal.buffer_view.assert",
        "hal.buffer_view.element_type",
        "hal.buffer_view.encoding_type",
        "hal.buffer_view.rank",
        "hal.buffer_view.dim",
        "hal.buffer_view.trace",
        "hal.command_buffer.finalize",
        "hal.command_buffer.execution_barrier",
        "hal.command_buffer.begin_debug_group",
        "hal.command_buffer.end_debug_group",
        "hal.device.allocator",
        "hal.device.queue.execute",
        "hal.device.queue.execute.indirect",
        "hal.device.queue.copy",
        "hal.device.queue.fill",
        "hal.device.queue.update",
        "hal.device.queue.barrier",
        "hal.device.queue.read",
        "hal.device.queue.write",
        "hal.device.queue.flush",
        "hal.fence.create",
        "hal.fence.join",
        "hal.fence.await",
        "hal.fence.signal",
        "hal.fence.fail",
        "hal.fence.query",
        "hal.executable.lookup.function",
    }
)
# Recording a command: the command buffer (operand 0) keeps the buffers bound into it.
_RECORDS = frozenset(
    {
        "hal.command_buffer.dispatch",
        "hal.command_buffer.dispatch.indirect",
        "hal.command_buffer.copy_buffer",
        "hal.command_buffer.fill_buffer",
        "hal.command_buffer.update_buffer",
        "hal.command_buffer.collective",
    }
)
# Emit kinds (translator/isa.py) of the ops that store refs: global and list stores.
_KEEPING = frozenset({"global", "list"})
# Emit kinds of the ops whose ref result is one of their ref operands (select.ref,
# switch.ref, assign.ref, cast.any.ref; their integer forms read and write no ref).
_COPIES = frozenset({"select", "switch", "assign", "cast"})
_ALLOCATES = frozenset({"hal.device.queue.alloca", "hal.allocator.allocate"})


@dataclass(frozen=True)
class Ownership:
    fresh_results: tuple[int, ...]
    unkept_arguments: tuple[int, ...]


def _ref_reads(regs) -> list[int]:
    return [r.ordinal for r in regs if r.is_ref]


class _Flow:
    def __init__(self, module, fn: Function, cconv) -> None:
        self.module, self.fn = module, fn
        self.contains: dict[tuple, set] = {}  # view origin -> buffer origins
        self.retains: dict[tuple, set] = {}  # cmd origin -> buffer origins
        self.escaped: set = set()
        self.returns: list[list[frozenset]] = []
        self.arg_of_ref: dict[int, int] = {}
        ref = 0
        for k, code in enumerate(cconv.arguments):
            if code == "r":
                self.arg_of_ref[ref] = k
                ref += 1

    def entry(self) -> dict[int, frozenset]:
        return {ordinal: frozenset({("arg", k)}) for ordinal, k in self.arg_of_ref.items()}

    def run(self) -> None:
        fn = self.fn
        index_of = {b.pc: b.index for b in fn.blocks}
        state_in: dict[int, dict] = {0: self.entry()} if fn.blocks else {}
        work = [0] if fn.blocks else []
        while work:
            b = work.pop()
            out_edges = self._block(fn.blocks[b], dict(state_in[b]), record=False)
            for pc, state in out_edges:
                t = index_of.get(pc)
                if t is None:
                    continue
                merged = _merge(state_in.get(t), state)
                if merged != state_in.get(t):
                    state_in[t] = merged
                    work.append(t)
        # A last pass with the fixed point's states: escapes and returns.
        for b, state in state_in.items():
            self._block(fn.blocks[b], dict(state), record=True)
        self._close_escapes()

    def _get(self, state, ordinal) -> frozenset:
        return state.get(ordinal, frozenset({OTHER}))

    def _escape(self, origins, record: bool) -> None:
        if record:
            self.escaped |= origins

    def _block(self, block, state: dict, record: bool):
        out = []
        for op in block.ops:
            out += self._op(op, state, record)
        return out

    def _op(self, op, state: dict, record: bool):
        get = self._get
        emit = op.spec.emit
        edges = []
        name = callee(self.module, op)
        if name is not None:
            full = name[0]
            refs_in = [get(state, o) for o in _ref_reads(op["operands"])]
            results = [r.ordinal for r in op["results"] if r.is_ref]
            value = frozenset({OTHER})
            if full in _ALLOCATES:
                value = frozenset({("buf", op.pc)})
            elif full == "hal.buffer_view.create":
                self.contains.setdefault(("view", op.pc), set()).update(refs_in[0])
                value = frozenset({("view", op.pc)})
            elif full == "hal.buffer_view.buffer":
                inner = set()
                for o in refs_in[0]:
                    if o[0] == "view":
                        inner |= self.contains.get(o, {OTHER})
                    elif o[0] == "arg":
                        inner.add(("argbuf", o[1]))
                    else:
                        inner.add(OTHER)
                value = frozenset(inner)
            elif full == "hal.command_buffer.create":
                value = frozenset({("cmd", op.pc)})
            elif full in ("hal.fence.create", "hal.fence.join"):
                value = frozenset({("fence", op.pc)})
                # (a joined fence stands for the work of the fences it joins)
                self.retains.setdefault(("fence", op.pc), set()).update(*refs_in)
            elif full.startswith("hal.device.queue.") and len(refs_in) >= 3:
                # Queue work holds its buffers until its signal fence is reached: kept
                # past the call when that fence (or any it joins) escapes, or is one the
                # call did not create.
                _device, _wait, signal, *bound = refs_in
                used = set().union(*bound) if bound else set()
                for f in signal:
                    if f[0] == "fence":
                        self.retains.setdefault(f, set()).update(used)
                    else:
                        self._escape(used, record)
            elif full in _RECORDS:
                cmd, *rest = refs_in
                bound = set().union(*rest) if rest else set()
                for c in cmd:
                    if c[0] == "cmd":
                        self.retains.setdefault(c, set()).update(bound)
                    else:
                        self._escape(bound, record)
            elif full not in _TRANSIENT:
                for origins in refs_in:
                    self._escape(origins, record)
            for r in results:
                state[r] = value
            return self._edges(op, state, edges)  # (a yieldable call ends its block)
        if emit in ("call", "call_yield") or emit in _KEEPING:
            # An internal function (or an optional import) may keep what it is passed;
            # a store keeps it (a global's or list's other ops read only the list).
            for o in _ref_reads(op.reads()):
                self._escape(get(state, o), record)
        elif emit == "return":
            if record:
                self.returns.append(
                    [get(state, r.ordinal) if r.is_ref else frozenset() for r in op["operands"]]
                )
            return edges
        elif emit in _COPIES:
            value = frozenset().union(*(get(state, o) for o in _ref_reads(op.reads())))
            for r in op.writes():
                if r.is_ref:
                    state[r.ordinal] = value
            return self._edges(op, state, edges)
        # (anything else reads a ref without keeping it: comparisons, discard.refs,
        # trace, list reads, vm.buffer ops)
        for r in op.writes():
            if r.is_ref:
                state[r.ordinal] = frozenset({OTHER})
        return self._edges(op, state, edges)

    def _edges(self, op, state, edges):
        for pc, pairs in op.edges():
            s = dict(state)
            for src, dst in pairs:  # (a sequence of copies)
                if dst.is_ref:
                    s[dst.ordinal] = self._get(s, src.ordinal) if src.is_ref else frozenset({OTHER})
            edges.append((pc, s))
        return edges

    def _close_escapes(self) -> None:
        changed = True
        while changed:
            changed = False
            for holder, inner in list(self.contains.items()) + list(self.retains.items()):
                if holder in self.escaped and not inner <= self.escaped:
                    self.escaped |= inner
                    changed = True


def _merge(a, b):
    if a is None:
        return dict(b)
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, frozenset()) | v
    for k in a:
        if k not in b:
            out[k] = out[k] | {OTHER}
    for k in b:
        if k not in a:
            out[k] = out[k] | {OTHER}
    return out


def export_ownership(module, fn: Function, cconv) -> Ownership:
    """The translate-time facts of export function `fn` (see the module docstring)."""
    flow = _Flow(module, fn, cconv)
    try:
        flow.run()
    except (KeyError, IndexError, TypeError, ValueError):
        return Ownership((), ())  # (an op this reading does not fit: nothing proven)
    n_results = len(cconv.results)
    escaped = flow.escaped
    # Everything each return may hand out, per position, with what the views contain.
    reach: list[list[set]] = []
    for operands in flow.returns:
        row = []
        for origins in operands:
            seen = set(origins)
            for o in origins:
                if o[0] == "view":
                    seen |= flow.contains.get(o, {OTHER})
            row.append(seen)
        reach.append(row)
    fresh = []
    for i in range(n_results):
        ok = bool(flow.returns)
        for operands, row in zip(flow.returns, reach):
            if i >= len(operands):
                ok = False
                break
            origins = operands[i]
            if len(origins) != 1:
                ok = False
                break
            (view,) = origins
            buffers = flow.contains.get(view, set()) if view[0] == "view" else set()
            if view[0] != "view" or len(buffers) != 1 or next(iter(buffers))[0] != "buf":
                ok = False
                break
            (buf,) = buffers
            if view in escaped or buf in escaped:
                ok = False
                break
            if any(j != i and (view in other or buf in other) for j, other in enumerate(row)):
                ok = False
                break
        if ok:
            fresh.append(i)
    unkept = []
    returned = set().union(*(set().union(*row) for row in reach if row)) if reach else set()
    for ordinal, k in flow.arg_of_ref.items():
        mine = {("arg", k), ("argbuf", k)}
        if mine & escaped or mine & returned:
            continue
        # (a buffer view made over the argument's buffer that escapes took it along:
        # _close_escapes put ("argbuf", k) in `escaped` then)
        unkept.append(k)
    return Ownership(tuple(fresh), tuple(sorted(unkept)))

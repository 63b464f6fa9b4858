"""Per-argument input checks: one call in generated code.

Every export of an IREE-compiled program checks each tensor argument with

    vm.call @hal.buffer_view.assert(%view, %message, %element_type, %encoding, %shape...)
    %buf = vm.call @hal.buffer_view.buffer(%view)
    [%alloc = vm.call @hal.device.allocator(%device)]    (once per function)
    [%msg2 = vm.const.ref.rodata ...]                     (any number)
    vm.call @hal.buffer.assert(%buf, %msg2, %alloc, %min_length, %types, %usage)

With dynamic dims, scalar ops sit between the assert and the buffer (the byte length the
buffer.assert checks: `%len = vm.mul.i64 %dim, %size`); integer ops that cannot fail are
part of the group and go before the fused call, with the rodata moves, where the view
assert reads nothing they write but its shape (it would see their results: where a shape
register is written again, as iree-turbine's exports reuse a static dim's register for
the byte length, the shape is read into a tuple before them, `snapshot`) and nothing else
in the group writes what they read.

A group is found when the ops are in this order with nothing else between them, every call
goes to a required import with the cconv runtime_support/hal/fused.py's `check_argument`
serves, the buffer.assert checks the buffer the buffer_view.buffer returned, and the
registers allow the lowering: the rodata moves are emitted before the fused call (they
cannot fail), so their destinations are read or written by no other op of the group; the
buffer.assert's allocator is the device.allocator's result when there is one (the helper
makes that call between the two checks, as the unfused code does), and otherwise a
register nothing in the group writes.

    find(module, fn) -> {pc of the buffer_view.assert: Argument}
"""

from __future__ import annotations

from dataclasses import dataclass

from translator.analyses.submissions import callee
from translator.ir import Function, Op

VIEW_ASSERT = ("hal.buffer_view.assert", "0rriiCID_v")
VIEW_BUFFER = ("hal.buffer_view.buffer", "0r_r")
DEVICE_ALLOCATOR = ("hal.device.allocator", "0r_r")
BUFFER_ASSERT = ("hal.buffer.assert", "0rrrIii_v")


@dataclass(frozen=True)
class Argument:
    """One argument's checks: `ops` in order (the rodata moves among them)."""

    ops: tuple[Op, ...]
    view_assert: Op
    view_buffer: Op
    allocator: Op | None  # the device.allocator call between, if any
    rodata: tuple[Op, ...]  # the rodata moves between
    buffer_assert: Op
    scalars: tuple[Op, ...] = ()  # the integer ops between the assert and the buffer
    snapshot: bool = False  # the assert's shape read before the scalars (they write it)

    @property
    def kind(self) -> str:
        return "check_argument_allocator" if self.allocator is not None else "check_argument"


def _refs(regs) -> set[int]:
    return {r.ordinal for r in regs if r.is_ref}


def _slots(regs) -> set[int]:
    """The integer register slots `regs` cover (an i64 both halves)."""
    out: set[int] = set()
    for r in regs:
        if not r.is_ref:
            out.add(r.ordinal)
            if r.is_wide:
                out.add(r.ordinal + 1)
    return out


def _match(module, ops: list[Op], i: int) -> Argument | None:
    a = ops[i]
    scalars: list[Op] = []
    k = i + 1
    while k < len(ops) and ops[k].spec.cannot_fail:  # (isa.CANNOT_FAIL)
        scalars.append(ops[k])
        k += 1
    snapshot = False
    if scalars:
        # hoisted before the call: the assert must not read what they write, but in its
        # shape (read before them, into a tuple)
        written = _slots(r for op in scalars for r in op.writes())
        if written & _slots(a["operands"][:4]):
            return None
        snapshot = bool(written & _slots(a["operands"][4:]))
        if any(r.is_ref for op in scalars for r in op.writes()):
            return None
    if k + 1 >= len(ops) or callee(module, ops[k]) != VIEW_BUFFER:
        return None
    b = ops[k]
    view = a["operands"][0]
    if len(a["operands"]) < 4 or not view.is_ref or not a["operands"][1].is_ref:
        return None
    bo, br = b["operands"], b["results"]
    if len(bo) != 1 or not bo[0].is_ref or bo[0].ordinal != view.ordinal or len(br) != 1 or not br[0].is_ref:
        return None
    buf = br[0].ordinal
    allocator = None
    rodata: list[Op] = []
    j = k + 1
    while j < len(ops):
        op = ops[j]
        if op.spec.emit == "rodata":
            rodata.append(op)
        elif allocator is None and callee(module, op) == DEVICE_ALLOCATOR:
            allocator = op
        else:
            break
        j += 1
    if j >= len(ops) or callee(module, ops[j]) != BUFFER_ASSERT:
        return None
    c = ops[j]
    co = c["operands"]
    if len(co) != 6 or not all(r.is_ref for r in co[:3]) or co[0].ordinal != buf:
        return None
    written = {buf}
    if allocator is not None:
        ao, ar = allocator["operands"], allocator["results"]
        if len(ao) != 1 or not ao[0].is_ref or len(ar) != 1 or not ar[0].is_ref:
            return None
        alloc = ar[0].ordinal
        if ao[0].ordinal == buf or alloc == buf or co[2].ordinal != alloc:
            return None
        written.add(alloc)
    elif co[2].ordinal == buf:
        return None
    # Rodata moves go first: their destinations are touched by nothing else in the group.
    dests = [r.ordinal for op in rodata for r in op.writes()]
    if len(set(dests)) != len(dests) or any(not r.is_ref for op in rodata for r in op.writes()):
        return None
    others = _refs(a["operands"]) | written | (_refs(allocator["operands"]) if allocator else set())
    if set(dests) & others:
        return None
    if co[1].ordinal in written:  # the second message: a value from before the group
        return None
    return Argument(tuple(ops[i : j + 1]), a, b, allocator, tuple(rodata), c, tuple(scalars), snapshot)


def find(module, fn: Function) -> dict[int, Argument]:
    """The pc of each group's buffer_view.assert -> the group."""
    out: dict[int, Argument] = {}
    for block in fn.blocks:
        ops = block.ops
        i = 0
        while i < len(ops) - 1:  # (never the terminator)
            found = _match(module, ops, i) if callee(module, ops[i]) == VIEW_ASSERT else None
            if found is not None and found.ops[-1] is not ops[-1]:
                out[ops[i].pc] = found
                i += len(found.ops)
            else:
                i += 1
    return out


__all__ = ["Argument", "find"]

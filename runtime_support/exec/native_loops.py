"""A loop call's iterations in native code (docs/design/host-path.md §19).

A loop call (host_loops.py) whose program is one segment runs, after its first call,
each iteration as a held run: the program's inputs from the loop's registers, its
integer ops, the shape's plan, its readbacks, then the loop's own integer and f32
compare ops, its test and copies. Every part of that is integers, buffer addresses and
one foreign call, so the whole iteration is written here once as a table of ops
(native/loop.ll `pyree_run_loop`, layout.py LOOP_*) over one register file, and the
iterations run in one foreign call until the test says the loop is over.

Register file: the loop's registers, then the program's values list, then a snapshot of
the outputs and kept registers after each call (what the loop call returns), then the
copies' temporaries. An integer holds its value, an f32 its bits, a ref a handle: an
index into the handles (the objects, and the address of each buffer). A buffer the
segment returns is new in every iteration: here it is one of two buffers (`turns`)
taken in turn, and a fence it returns one of two fences; so the values an iteration
reads must be its own or the last iteration's (checked before a run, below).

Fast only where provably the same (`NativeLoop.build` declines otherwise, and the held
runs go on in Python):
- every op of the loop and every integer op of the segment has an op here (the integer
  ops that cannot fail, the f32 compares, bitcasts between i32 and f32);
- every register is of one kind throughout (an int, an f32 or a ref), as the values it
  holds when the run starts say and the ops that write it;
- what each ref register holds is traced through four iterations: a wait is a fence
  the segment signals or one reached already, a bound buffer a HalBuffer or a turn, a
  key of the shape an object that never changes, and no register holds a value two
  iterations old when a turn is taken again;
- per iteration, natively: the shape's integer key is checked (a new shape: the
  iteration is Python's, from the registers as they are), and a failing plan returns
  its code with the iteration's values, which `finish_shape` turns into the fences and
  the error the held run would give.
"""

from __future__ import annotations

import ctypes
import struct
from array import array

from ..errors import StatusCode, VMError
from ..hal.buffer import HalBuffer, fresh_buffer
from ..hal.fence import Fence
from ..hal.queue import internal_error
from ..native import jit as native_jit
from ..native import layout as L
from ..vm.numerics import bitcast_i32_f32
from .fence_states import DONE
from .program import Compute
from .steps import DeviceQueueFill, FenceCreate
from .shapes import finish_shape

# Each op of a loop or segment that runs here: its mnemonic -> (code, operand kinds,
# result kind). Kinds: "i" an integer, "f" an f32 (its bits).
_I, _F = "i", "f"
OPS: dict[str, tuple[int, str, str]] = {
    "add.i32": (L.LOOP_ADD32, "ii", _I), "sub.i32": (L.LOOP_SUB32, "ii", _I),
    "mul.i32": (L.LOOP_MUL32, "ii", _I), "add.i64": (L.LOOP_ADD64, "ii", _I),
    "sub.i64": (L.LOOP_SUB64, "ii", _I), "mul.i64": (L.LOOP_MUL64, "ii", _I),
    "and.i32": (L.LOOP_AND, "ii", _I), "and.i64": (L.LOOP_AND, "ii", _I),
    "or.i32": (L.LOOP_OR, "ii", _I), "or.i64": (L.LOOP_OR, "ii", _I),
    "xor.i32": (L.LOOP_XOR, "ii", _I), "xor.i64": (L.LOOP_XOR, "ii", _I),
    "not.i32": (L.LOOP_NOT, "i", _I), "not.i64": (L.LOOP_NOT, "i", _I),
    "shl.i32": (L.LOOP_SHL32, "ii", _I), "shr.i32.s": (L.LOOP_SHRS32, "ii", _I),
    "shr.i32.u": (L.LOOP_SHRU32, "ii", _I), "shl.i64": (L.LOOP_SHL64, "ii", _I),
    "shr.i64.s": (L.LOOP_SHRS64, "ii", _I), "shr.i64.u": (L.LOOP_SHRU64, "ii", _I),
    "cmp.eq.i32": (L.LOOP_EQ, "ii", _I), "cmp.eq.i64": (L.LOOP_EQ, "ii", _I),
    "cmp.ne.i32": (L.LOOP_NE, "ii", _I), "cmp.ne.i64": (L.LOOP_NE, "ii", _I),
    "cmp.lt.i32.s": (L.LOOP_LTS, "ii", _I), "cmp.lt.i64.s": (L.LOOP_LTS, "ii", _I),
    "cmp.lt.i32.u": (L.LOOP_LTU32, "ii", _I), "cmp.lt.i64.u": (L.LOOP_LTU64, "ii", _I),
    "cmp.nz.i32": (L.LOOP_NZ, "i", _I), "cmp.nz.i64": (L.LOOP_NZ, "i", _I),
    "min.i32.s": (L.LOOP_MINS, "ii", _I), "max.i32.s": (L.LOOP_MAXS, "ii", _I),
    "min.i64.s": (L.LOOP_MINS, "ii", _I), "max.i64.s": (L.LOOP_MAXS, "ii", _I),
    "min.i32.u": (L.LOOP_MINU32, "ii", _I), "max.i32.u": (L.LOOP_MAXU32, "ii", _I),
    "min.i64.u": (L.LOOP_MINU64, "ii", _I), "max.i64.u": (L.LOOP_MAXU64, "ii", _I),
    "select.i32": (L.LOOP_SELECT, "iii", _I), "select.i64": (L.LOOP_SELECT, "iii", _I),
    "trunc.i64.i32": (L.LOOP_SEXT32, "i", _I), "ext.i32.i64.s": (L.LOOP_MOVE, "i", _I),
    "ext.i32.i64.u": (L.LOOP_ZEXT32, "i", _I),
    "trunc.i32.i8": (L.LOOP_ZEXT8, "i", _I), "trunc.i32.i16": (L.LOOP_ZEXT16, "i", _I),
    "ext.i8.i32.s": (L.LOOP_SEXT8, "i", _I), "ext.i8.i32.u": (L.LOOP_ZEXT8, "i", _I),
    "ext.i16.i32.s": (L.LOOP_SEXT16, "i", _I), "ext.i16.i32.u": (L.LOOP_ZEXT16, "i", _I),
    "bitcast.i32.f32": (L.LOOP_ZEXT32, "i", _F), "bitcast.f32.i32": (L.LOOP_SEXT32, "f", _I),
    "cmp.eq.f32.o": (L.LOOP_FEQ_O, "ff", _I), "cmp.eq.f32.u": (L.LOOP_FEQ_U, "ff", _I),
    "cmp.ne.f32.o": (L.LOOP_FNE, "ff", _I), "cmp.ne.f32.u": (L.LOOP_FNE, "ff", _I),
    "cmp.lt.f32.o": (L.LOOP_FLT_O, "ff", _I), "cmp.lt.f32.u": (L.LOOP_FLT_U, "ff", _I),
    "cmp.lte.f32.o": (L.LOOP_FLE_O, "ff", _I), "cmp.lte.f32.u": (L.LOOP_FLE_U, "ff", _I),
    "cmp.nan.f32": (L.LOOP_FNAN, "f", _I),
}  # fmt: skip

_REF = "r"
_LIMIT = 1 << 12  # iterations per foreign call (a Ctrl-C is seen between two)
_OPS, _REGS, _HANDLES, _LIMIT_WORD, _ITERATIONS, _PC, _RESULT = (
    L.LOOP_FIELDS_NAMES.index(name)
    for name in ("ops", "regs", "handles", "limit", "iterations", "pc", "result")
)
_pack_f = struct.Struct("<f").pack
_unpack_I = struct.Struct("<I").unpack


class NotNative(Exception):
    """This loop's iterations stay held runs in Python."""


def kind_of(value) -> str | None:
    """A value's kind in the register file (None: no value yet)."""
    t = type(value)
    if t is int:
        return _I
    if t is float:
        return _F
    if value is None:
        return None
    return _REF


def _f32_word(value: float) -> int:
    """An f32 register's Python value as its word (its bits); NotNative where the value
    is no f32 or a NaN (whose payload would not survive the round trip)."""
    if value != value:
        raise NotNative
    (bits,) = _unpack_I(_pack_f(value))
    if bitcast_i32_f32(bits - (1 << 32) if bits & 0x80000000 else bits) != value:
        raise NotNative  # (not an f32 value)
    return bits


def _value(word: int, kind: str):
    if kind == _F:
        bits = word & 0xFFFFFFFF
        return bitcast_i32_f32(bits - (1 << 32) if bits & 0x80000000 else bits)
    return word


class NativeLoop:
    """One loop call's program and shape as an op table, built once (`build`) and run
    for each loop call that reaches this shape with registers of the same kinds."""

    def __init__(self) -> None:
        self.ops = array("q")
        self.entry_kinds: list = []  # per register at a run's start: "i", "f", "r" or None

    # -- building ------------------------------------------------------------------------

    @classmethod
    def build(cls, loop, program, shape, regs: list, env: list) -> "NativeLoop":
        """The op table of `loop` (a HostLoop) over `program` (its FastProgram, one
        segment) for `shape`, from the registers `regs` and the next call's values `env`
        (its integer ops computed: the shape is the one they key); raises NotNative."""
        self = cls()
        segment = program.segment
        steps = program.program.steps
        spec = program.program.loop
        plan = shape.plan
        if shape.outside_signal is not None or any(not s for _, s in shape.fences):
            raise NotNative  # (a caller's fence, or a fence left pending: per call objects)
        width = len(regs)
        base = width  # the values list
        snap = base + len(env)
        outs = loop.targets
        self.snapshot = list(range(snap, snap + len(outs) + len(loop.kept)))
        temps = snap + len(self.snapshot)
        fresh_regs = temps + len(loop.sources)
        size = fresh_regs + len(shape.fresh)
        self.size, self.width, self.base = size, width, base
        self.env_size = len(env)
        entry_kinds: list = [None] * size
        for k, v in enumerate(regs):
            entry_kinds[k] = kind_of(v)
        for k, v in enumerate(env):
            entry_kinds[base + k] = kind_of(v)
        program_ops: list = []  # (code, d, a, b, c)
        meta: list = []  # per op: (the (register, kind) it reads, those it writes)

        def op(code, d=0, a=0, b=0, c=0, reads=(), writes=()) -> None:
            program_ops.append((code, d, a, b, c))
            meta.append((tuple(reads), tuple(writes)))

        def move(d, a) -> None:  # (the kind moves with the value)
            op(L.LOOP_MOVE, d, a, reads=[(a, None)], writes=[(d, ("as", a))])

        def compute(c: Compute, slot) -> None:
            entry = OPS.get(c.op)
            if entry is None:
                raise NotNative
            code, operands, result = entry
            args = [slot(a) for a in c.args]
            if len(args) != len(operands):
                raise NotNative
            out = slot(c.out)
            if code == L.LOOP_MOVE:  # (ext.i32.i64.s: the same word)
                op(code, out, *args, reads=zip(args, operands), writes=[(out, result)])
            else:
                op(code, out, *args, *([0] * (3 - len(args))), reads=zip(args, operands),
                   writes=[(out, result)])

        key = program._values.key
        loop_slots = loop.slots
        # 1. the program's inputs from the loop's registers
        for j, r in enumerate(loop.inputs):
            move(base + j, r)
        # 2. the segment's integer ops, then its key's integers
        for k in segment.computes:
            compute(steps[k], lambda name: base + key(name))
        ref_keys = []
        self.exits = []  # the pcs where a run may stop mid-iteration (kinds kept for them)
        for k in sorted(segment.key_slots):
            value = env[k]
            kind = kind_of(value)
            if kind == _I:
                self.exits.append(len(program_ops))
                op(L.LOOP_DECLINE_NE, 0, base + k, value, reads=[(base + k, _I)])
            elif kind == _F:
                raise NotNative
            else:
                ref_keys.append(base + k)
        # (a tail fill's length, pattern length and flags: a literal, or an input whose
        # value this run's iterations must keep, checked with the key)
        tail = getattr(program, "tail", None)
        fixed: dict = {}
        inputs = len(program.program.inputs)
        for step in steps[tail:] if tail is not None else ():
            if isinstance(step, DeviceQueueFill):
                for name in (step.length, step.pattern_length, step.flags):
                    if isinstance(name, str) and name not in fixed:
                        k = key(name)
                        if k >= inputs or type(env[k]) is not int:
                            raise NotNative
                        fixed[name] = env[k]
                        self.exits.append(len(program_ops))
                        op(L.LOOP_DECLINE_NE, 0, base + k, env[k], reads=[(base + k, _I)])
        # 3. the shape: its rows of buffers from outside, its new buffers, constants
        table_address = plan.table.buffer_info()[0]
        rows = []  # (register, row) per row of a buffer from outside
        for row in shape.outside:
            name, word = row[0], row[1]
            op(L.LOOP_ROW, 0, base + name, table_address + 8 * word, row[2], reads=[(base + name, _REF)])
            rows.append((base + name, row))
        self.turn_specs = []
        for f, (nbytes, types, usage, places, slots) in enumerate(shape.fresh):
            if nbytes <= 0:
                raise NotNative
            r = fresh_regs + f
            # (the handles of the two buffers are set per run: `run`)
            op(L.LOOP_TURN, r, 0, -1 - 2 * f, -2 - 2 * f, writes=[(r, _REF)])
            op(L.LOOP_ZERO, 0, r, nbytes, reads=[(r, _REF)])
            for word, offset in places:
                op(L.LOOP_ROW, 0, r, table_address + 8 * word, offset, reads=[(r, _REF)])
            for s in slots:
                move(base + s, r)
            self.turn_specs.append((nbytes, types, usage))
        if shape.values is not None:
            for target, value_slot in zip(plan.constants, shape.values):
                if target is None or value_slot is None:
                    continue
                indices, _get, slots = value_slot
                address = ctypes.addressof(target)
                for j, s in zip(indices if indices is not None else range(len(slots)), slots):
                    op(L.LOOP_STORE32, 0, base + s, address + 4 * j, reads=[(base + s, _I)])
        self.plan_pc = len(program_ops)
        self.exits.append(self.plan_pc)
        op(L.LOOP_PLAN, 0, 0, plan.args_address)
        for slot, source, start, length in shape.loads:
            address = source.__array_interface__["data"][0] + start
            op(L.LOOP_LOAD, base + slot, address, length, writes=[(base + slot, _I)])
        self.fence_specs = []
        for j, (slot, _signalled) in enumerate(shape.fences):
            op(L.LOOP_TURN, base + slot, 0, -101 - 2 * j, -102 - 2 * j, writes=[(base + slot, _REF)])
            self.fence_specs.append(slot)
        self.results = []  # (register, object) per ref value the shape leaves
        self.result_pcs = set()  # (their ops)
        for slot, value in shape.results:
            kind = kind_of(value)
            if kind == _I:
                op(L.LOOP_CONST, base + slot, value, writes=[(base + slot, _I)])
            elif kind is None or kind == _REF:
                # (a handle, set per run: `run`)
                self.result_pcs.add(len(program_ops))
                op(L.LOOP_CONST, base + slot, -201 - len(self.results), writes=[(base + slot, _REF)])
                self.results.append((base + slot, value))
            else:
                raise NotNative
        # 3b. the program's tail after its segment (FastProgram.tail): integer ops, the
        # fences it makes, queue fills (each one's checks first: a fill that would fail
        # is the general path's, from the tail's first step)
        self.tail_pcs: set = set()
        self.fill_targets: list = []  # (register, the pc of its check) per fill
        fill_waits: list = []
        if tail is not None:
            made: set = set()
            signalled: set = set()

            def input_slot(name) -> int:
                if not isinstance(name, str) or key(name) >= inputs:
                    raise NotNative  # (an input of the program: the same all iteration)
                return base + key(name)

            for step in steps[tail:]:
                if isinstance(step, Compute):
                    compute(step, lambda name: base + key(name))
                    continue
                if not isinstance(step.device, str) or key(step.device) != segment.device:
                    raise NotNative
                if isinstance(step, FenceCreate):
                    j = len(self.fence_specs)
                    r = base + key(step.out)
                    op(L.LOOP_TURN, r, 0, -101 - 2 * j, -102 - 2 * j, writes=[(r, _REF)])
                    self.fence_specs.append(key(step.out))
                    made.add(step.out)
                    continue
                if not isinstance(step, DeviceQueueFill):
                    raise NotNative
                length, unit, flags = (fixed.get(v, v) for v in (step.length, step.pattern_length, step.flags))
                if (
                    step.signal_fence not in made or step.signal_fence in signalled
                    or type(length) is not int or type(unit) is not int or unit not in (1, 2, 4)
                    or length < 0 or length % unit or flags != 0
                ):
                    raise NotNative
                signalled.add(step.signal_fence)
                fill_waits.append(input_slot(step.wait_fence))
                target = input_slot(step.target_buffer)
                offset, pattern = base + key(step.target_offset), base + key(step.pattern)
                pc = len(program_ops)
                self.tail_pcs.add(pc)
                self.exits.append(pc)
                op(L.LOOP_FILL_CHECK, 0, offset, 0, length << 8 | unit, reads=[(offset, _I)])
                self.fill_targets.append((target, pc))
                op(L.LOOP_FILL, length << 8 | unit, target, offset, pattern,
                   reads=[(target, _REF), (offset, _I), (pattern, _I)])
            if made != signalled:
                raise NotNative  # (a fence left pending)
        self.tail = tail
        # 4. the outputs into the loop's registers, and their snapshot with the kept ones
        for r, s in zip(outs, program.output_slots):
            move(r, base + s)
        for k, r in enumerate([*outs, *loop.kept]):
            move(snap + k, r)
        # 5. the loop's ops after the call, its test, copies, ops before the next call
        def loop_slot(name):
            if name not in loop_slots:
                raise NotNative
            return loop_slots[name]

        for c in spec.after:
            compute(c, loop_slot)
        self.leave_pc = len(program_ops)
        self.exits.append(self.leave_pc)
        op(L.LOOP_LEAVE_IF, 0, loop.test, int(loop.negate), reads=[(loop.test, _I)])
        for k, s in enumerate(loop.sources):
            move(temps + k, s)
        for k, d in enumerate(loop.destinations):
            move(d, temps + k)
        for c in spec.before:
            compute(c, loop_slot)
        op(L.LOOP_NEXT)
        self.entry_kinds = entry_kinds
        self.exit_kinds = _kinds(entry_kinds, meta, self.exits)
        self.ref_keys = ref_keys
        self.rows = rows
        self.buffers = [base + s for s in segment.buffers] + [r for r, _ in self.fill_targets]
        self.waits = [base + s for s in segment.waits] + fill_waits
        self.labels = _trace(self, program_ops, meta, entry_kinds)
        self.ops = array("q", [w for o in program_ops for w in o])
        self.fresh_bytes = shape.fresh_bytes
        self.plan = plan
        self.shape = shape
        self.device_slot = segment.device  # (in the values list)
        # (the loop's registers an iteration may write: the others keep their objects)
        self.written = sorted({r for _, writes in meta for r, _ in writes if r < width})
        # (the registers whose first words a run fills: those an op reads, and the loop's
        # registers an op writes, which a stop may read back before they are written)
        self.read = {r for reads, _ in meta for r, _ in reads}
        self.read.update(src[1] for seen in self.labels.values() for src in seen if src[0] == "in")
        self.read.update(self.written)
        # per pc where a run may stop: the values list's slots written before it in the
        # iteration (a stopped iteration's values: the rest are the call's own, `env`)
        self.env_written = {}
        for pc in self.exits:
            self.env_written[pc] = sorted(
                {r - base for _, writes in meta[:pc] for r, _ in writes if base <= r < snap}
            )
        self._prepare()
        return self

    # -- running -------------------------------------------------------------------------

    def _prepare(self) -> None:
        """What every run does the same, worked out once: which words a run's first
        values fill (by kind), which objects the checks look at, where the op table
        takes this run's handles and lengths."""
        kinds, width, base = self.entry_kinds, self.width, self.base
        # per kind: (the registers, the values list's slots) a run's first values fill:
        # those an op reads (the others' words are never looked at: a register no op
        # writes keeps its object, host_loops.py)
        read = self.read
        self.entry_words = {
            kind: ([k for k in range(width) if kinds[k] == kind and k in read],
                   [k for k in range(self.env_size) if kinds[base + k] == kind and base + k in read])
            for kind in (_I, _F, _REF)
        }
        labels = self.labels
        # (each "in" source: the register whose first object a check looks at)
        self.wait_sources = sorted({src[1] for r in self.waits for src in labels[r] if src[0] == "in"})
        self.buffer_sources = sorted({src[1] for r in self.buffers for src in labels[r] if src[0] == "in"})
        # Handles: 0 None; then one per ref register a run's first values fill, in order
        # (their words the same in every run: `words_template`); then the two turns of
        # each returned buffer, the two fences of each returned fence, the values the
        # shape leaves: every run's op table names the same handles (patched here once).
        refs, env_refs = self.entry_words[_REF]
        template = array("q", bytes(8 * self.size))
        for h, r in enumerate([*refs, *(base + k for k in env_refs)], 1):
            template[r] = h
        self.words_template = template
        turn0 = 1 + len(refs) + len(env_refs)
        fence0 = turn0 + 2 * len(self.turn_specs)
        result0 = fence0 + 2 * len(self.fence_specs)
        n, ops = L.LOOP_OP_WORDS, self.ops
        for pc in range(len(ops) // n):
            code, b = ops[pc * n], ops[pc * n + 3]
            if code == L.LOOP_TURN:
                first = fence0 + (-101 - b) if b <= -101 else turn0 + (-1 - b)
                ops[pc * n + 3], ops[pc * n + 4] = first, first + 1
            elif pc in self.result_pcs:
                ops[pc * n + 2] = result0 + (-201 - ops[pc * n + 2])

    def run(self, regs: list, env: list, queue, device):
        """Runs iterations from `regs` (the next call's values `env` made) with `queue`
        held: (exit code, the op it stopped at, iterations completed, the register file's
        words, the handles' objects, the values list of a failed iteration or None, its
        error)."""
        words = array("q", self.words_template)
        base = self.base
        ints, env_ints = self.entry_words[_I]
        try:  # (the kinds are the build's: an int register holds an int)
            for k in ints:
                words[k] = regs[k]
            for k in env_ints:
                words[base + k] = env[k]
        except OverflowError:  # (past i64: not a VM value)
            raise NotNative from None
        floats, env_floats = self.entry_words[_F]
        for k in floats:
            words[k] = _f32_word(regs[k])
        for k in env_floats:
            words[base + k] = _f32_word(env[k])
        refs, env_refs = self.entry_words[_REF]
        objects: list = [None]  # handle -> object (_prepare numbers them)
        objects += [regs[k] for k in refs]
        objects += [env[k] for k in env_refs]
        entry = objects  # (the first values' handles come first)
        # what each use may see, from the first iteration's objects (the turns are new)
        for r in self.wait_sources:
            f = entry[words[r]]
            if not (f is None or f is DONE or (type(f) is Fence and f.reached_now())):
                raise NotNative
        for r in self.buffer_sources:
            if type(entry[words[r]]) is not HalBuffer:
                raise NotNative
        labels = self.labels
        allocator = device.allocator
        turns = []
        for nbytes, types, usage in self.turn_specs:
            turns.append(fresh_buffer(nbytes, types, usage, allocator))
            turns.append(fresh_buffer(nbytes, types, usage, allocator))
        for r, row in self.rows:
            _name, word, offset, length, end, writes = row
            seen = []
            for source in labels[r]:
                if source[0] == "in":
                    seen.append(entry[words[source[1]]])
                else:
                    seen.extend(turns[2 * source[1] : 2 * source[1] + 2])
            lengths = set()
            for b in seen:
                if type(b) is not HalBuffer:
                    raise NotNative
                if length < 0:
                    n = b.length - offset
                    if n < end:
                        raise NotNative
                    lengths.add(n)
                elif offset + length > b.length:
                    raise NotNative
                if writes and b.allocation.readonly:
                    raise NotNative
            if length < 0:
                if len(lengths) != 1:
                    raise NotNative
                self.plan.table[word + 1] = lengths.pop()
        ops = array("q", self.ops)  # (a fill's target length: this run's)
        for r, pc in self.fill_targets:  # (an input: the object the run starts with)
            lengths = set()
            for source in labels[r]:
                b = entry[words[source[1]]] if source[0] == "in" else None
                if type(b) is not HalBuffer or b.allocation.readonly:
                    raise NotNative  # (the import raises what it raises)
                lengths.add(b.length)
            if len(lengths) != 1:
                raise NotNative
            ops[pc * L.LOOP_OP_WORDS + 3] = lengths.pop()
        objects += turns
        objects += [Fence.reached() for _ in range(2 * len(self.fence_specs))]
        objects += [value for _, value in self.results]
        addresses = array("q", [b.address if type(b) is HalBuffer else 0 for b in objects])
        block = array("q", [0] * len(L.LOOP_FIELDS))
        block[_OPS] = ops.buffer_info()[0]
        block[_REGS] = words.buffer_info()[0]
        block[_HANDLES] = addresses.buffer_info()[0]
        block[_LIMIT_WORD] = _LIMIT
        if not self.plan.ready(device.worker_count):
            raise NotNative
        run_loop = native_jit.native_runtime().run_loop
        address = block.buffer_info()[0]
        done = 0
        while True:
            code = run_loop(address)
            done += block[_ITERATIONS]
            if code != L.LOOP_EXIT_LIMIT:
                break
        # (the allocas of every iteration run whole, the one the test left in too)
        allocator.bytes_allocated += self.fresh_bytes * (done + (code == L.LOOP_EXIT_LEFT))
        failed_env = error = None
        if code == L.LOOP_EXIT_FAILED:
            try:
                self.plan._raise(block[_RESULT])
            except VMError as exc:
                error = exc
            except Exception as exc:  # noqa: BLE001 - a bug or a native failure: INTERNAL
                error = internal_error("device.queue.execute", exc)
            failed_env = self._stopped_env(env, words, objects, self.plan_pc, done)
        elif code == L.LOOP_EXIT_DECLINE and block[_PC] in self.tail_pcs:
            # (the segment ran: a fill of the tail would fail; the general path from the
            # tail's first step goes on from these values)
            allocator.bytes_allocated += self.fresh_bytes
            failed_env = self._stopped_env(env, words, objects, block[_PC], done)
        elif code == L.LOOP_EXIT_BAD or code not in (L.LOOP_EXIT_LEFT, L.LOOP_EXIT_DECLINE):
            raise VMError(StatusCode.INTERNAL, f"native loop stopped at op {block[_PC]} ({code})")
        return code, block[_PC], done, words, objects, failed_env, error

    def _stopped_env(self, env: list, words, objects, pc: int, done: int) -> list:
        """The values list of an iteration stopped at `pc`: the call's own (`env`), the
        slots the iteration wrote before `pc` read back."""
        out = list(env)
        written = self.env_written[pc]
        kinds = self.kinds_at(pc, done)
        base = self.base
        for k, v in zip(written, self.values(words, objects, kinds, [base + k for k in written])):
            out[k] = v
        return out

    def kinds_at(self, pc: int, done: int) -> list:
        """The registers' kinds where a run stopped (`pc`, after `done` iterations)."""
        kinds = self.exit_kinds
        return kinds[pc, min(done, kinds["settled"])]

    @staticmethod
    def values(words, objects, kinds: list, registers) -> list:
        """The Python values of `registers` (indices into the register file)."""
        out = []
        for r in registers:
            kind = kinds[r]
            if kind == _REF:
                out.append(objects[words[r]])
            elif kind is None:
                out.append(None)
            else:
                out.append(_value(words[r], kind))
        return out


_SETTLE = 4  # iterations the kinds may take to settle (a value moving down a chain of copies)


def _kinds(entry: list, meta: list, exits: list) -> dict:
    """Each register's kind at each op where a run may stop (`exits`, and op 0 of an
    iteration after the first), per iteration of the run up to the one from which they
    repeat: {(pc, min(iteration, settled)): kinds}, with `"settled"` the iteration. A VM
    register holds an i32 at one op and an f32 at another (one bank), so kinds are per
    program point, traced from the run's first values (a register with no value yet
    takes one later); raises NotNative where an op reads a register of another kind, or
    where the kinds do not settle within _SETTLE iterations."""
    state = list(entry)
    marks = set(exits)
    per: list = []  # per iteration: {pc: kinds}
    for it in range(_SETTLE + 2):
        seen: dict = {0: list(state)}
        for pc, (reads, writes) in enumerate(meta):
            if pc in marks:
                seen[pc] = list(state)
            for r, kind in reads:
                if kind is not None and state[r] != kind:  # (a move takes any, None too)
                    raise NotNative(f"op {pc} reads register {r} ({state[r]}, not {kind})")
            for r, kind in writes:
                state[r] = state[kind[1]] if isinstance(kind, tuple) else kind
        per.append(seen)
        if it and per[it] == per[it - 1]:
            at = {(pc, k): kinds for k in range(it) for pc, kinds in per[k].items()}
            at["settled"] = it - 1
            return at
    raise NotNative("the kinds do not settle")


def _trace(loop: NativeLoop, program_ops, meta, entry: list) -> dict:
    """Per ref register read as a wait, a bound buffer, a row or a key: the sources of
    what it may hold over iterations ("in", r: the object register r held at the start;
    "turn", f / "fence", j: the segment's new buffer or fence of some iteration). Raises
    NotNative where a key may change, or where a register still holds a turn's value from
    two iterations back when the turn comes round again."""
    state: dict = {r: ("in", r, -1) for r in range(loop.size) if entry[r] in (_REF, None)}
    uses: dict[int, set] = {r: set() for r in [*loop.waits, *loop.buffers, *loop.ref_keys]}
    fresh = set()
    for code, d, a, b, c in program_ops:
        if code == L.LOOP_TURN:
            fresh.add(d)
    for r, _row in loop.rows:
        uses.setdefault(r, set())
    for it in range(4):
        for (code, d, a, b, c), (_reads, writes) in zip(program_ops, meta):
            if code == L.LOOP_MOVE:
                state[d] = state.get(a)
            elif code == L.LOOP_TURN:
                kind = "fence" if b <= -101 else "turn"
                j = (-101 - b) // 2 if kind == "fence" else (-1 - b) // 2
                # a register still holding this turn's value of two iterations back
                for v in state.values():
                    if v is not None and v[0] == kind and v[1] == j and v[2] <= it - 2:
                        raise NotNative
                state[d] = (kind, j, it)
            elif code == L.LOOP_PLAN:
                for r in uses:
                    if r not in fresh:
                        uses[r].add(_source(state.get(r)))
            elif code == L.LOOP_ROW:
                if a not in fresh:
                    uses[a].add(_source(state.get(a)))
            else:
                for r, kind in writes:
                    state[r] = ("const", r, -1) if kind == _REF else None
    for r, seen in uses.items():
        if r in loop.ref_keys and (len(seen) != 1 or next(iter(seen))[0] != "in"):
            raise NotNative  # (a key that may change between iterations)
        for source in seen:
            if source[0] == "fence" and r not in loop.waits:
                raise NotNative
            if source[0] == "turn" and r in loop.waits:
                raise NotNative
            if source[0] == "const":
                raise NotNative
    return uses


def _source(label) -> tuple:
    if label is None:
        raise NotNative  # (a ref use of a value that is no ref)
    return label[:2]


__all__ = ["NativeLoop", "NotNative", "OPS", "kind_of"]

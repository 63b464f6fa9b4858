"""Every layout the native runtime shares with Python, in one table.

The IR units (the `.ll` files beside this module) write each offset, word index, code and
size below as an `@NAME@` placeholder that `substitutions()` fills when the runtime is
compiled (jit.py); Python takes the same values from here: the pool block as the ctypes
structure `PoolBlock` (its fields placed by `POOL_FIELDS`), the plan records' word indices,
the argument blocks' orders, the check records' words. The IREE structures the IR writes
into (dispatch and workgroup state) are kernel_abi.py's, whose ctypes offsets are used.
"""

from __future__ import annotations

import ctypes
from ctypes import c_int32, c_int64, c_uint64, c_void_p

# --- the pool block ---------------------------------------------------------------------------

CACHE_LINE = 64
MAX_PARTICIPANTS = 256
# Placement (see "Placement" in pool.py): pinned workers, one CPU each.
AFFINITY_MASK_BYTES = 128  # CPUs 0..1023
# One participant's range word (i64 end << 32 | next, in units), on a cache line of its own.
RANGE_LINE = c_int64 * (CACHE_LINE // 8)

# The pool block, field by field in order: (name, ctypes type, starts a cache line). Each
# field sits at its type's alignment, or at the next cache line where marked (the hot
# words each on a line of their own); POOL_OFFSETS and PoolBlock follow from this.
POOL_FIELDS = (
    ("gen", c_int32, True),  # futex word: the generation of the newest job (the IR: %pool)
    ("sleepers", c_int32, True),  # workers asleep on `gen`
    ("ticket", c_int64, True),  # generation << 32 | CLOSED | workers inside (low: futex word)
    # the job, one grid (pyree_run_grid stores it, workers load it)
    ("fn", c_void_p, True),
    ("env", c_void_p, False),
    ("ds", c_void_p, False),
    ("wgs", c_void_p, False),
    ("cx", c_int64, False),
    ("cy", c_int64, False),
    ("total", c_int64, False),
    ("unit", c_int64, False),
    ("maxp", c_int64, False),
    ("rc", c_int32, False),
    ("joins", c_int64, True),  # workers that joined the current job (their participant numbers)
    ("threads", c_int64, True),  # worker threads running
    ("spin", c_int64, False),  # pause iterations before a worker sleeps
    ("busy", c_int32, False),  # 1 while a caller owns the pool (its grid published or draining)
    ("ranges", RANGE_LINE * MAX_PARTICIPANTS, True),  # per participant
    ("pinned", c_int64, True),  # workers pinned (0: placement off)
    ("ncpus", c_int64, False),  # CPUs this process may run on (listed in `cpus`)
    ("placed_at", c_int64, False),  # clock (ns) of the last re-pinning
    ("released", c_int64, False),  # 1 while pinned workers may run on any CPU
    ("cpus", c_int64 * MAX_PARTICIPANTS, True),  # per CPU, MAX_PARTICIPANTS at most
    ("worker_cpu", c_int64 * MAX_PARTICIPANTS, False),  # per pinned worker: its CPU
    ("worker_thread", c_int64 * MAX_PARTICIPANTS, False),  # per pinned worker: pthread_t
    ("all_cpus", c_uint64 * (AFFINITY_MASK_BYTES // 8), False),  # affinity mask: every CPU
)


def _place(fields) -> tuple[dict[str, int], int]:
    """Byte offset of each field (see POOL_FIELDS), and the end of the last."""
    offsets, at = {}, 0
    for name, kind, line in fields:
        align = CACHE_LINE if line else ctypes.alignment(kind)
        at = -(-at // align) * align
        offsets[name] = at
        at += ctypes.sizeof(kind)
    return offsets, at


def _structure(name: str, fields, offsets: dict[str, int]) -> type:
    """A ctypes structure with `fields` at `offsets` (padding where they leave gaps)."""
    spec, at = [], 0
    for name_, kind, _ in fields:
        if offsets[name_] > at:
            spec.append((f"_to_{name_}", ctypes.c_char * (offsets[name_] - at)))
        spec.append((name_, kind))
        at = offsets[name_] + ctypes.sizeof(kind)
    return type(name, (ctypes.Structure,), {"_fields_": spec})


POOL_OFFSETS, POOL_SIZE = _place(POOL_FIELDS)
PoolBlock = _structure("PoolBlock", POOL_FIELDS, POOL_OFFSETS)

PLACE_EVERY_NS = 1_000_000  # re-pin at most once per millisecond
RANGE_UNITS = 1 << 31  # a job's tiles are split into at most this many units

# --- plan records -----------------------------------------------------------------------------

# Plan records: i64 words, [op, words, ...]. A buffer ref is (slot, offset, length):
# slot >= 0 names a binding-table entry (offset relative to it, length -1 = to its end),
# slot -1 an absolute address in `offset`. The table is (address, length) per slot,
# address 0 for a null entry (refs into it resolve to (0, 0)).
OP_DISPATCH, OP_FILL, OP_COPY, OP_UPDATE = 1, 2, 3, 4
# Dispatch: [1, n, fn, env, ds, ptrs, lens, cx, cy, cz, flags, local_size, iref x3, nb,
#            estimated ns inline, on the pool, on the pool with its workers asleep, runs,
#            refs x3...]
D_FN, D_ENV, D_DS, D_PTRS, D_LENS, D_CX, D_CY, D_CZ, D_FLAGS = 2, 3, 4, 5, 6, 7, 8, 9, 10
D_LOCAL, D_IREF, D_NB, D_EST, D_EST_POOL, D_EST_COLD, D_RUNS, D_REFS = 11, 12, 15, 16, 17, 18, 19, 20
ESTIMATE_EVERY = 16  # runs between two looks at the way not taken (a clock read is ~0.1 us)
FLAG_SEQUENTIAL, FLAG_INDIRECT = 1, 2
# Fill: [2, n, ref x3, pattern, pattern length]. Copy: [3, n, source ref x3, target ref x3].
# Update: [4, n, data address, ref x3].
F_REF, F_PATTERN, F_PATTERN_LENGTH = 2, 5, 6
C_SRC, C_DST = 2, 5
U_DATA, U_REF = 2, 3
# Errors: (command index << 8) | code; out[0..2] carry details.
ERR_KERNEL, ERR_COUNTS = 1, 2

# --- binding-table checks ---------------------------------------------------------------------

# Check records (checks.ll), per used slot, i64 words: table word (2 * slot), the end its
# commands need (entry length >= end), 1 where a command writes it, offset alignment.
CHECK_WORD, CHECK_END, CHECK_WRITABLE, CHECK_ALIGN, CHECK_WORDS = 0, 1, 2, 3, 4
# Entry words, per used slot, written by the caller per call: the buffer's address and
# length, the entry's offset and length (-1: WHOLE_BUFFER, to the buffer's end), 1 where
# the buffer's allocation is read-only. Offsets and lengths come from the program: the
# checks compare without wrap-around (a sum of two of them is never formed).
ENTRY_ADDRESS, ENTRY_BUFFER_LENGTH, ENTRY_OFFSET, ENTRY_LENGTH, ENTRY_READONLY = 0, 1, 2, 3, 4
ENTRY_WORDS = 5
# Decline codes (negative, where the runner's own results are positive): the entry's range
# (offset outside the buffer, length short of the end needed or past the buffer's end, a
# negative length other than WHOLE_BUFFER), a read-only buffer written, a misaligned
# offset. Plan.run has two of its own: a null or odd entry, a table shorter than its slots.
DECLINE_RANGE, DECLINE_READONLY, DECLINE_ALIGN, DECLINE_ENTRY, DECLINE_TABLE = -1, -2, -3, -4, -5

# --- argument blocks --------------------------------------------------------------------------

# ctypes converts every argument of a foreign call (about as costly as the call itself),
# so the grid and plan runners also take their arguments as one block of i64 words, in
# the order of these tables.
GRID_PARAMS = (
    ("pool", "ptr"), ("fn", "ptr"), ("env", "ptr"), ("ds", "ptr"), ("wgs", "ptr"),
    ("cx", "i64"), ("cy", "i64"), ("total", "i64"), ("workers", "i64"),
)
PLAN_PARAMS = (
    ("plan", "ptr"), ("commands", "i64"), ("table", "ptr"), ("pool", "ptr"), ("workers", "i64"),
    ("wgs", "ptr"), ("nwgs", "i64"), ("out", "ptr"), ("stats", "ptr"),
)
# (pyree_check_run_plan: after the plan runner's own, in the same block)
CHECK_PARAMS = (("checks", "ptr"), ("nchecks", "i64"), ("entries", "ptr"))
GRID_ARGS = tuple(name for name, _ in GRID_PARAMS)
PLAN_ARGS = tuple(name for name, _ in PLAN_PARAMS)
CHECK_ARGS = tuple(name for name, _ in CHECK_PARAMS)

# A host loop's deferred steps (exec/loops.py: LoopMode replays), in one foreign call
# rather than three Python statements and a ctypes call per step. Block of i64 words:
STEPS_FIELDS = (
    ("args", "ptr"),  # the plan runner's argument block (pyree_run_plan_args)
    ("table", "ptr"),  # the plan's table, and its length in words
    ("words", "i64"),
    ("first0", "ptr"),  # turn 0's table image for the next step run
    ("later0", "ptr"),  # turn 0's image after that (the first step reads other buffers)
    ("image1", "ptr"),  # turn 1's image
    ("zeros0", "ptr"),  # per turn, (address, size) pairs zero-filled before its step
    ("nzeros0", "i64"),
    ("zeros1", "ptr"),
    ("nzeros1", "i64"),
    ("count", "i64"),  # steps to run, the first on turn `turn`
    ("turn", "i64"),
    ("ran", "i64"),  # out: steps run, a failed one included
)
STEPS_FIELDS_NAMES = tuple(name for name, _ in STEPS_FIELDS)

# A loop call's iterations (exec/native_loops.py, loop.ll `pyree_run_loop`): a block of
# i64 words, and an op table of LOOP_OP_WORDS words per op (code, d, a, b, c).
LOOP_FIELDS = (
    ("ops", "ptr"),  # the op table
    ("regs", "ptr"),  # the register file (i64 words)
    ("handles", "ptr"),  # per ref handle: its buffer's address (0: not a buffer)
    ("limit", "i64"),  # iterations after which the call returns (LOOP_EXIT_LIMIT)
    ("parity", "i64"),  # in/out: the turn of the next iteration's new buffers
    ("iterations", "i64"),  # out: iterations completed
    ("pc", "i64"),  # out: the op it stopped at
    ("result", "i64"),  # out: the plan runner's result (LOOP_EXIT_FAILED)
)
LOOP_FIELDS_NAMES = tuple(name for name, _ in LOOP_FIELDS)
LOOP_OP_WORDS = 5
# Control and data ops (d: the register written; a, b, c: registers or immediates):
LOOP_NEXT = 1  # the iteration is over: parity flipped, the next from op 0
LOOP_LEAVE_IF = 2  # leave (LOOP_EXIT_LEFT) where (R[a] == 0) != (b != 0)
LOOP_DECLINE_NE = 3  # LOOP_EXIT_DECLINE where R[a] != b (the shape's key)
LOOP_PLAN = 4  # the plan runner on the argument block at b; LOOP_EXIT_FAILED on a failure
LOOP_MOVE, LOOP_CONST = 5, 6  # R[d] = R[a]; R[d] = a
LOOP_ROW = 7  # *(i64 *)b = handles[R[a]] + c (a table word)
LOOP_TURN = 8  # R[d] = b on an even parity, c on an odd one (a new buffer's handle)
LOOP_ZERO = 9  # b bytes at handles[R[a]] zeroed
LOOP_STORE32 = 10  # *(u32 *)b = R[a] (a dispatch constant)
LOOP_LOAD = 11  # R[d] = b bytes at address a (1-3 zero-, 4 sign-extended)
# A queue fill's checks: LOOP_EXIT_DECLINE unless 0 <= R[a] <= b - (c >> 8) and R[a] is a
# multiple of c & 255 (b: the buffer's length; c: the fill's length << 8 | pattern length)
LOOP_FILL_CHECK = 12
# The fill: (d >> 8) bytes at handles[R[a]] + R[b], R[c]'s low (d & 255) bytes repeated
LOOP_FILL = 13
# R[d] = f(R[a], R[b]) (i32 results sign-extended)
(LOOP_ADD32, LOOP_SUB32, LOOP_MUL32, LOOP_ADD64, LOOP_SUB64, LOOP_MUL64, LOOP_AND, LOOP_OR,
 LOOP_XOR, LOOP_SHL32, LOOP_SHRS32, LOOP_SHRU32, LOOP_SHL64, LOOP_SHRS64, LOOP_SHRU64, LOOP_EQ,
 LOOP_NE, LOOP_LTS, LOOP_LTU32, LOOP_LTU64, LOOP_MINS, LOOP_MAXS, LOOP_MINU32, LOOP_MAXU32,
 LOOP_MINU64, LOOP_MAXU64) = range(20, 46)
# R[d] = the f32 compare of R[a] and R[b] (bits); FNAN reads R[a] only
LOOP_FEQ_O, LOOP_FEQ_U, LOOP_FNE, LOOP_FLT_O, LOOP_FLT_U, LOOP_FLE_O, LOOP_FLE_U, LOOP_FNAN = range(50, 58)
# R[d] = f(R[a])
(LOOP_NOT, LOOP_NZ, LOOP_SEXT32, LOOP_ZEXT32, LOOP_SEXT8, LOOP_ZEXT8, LOOP_SEXT16,
 LOOP_ZEXT16) = range(60, 68)
LOOP_SELECT = 70  # R[d] = R[a] != 0 ? R[b] : R[c]
LOOP_EXIT_LEFT, LOOP_EXIT_DECLINE, LOOP_EXIT_FAILED, LOOP_EXIT_LIMIT, LOOP_EXIT_BAD = 1, 2, 3, 4, 5

# --- the IR's placeholders --------------------------------------------------------------------

_RECORD_PREFIXES = (
    "OP_", "D_", "FLAG_", "F_", "C_", "U_", "ERR_", "CHECK_", "ENTRY_", "DECLINE_", "LOOP_",
)


def substitutions() -> dict[str, int]:
    """The value of every `@NAME@` placeholder of the IR units but the run-time settings
    (jit.py adds those): all from the tables above and kernel_abi.py's structures."""
    # (imported here: importing runtime_support.loaders runs its __init__, which imports
    # the executable loader, which imports this module)
    from ..loaders.kernel_abi import DispatchStateV0, WorkgroupStateV0

    values = {
        name: value
        for name, value in globals().items()
        if name.startswith(_RECORD_PREFIXES) and type(value) is int
    }
    values.update({f"POOL_{name.upper()}": offset for name, offset in POOL_OFFSETS.items()})
    values.update(
        POOL_RANGE_STRIDE=ctypes.sizeof(RANGE_LINE),
        AFFINITY_MASK_BYTES=AFFINITY_MASK_BYTES,
        MASK_WORDS=AFFINITY_MASK_BYTES // 8,
        PLACE_EVERY_NS=PLACE_EVERY_NS,
        RANGE_UNITS=RANGE_UNITS,
        RANGE_UNITS_MINUS_1=RANGE_UNITS - 1,
        RANGE_UNITS_LOG2=RANGE_UNITS.bit_length() - 1,
        ESTIMATE_MASK=ESTIMATE_EVERY - 1,
        ESTIMATE_MASK_FAR=8 * ESTIMATE_EVERY - 1,
        WG_STATE_SIZE=ctypes.sizeof(WorkgroupStateV0),  # one per participant, in `wgs`
        WG_WORKGROUP_ID_Y=WorkgroupStateV0.workgroup_id_y.offset,
        WG_WORKGROUP_ID_Z=WorkgroupStateV0.workgroup_id_z.offset,
        WG_LOCAL_MEMORY_SIZE=WorkgroupStateV0.local_memory_size.offset,
        DS_WORKGROUP_COUNT_X=DispatchStateV0.workgroup_count_x.offset,
        DS_WORKGROUP_COUNT_Y=DispatchStateV0.workgroup_count_y.offset,
        DS_WORKGROUP_COUNT_Z=DispatchStateV0.workgroup_count_z.offset,
        DS_MAX_CONCURRENCY=DispatchStateV0.max_concurrency.offset,
    )
    for prefix, names, first in (
        ("GRID_ARG", GRID_ARGS, 0),
        ("PLAN_ARG", PLAN_ARGS, 0),
        ("CHECK_ARG", CHECK_ARGS, len(PLAN_ARGS)),
        ("STEPS", STEPS_FIELDS_NAMES, 0),
        ("LOOP", LOOP_FIELDS_NAMES, 0),
    ):
        values.update({f"{prefix}_{name.upper()}": first + i for i, name in enumerate(names)})
    return values

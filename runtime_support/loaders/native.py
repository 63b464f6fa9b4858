"""Native code the CPU loaders run: JIT-compiled once per process with llvmlite.

    pyree_run_tiles   one worker's walk over a range of workgroup tiles (FTZ/DAZ held)
    pyree_run_grid    a whole grid: inline on the caller, or split with the worker pool
    pyree_run_plan    a whole recorded command buffer (hal/plan.py builds the records);
                      each grid runs inline or on the pool, whichever its measured times
                      say is faster (see the dispatch records)
    pyree_run_{grid,plan}_args  the same, called with one block of i64 arguments
    pyree_check_table  a plan's per-slot binding-table checks (hal/plan.py Plan.run): the
                      entries checked, their (address, length) written, or a decline code
    pyree_check_run_plan  the checks, then the plan: Plan.run's one foreign call
    pyree_run_plan_steps  a host loop's replayed steps of one plan (exec/loops.py):
                      per step, its new buffers zeroed, its table written, the plan run
    pyree_worker      the body of a pool thread (started with pthread_create via ctypes)
    pyree_import_thunk  how kernels call host imports

No C compiler is involved: the code is LLVM IR text below, compiled by llvmlite's MCJIT,
and the few libc functions it needs (`syscall` for futexes, `clock_gettime`) are bound
to the addresses ctypes resolves in the running process.

The worker pool (`WorkerPool`) is one per process: N-1 native threads that never touch
Python. A caller takes the pool with a compare-and-swap on its busy word (a caller that
finds it taken runs its grid inline), publishes a job (one grid) in the pool block, bumps
a generation word and wakes sleeping workers with a futex. Workers spin briefly, then sleep on the futex.
Participation is by ticket: the 64-bit ticket holds the job's generation (high half), a
closed bit and the number of workers inside; a worker joins with a compare-and-swap
while the job is open, so a late worker never delays the caller: the caller runs tiles
itself, closes the ticket when no tiles are left and waits only for workers that did
join. Any tile may run on any participant; each has its own workgroup state and local
memory.

Work split: participant p (the caller is 0, workers are numbered as they join) starts
with the p-th of maxp contiguous ranges of the grid and takes its tiles from the front,
an eighth of what is left at a time (at least one); when its range is empty it takes the
back half of what is left of another's range, until no range has tiles left. Contiguous ranges keep neighbouring
tiles (which share cache lines of their operands) on one core, and a participant that
joins late, or is descheduled, leaves at most the tile it is running to the others.
Measured against chunks handed out by one shared counter (a quarter of a participant's
share each): 4-9% faster on the GPT-2 decoder, MLP and 1M elementwise benchmarks on 2
cores, and much less slowed by another busy process; taking an eighth at a time rather
than single tiles: elementwise1m -1.5%, mlp -5% at p25 (fewer claims on small tiles). A range word packs (end, next) in
32 bits each; a grid of more than 2**31 tiles is split into units of several tiles.

Placement: workers are pinned one per CPU (as IREE's task executor pins its workers),
and before each pooled grid the caller, which is never pinned, checks whether a worker
is pinned to the CPU it runs on now; if so that worker moves to a CPU with no worker (at
most once a millisecond). A worker that shares the caller's CPU cannot run beside it:
with another busy process on the machine an unpinned worker is often woken onto the
caller's CPU and the grid runs at one-core speed. A caller that has spun out waiting for
workers to finish their last tiles lets them run on any CPU before it sleeps (one of them
may be descheduled behind another process on its own CPU, and the caller's is about to be
free); its next pooled grid pins them again. $PYREE_PIN=0 turns pinning off.
"""

from __future__ import annotations

import ctypes
import os
import platform
import string
import threading

from ..cache import disk_cache
from ..env_knobs import flag_knob, float_knob, int_knob

# --- architecture-specific pieces ---------------------------------------------------------

# Kernels run with denormals flushed to zero, as IREE runs them: its inline command buffer
# (local-sync) pushes IREE_FPU_STATE_FLAG_FLUSH_DENORMALS_TO_ZERO around every dispatch
# ("we are running on a borrowed thread, we know nothing about the floating point state")
# and its task workers (local-task) set it for their threads. Without it, results that
# involve denormals differ from IREE's and denormal operands take slow microcode paths.
# The tile loop saves the thread's FPU control state, sets the flush bits, runs its tiles
# and restores the state, on the caller and on pool threads alike.
# x86-64: MXCSR FTZ (bit 15) | DAZ (bit 6). AArch64: FPCR FZ (bit 24).
_ARCH_IR = {
    "x86_64": """
declare void @llvm.x86.sse.stmxcsr(ptr)
declare void @llvm.x86.sse.ldmxcsr(ptr)
declare void @llvm.x86.sse2.pause()
define internal i64 @pyree_fpu_push() {
  %slot = alloca i32
  call void @llvm.x86.sse.stmxcsr(ptr %slot)
  %old = load i32, ptr %slot
  %new = or i32 %old, 32832
  store i32 %new, ptr %slot
  call void @llvm.x86.sse.ldmxcsr(ptr %slot)
  %ret = zext i32 %old to i64
  ret i64 %ret
}
define internal void @pyree_fpu_pop(i64 %state) {
  %slot = alloca i32
  %old = trunc i64 %state to i32
  store i32 %old, ptr %slot
  call void @llvm.x86.sse.ldmxcsr(ptr %slot)
  ret void
}
define internal void @pyree_pause() {
  call void @llvm.x86.sse2.pause()
  ret void
}
""",
    "aarch64": """
declare i64 @llvm.aarch64.get.fpcr()
declare void @llvm.aarch64.set.fpcr(i64)
declare void @llvm.aarch64.hint(i32)
define internal i64 @pyree_fpu_push() {
  %old = call i64 @llvm.aarch64.get.fpcr()
  %new = or i64 %old, 16777216
  call void @llvm.aarch64.set.fpcr(i64 %new)
  ret i64 %old
}
define internal void @pyree_fpu_pop(i64 %state) {
  call void @llvm.aarch64.set.fpcr(i64 %state)
  ret void
}
define internal void @pyree_pause() {
  call void @llvm.aarch64.hint(i32 1)
  ret void
}
""",
}
_ARCH_IR_DEFAULT = """
define internal i64 @pyree_fpu_push() {
  ret i64 0
}
define internal void @pyree_fpu_pop(i64 %state) {
  ret void
}
define internal void @pyree_pause() {
  ret void
}
"""
_SYS_FUTEX = {"x86_64": 202, "aarch64": 98}


def _machine() -> str:
    machine = platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)


# --- the tile loop ---------------------------------------------------------------------------

_TILES_IR = r"""
define i32 @pyree_run_tiles(ptr %fn, ptr %env, ptr %ds, ptr %wg,
                            i64 %cx, i64 %cy, i64 %begin, i64 %end) {
entry:
  %fpu = call i64 @pyree_fpu_push()
  %rc = call i32 @pyree_walk_tiles(ptr %fn, ptr %env, ptr %ds, ptr %wg,
                                   i64 %cx, i64 %cy, i64 %begin, i64 %end)
  call void @pyree_fpu_pop(i64 %fpu)
  ret i32 %rc
}

; The tiles [%begin, %end) in order, with the caller's FPU state.
define internal i32 @pyree_walk_tiles(ptr %fn, ptr %env, ptr %ds, ptr %wg,
                                      i64 %cx, i64 %cy, i64 %begin, i64 %end) {
entry:
  %py = getelementptr i8, ptr %wg, i64 4
  %pz = getelementptr i8, ptr %wg, i64 8
  %empty = icmp uge i64 %begin, %end
  br i1 %empty, label %done, label %pre
pre:
  %x0 = urem i64 %begin, %cx
  %q = udiv i64 %begin, %cx
  %y0 = urem i64 %q, %cy
  %z0 = udiv i64 %q, %cy
  br label %loop
loop:
  %t = phi i64 [ %begin, %pre ], [ %t1, %next ]
  %x = phi i64 [ %x0, %pre ], [ %xn, %next ]
  %y = phi i64 [ %y0, %pre ], [ %yn, %next ]
  %z = phi i64 [ %z0, %pre ], [ %zn, %next ]
  %x32 = trunc i64 %x to i32
  %y32 = trunc i64 %y to i32
  %z16 = trunc i64 %z to i16
  store i32 %x32, ptr %wg
  store i32 %y32, ptr %py
  store i16 %z16, ptr %pz
  %rc = call i32 %fn(ptr %env, ptr %ds, ptr %wg)
  %bad = icmp ne i32 %rc, 0
  br i1 %bad, label %fail, label %next
next:
  %t1 = add i64 %t, 1
  %x1 = add i64 %x, 1
  %wrapx = icmp eq i64 %x1, %cx
  %xn = select i1 %wrapx, i64 0, i64 %x1
  %y1 = add i64 %y, 1
  %yi = select i1 %wrapx, i64 %y1, i64 %y
  %wrapy = icmp eq i64 %yi, %cy
  %yn = select i1 %wrapy, i64 0, i64 %yi
  %z1 = add i64 %z, 1
  %zn = select i1 %wrapy, i64 %z1, i64 %z
  %more = icmp ult i64 %t1, %end
  br i1 %more, label %loop, label %done
fail:
  ret i32 %rc
done:
  ret i32 0
}

define i32 @pyree_import_thunk(ptr %fn, ptr %params, ptr %context, ptr %reserved) {
entry:
  %rc = call i32 %fn(ptr %params, ptr %context, ptr %reserved)
  ret i32 %rc
}
"""

# --- the worker pool -------------------------------------------------------------------------

# Pool block layout (bytes); hot words on their own cache lines.
POOL_GEN = 0  # i32 futex word: the generation of the newest job
POOL_SLEEPERS = 64  # i32: workers asleep on POOL_GEN
POOL_TICKET = 128  # i64: generation << 32 | CLOSED | workers inside (low half: futex word)
POOL_FN, POOL_ENV, POOL_DS, POOL_WGS = 192, 200, 208, 216
POOL_CX, POOL_CY, POOL_TOTAL, POOL_UNIT, POOL_MAXP, POOL_RC = 224, 232, 240, 248, 256, 264
POOL_JOINS = 320  # i64: workers that joined the current job (their participant numbers)
POOL_THREADS = 384  # i64: worker threads running
POOL_SPIN = 392  # i64: pause iterations before a worker sleeps
POOL_BUSY = 400  # i32: 1 while a caller owns the pool (its grid is published or draining)
POOL_RANGES = 448  # per participant, one cache line each: i64 end << 32 | next (in units)
MAX_PARTICIPANTS = 256
# Placement (see "Placement" in the module docstring): pinned workers, one CPU each.
AFFINITY_MASK_BYTES = 128  # CPUs 0..1023
POOL_PINNED = POOL_RANGES + 64 * MAX_PARTICIPANTS  # i64: workers pinned (0: placement off)
POOL_NCPUS = POOL_PINNED + 8  # i64: CPUs this process may run on (listed at POOL_CPUS)
POOL_PLACED_AT = POOL_PINNED + 16  # i64: clock (ns) of the last re-pinning
POOL_RELEASED = POOL_PINNED + 24  # i64: 1 while pinned workers may run on any CPU
POOL_CPUS = POOL_PINNED + 64  # i64 per CPU, MAX_PARTICIPANTS at most
POOL_WORKER_CPU = POOL_CPUS + 8 * MAX_PARTICIPANTS  # i64 per pinned worker: its CPU
POOL_WORKER_THREAD = POOL_WORKER_CPU + 8 * MAX_PARTICIPANTS  # i64 per pinned worker: pthread_t
POOL_ALL_CPUS = POOL_WORKER_THREAD + 8 * MAX_PARTICIPANTS  # affinity mask: every CPU listed
POOL_SIZE = POOL_ALL_CPUS + AFFINITY_MASK_BYTES
PLACE_EVERY_NS = 1_000_000  # re-pin at most once per millisecond
RANGE_UNITS = 1 << 31  # a job's tiles are split into at most this many units

WG_STATE_SIZE = 32  # iree_hal_executable_workgroup_state_v0_t

_POOL_IR = r"""
declare i64 @syscall(i64, ...)
declare i32 @sched_getcpu()
declare i32 @pthread_setaffinity_np(i64, i64, ptr)

define internal void @pyree_futex_wait(ptr %addr, i32 %val) {
  %v = zext i32 %val to i64
  %r = call i64 (i64, ...) @syscall(i64 $SYS_FUTEX, ptr %addr, i64 128, i64 %v, ptr null)
  ret void
}
define internal void @pyree_futex_wake(ptr %addr, i32 %n) {
  %m = zext i32 %n to i64
  %r = call i64 (i64, ...) @syscall(i64 $SYS_FUTEX, ptr %addr, i64 129, i64 %m)
  ret void
}

; Runs units of the pool's current job as participant %idx until none are left: its
; own range from the front, one unit at a time, then the back half of another
; participant's remaining range, and so on (see "Work split" in the module docstring).
define internal void @pyree_run_job(ptr %pool, i64 %idx) {
entry:
$JOB_LOADS  %prc = getelementptr i8, ptr %pool, i64 $POOL_RC
  %ranges = getelementptr i8, ptr %pool, i64 $POOL_RANGES
  %wgoff = mul i64 %idx, $WG_STATE_SIZE
  %wg = getelementptr i8, ptr %wgs, i64 %wgoff
  %myoff = mul i64 %idx, 64
  %mine = getelementptr i8, ptr %ranges, i64 %myoff
  %fpu = call i64 @pyree_fpu_push()
  br label %take
take:
  %r = load atomic i64, ptr %mine monotonic, align 8
  %n = and i64 %r, 4294967295
  %e = lshr i64 %r, 32
  %has = icmp ult i64 %n, %e
  br i1 %has, label %claim, label %scan
claim:
  ; An eighth of what is left of the range (at least one unit): few claims on grids of
  ; many small tiles, single tiles near the end, where others may come to take them.
  %cleft = sub i64 %e, %n
  %ceighth = lshr i64 %cleft, 3
  %cfew = icmp eq i64 %ceighth, 0
  %cstep = select i1 %cfew, i64 1, i64 %ceighth
  %r1 = add i64 %r, %cstep
  %pair = cmpxchg ptr %mine, i64 %r, i64 %r1 monotonic monotonic
  %ok = extractvalue { i64, i1 } %pair, 1
  br i1 %ok, label %check, label %take
check:
  %failed = load atomic i32, ptr %prc monotonic, align 4
  %stop = icmp ne i32 %failed, 0
  br i1 %stop, label %out, label %run
run:
  %tb = mul i64 %n, %unit
  %nend = add i64 %n, %cstep
  %te0 = mul i64 %nend, %unit
  %tover = icmp ugt i64 %te0, %total
  %te = select i1 %tover, i64 %total, i64 %te0
  %rc = call i32 @pyree_walk_tiles(ptr %fn, ptr %env, ptr %ds, ptr %wg, i64 %cx, i64 %cy, i64 %tb, i64 %te)
  %bad = icmp ne i32 %rc, 0
  br i1 %bad, label %fail, label %take
scan:
  %k = phi i64 [ 1, %take ], [ %k1, %nextv ]
  %kmore = icmp ult i64 %k, %maxp
  br i1 %kmore, label %victim, label %out
victim:
  %v0 = add i64 %idx, %k
  %v = urem i64 %v0, %maxp
  %voff = mul i64 %v, 64
  %pv = getelementptr i8, ptr %ranges, i64 %voff
  br label %look
look:
  %rv = load atomic i64, ptr %pv monotonic, align 8
  %nv = and i64 %rv, 4294967295
  %ev = lshr i64 %rv, 32
  %any = icmp ult i64 %nv, %ev
  br i1 %any, label %split, label %nextv
split:
  %left = sub i64 %ev, %nv
  %half = lshr i64 %left, 1
  %mid = add i64 %nv, %half
  %midhi = shl i64 %mid, 32
  %keep = or i64 %midhi, %nv
  %spair = cmpxchg ptr %pv, i64 %rv, i64 %keep monotonic monotonic
  %sok = extractvalue { i64, i1 } %spair, 1
  br i1 %sok, label %stolen, label %look
stolen:
  ; Our own range is empty, so no one else writes it: the stolen part becomes it.
  %evhi = shl i64 %ev, 32
  %got = or i64 %evhi, %mid
  store atomic i64 %got, ptr %mine monotonic, align 8
  br label %take
nextv:
  %k1 = add i64 %k, 1
  br label %scan
fail:
  %x = cmpxchg ptr %prc, i32 0, i32 %rc monotonic monotonic
  br label %out
out:
  call void @pyree_fpu_pop(i64 %fpu)
  ret void
}

; Waits (spin, then futex) until the generation word differs from %seen.
define internal void @pyree_wait_change(ptr %pool, i32 %seen) {
entry:
  %pspin = getelementptr i8, ptr %pool, i64 $POOL_SPIN
  %spin = load i64, ptr %pspin
  br label %spinloop
spinloop:
  %i = phi i64 [ 0, %entry ], [ %i1, %spinmore ]
  %g = load atomic i32, ptr %pool acquire, align 4
  %changed = icmp ne i32 %g, %seen
  br i1 %changed, label %ret, label %spinmore
spinmore:
  call void @pyree_pause()
  %i1 = add i64 %i, 1
  %more = icmp ult i64 %i1, %spin
  br i1 %more, label %spinloop, label %sleep
sleep:
  %psleep = getelementptr i8, ptr %pool, i64 $POOL_SLEEPERS
  %a = atomicrmw add ptr %psleep, i32 1 seq_cst
  br label %sleeploop
sleeploop:
  %g2 = load atomic i32, ptr %pool seq_cst, align 4
  %changed2 = icmp ne i32 %g2, %seen
  br i1 %changed2, label %woke, label %wait
wait:
  call void @pyree_futex_wait(ptr %pool, i32 %seen)
  br label %sleeploop
woke:
  %b = atomicrmw sub ptr %psleep, i32 1 seq_cst
  br label %ret
ret:
  ret void
}

; A pool thread: wait for a new generation, try to join its job, run tiles, leave.
define ptr @pyree_worker(ptr %pool) {
entry:
  %pticket = getelementptr i8, ptr %pool, i64 $POOL_TICKET
  %pmaxp = getelementptr i8, ptr %pool, i64 $POOL_MAXP
  %t0 = load atomic i64, ptr %pticket acquire, align 8
  %g0 = lshr i64 %t0, 32
  %seen0 = trunc i64 %g0 to i32
  br label %wait
wait:
  %seen = phi i32 [ %seen0, %entry ], [ %tg32, %skip ], [ %tg32, %left ]
  call void @pyree_wait_change(ptr %pool, i32 %seen)
  br label %try
try:
  %t = load atomic i64, ptr %pticket acquire, align 8
  %tg = lshr i64 %t, 32
  %tg32 = trunc i64 %tg to i32
  %closed = and i64 %t, 2147483648
  %isclosed = icmp ne i64 %closed, 0
  br i1 %isclosed, label %skip, label %cas
cas:
  %t1 = add i64 %t, 1
  %pair = cmpxchg ptr %pticket, i64 %t, i64 %t1 acq_rel acquire
  %ok = extractvalue { i64, i1 } %pair, 1
  br i1 %ok, label %joined, label %try
joined:
  ; A participant number no one else in this job has: workers may leave and others
  ; join while the job runs, so the count inside the ticket would repeat numbers.
  %pjoins = getelementptr i8, ptr %pool, i64 $POOL_JOINS
  %before = atomicrmw add ptr %pjoins, i64 1 monotonic
  %idx = add i64 %before, 1
  %maxp = load i64, ptr %pmaxp
  %room = icmp ult i64 %idx, %maxp
  br i1 %room, label %run, label %leave
run:
  call void @pyree_run_job(ptr %pool, i64 %idx)
  br label %leave
leave:
  %old = atomicrmw sub ptr %pticket, i64 1 acq_rel
  %low = and i64 %old, 4294967295
  %last = icmp eq i64 %low, 2147483649
  br i1 %last, label %wake, label %left
wake:
  call void @pyree_futex_wake(ptr %pticket, i32 1)
  br label %left
left:
  br label %wait
skip:
  br label %wait
}

; The index (< %n) of the pinned worker on CPU %cpu, or %n if none.
define internal i64 @pyree_worker_on(ptr %pool, i64 %n, i64 %cpu) {
entry:
  %pw = getelementptr i8, ptr %pool, i64 $POOL_WORKER_CPU
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %next ]
  %more = icmp ult i64 %i, %n
  br i1 %more, label %body, label %done
body:
  %pc = getelementptr i64, ptr %pw, i64 %i
  %c = load i64, ptr %pc
  %hit = icmp eq i64 %c, %cpu
  br i1 %hit, label %done, label %next
next:
  %i1 = add i64 %i, 1
  br label %loop
done:
  ret i64 %i
}

; Sets the affinity of the %n pinned workers: every CPU (%release), else each its own.
define internal void @pyree_pin_all(ptr %pool, i64 %n, i1 %release) {
entry:
  %one = alloca [$MASK_WORDS x i64], align 8
  %all = getelementptr i8, ptr %pool, i64 $POOL_ALL_CPUS
  %pwc = getelementptr i8, ptr %pool, i64 $POOL_WORKER_CPU
  %pthreads = getelementptr i8, ptr %pool, i64 $POOL_WORKER_THREAD
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %body ]
  %more = icmp ult i64 %i, %n
  br i1 %more, label %body, label %done
body:
  %pc = getelementptr i64, ptr %pwc, i64 %i
  %cpu = load i64, ptr %pc
  call void @llvm.memset.p0.i64(ptr %one, i8 0, i64 $AFFINITY_MASK_BYTES, i1 false)
  %word = lshr i64 %cpu, 6
  %bit = and i64 %cpu, 63
  %b = shl i64 1, %bit
  %pword = getelementptr i64, ptr %one, i64 %word
  store i64 %b, ptr %pword
  %mask = select i1 %release, ptr %all, ptr %one
  %pt = getelementptr i64, ptr %pthreads, i64 %i
  %thread = load i64, ptr %pt
  %rc = call i32 @pthread_setaffinity_np(i64 %thread, i64 $AFFINITY_MASK_BYTES, ptr %mask)
  %i1 = add i64 %i, 1
  br label %loop
done:
  ret void
}

; The caller is about to sleep until workers finish their tiles: lets pinned workers run
; on any CPU meanwhile, so that one descheduled behind another process on its own CPU can
; move to the caller's (pyree_place pins them again before the next pooled grid).
define internal void @pyree_release_pins(ptr %pool) {
entry:
  %ppinned = getelementptr i8, ptr %pool, i64 $POOL_PINNED
  %n = load atomic i64, ptr %ppinned acquire, align 8
  %preleased = getelementptr i8, ptr %pool, i64 $POOL_RELEASED
  %released = load i64, ptr %preleased
  %held = icmp eq i64 %released, 0
  %any = icmp ne i64 %n, 0
  %go = and i1 %held, %any
  br i1 %go, label %release, label %done
release:
  store i64 1, ptr %preleased
  call void @pyree_pin_all(ptr %pool, i64 %n, i1 true)
  br label %done
done:
  ret void
}

; Keeps pinned workers off the caller's CPU: a worker pinned where the caller now runs
; moves to a CPU with no worker (at most once per PLACE_EVERY_NS). Workers released by
; the last grid's caller are pinned again first.
define internal void @pyree_place(ptr %pool) {
entry:
  %mask = alloca [$MASK_WORDS x i64], align 8
  %ppinned = getelementptr i8, ptr %pool, i64 $POOL_PINNED
  %n = load atomic i64, ptr %ppinned acquire, align 8
  %on = icmp ne i64 %n, 0
  br i1 %on, label %repin, label %done
repin:
  %preleased = getelementptr i8, ptr %pool, i64 $POOL_RELEASED
  %released = load i64, ptr %preleased
  %loose = icmp ne i64 %released, 0
  br i1 %loose, label %pin, label %where
pin:
  store i64 0, ptr %preleased
  call void @pyree_pin_all(ptr %pool, i64 %n, i1 false)
  br label %where
where:
  %c32 = call i32 @sched_getcpu()
  %c = sext i32 %c32 to i64
  %w = call i64 @pyree_worker_on(ptr %pool, i64 %n, i64 %c)
  %clash = icmp ult i64 %w, %n
  br i1 %clash, label %due, label %done
due:
  %now = call i64 @pyree_now()
  %pat = getelementptr i8, ptr %pool, i64 $POOL_PLACED_AT
  %at = load i64, ptr %pat
  %since = sub i64 %now, %at
  %soon = icmp ult i64 %since, $PLACE_EVERY_NS
  br i1 %soon, label %done, label %search
search:
  store i64 %now, ptr %pat
  %pncpus = getelementptr i8, ptr %pool, i64 $POOL_NCPUS
  %ncpus = load i64, ptr %pncpus
  %pcpus = getelementptr i8, ptr %pool, i64 $POOL_CPUS
  br label %scan
scan:
  %j = phi i64 [ 0, %search ], [ %j1, %skip ]
  %jmore = icmp ult i64 %j, %ncpus
  br i1 %jmore, label %try, label %done
try:
  %pa = getelementptr i64, ptr %pcpus, i64 %j
  %a = load i64, ptr %pa
  %mine = icmp eq i64 %a, %c
  %holder = call i64 @pyree_worker_on(ptr %pool, i64 %n, i64 %a)
  %taken = icmp ult i64 %holder, %n
  %no = or i1 %mine, %taken
  br i1 %no, label %skip, label %move
skip:
  %j1 = add i64 %j, 1
  br label %scan
move:
  call void @llvm.memset.p0.i64(ptr %mask, i8 0, i64 $AFFINITY_MASK_BYTES, i1 false)
  %word = lshr i64 %a, 6
  %bit = and i64 %a, 63
  %one = shl i64 1, %bit
  %pword = getelementptr i64, ptr %mask, i64 %word
  store i64 %one, ptr %pword
  %pthreads = getelementptr i8, ptr %pool, i64 $POOL_WORKER_THREAD
  %pt = getelementptr i64, ptr %pthreads, i64 %w
  %thread = load i64, ptr %pt
  %rc = call i32 @pthread_setaffinity_np(i64 %thread, i64 $AFFINITY_MASK_BYTES, ptr %mask)
  %moved = icmp eq i32 %rc, 0
  br i1 %moved, label %record, label %done
record:
  %pwc = getelementptr i8, ptr %pool, i64 $POOL_WORKER_CPU
  %pwcw = getelementptr i64, ptr %pwc, i64 %w
  store i64 %a, ptr %pwcw
  br label %done
done:
  ret void
}

; Runs a grid of %total tiles: inline when it is too small or no pool is given,
; otherwise with up to %workers participants (the caller is participant 0).
define i32 @pyree_run_grid(ptr %pool, ptr %fn, ptr %env, ptr %ds, ptr %wgs,
                           i64 %cx, i64 %cy, i64 %total, i64 %workers) {
entry:
  %nopool = icmp eq ptr %pool, null
  %one = icmp ule i64 %workers, 1
  %small = icmp ule i64 %total, 1
  %a = or i1 %nopool, %one
  %inline = or i1 %a, %small
  br i1 %inline, label %solo, label %sized
solo:
  %rc0 = call i32 @pyree_run_tiles(ptr %fn, ptr %env, ptr %ds, ptr %wgs, i64 %cx, i64 %cy, i64 0, i64 %total)
  ret i32 %rc0
sized:
  %pthreads = getelementptr i8, ptr %pool, i64 $POOL_THREADS
  %threads = load i64, ptr %pthreads
  %cap = add i64 %threads, 1
  %m0c = icmp ult i64 %workers, %cap
  %m0 = select i1 %m0c, i64 %workers, i64 %cap
  %m1c = icmp ult i64 %m0, %total
  %maxp = select i1 %m1c, i64 %m0, i64 %total
  %alone = icmp ule i64 %maxp, 1
  br i1 %alone, label %solo, label %claim
claim:
  ; One caller at a time owns the pool; another caller's grid runs inline meanwhile.
  %pbusy = getelementptr i8, ptr %pool, i64 $POOL_BUSY
  %claimed = cmpxchg ptr %pbusy, i32 0, i32 1 acquire monotonic
  %owner = extractvalue { i32, i1 } %claimed, 1
  br i1 %owner, label %publish, label %solo
publish:
  call void @pyree_place(ptr %pool)
  ; Units of one tile unless the grid has more than RANGE_UNITS tiles.
  %ubig = icmp ugt i64 %total, $RANGE_UNITS
  %u0 = add i64 %total, $RANGE_UNITS_MINUS_1
  %ulong = lshr i64 %u0, $RANGE_UNITS_LOG2
  %unit = select i1 %ubig, i64 %ulong, i64 1
  %n0 = add i64 %total, %unit
  %n1 = sub i64 %n0, 1
  %units = udiv i64 %n1, %unit
$JOB_STORES  %prc = getelementptr i8, ptr %pool, i64 $POOL_RC
  store i32 0, ptr %prc
  %pjoins = getelementptr i8, ptr %pool, i64 $POOL_JOINS
  store i64 0, ptr %pjoins
  ; Participant p starts with units [p * units / maxp, (p + 1) * units / maxp).
  %ranges = getelementptr i8, ptr %pool, i64 $POOL_RANGES
  br label %split
split:
  %p = phi i64 [ 0, %publish ], [ %p1, %split ]
  %pb0 = mul i64 %p, %units
  %pb = udiv i64 %pb0, %maxp
  %p1 = add i64 %p, 1
  %pe0 = mul i64 %p1, %units
  %pe = udiv i64 %pe0, %maxp
  %pehi = shl i64 %pe, 32
  %range = or i64 %pehi, %pb
  %poff = mul i64 %p, 64
  %pslot = getelementptr i8, ptr %ranges, i64 %poff
  store atomic i64 %range, ptr %pslot monotonic, align 8
  %pmore = icmp ult i64 %p1, %maxp
  br i1 %pmore, label %split, label %go
go:
  %pticket = getelementptr i8, ptr %pool, i64 $POOL_TICKET
  %psleep = getelementptr i8, ptr %pool, i64 $POOL_SLEEPERS
  %told = load atomic i64, ptr %pticket monotonic, align 8
  %gold = lshr i64 %told, 32
  %gnew = add i64 %gold, 1
  %gmask = and i64 %gnew, 4294967295
  %tnew = shl i64 %gmask, 32
  store atomic i64 %tnew, ptr %pticket release, align 8
  %g32 = trunc i64 %gmask to i32
  store atomic i32 %g32, ptr %pool seq_cst, align 4
  %sleepers = load atomic i32, ptr %psleep seq_cst, align 4
  %anyasleep = icmp ne i32 %sleepers, 0
  br i1 %anyasleep, label %wake, label %work
wake:
  %nw = sub i64 %maxp, 1
  %nw32 = trunc i64 %nw to i32
  call void @pyree_futex_wake(ptr %pool, i32 %nw32)
  br label %work
work:
  call void @pyree_run_job(ptr %pool, i64 0)
  %old = atomicrmw or ptr %pticket, i64 2147483648 acq_rel
  br label %drain
drain:
  %i = phi i64 [ 0, %work ], [ %i1, %spin ], [ 0, %sleep ]
  %low = load atomic i32, ptr %pticket acquire, align 8
  %inside = and i32 %low, 2147483647
  %empty = icmp eq i32 %inside, 0
  br i1 %empty, label %finish, label %spin
spin:
  call void @pyree_pause()
  %i1 = add i64 %i, 1
  %more = icmp ult i64 %i1, 4000
  br i1 %more, label %drain, label %sleep
sleep:
  call void @pyree_release_pins(ptr %pool)
  call void @pyree_futex_wait(ptr %pticket, i32 %low)
  br label %drain
finish:
  %rc = load i32, ptr %prc
  store atomic i32 0, ptr %pbusy release, align 4
  ret i32 %rc
}
"""

# --- the plan runner -------------------------------------------------------------------------

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

_PLAN_IR = r"""
declare i32 @clock_gettime(i32, ptr)
declare void @llvm.memmove.p0.p0.i64(ptr, ptr, i64, i1)
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)
declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)

define internal i64 @pyree_now() {
  %ts = alloca [2 x i64]
  %r = call i32 @clock_gettime(i32 1, ptr %ts)
  %s = load i64, ptr %ts
  %pn = getelementptr i64, ptr %ts, i64 1
  %n = load i64, ptr %pn
  %m = mul i64 %s, 1000000000
  %t = add i64 %m, %n
  ret i64 %t
}

; (address, length) of the ref at %rec: slot, offset, length.
define internal { i64, i64 } @pyree_resolve(ptr %rec, ptr %table) {
entry:
  %slot = load i64, ptr %rec
  %po = getelementptr i64, ptr %rec, i64 1
  %off = load i64, ptr %po
  %pl = getelementptr i64, ptr %rec, i64 2
  %len = load i64, ptr %pl
  %direct = icmp slt i64 %slot, 0
  br i1 %direct, label %abs, label %slotted
abs:
  %r0 = insertvalue { i64, i64 } undef, i64 %off, 0
  %r1 = insertvalue { i64, i64 } %r0, i64 %len, 1
  ret { i64, i64 } %r1
slotted:
  %i2 = mul i64 %slot, 2
  %pa = getelementptr i64, ptr %table, i64 %i2
  %base = load i64, ptr %pa
  %pb = getelementptr i64, ptr %pa, i64 1
  %blen = load i64, ptr %pb
  %null = icmp eq i64 %base, 0
  br i1 %null, label %isnull, label %live
isnull:
  ret { i64, i64 } zeroinitializer
live:
  %addr = add i64 %base, %off
  %whole = icmp eq i64 %len, -1
  %rest = sub i64 %blen, %off
  %l = select i1 %whole, i64 %rest, i64 %len
  %s0 = insertvalue { i64, i64 } undef, i64 %addr, 0
  %s1 = insertvalue { i64, i64 } %s0, i64 %l, 1
  ret { i64, i64 } %s1
}

define i64 @pyree_run_plan(ptr %plan, i64 %ncmd, ptr %table, ptr %pool, i64 %workers,
                           ptr %wgs, i64 %nwgs, ptr %out, ptr %stats) {
entry:
  %timed = icmp ne ptr %stats, null
  br label %head
head:
  %i = phi i64 [ 0, %entry ], [ %inext, %next ]
  %p = phi ptr [ %plan, %entry ], [ %pnext, %next ]
  %more = icmp ult i64 %i, %ncmd
  br i1 %more, label %body, label %ok
ok:
  ret i64 0
body:
  %op = load i64, ptr %p
  %pw = getelementptr i64, ptr %p, i64 1
  %nw = load i64, ptr %pw
  switch i64 %op, label %next [ i64 1, label %dispatch
                                i64 2, label %fill
                                i64 3, label %copy
                                i64 4, label %update ]
next:
  %inext = add i64 %i, 1
  %pnext = getelementptr i64, ptr %p, i64 %nw
  br label %head

; -- dispatch ----------------------------------------------------------------------------
dispatch:
$DISPATCH_LOADS  br label %bhead
bhead:
  %b = phi i64 [ 0, %dispatch ], [ %b1, %bbody ]
  %bmore = icmp ult i64 %b, %nb
  br i1 %bmore, label %bbody, label %counts
bbody:
  %b3 = mul i64 %b, 3
  %roff = add i64 %b3, $D_REFS
  %rref = getelementptr i64, ptr %p, i64 %roff
  %res = call { i64, i64 } @pyree_resolve(ptr %rref, ptr %table)
  %ra = extractvalue { i64, i64 } %res, 0
  %rl = extractvalue { i64, i64 } %res, 1
  %dpa = getelementptr i64, ptr %ptrs, i64 %b
  store i64 %ra, ptr %dpa
  %dpl = getelementptr i64, ptr %lens, i64 %b
  store i64 %rl, ptr %dpl
  %b1 = add i64 %b, 1
  br label %bhead
counts:
$FLAGS_LOAD  %indirect = and i64 %flags, 2
  %isind = icmp ne i64 %indirect, 0
  br i1 %isind, label %ind, label %direct
direct:
$COUNT_LOADS  br label %grid
ind:
  %iref = getelementptr i64, ptr %p, i64 $D_IREF
  %ires = call { i64, i64 } @pyree_resolve(ptr %iref, ptr %table)
  %ia = extractvalue { i64, i64 } %ires, 0
  %iptr = inttoptr i64 %ia to ptr
  %icx32 = load i32, ptr %iptr, align 1
  %ipy = getelementptr i8, ptr %iptr, i64 4
  %icy32 = load i32, ptr %ipy, align 1
  %ipz = getelementptr i8, ptr %iptr, i64 8
  %icz32 = load i32, ptr %ipz, align 1
  %icx = zext i32 %icx32 to i64
  %icy = zext i32 %icy32 to i64
  %icz = zext i32 %icz32 to i64
  %ia0 = mul i64 %icx, %icy
  %itotal = mul i64 %ia0, %icz
  %iempty = icmp eq i64 %itotal, 0
  br i1 %iempty, label %next, label %icheck
icheck:
  %zbig = icmp ugt i64 %icz, 65535
  br i1 %zbig, label %badcounts, label %iwrite
badcounts:
  store i64 %icx, ptr %out
  %o1 = getelementptr i64, ptr %out, i64 1
  store i64 %icy, ptr %o1
  %o2 = getelementptr i64, ptr %out, i64 2
  store i64 %icz, ptr %o2
  %e0 = shl i64 %i, 8
  %e1 = or i64 %e0, 2
  ret i64 %e1
iwrite:
  %dsx = getelementptr i8, ptr %ds, i64 12
  store i32 %icx32, ptr %dsx
  %dsy = getelementptr i8, ptr %ds, i64 16
  store i32 %icy32, ptr %dsy
  %dsz = getelementptr i8, ptr %ds, i64 20
  %icz16 = trunc i32 %icz32 to i16
  store i16 %icz16, ptr %dsz
  br label %grid
grid:
  %cx = phi i64 [ %dcx, %direct ], [ %icx, %iwrite ]
  %cy = phi i64 [ %dcy, %direct ], [ %icy, %iwrite ]
  %cz = phi i64 [ %dcz, %direct ], [ %icz, %iwrite ]
  %g0 = mul i64 %cx, %cy
  %total = mul i64 %g0, %cz
  %gempty = icmp eq i64 %total, 0
  br i1 %gempty, label %next, label %launch
launch:
  %seq = and i64 %flags, 1
  %isseq = icmp ne i64 %seq, 0
  %w0 = select i1 %isseq, i64 1, i64 %workers
  %w1c = icmp ult i64 %w0, %total
  %w1 = select i1 %w1c, i64 %w0, i64 %total
  %w2c = icmp ult i64 %w1, %nwgs
  %w2 = select i1 %w2c, i64 %w1, i64 %nwgs
  %w3c = icmp ult i64 %w2, 255
  %w3 = select i1 %w3c, i64 %w2, i64 255
  ; Inline or on the pool, by measured times. The record keeps two estimates (moving
  ; averages; -1 until measured) of the grid's time: run inline (%est) and run on the
  ; pool (%estp). A grid runs inline twice first; it goes to the pool when it takes at
  ; least $$PYREE_INLINE_US inline (waking workers costs more than smaller grids gain),
  ; and stays there unless its time on the pool falls under half that (it got smaller).
  ; It does not go back because the pool's average was slower: with another busy process
  ; on the machine the pool's times spread widely, and grids kept inline on such averages
  ; ran slower than on the pool (matmul512 median 2.66 -> 1.63 ms, mlp 569 -> 518 us,
  ; interleaved A/B in one process beside a busy loop; equal or better when quiet).
  ; Every ESTIMATE_EVERY-th run of a grid that stays inline takes the pool when it is big
  ; and is measured when it is small (to notice that it grew); every 8 * ESTIMATE_EVERY-th
  ; run of a grid on the pool runs inline, to refresh its inline estimate.
  ; With the workers asleep (the caller came back after their spin: a call every few
  ; hundred microseconds, between other work) a grid on the pool also waits for a worker
  ; to wake, which its pool estimate (kept while they spin) does not show: model-mlp's
  ; first grid took 95 us on the pool against 71 inline, interleaved with other work, and
  ; 55 against 69 back to back. Pool runs that found them asleep keep an estimate of their
  ; own (%estc); while they sleep, a grid goes to the pool only where that one (once
  ; measured) is under its inline time, and tries the pool every ESTIMATE_EVERY-th run.
$EST_LOAD  %multi = icmp ugt i64 %w3, 1
  %haspool = icmp ne ptr %pool, null
  %ask = and i1 %multi, %haspool
  br i1 %ask, label %asksleep, label %decide
asksleep:
  %psl = getelementptr i8, ptr %pool, i64 $POOL_SLEEPERS
  %sleeping = load atomic i32, ptr %psl monotonic, align 4
  %sl0 = icmp ne i32 %sleeping, 0
  br label %decide
decide:
  %asleep = phi i1 [ false, %launch ], [ %sl0, %asksleep ]
  %cunknown = icmp eq i64 %estc, -1
  %cfaster = icmp ult i64 %estc, %est
  %cok = or i1 %cunknown, %cfaster
  %stateok = select i1 %asleep, i1 %cok, i1 true
  %pestx = select i1 %asleep, ptr %pestc, ptr %pestp
  %runs1 = add i64 %runs, 1
  store i64 %runs1, ptr %pruns
  %known = icmp ne i64 %est, -1
  %big0 = icmp uge i64 %est, $INLINE_NS
  %warm = icmp ugt i64 %runs, 1  ; the first run's time (cold caches, fresh pages) is replaced
  %big1 = and i1 %known, %big0
  %big = and i1 %big1, %warm
  %psmall = icmp ult i64 %estp, $HALF_INLINE_NS  ; (-1, not measured yet, is not small)
  %pbig = xor i1 %psmall, true
  %prefer0 = and i1 %big, %pbig
  %prefer = and i1 %prefer0, %stateok
  %mask = select i1 %prefer, i64 $ESTIMATE_MASK_FAR, i64 $ESTIMATE_MASK
  %phase = and i64 %runs, %mask
  %due = icmp eq i64 %phase, 0
  %explore = and i1 %big, %due
  %choice = xor i1 %prefer, %explore
  %par = and i1 %multi, %choice
  %wuse = select i1 %par, i64 %w3, i64 1
  %cold = xor i1 %warm, true
  %s0 = or i1 %cold, %big
  %sample = or i1 %s0, %due
  %msample = and i1 %multi, %sample
  %w8 = trunc i64 %wuse to i8
  %dsc = getelementptr i8, ptr %ds, i64 22
  store i8 %w8, ptr %dsc
$LOCAL_LOAD  %local32 = trunc i64 %local to i32
  %measure = or i1 %timed, %msample
  br label %lhead
lhead:
  %k = phi i64 [ 0, %decide ], [ %k1, %lbody ]
  %lmore = icmp ult i64 %k, %wuse
  br i1 %lmore, label %lbody, label %run
lbody:
  %k32 = mul i64 %k, 32
  %k24 = add i64 %k32, 24
  %pls = getelementptr i8, ptr %wgs, i64 %k24
  store i32 %local32, ptr %pls
  %k1 = add i64 %k, 1
  br label %lhead
run:
  br i1 %measure, label %t0, label %call
t0:
  %start = call i64 @pyree_now()
  br label %call
call:
  %tstart = phi i64 [ 0, %run ], [ %start, %t0 ]
  %rc = call i32 @pyree_run_grid(ptr %pool, ptr %fn, ptr %env, ptr %ds, ptr %wgs,
                                 i64 %cx, i64 %cy, i64 %total, i64 %wuse)
  br i1 %measure, label %t1, label %after
t1:
  %stop = call i64 @pyree_now()
  %dt = sub i64 %stop, %tstart
  %pmode = select i1 %par, ptr %pestx, ptr %pest
  %old = load i64, ptr %pmode
  %unset = icmp eq i64 %old, -1
  %second = icmp eq i64 %runs, 1
  %first = or i1 %unset, %second
  %twice = shl i64 %old, 1  ; a sample counts at most twice the estimate (a preempted run)
  %spike = icmp ugt i64 %dt, %twice
  %dtc = select i1 %spike, i64 %twice, i64 %dt
  %sum = add i64 %old, %dtc
  %avg = lshr i64 %sum, 1
  %newest = select i1 %first, i64 %dt, i64 %avg
  store i64 %newest, ptr %pmode
  br i1 %timed, label %tstat, label %after
tstat:
  %i2 = mul i64 %i, 2
  %sp = getelementptr i64, ptr %stats, i64 %i2
  %sv = load i64, ptr %sp
  %sv1 = add i64 %sv, %dt
  store i64 %sv1, ptr %sp
  %sc = getelementptr i64, ptr %sp, i64 1
  %cv = load i64, ptr %sc
  %cv1 = add i64 %cv, 1
  store i64 %cv1, ptr %sc
  br label %after
after:
  %failed = icmp ne i32 %rc, 0
  br i1 %failed, label %kernelerr, label %next
kernelerr:
  %rc64 = sext i32 %rc to i64
  store i64 %rc64, ptr %out
  %k0 = shl i64 %i, 8
  %kerr = or i64 %k0, 1
  ret i64 %kerr

; -- transfers ---------------------------------------------------------------------------
fill:
  %fref = getelementptr i64, ptr %p, i64 $F_REF
  %fres = call { i64, i64 } @pyree_resolve(ptr %fref, ptr %table)
  %fa = extractvalue { i64, i64 } %fres, 0
  %fl = extractvalue { i64, i64 } %fres, 1
  %fptr = inttoptr i64 %fa to ptr
$FILL_LOADS  switch i64 %plen, label %fill1 [ i64 2, label %fill2
                                   i64 4, label %fill4 ]
fill1:
  %pat8 = trunc i64 %pat to i8
  call void @llvm.memset.p0.i64(ptr %fptr, i8 %pat8, i64 %fl, i1 false)
  br label %next
fill2:
  %n2 = udiv i64 %fl, 2
  %pat16 = trunc i64 %pat to i16
  br label %f2loop
f2loop:
  %j2 = phi i64 [ 0, %fill2 ], [ %j2n, %f2body ]
  %f2more = icmp ult i64 %j2, %n2
  br i1 %f2more, label %f2body, label %next
f2body:
  %q2 = getelementptr i16, ptr %fptr, i64 %j2
  store i16 %pat16, ptr %q2, align 1
  %j2n = add i64 %j2, 1
  br label %f2loop
fill4:
  %n4 = udiv i64 %fl, 4
  %pat32 = trunc i64 %pat to i32
  br label %f4loop
f4loop:
  %j4 = phi i64 [ 0, %fill4 ], [ %j4n, %f4body ]
  %f4more = icmp ult i64 %j4, %n4
  br i1 %f4more, label %f4body, label %next
f4body:
  %q4 = getelementptr i32, ptr %fptr, i64 %j4
  store i32 %pat32, ptr %q4, align 1
  %j4n = add i64 %j4, 1
  br label %f4loop
copy:
  %sref = getelementptr i64, ptr %p, i64 $C_SRC
  %sres = call { i64, i64 } @pyree_resolve(ptr %sref, ptr %table)
  %sa = extractvalue { i64, i64 } %sres, 0
  %sl = extractvalue { i64, i64 } %sres, 1
  %dref = getelementptr i64, ptr %p, i64 $C_DST
  %dres = call { i64, i64 } @pyree_resolve(ptr %dref, ptr %table)
  %da = extractvalue { i64, i64 } %dres, 0
  %sptr = inttoptr i64 %sa to ptr
  %dptr = inttoptr i64 %da to ptr
  call void @llvm.memmove.p0.p0.i64(ptr %dptr, ptr %sptr, i64 %sl, i1 false)
  br label %next
update:
$UPDATE_LOADS  %uref = getelementptr i64, ptr %p, i64 $U_REF
  %ures = call { i64, i64 } @pyree_resolve(ptr %uref, ptr %table)
  %ua = extractvalue { i64, i64 } %ures, 0
  %ul = extractvalue { i64, i64 } %ures, 1
  %uptr = inttoptr i64 %ua to ptr
  call void @llvm.memcpy.p0.p0.i64(ptr %uptr, ptr %data, i64 %ul, i1 false)
  br label %next
}
"""

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

_STEPS_IR = """
; Returns 0, or the plan runner's result for the step that failed (the last one run).
define i64 @pyree_run_plan_steps(ptr %s) {
entry:
$LOADS  %bytes = shl i64 %words, 3
  br label %head
head:
  %k = phi i64 [ 0, %entry ], [ %k1, %ok ]
  %t = phi i64 [ %turn, %entry ], [ %tn, %ok ]
  %img0 = phi ptr [ %first0, %entry ], [ %later0, %ok ]
  %more = icmp ult i64 %k, %count
  br i1 %more, label %step, label %done
step:
  %odd = icmp ne i64 %t, 0
  %zp = select i1 %odd, ptr %zeros1, ptr %zeros0
  %zn = select i1 %odd, i64 %nzeros1, i64 %nzeros0
  %img = select i1 %odd, ptr %image1, ptr %img0
  br label %zhead
zhead:
  %j = phi i64 [ 0, %step ], [ %j1, %zbody ]
  %zmore = icmp ult i64 %j, %zn
  br i1 %zmore, label %zbody, label %run
zbody:
  %jw = shl i64 %j, 1
  %pa = getelementptr i64, ptr %zp, i64 %jw
  %a = load i64, ptr %pa
  %psz = getelementptr i64, ptr %pa, i64 1
  %sz = load i64, ptr %psz
  %aptr = inttoptr i64 %a to ptr
  call void @llvm.memset.p0.i64(ptr %aptr, i8 0, i64 %sz, i1 false)
  %j1 = add i64 %j, 1
  br label %zhead
run:
  call void @llvm.memcpy.p0.p0.i64(ptr %table, ptr %img, i64 %bytes, i1 false)
  %r = call i64 @pyree_run_plan_args(ptr %args)
  %k1 = add i64 %k, 1
  %tn = xor i64 %t, 1
  %bad = icmp ne i64 %r, 0
  br i1 %bad, label %fail, label %ok
ok:
  br label %head
fail:
  store i64 %k1, ptr %pran
  ret i64 %r
done:
  store i64 %k, ptr %pran
  ret i64 0
}
"""

# A plan's binding-table checks (hal/plan.py Plan.run): per slot a command uses, the
# entry it is given is checked against what the plan's commands need of it, and its
# (address, length) written into the plan's table. A failing check declines: the plan
# runs nothing and the caller runs the command buffer in Python, which raises the error
# IREE raises (iree/hal/command_buffer_validation.c, per command; this checks per slot
# the furthest byte any command needs, so a table passes here only where every command
# would pass there).
# Check records, per used slot, i64 words: table word (2 * slot), the end its commands
# need (entry length >= end), 1 where a command writes it, offset alignment.
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

_CHECK_IR = """
; Returns 0 with every checked slot's (address, length) written into %table, or a
; DECLINE_* code at the first failing check (%table partly written: every run writes
; every checked slot before the runner reads one).
define i64 @pyree_check_table(ptr %checks, i64 %n, ptr %entries, ptr %table) {
entry:
  br label %head
head:
  %i = phi i64 [ 0, %entry ], [ %i1, %write ]
  %more = icmp ult i64 %i, %n
  br i1 %more, label %body, label %ok
ok:
  ret i64 0
body:
  %ci = mul i64 %i, $CHECK_WORDS
  %c = getelementptr i64, ptr %checks, i64 %ci
  %ei = mul i64 %i, $ENTRY_WORDS
  %e = getelementptr i64, ptr %entries, i64 %ei
$LOADS  ; a negative offset is out (signed compare); with 0 <= offset, the rest of the
  ; buffer (length - offset) cannot wrap, and an offset past its end leaves a negative
  ; rest, which every length below fails
  %offneg = icmp slt i64 %off, 0
  br i1 %offneg, label %range, label %length
length:
  ; WHOLE_BUFFER resolves to the rest of the buffer; the length then covers the end the
  ; commands need (end >= 0, so any other negative length fails) and stays in the rest
  %rest = sub i64 %blen, %off
  %whole = icmp eq i64 %len, -1
  %l = select i1 %whole, i64 %rest, i64 %len
  %short = icmp slt i64 %l, %end
  %over = icmp sgt i64 %l, %rest
  %lbad = or i1 %short, %over
  br i1 %lbad, label %range, label %access
access:
  %w = icmp ne i64 %writable, 0
  %r = icmp ne i64 %ro, 0
  %wr = and i1 %w, %r
  br i1 %wr, label %readonly, label %aligned
aligned:
  %m = urem i64 %off, %align
  %mis = icmp ne i64 %m, 0
  br i1 %mis, label %misaligned, label %write
write:
  %addr = add i64 %base, %off
  %pt = getelementptr i64, ptr %table, i64 %word
  store i64 %addr, ptr %pt
  %pt1 = getelementptr i64, ptr %pt, i64 1
  store i64 %l, ptr %pt1
  %i1 = add i64 %i, 1
  br label %head
range:
  ret i64 $DECLINE_RANGE
readonly:
  ret i64 $DECLINE_READONLY
misaligned:
  ret i64 $DECLINE_ALIGN
}

; Plan.run's one foreign call: the checks, then (all passing) the plan. %a is the plan's
; argument block (PLAN_PARAMS) followed by CHECK_PARAMS. Returns a DECLINE_* code, or
; the runner's result.
define i64 @pyree_check_run_plan(ptr %a) {
entry:
$ARGS  %pt = getelementptr i64, ptr %a, i64 $TABLE_ARG
  %table = load ptr, ptr %pt
  %d = call i64 @pyree_check_table(ptr %checks, i64 %nchecks, ptr %entries, ptr %table)
  %declined = icmp ne i64 %d, 0
  br i1 %declined, label %decline, label %run
decline:
  ret i64 %d
run:
  %r = call i64 @pyree_run_plan_args(ptr %a)
  ret i64 %r
}
"""

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


def _fields(base: str, unit: str, fields, store: bool = False) -> str:
    """IR that loads (or stores) named values at word offsets from `base`: one
    getelementptr and one access per (name, type, offset in `unit`s)."""
    lines = []
    for name, kind, offset in fields:
        lines.append(f"  %p{name} = getelementptr {unit}, ptr %{base}, i64 {offset}")
        lines.append(
            f"  store {kind} %{name}, ptr %p{name}"
            if store
            else f"  %{name} = load {kind}, ptr %p{name}"
        )
    return "\n".join(lines) + "\n"


def _args_wrapper(name: str, result: str, params) -> str:
    """`{name}_args(ptr %a)`: calls `name` with its parameters read from the block %a."""
    loads = _fields("a", "i64", [(p, kind, i) for i, (p, kind) in enumerate(params)])
    call = ", ".join(f"{kind} %{p}" for p, kind in params)
    return (
        f"define {result} @{name}_args(ptr %a) {{\nentry:\n{loads}"
        f"  %r = call {result} @{name}({call})\n  ret {result} %r\n}}\n"
    )


# The pool fields a job is published in (run_grid stores them, workers load them).
_JOB_FIELDS = (
    ("fn", "ptr", POOL_FN), ("env", "ptr", POOL_ENV), ("ds", "ptr", POOL_DS),
    ("wgs", "ptr", POOL_WGS), ("cx", "i64", POOL_CX), ("cy", "i64", POOL_CY),
    ("total", "i64", POOL_TOTAL), ("unit", "i64", POOL_UNIT), ("maxp", "i64", POOL_MAXP),
)


def _plan_fields() -> dict[str, str]:
    """The plan runner's record-field accesses (word offsets of the record layout)."""
    record = lambda *fields: _fields("p", "i64", fields)  # noqa: E731
    return dict(
        DISPATCH_LOADS=record(
            ("fn", "ptr", D_FN), ("env", "ptr", D_ENV), ("ds", "ptr", D_DS),
            ("ptrs", "ptr", D_PTRS), ("lens", "ptr", D_LENS), ("nb", "i64", D_NB),
        ),
        FLAGS_LOAD=record(("flags", "i64", D_FLAGS)),
        COUNT_LOADS=record(("dcx", "i64", D_CX), ("dcy", "i64", D_CY), ("dcz", "i64", D_CZ)),
        EST_LOAD=record(("est", "i64", D_EST), ("estp", "i64", D_EST_POOL),
                        ("estc", "i64", D_EST_COLD), ("runs", "i64", D_RUNS)),
        LOCAL_LOAD=record(("local", "i64", D_LOCAL)),
        FILL_LOADS=record(("pat", "i64", F_PATTERN), ("plen", "i64", F_PATTERN_LENGTH)),
        UPDATE_LOADS=record(("data", "ptr", U_DATA)),
        D_REFS=str(D_REFS), D_IREF=str(D_IREF), F_REF=str(F_REF), C_SRC=str(C_SRC),
        C_DST=str(C_DST), U_REF=str(U_REF),
    )


def _check_ir() -> str:
    check = lambda *fields: _fields("c", "i64", fields)  # noqa: E731
    entry = lambda *fields: _fields("e", "i64", fields)  # noqa: E731
    first = len(PLAN_PARAMS)
    return string.Template(_CHECK_IR).substitute(
        {name: str(value) for name, value in globals().items() if name.startswith("DECLINE_")},
        CHECK_WORDS=str(CHECK_WORDS),
        ENTRY_WORDS=str(ENTRY_WORDS),
        LOADS=check(
            ("word", "i64", CHECK_WORD), ("end", "i64", CHECK_END),
            ("writable", "i64", CHECK_WRITABLE), ("align", "i64", CHECK_ALIGN),
        ) + entry(
            ("base", "i64", ENTRY_ADDRESS), ("blen", "i64", ENTRY_BUFFER_LENGTH),
            ("off", "i64", ENTRY_OFFSET), ("len", "i64", ENTRY_LENGTH),
            ("ro", "i64", ENTRY_READONLY),
        ),
        ARGS=_fields("a", "i64", [(p, k, first + i) for i, (p, k) in enumerate(CHECK_PARAMS)]),
        TABLE_ARG=str(PLAN_ARGS.index("table")),
    )


_RUN_TILES = ctypes.CFUNCTYPE(
    ctypes.c_int32,
    ctypes.c_void_p,
    ctypes.c_void_p,
    ctypes.c_void_p,
    ctypes.c_void_p,
    ctypes.c_int64,
    ctypes.c_int64,
    ctypes.c_int64,
    ctypes.c_int64,
)


def _ir() -> str:
    machine = _machine()
    futex = _SYS_FUTEX.get(machine)
    if futex is None or not hasattr(os, "sched_getaffinity"):
        raise OSError(f"no futex-based worker pool on {machine}")
    pool_offsets = {name: str(value) for name, value in globals().items() if name.startswith("POOL_")}
    pool = string.Template(_POOL_IR).substitute(
        pool_offsets,
        SYS_FUTEX=str(futex),
        WG_STATE_SIZE=str(WG_STATE_SIZE),
        JOB_LOADS=_fields("pool", "i8", _JOB_FIELDS),
        JOB_STORES=_fields("pool", "i8", _JOB_FIELDS, store=True),
        RANGE_UNITS=str(RANGE_UNITS),
        PLACE_EVERY_NS=str(PLACE_EVERY_NS),
        AFFINITY_MASK_BYTES=str(AFFINITY_MASK_BYTES),
        MASK_WORDS=str(AFFINITY_MASK_BYTES // 8),
        RANGE_UNITS_MINUS_1=str(RANGE_UNITS - 1),
        RANGE_UNITS_LOG2=str(RANGE_UNITS.bit_length() - 1),
    )
    plan = string.Template(_PLAN_IR).substitute(
        _plan_fields(),
        INLINE_NS=str(inline_ns()),
        HALF_INLINE_NS=str(inline_ns() // 2),
        ESTIMATE_MASK=str(ESTIMATE_EVERY - 1),
        ESTIMATE_MASK_FAR=str(8 * ESTIMATE_EVERY - 1),
        POOL_SLEEPERS=str(POOL_SLEEPERS),
    )
    return "".join(
        (
            _ARCH_IR.get(machine, _ARCH_IR_DEFAULT),
            _TILES_IR,
            pool,
            plan,
            _args_wrapper("pyree_run_plan", "i64", PLAN_PARAMS),
            _args_wrapper("pyree_run_grid", "i32", GRID_PARAMS),
            _check_ir(),
            string.Template(_STEPS_IR).substitute(
                LOADS=_fields("s", "i64", [(n, k, i) for i, (n, k) in enumerate(STEPS_FIELDS)])
            ),
        )
    )


class NativeRuntime:
    """The compiled functions, once per process (see module docstring)."""

    def __init__(self) -> None:
        import llvmlite.binding as llvm

        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        libc = ctypes.CDLL(None)
        for name in ("syscall", "clock_gettime", "sched_getcpu", "pthread_setaffinity_np"):
            llvm.add_symbol(name, ctypes.cast(getattr(libc, name), ctypes.c_void_p).value)
        target_machine = llvm.Target.from_default_triple().create_target_machine(opt=2)
        ir = _ir()
        module = llvm.parse_assembly(ir)
        self._engine = llvm.create_mcjit_compiler(module, target_machine)
        # MCJIT takes the object code from the disk cache where an earlier process left it
        # for this same IR, llvmlite and target (about 2 ms instead of 60 ms of codegen)
        path = _object_path(ir, target_machine)
        cached = disk_cache.read_checked(path, _OBJECT_LIMIT) if path is not None else None
        self.from_cache = cached is not None
        if not self.from_cache:
            module.verify()
        self._engine.set_object_cache(
            None if self.from_cache else (lambda _module, data: _store_object(path, data)),
            lambda _module: cached,
        )
        self._engine.finalize_object()
        self._target_machine = target_machine
        address = self._engine.get_function_address
        self.run_tiles = _RUN_TILES(address("pyree_run_tiles"))
        self.run_grid_args = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)(
            address("pyree_run_grid_args")
        )
        self.run_plan_args = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p)(
            address("pyree_run_plan_args")
        )
        self.run_plan_steps = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p)(
            address("pyree_run_plan_steps")
        )
        self.check_run_plan = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p)(
            address("pyree_check_run_plan")
        )
        self.check_table = ctypes.CFUNCTYPE(
            ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p
        )(address("pyree_check_table"))
        self.import_thunk = address("pyree_import_thunk")
        self.worker_address = address("pyree_worker")


# The compiled runtime is ~10 KiB; a cache file much larger than that is not ours.
_OBJECT_LIMIT = 1 << 22


def _object_path(ir: str, target_machine):
    """Where the object code for `ir` on this target is cached (disk_cache.py), named by a
    hash of everything it is made from; None where the key cannot be formed."""
    import llvmlite
    import llvmlite.binding as llvm

    try:
        key = disk_cache.key(
            ir, llvmlite.__version__, repr(llvm.llvm_version_info), target_machine.triple,
            str(target_machine.target_data), llvm.get_host_cpu_name(),
        )
    except Exception:  # noqa: BLE001 - (an llvmlite without one of these: no caching)
        return None
    return disk_cache.root() / "native" / f"runtime-{key}.o"


def _store_object(path, data: bytes) -> None:
    if path is not None and 0 < len(data) <= _OBJECT_LIMIT:
        disk_cache.write_checked(path, bytes(data))


_runtime: NativeRuntime | None = None
_runtime_error: BaseException | None = None
_runtime_lock = threading.Lock()


def native_runtime() -> NativeRuntime | None:
    """The process-wide compiled code, or None if llvmlite cannot provide it."""
    global _runtime, _runtime_error
    if _runtime is None and _runtime_error is None:
        with _runtime_lock:
            if _runtime is None and _runtime_error is None:
                try:
                    _runtime = NativeRuntime()
                except Exception as error:  # llvmlite missing or broken: ctypes fallbacks
                    _runtime_error = error
    return _runtime


def native_error() -> BaseException | None:
    return _runtime_error


# --- the process-wide pool ----------------------------------------------------------------

WORKERS_ENV = "PYREE_WORKERS"
SPIN_ENV = "PYREE_SPIN"
INLINE_ENV = "PYREE_INLINE_US"
# Grids estimated below this run on the caller alone. Waking a worker and sharing the
# grid costs a few microseconds and the worker's core comes to the data cold: a 30 us
# grid (model-mlp's first matmul) ran faster on the pool but its call slower (58 vs 53
# us, interleaved); at 40 us model-mlp's `local` equals its local-sync, and the larger
# grids of the other benchmark programs (mlp, gpt2, matmul, resnet) stay on the pool.
_DEFAULT_INLINE_US = 40


# A grid estimated to take a second is never worth keeping off the pool; the bound also
# keeps the nanoseconds an i64 constant of the compiled code.
_MAX_INLINE_US = 1_000_000


def inline_ns() -> int:
    """$PYREE_INLINE_US as nanoseconds: plan grids estimated to take less on one thread
    run inline. Read once, when the native code is compiled."""
    return int(float_knob(INLINE_ENV, _DEFAULT_INLINE_US, 0, _MAX_INLINE_US) * 1000)


_DEFAULT_SPIN = 2000  # pause iterations (a few microseconds) before a worker sleeps
# A pause is ~10-150 cycles: a million of them is 3-50 ms, far past the few microseconds
# a futex wake costs, so more only burns an idle core (the count is an i64 the workers
# compare unsigned: unbounded, it could make them spin for ever).
_MAX_SPIN = 1_000_000
PIN_ENV = "PYREE_PIN"
THREAD_NAME = b"pyree-worker"


def _placement_cpus() -> list[int]:
    """The CPUs pool workers are pinned to (this process's, sorted), or [] when pinning
    is off: $PYREE_PIN=0, no affinity API, or CPUs beyond what the pool block lists."""
    if not flag_knob(PIN_ENV, True) or not hasattr(os, "sched_getaffinity"):
        return []
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) > MAX_PARTICIPANTS or cpus[-1] >= 8 * AFFINITY_MASK_BYTES:
        return []
    return cpus


def default_worker_count() -> int:
    """$PYREE_WORKERS if set (1 to the most participants a pool has), else the cores
    this process may run on."""
    return int_knob(WORKERS_ENV, _usable_cores(), 1, WorkerPool._MAX_THREADS + 1)


def _usable_cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


class WorkerPool:
    """N-1 native threads serving one grid at a time (the caller is the N-th).

    Callers pass `address` to the native grid and plan runners, which take the pool for
    one grid at a time (a caller that finds it taken runs its grid inline). Threads are
    added on demand by `ensure(workers)` (a thread added while a grid runs joins only later
    grids) and live until the process exits; after fork() the child's copy of the block
    says no threads (grids run inline) and the child grows a pool of its own.
    """

    _MAX_THREADS = 254

    def __init__(self, runtime: NativeRuntime) -> None:
        self._runtime = runtime
        raw = ctypes.create_string_buffer(POOL_SIZE + 64)
        self._raw = raw
        self.address = (ctypes.addressof(raw) + 63) & ~63
        spin = int_knob(SPIN_ENV, _DEFAULT_SPIN, 0, _MAX_SPIN)
        ctypes.c_int64.from_address(self.address + POOL_SPIN).value = spin

        self._threads = ctypes.c_int64.from_address(self.address + POOL_THREADS)
        self._grow = threading.Lock()
        self._handles: list = []
        self._cpus = _placement_cpus()
        words = (ctypes.c_int64 * MAX_PARTICIPANTS).from_address
        self._worker_cpu = words(self.address + POOL_WORKER_CPU)
        self._worker_thread = words(self.address + POOL_WORKER_THREAD)
        self._pinned = ctypes.c_int64.from_address(self.address + POOL_PINNED)
        if self._cpus:
            words(self.address + POOL_CPUS)[: len(self._cpus)] = self._cpus
            every = (ctypes.c_uint64 * (AFFINITY_MASK_BYTES // 8)).from_address(
                self.address + POOL_ALL_CPUS
            )
            for cpu in self._cpus:
                every[cpu // 64] |= 1 << (cpu % 64)
            ctypes.c_int64.from_address(self.address + POOL_NCPUS).value = len(self._cpus)

    @property
    def threads(self) -> int:
        return self._threads.value

    def ensure(self, workers: int) -> None:
        """Starts threads until `workers` participants (caller included) can run."""
        wanted = min(max(0, workers - 1), self._MAX_THREADS)
        if self._threads.value >= wanted:
            return
        with self._grow:
            libc = ctypes.CDLL(None, use_errno=True)
            create = libc.pthread_create
            create.argtypes = [
                ctypes.c_void_p,
                ctypes.c_void_p,
                ctypes.c_void_p,
                ctypes.c_void_p,
            ]
            create.restype = ctypes.c_int
            while self._threads.value < wanted:
                handle = ctypes.c_uint64()
                rc = create(ctypes.byref(handle), None, self._runtime.worker_address, self.address)
                if rc != 0:
                    break  # run with the threads we have
                libc.pthread_detach(handle)
                if hasattr(libc, "pthread_setname_np"):  # (seen in top -H, /proc)
                    libc.pthread_setname_np(handle, THREAD_NAME)
                self._handles.append(handle)
                self._pin(libc, handle)
                # Only the Python side changes the count (under _grow, outside any grid).
                self._threads.value += 1

    def _pin(self, libc, handle) -> None:
        """Pins a new worker to a CPU that has no worker and is not the caller's, while
        every worker so far is pinned (native code keeps them off the caller's CPU)."""
        k = self._pinned.value
        if not self._cpus or k != len(self._handles) - 1:
            return
        taken = set(self._worker_cpu[:k]) | {libc.sched_getcpu()}
        free = [cpu for cpu in self._cpus if cpu not in taken]
        if not free:
            return
        mask = (ctypes.c_uint64 * (AFFINITY_MASK_BYTES // 8))()
        mask[free[0] // 64] = 1 << (free[0] % 64)
        setaffinity = libc.pthread_setaffinity_np
        setaffinity.argtypes = [ctypes.c_uint64, ctypes.c_size_t, ctypes.c_void_p]
        if setaffinity(handle.value, AFFINITY_MASK_BYTES, mask) != 0:
            return
        self._worker_cpu[k] = free[0]
        self._worker_thread[k] = handle.value
        self._pinned.value = k + 1  # (after the entry: native code reads entries below it)


_pool: WorkerPool | None = None
# Every pool by its device ordinal (`LocalDevice.pool_ordinal`): [0] is `_pool`, the
# pool of a context's first device (and of any device made on its own); the k-th device
# of a multi-device context takes pool k, as each --device of iree-run-module gets a task
# executor of its own. Pools live until the process exits (their threads never end), so
# they are kept by ordinal, not by device: contexts made one after another reuse them.
_pools: list = [None]


def worker_pool(workers: int, ordinal: int = 0) -> WorkerPool | None:
    """The process's pool for devices of `ordinal` (0: the first device of a context), with
    room for `workers` participants (None: no native code, or `workers` <= 1)."""
    global _pool
    if workers <= 1:
        return None
    runtime = native_runtime()
    if runtime is None:
        return None
    if ordinal:
        return _other_pool(runtime, workers, ordinal)
    if _pool is None:
        with _runtime_lock:
            if _pool is None:
                pool = WorkerPool(runtime)
                # Pool threads run (spin in) the JIT code and read the pool block until
                # the process ends: neither may be freed at interpreter shutdown, so the
                # pool and the runtime it holds are never released.
                ctypes.pythonapi.Py_IncRef(ctypes.py_object(pool))
                _pool = _pools[0] = pool
    pool = _pool
    if pool.threads < min(workers - 1, WorkerPool._MAX_THREADS):
        pool.ensure(workers)
    return pool


def _other_pool(runtime: NativeRuntime, workers: int, ordinal: int) -> WorkerPool:
    """worker_pool for a device after a context's first (made at its first pooled grid)."""
    if ordinal >= len(_pools) or _pools[ordinal] is None:
        with _runtime_lock:
            while len(_pools) <= ordinal:
                _pools.append(None)
            if _pools[ordinal] is None:
                pool = WorkerPool(runtime)
                ctypes.pythonapi.Py_IncRef(ctypes.py_object(pool))  # (as worker_pool's)
                _pools[ordinal] = pool
    pool = _pools[ordinal]
    if pool.threads < min(workers - 1, WorkerPool._MAX_THREADS):
        pool.ensure(workers)
    return pool


def current_pool(ordinal: int) -> WorkerPool | None:
    """The pool of device `ordinal` now (None before its first pooled grid, or after a
    fork() until the child's first): what plans compare the pool they hold against."""
    return _pools[ordinal] if ordinal < len(_pools) else None


def _forget_pool_in_child() -> None:
    global _pool
    for k, pool in enumerate(_pools):
        if pool is not None:
            # The threads did not survive fork(): the child's copy of the block says so,
            # for runners that kept its address, and a new pool starts its own threads.
            ctypes.c_int64.from_address(pool.address + POOL_THREADS).value = 0
            ctypes.c_int32.from_address(pool.address + POOL_SLEEPERS).value = 0
            ctypes.c_int32.from_address(pool.address + POOL_BUSY).value = 0
            ctypes.c_int64.from_address(pool.address + POOL_PINNED).value = 0
            _pools[k] = None
    _pool = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_in_child)

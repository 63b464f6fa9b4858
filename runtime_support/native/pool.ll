; The worker pool (pool.py has the design: tickets, the work split, placement): a
; worker thread's body, a job's run by one participant, a whole grid on the pool, and
; the placement of pinned workers. The pool block's fields are layout.py's POOL_FIELDS
; (@POOL_<FIELD>@: byte offsets). Ticket: generation << 32 | CLOSED (2147483648) |
; workers inside.

; from other units
declare i64 @pyree_fpu_push()
declare void @pyree_fpu_pop(i64)
declare void @pyree_pause()
declare void @pyree_futex_wait(ptr, i32)
declare void @pyree_futex_wake(ptr, i32)
declare i64 @pyree_now()
declare i32 @pyree_run_tiles(ptr, ptr, ptr, ptr, i64, i64, i64, i64)
declare i32 @pyree_walk_tiles(ptr, ptr, ptr, ptr, i64, i64, i64, i64)
declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)

declare i32 @sched_getcpu()
declare i32 @pthread_setaffinity_np(i64, i64, ptr)

; Runs units of the pool's current job as participant %idx until none are left: its
; own range from the front, one unit at a time, then the back half of another
; participant's remaining range, and so on (see "Work split" in the module docstring).
define internal void @pyree_run_job(ptr %pool, i64 %idx) {
entry:
  %pfn = getelementptr i8, ptr %pool, i64 @POOL_FN@
  %fn = load ptr, ptr %pfn
  %penv = getelementptr i8, ptr %pool, i64 @POOL_ENV@
  %env = load ptr, ptr %penv
  %pds = getelementptr i8, ptr %pool, i64 @POOL_DS@
  %ds = load ptr, ptr %pds
  %pwgs = getelementptr i8, ptr %pool, i64 @POOL_WGS@
  %wgs = load ptr, ptr %pwgs
  %pcx = getelementptr i8, ptr %pool, i64 @POOL_CX@
  %cx = load i64, ptr %pcx
  %pcy = getelementptr i8, ptr %pool, i64 @POOL_CY@
  %cy = load i64, ptr %pcy
  %ptotal = getelementptr i8, ptr %pool, i64 @POOL_TOTAL@
  %total = load i64, ptr %ptotal
  %punit = getelementptr i8, ptr %pool, i64 @POOL_UNIT@
  %unit = load i64, ptr %punit
  %pmaxp = getelementptr i8, ptr %pool, i64 @POOL_MAXP@
  %maxp = load i64, ptr %pmaxp
  %prc = getelementptr i8, ptr %pool, i64 @POOL_RC@
  %ranges = getelementptr i8, ptr %pool, i64 @POOL_RANGES@
  %wgoff = mul i64 %idx, @WG_STATE_SIZE@
  %wg = getelementptr i8, ptr %wgs, i64 %wgoff
  %myoff = mul i64 %idx, @POOL_RANGE_STRIDE@
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
  %voff = mul i64 %v, @POOL_RANGE_STRIDE@
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
  %pspin = getelementptr i8, ptr %pool, i64 @POOL_SPIN@
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
  %psleep = getelementptr i8, ptr %pool, i64 @POOL_SLEEPERS@
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
  %pticket = getelementptr i8, ptr %pool, i64 @POOL_TICKET@
  %pmaxp = getelementptr i8, ptr %pool, i64 @POOL_MAXP@
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
  %pjoins = getelementptr i8, ptr %pool, i64 @POOL_JOINS@
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
  %pw = getelementptr i8, ptr %pool, i64 @POOL_WORKER_CPU@
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
  %one = alloca [@MASK_WORDS@ x i64], align 8
  %all = getelementptr i8, ptr %pool, i64 @POOL_ALL_CPUS@
  %pwc = getelementptr i8, ptr %pool, i64 @POOL_WORKER_CPU@
  %pthreads = getelementptr i8, ptr %pool, i64 @POOL_WORKER_THREAD@
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %body ]
  %more = icmp ult i64 %i, %n
  br i1 %more, label %body, label %done
body:
  %pc = getelementptr i64, ptr %pwc, i64 %i
  %cpu = load i64, ptr %pc
  call void @llvm.memset.p0.i64(ptr %one, i8 0, i64 @AFFINITY_MASK_BYTES@, i1 false)
  %word = lshr i64 %cpu, 6
  %bit = and i64 %cpu, 63
  %b = shl i64 1, %bit
  %pword = getelementptr i64, ptr %one, i64 %word
  store i64 %b, ptr %pword
  %mask = select i1 %release, ptr %all, ptr %one
  %pt = getelementptr i64, ptr %pthreads, i64 %i
  %thread = load i64, ptr %pt
  %rc = call i32 @pthread_setaffinity_np(i64 %thread, i64 @AFFINITY_MASK_BYTES@, ptr %mask)
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
  %ppinned = getelementptr i8, ptr %pool, i64 @POOL_PINNED@
  %n = load atomic i64, ptr %ppinned acquire, align 8
  %preleased = getelementptr i8, ptr %pool, i64 @POOL_RELEASED@
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
  %mask = alloca [@MASK_WORDS@ x i64], align 8
  %ppinned = getelementptr i8, ptr %pool, i64 @POOL_PINNED@
  %n = load atomic i64, ptr %ppinned acquire, align 8
  %on = icmp ne i64 %n, 0
  br i1 %on, label %repin, label %done
repin:
  %preleased = getelementptr i8, ptr %pool, i64 @POOL_RELEASED@
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
  %pat = getelementptr i8, ptr %pool, i64 @POOL_PLACED_AT@
  %at = load i64, ptr %pat
  %since = sub i64 %now, %at
  %soon = icmp ult i64 %since, @PLACE_EVERY_NS@
  br i1 %soon, label %done, label %search
search:
  store i64 %now, ptr %pat
  %pncpus = getelementptr i8, ptr %pool, i64 @POOL_NCPUS@
  %ncpus = load i64, ptr %pncpus
  %pcpus = getelementptr i8, ptr %pool, i64 @POOL_CPUS@
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
  call void @llvm.memset.p0.i64(ptr %mask, i8 0, i64 @AFFINITY_MASK_BYTES@, i1 false)
  %word = lshr i64 %a, 6
  %bit = and i64 %a, 63
  %one = shl i64 1, %bit
  %pword = getelementptr i64, ptr %mask, i64 %word
  store i64 %one, ptr %pword
  %pthreads = getelementptr i8, ptr %pool, i64 @POOL_WORKER_THREAD@
  %pt = getelementptr i64, ptr %pthreads, i64 %w
  %thread = load i64, ptr %pt
  %rc = call i32 @pthread_setaffinity_np(i64 %thread, i64 @AFFINITY_MASK_BYTES@, ptr %mask)
  %moved = icmp eq i32 %rc, 0
  br i1 %moved, label %record, label %done
record:
  %pwc = getelementptr i8, ptr %pool, i64 @POOL_WORKER_CPU@
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
  %pthreads = getelementptr i8, ptr %pool, i64 @POOL_THREADS@
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
  %pbusy = getelementptr i8, ptr %pool, i64 @POOL_BUSY@
  %claimed = cmpxchg ptr %pbusy, i32 0, i32 1 acquire monotonic
  %owner = extractvalue { i32, i1 } %claimed, 1
  br i1 %owner, label %publish, label %solo
publish:
  call void @pyree_place(ptr %pool)
  ; Units of one tile unless the grid has more than RANGE_UNITS tiles.
  %ubig = icmp ugt i64 %total, @RANGE_UNITS@
  %u0 = add i64 %total, @RANGE_UNITS_MINUS_1@
  %ulong = lshr i64 %u0, @RANGE_UNITS_LOG2@
  %unit = select i1 %ubig, i64 %ulong, i64 1
  %n0 = add i64 %total, %unit
  %n1 = sub i64 %n0, 1
  %units = udiv i64 %n1, %unit
  %pfn = getelementptr i8, ptr %pool, i64 @POOL_FN@
  store ptr %fn, ptr %pfn
  %penv = getelementptr i8, ptr %pool, i64 @POOL_ENV@
  store ptr %env, ptr %penv
  %pds = getelementptr i8, ptr %pool, i64 @POOL_DS@
  store ptr %ds, ptr %pds
  %pwgs = getelementptr i8, ptr %pool, i64 @POOL_WGS@
  store ptr %wgs, ptr %pwgs
  %pcx = getelementptr i8, ptr %pool, i64 @POOL_CX@
  store i64 %cx, ptr %pcx
  %pcy = getelementptr i8, ptr %pool, i64 @POOL_CY@
  store i64 %cy, ptr %pcy
  %ptotal = getelementptr i8, ptr %pool, i64 @POOL_TOTAL@
  store i64 %total, ptr %ptotal
  %punit = getelementptr i8, ptr %pool, i64 @POOL_UNIT@
  store i64 %unit, ptr %punit
  %pmaxp = getelementptr i8, ptr %pool, i64 @POOL_MAXP@
  store i64 %maxp, ptr %pmaxp
  %prc = getelementptr i8, ptr %pool, i64 @POOL_RC@
  store i32 0, ptr %prc
  %pjoins = getelementptr i8, ptr %pool, i64 @POOL_JOINS@
  store i64 0, ptr %pjoins
  ; Participant p starts with units [p * units / maxp, (p + 1) * units / maxp).
  %ranges = getelementptr i8, ptr %pool, i64 @POOL_RANGES@
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
  %poff = mul i64 %p, @POOL_RANGE_STRIDE@
  %pslot = getelementptr i8, ptr %ranges, i64 %poff
  store atomic i64 %range, ptr %pslot monotonic, align 8
  %pmore = icmp ult i64 %p1, %maxp
  br i1 %pmore, label %split, label %go
go:
  %pticket = getelementptr i8, ptr %pool, i64 @POOL_TICKET@
  %psleep = getelementptr i8, ptr %pool, i64 @POOL_SLEEPERS@
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

define i32 @pyree_run_grid_args(ptr %a) {
entry:
  %ppool = getelementptr i64, ptr %a, i64 @GRID_ARG_POOL@
  %pool = load ptr, ptr %ppool
  %pfn = getelementptr i64, ptr %a, i64 @GRID_ARG_FN@
  %fn = load ptr, ptr %pfn
  %penv = getelementptr i64, ptr %a, i64 @GRID_ARG_ENV@
  %env = load ptr, ptr %penv
  %pds = getelementptr i64, ptr %a, i64 @GRID_ARG_DS@
  %ds = load ptr, ptr %pds
  %pwgs = getelementptr i64, ptr %a, i64 @GRID_ARG_WGS@
  %wgs = load ptr, ptr %pwgs
  %pcx = getelementptr i64, ptr %a, i64 @GRID_ARG_CX@
  %cx = load i64, ptr %pcx
  %pcy = getelementptr i64, ptr %a, i64 @GRID_ARG_CY@
  %cy = load i64, ptr %pcy
  %ptotal = getelementptr i64, ptr %a, i64 @GRID_ARG_TOTAL@
  %total = load i64, ptr %ptotal
  %pworkers = getelementptr i64, ptr %a, i64 @GRID_ARG_WORKERS@
  %workers = load i64, ptr %pworkers
  %r = call i32 @pyree_run_grid(ptr %pool, ptr %fn, ptr %env, ptr %ds, ptr %wgs, i64 %cx, i64 %cy, i64 %total, i64 %workers)
  ret i32 %r
}

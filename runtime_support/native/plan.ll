; The plan runner: a recorded command buffer's records (layout.py: OP_*, D_*, F_*, C_*,
; U_*; exec/plan.py builds them), each grid inline or on the pool by its measured times.

; from other units
declare i32 @pyree_run_grid(ptr, ptr, ptr, ptr, ptr, i64, i64, i64, i64)

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
  switch i64 %op, label %next [ i64 @OP_DISPATCH@, label %dispatch
                                i64 @OP_FILL@, label %fill
                                i64 @OP_COPY@, label %copy
                                i64 @OP_UPDATE@, label %update ]
next:
  %inext = add i64 %i, 1
  %pnext = getelementptr i64, ptr %p, i64 %nw
  br label %head

; -- dispatch ----------------------------------------------------------------------------
dispatch:
  %pfn = getelementptr i64, ptr %p, i64 @D_FN@
  %fn = load ptr, ptr %pfn
  %penv = getelementptr i64, ptr %p, i64 @D_ENV@
  %env = load ptr, ptr %penv
  %pds = getelementptr i64, ptr %p, i64 @D_DS@
  %ds = load ptr, ptr %pds
  %pptrs = getelementptr i64, ptr %p, i64 @D_PTRS@
  %ptrs = load ptr, ptr %pptrs
  %plens = getelementptr i64, ptr %p, i64 @D_LENS@
  %lens = load ptr, ptr %plens
  %pnb = getelementptr i64, ptr %p, i64 @D_NB@
  %nb = load i64, ptr %pnb
  br label %bhead
bhead:
  %b = phi i64 [ 0, %dispatch ], [ %b1, %bbody ]
  %bmore = icmp ult i64 %b, %nb
  br i1 %bmore, label %bbody, label %counts
bbody:
  %b3 = mul i64 %b, 3
  %roff = add i64 %b3, @D_REFS@
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
  %pflags = getelementptr i64, ptr %p, i64 @D_FLAGS@
  %flags = load i64, ptr %pflags
  %indirect = and i64 %flags, @FLAG_INDIRECT@
  %isind = icmp ne i64 %indirect, 0
  br i1 %isind, label %ind, label %direct
direct:
  %pdcx = getelementptr i64, ptr %p, i64 @D_CX@
  %dcx = load i64, ptr %pdcx
  %pdcy = getelementptr i64, ptr %p, i64 @D_CY@
  %dcy = load i64, ptr %pdcy
  %pdcz = getelementptr i64, ptr %p, i64 @D_CZ@
  %dcz = load i64, ptr %pdcz
  br label %grid
ind:
  %iref = getelementptr i64, ptr %p, i64 @D_IREF@
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
  %e1 = or i64 %e0, @ERR_COUNTS@
  ret i64 %e1
iwrite:
  %dsx = getelementptr i8, ptr %ds, i64 @DS_WORKGROUP_COUNT_X@
  store i32 %icx32, ptr %dsx
  %dsy = getelementptr i8, ptr %ds, i64 @DS_WORKGROUP_COUNT_Y@
  store i32 %icy32, ptr %dsy
  %dsz = getelementptr i8, ptr %ds, i64 @DS_WORKGROUP_COUNT_Z@
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
  %seq = and i64 %flags, @FLAG_SEQUENTIAL@
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
  ; least $PYREE_INLINE_US inline (waking workers costs more than smaller grids gain),
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
  %pest = getelementptr i64, ptr %p, i64 @D_EST@
  %est = load i64, ptr %pest
  %pestp = getelementptr i64, ptr %p, i64 @D_EST_POOL@
  %estp = load i64, ptr %pestp
  %pestc = getelementptr i64, ptr %p, i64 @D_EST_COLD@
  %estc = load i64, ptr %pestc
  %pruns = getelementptr i64, ptr %p, i64 @D_RUNS@
  %runs = load i64, ptr %pruns
  %multi = icmp ugt i64 %w3, 1
  %haspool = icmp ne ptr %pool, null
  %ask = and i1 %multi, %haspool
  br i1 %ask, label %asksleep, label %decide
asksleep:
  %psl = getelementptr i8, ptr %pool, i64 @POOL_SLEEPERS@
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
  %big0 = icmp uge i64 %est, @INLINE_NS@
  %warm = icmp ugt i64 %runs, 1  ; the first run's time (cold caches, fresh pages) is replaced
  %big1 = and i1 %known, %big0
  %big = and i1 %big1, %warm
  %psmall = icmp ult i64 %estp, @HALF_INLINE_NS@  ; (-1, not measured yet, is not small)
  %pbig = xor i1 %psmall, true
  %prefer0 = and i1 %big, %pbig
  %prefer = and i1 %prefer0, %stateok
  %mask = select i1 %prefer, i64 @ESTIMATE_MASK_FAR@, i64 @ESTIMATE_MASK@
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
  %dsc = getelementptr i8, ptr %ds, i64 @DS_MAX_CONCURRENCY@
  store i8 %w8, ptr %dsc
  %plocal = getelementptr i64, ptr %p, i64 @D_LOCAL@
  %local = load i64, ptr %plocal
  %local32 = trunc i64 %local to i32
  %measure = or i1 %timed, %msample
  br label %lhead
lhead:
  %k = phi i64 [ 0, %decide ], [ %k1, %lbody ]
  %lmore = icmp ult i64 %k, %wuse
  br i1 %lmore, label %lbody, label %run
lbody:
  %k32 = mul i64 %k, @WG_STATE_SIZE@
  %k24 = add i64 %k32, @WG_LOCAL_MEMORY_SIZE@
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
  %kerr = or i64 %k0, @ERR_KERNEL@
  ret i64 %kerr

; -- transfers ---------------------------------------------------------------------------
fill:
  %fref = getelementptr i64, ptr %p, i64 @F_REF@
  %fres = call { i64, i64 } @pyree_resolve(ptr %fref, ptr %table)
  %fa = extractvalue { i64, i64 } %fres, 0
  %fl = extractvalue { i64, i64 } %fres, 1
  %fptr = inttoptr i64 %fa to ptr
  %ppat = getelementptr i64, ptr %p, i64 @F_PATTERN@
  %pat = load i64, ptr %ppat
  %pplen = getelementptr i64, ptr %p, i64 @F_PATTERN_LENGTH@
  %plen = load i64, ptr %pplen
  switch i64 %plen, label %fill1 [ i64 2, label %fill2
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
  %sref = getelementptr i64, ptr %p, i64 @C_SRC@
  %sres = call { i64, i64 } @pyree_resolve(ptr %sref, ptr %table)
  %sa = extractvalue { i64, i64 } %sres, 0
  %sl = extractvalue { i64, i64 } %sres, 1
  %dref = getelementptr i64, ptr %p, i64 @C_DST@
  %dres = call { i64, i64 } @pyree_resolve(ptr %dref, ptr %table)
  %da = extractvalue { i64, i64 } %dres, 0
  %sptr = inttoptr i64 %sa to ptr
  %dptr = inttoptr i64 %da to ptr
  call void @llvm.memmove.p0.p0.i64(ptr %dptr, ptr %sptr, i64 %sl, i1 false)
  br label %next
update:
  %pdata = getelementptr i64, ptr %p, i64 @U_DATA@
  %data = load ptr, ptr %pdata
  %uref = getelementptr i64, ptr %p, i64 @U_REF@
  %ures = call { i64, i64 } @pyree_resolve(ptr %uref, ptr %table)
  %ua = extractvalue { i64, i64 } %ures, 0
  %ul = extractvalue { i64, i64 } %ures, 1
  %uptr = inttoptr i64 %ua to ptr
  call void @llvm.memcpy.p0.p0.i64(ptr %uptr, ptr %data, i64 %ul, i1 false)
  br label %next
}

define i64 @pyree_run_plan_args(ptr %a) {
entry:
  %pplan = getelementptr i64, ptr %a, i64 @PLAN_ARG_PLAN@
  %plan = load ptr, ptr %pplan
  %pcommands = getelementptr i64, ptr %a, i64 @PLAN_ARG_COMMANDS@
  %commands = load i64, ptr %pcommands
  %ptable = getelementptr i64, ptr %a, i64 @PLAN_ARG_TABLE@
  %table = load ptr, ptr %ptable
  %ppool = getelementptr i64, ptr %a, i64 @PLAN_ARG_POOL@
  %pool = load ptr, ptr %ppool
  %pworkers = getelementptr i64, ptr %a, i64 @PLAN_ARG_WORKERS@
  %workers = load i64, ptr %pworkers
  %pwgs = getelementptr i64, ptr %a, i64 @PLAN_ARG_WGS@
  %wgs = load ptr, ptr %pwgs
  %pnwgs = getelementptr i64, ptr %a, i64 @PLAN_ARG_NWGS@
  %nwgs = load i64, ptr %pnwgs
  %pout = getelementptr i64, ptr %a, i64 @PLAN_ARG_OUT@
  %out = load ptr, ptr %pout
  %pstats = getelementptr i64, ptr %a, i64 @PLAN_ARG_STATS@
  %stats = load ptr, ptr %pstats
  %r = call i64 @pyree_run_plan(ptr %plan, i64 %commands, ptr %table, ptr %pool, i64 %workers, ptr %wgs, i64 %nwgs, ptr %out, ptr %stats)
  ret i64 %r
}

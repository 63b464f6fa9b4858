; A host loop's deferred steps (exec/loops.py: LoopMode replays) in one foreign call:
; per step, its new buffers zeroed, its table written, the plan run. The block's words
; are layout.py's STEPS_FIELDS.

; from other units
declare i64 @pyree_run_plan_args(ptr)
declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)

; Returns 0, or the plan runner's result for the step that failed (the last one run).
define i64 @pyree_run_plan_steps(ptr %s) {
entry:
  %pargs = getelementptr i64, ptr %s, i64 @STEPS_ARGS@
  %args = load ptr, ptr %pargs
  %ptable = getelementptr i64, ptr %s, i64 @STEPS_TABLE@
  %table = load ptr, ptr %ptable
  %pwords = getelementptr i64, ptr %s, i64 @STEPS_WORDS@
  %words = load i64, ptr %pwords
  %pfirst0 = getelementptr i64, ptr %s, i64 @STEPS_FIRST0@
  %first0 = load ptr, ptr %pfirst0
  %plater0 = getelementptr i64, ptr %s, i64 @STEPS_LATER0@
  %later0 = load ptr, ptr %plater0
  %pimage1 = getelementptr i64, ptr %s, i64 @STEPS_IMAGE1@
  %image1 = load ptr, ptr %pimage1
  %pzeros0 = getelementptr i64, ptr %s, i64 @STEPS_ZEROS0@
  %zeros0 = load ptr, ptr %pzeros0
  %pnzeros0 = getelementptr i64, ptr %s, i64 @STEPS_NZEROS0@
  %nzeros0 = load i64, ptr %pnzeros0
  %pzeros1 = getelementptr i64, ptr %s, i64 @STEPS_ZEROS1@
  %zeros1 = load ptr, ptr %pzeros1
  %pnzeros1 = getelementptr i64, ptr %s, i64 @STEPS_NZEROS1@
  %nzeros1 = load i64, ptr %pnzeros1
  %pcount = getelementptr i64, ptr %s, i64 @STEPS_COUNT@
  %count = load i64, ptr %pcount
  %pturn = getelementptr i64, ptr %s, i64 @STEPS_TURN@
  %turn = load i64, ptr %pturn
  %pran = getelementptr i64, ptr %s, i64 @STEPS_RAN@
  %ran = load i64, ptr %pran
  %bytes = shl i64 %words, 3
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

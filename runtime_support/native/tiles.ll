; The tile loop: one participant's walk over a range of workgroup tiles, with the FPU
; state kernels run under (arch_<machine>.ll); and how kernels call host imports.
; Its placeholders (a name between two @) are filled from layout.py (jit.py).

; from other units
declare i64 @pyree_fpu_push()
declare void @pyree_fpu_pop(i64)

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
  %py = getelementptr i8, ptr %wg, i64 @WG_WORKGROUP_ID_Y@
  %pz = getelementptr i8, ptr %wg, i64 @WG_WORKGROUP_ID_Z@
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

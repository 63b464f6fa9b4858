; The machine-specific pieces on x86-64 (jit.py joins one arch_<machine> unit first).
;
; Kernels run with denormals flushed to zero, as IREE runs them: its inline command buffer
; (local-sync) pushes IREE_FPU_STATE_FLAG_FLUSH_DENORMALS_TO_ZERO around every dispatch
; ("we are running on a borrowed thread, we know nothing about the floating point state")
; and its task workers (local-task) set it for their threads. Without it, results that
; involve denormals differ from IREE's and denormal operands take slow microcode paths.
; The tile loop saves the thread's FPU control state, sets the flush bits, runs its tiles
; and restores the state, on the caller and on pool threads alike.
; x86-64: MXCSR FTZ (bit 15) | DAZ (bit 6) = 32832. Futexes: syscall 202.

declare i64 @syscall(i64, ...)
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
define internal void @pyree_futex_wait(ptr %addr, i32 %val) {
  %v = zext i32 %val to i64
  %r = call i64 (i64, ...) @syscall(i64 202, ptr %addr, i64 128, i64 %v, ptr null)
  ret void
}
define internal void @pyree_futex_wake(ptr %addr, i32 %n) {
  %m = zext i32 %n to i64
  %r = call i64 (i64, ...) @syscall(i64 202, ptr %addr, i64 129, i64 %m)
  ret void
}

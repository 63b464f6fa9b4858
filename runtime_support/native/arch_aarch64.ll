; The machine-specific pieces on AArch64 (jit.py joins one arch_<machine> unit first).
;
; Kernels run with denormals flushed to zero, as IREE runs them: its inline command buffer
; (local-sync) pushes IREE_FPU_STATE_FLAG_FLUSH_DENORMALS_TO_ZERO around every dispatch
; ("we are running on a borrowed thread, we know nothing about the floating point state")
; and its task workers (local-task) set it for their threads. Without it, results that
; involve denormals differ from IREE's and denormal operands take slow microcode paths.
; The tile loop saves the thread's FPU control state, sets the flush bits, runs its tiles
; and restores the state, on the caller and on pool threads alike.
; AArch64: FPCR FZ (bit 24) = 16777216. Futexes: syscall 98.

declare i64 @syscall(i64, ...)
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
define internal void @pyree_futex_wait(ptr %addr, i32 %val) {
  %v = zext i32 %val to i64
  %r = call i64 (i64, ...) @syscall(i64 98, ptr %addr, i64 128, i64 %v, ptr null)
  ret void
}
define internal void @pyree_futex_wake(ptr %addr, i32 %n) {
  %m = zext i32 %n to i64
  %r = call i64 (i64, ...) @syscall(i64 98, ptr %addr, i64 129, i64 %m)
  ret void
}

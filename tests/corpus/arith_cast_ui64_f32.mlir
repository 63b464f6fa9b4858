// Covers: host uitofp i64->f32 -> vm.cast.ui64.f32 (iree-dump-module 3.13 aborts with "unhandled ext opcode" on it).
func.func @ui64_to_f32(%l: i64) -> (f32, f32) {
  %big = arith.constant -4096 : i64
  %x = arith.muli %l, %big : i64
  %a = arith.uitofp %l : i64 to f32
  %b = arith.uitofp %x : i64 to f32
  return %a, %b : f32, f32
}

// Covers: scf.for with index induction variable and i64/f32 iter_args (sum of squares, float accumulation).
func.func @sum_squares(%n: i32, %scale: f32) -> (i64, f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c31 = arith.constant 31 : i32
  %zero64 = arith.constant 0 : i64
  %zerof = arith.constant 0.0 : f32
  %nm = arith.andi %n, %c31 : i32
  %ub = arith.index_cast %nm : i32 to index
  %r:2 = scf.for %i = %c0 to %ub step %c1 iter_args(%acc = %zero64, %facc = %zerof) -> (i64, f32) {
    %i64 = arith.index_cast %i : index to i64
    %sq = arith.muli %i64, %i64 : i64
    %acc1 = arith.addi %acc, %sq : i64
    %if = arith.sitofp %i64 : i64 to f32
    %m = arith.mulf %if, %scale : f32
    %facc1 = arith.addf %facc, %m : f32
    scf.yield %acc1, %facc1 : i64, f32
  }
  return %r#0, %r#1 : i64, f32
}

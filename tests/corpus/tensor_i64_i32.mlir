// Covers: integer tensors: i64 and i32 elementwise (mul, shifts, signed div/rem with safe divisors, unsigned compare) and an i64 sum.
func.func @int_tensors(%a: tensor<7xi32>, %b: tensor<7xi64>) -> (tensor<7xi32>, tensor<7xi64>, tensor<i64>) {
  %e32 = tensor.empty() : tensor<7xi32>
  %e64 = tensor.empty() : tensor<7xi64>
  %c1 = arith.constant 1 : i32
  %c5 = arith.constant 5 : i32
  %c3l = arith.constant 3 : i64
  %r:2 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<7xi32>, tensor<7xi64>) outs(%e32, %e64 : tensor<7xi32>, tensor<7xi64>) {
  ^bb0(%x: i32, %y: i64, %o0: i32, %o1: i64):
    %sh = arith.shli %x, %c1 : i32
    %dv = arith.divsi %sh, %c5 : i32
    %rm = arith.remsi %x, %c5 : i32
    %lt = arith.cmpi ult, %x, %c5 : i32
    %s = arith.select %lt, %dv, %rm : i32
    %ym = arith.muli %y, %c3l : i64
    %ys = arith.shrsi %ym, %c3l : i64
    %xe = arith.extsi %x : i32 to i64
    %yr = arith.addi %ys, %xe : i64
    linalg.yield %s, %yr : i32, i64
  } -> (tensor<7xi32>, tensor<7xi64>)
  %z = arith.constant 0 : i64
  %es = tensor.empty() : tensor<i64>
  %fs = linalg.fill ins(%z : i64) outs(%es : tensor<i64>) -> tensor<i64>
  %sum = linalg.reduce ins(%r#1 : tensor<7xi64>) outs(%fs : tensor<i64>) dimensions = [0]
    (%x: i64, %acc: i64) {
      %y = arith.addi %x, %acc : i64
      linalg.yield %y : i64
    }
  return %r#0, %r#1, %sum : tensor<7xi32>, tensor<7xi64>, tensor<i64>
}

// Covers: host loops driving dispatches: scf.for with a loop-carried tensor, and scf.while whose condition reads back a tensor value.
func.func @repeat_scale(%t: tensor<4xf32>, %n: i32) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c7 = arith.constant 7 : i32
  %nm = arith.andi %n, %c7 : i32
  %ub = arith.index_cast %nm : i32 to index
  %half = arith.constant dense<0.5> : tensor<4xf32>
  %r = scf.for %i = %c0 to %ub step %c1 iter_args(%acc = %t) -> tensor<4xf32> {
    %m = arith.mulf %acc, %half : tensor<4xf32>
    %a = arith.addf %m, %t : tensor<4xf32>
    scf.yield %a : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

func.func @grow_until(%t: tensor<3xf32>, %limit: f32) -> (tensor<3xf32>, i32) {
  %c0 = arith.constant 0 : index
  %z = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  %cap = arith.constant 20 : i32
  %two = arith.constant dense<2.0> : tensor<3xf32>
  %onef = arith.constant dense<1.0> : tensor<3xf32>
  %start = arith.addf %t, %onef : tensor<3xf32>
  %res:2 = scf.while (%cur = %start, %it = %z) : (tensor<3xf32>, i32) -> (tensor<3xf32>, i32) {
    %v0 = tensor.extract %cur[%c0] : tensor<3xf32>
    %av = math.absf %v0 : f32
    %small = arith.cmpf olt, %av, %limit : f32
    %under = arith.cmpi slt, %it, %cap : i32
    %go = arith.andi %small, %under : i1
    scf.condition(%go) %cur, %it : tensor<3xf32>, i32
  } do {
  ^bb0(%cur: tensor<3xf32>, %it: i32):
    %n = arith.mulf %cur, %two : tensor<3xf32>
    %it1 = arith.addi %it, %one : i32
    scf.yield %n, %it1 : tensor<3xf32>, i32
  }
  return %res#0, %res#1 : tensor<3xf32>, i32
}

// A 50-iteration loop that stays on the host (scf.while): one dispatch per iteration,
// a 256-wide matrix-vector product fused with tanh.
func.func @main(%w: tensor<256x256xf32>, %x0: tensor<256xf32>) -> tensor<256xf32> {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %n = arith.constant 50 : i32
  %zero = arith.constant 0.0 : f32
  %r:2 = scf.while (%i = %c0, %x = %x0) : (i32, tensor<256xf32>) -> (i32, tensor<256xf32>) {
    %more = arith.cmpi slt, %i, %n : i32
    scf.condition(%more) %i, %x : i32, tensor<256xf32>
  } do {
  ^bb0(%i: i32, %x: tensor<256xf32>):
    %e = tensor.empty() : tensor<256xf32>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<256xf32>) -> tensor<256xf32>
    %y = linalg.matvec ins(%w, %x : tensor<256x256xf32>, tensor<256xf32>)
                       outs(%f : tensor<256xf32>) -> tensor<256xf32>
    %t = math.tanh %y : tensor<256xf32>
    %next = arith.addi %i, %c1 : i32
    scf.yield %next, %t : i32, tensor<256xf32>
  }
  return %r#1 : tensor<256xf32>
}

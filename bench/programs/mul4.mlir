// Host overhead only: one 4-element multiply, one dispatch.
func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.mulf %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}

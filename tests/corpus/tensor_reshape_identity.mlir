// Covers: dispatch-free functions: identity return, duplicate results, reshapes (expand/collapse_shape), a zero-arg constant export, 0-d tensor args.
func.func @identity(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  return %a : tensor<2x3xf32>
}

func.func @dup(%a: tensor<4xi32>, %x: i32) -> (tensor<4xi32>, i32, tensor<4xi32>) {
  return %a, %x, %a : tensor<4xi32>, i32, tensor<4xi32>
}

func.func @reshape(%a: tensor<2x6xf32>) -> (tensor<12xf32>, tensor<2x3x2xf32>) {
  %c = tensor.collapse_shape %a [[0, 1]] : tensor<2x6xf32> into tensor<12xf32>
  %e = tensor.expand_shape %a [[0], [1, 2]] output_shape [2, 3, 2] : tensor<2x6xf32> into tensor<2x3x2xf32>
  return %c, %e : tensor<12xf32>, tensor<2x3x2xf32>
}

func.func @const_result() -> (tensor<2x2xf32>, i64) {
  %c = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %i = arith.constant 9000000000 : i64
  return %c, %i : tensor<2x2xf32>, i64
}

func.func @zero_d(%s: tensor<f32>, %v: tensor<3xf32>) -> (tensor<3xf32>, tensor<f32>) {
  %e = tensor.empty() : tensor<3xf32>
  %b = linalg.broadcast ins(%s : tensor<f32>) outs(%e : tensor<3xf32>) dimensions = [0]
  %r = arith.mulf %b, %v : tensor<3xf32>
  return %r, %s : tensor<3xf32>, tensor<f32>
}

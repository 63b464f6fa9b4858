// Covers: static linalg.matmul f32 (3x5 @ 5x4) and batch_matmul (2x3x4 @ 2x4x2).
func.func @matmul(%a: tensor<3x5xf32>, %b: tensor<5x4xf32>) -> tensor<3x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<3x4xf32>) -> tensor<3x4xf32>
  %r = linalg.matmul ins(%a, %b : tensor<3x5xf32>, tensor<5x4xf32>) outs(%f : tensor<3x4xf32>) -> tensor<3x4xf32>
  return %r : tensor<3x4xf32>
}

func.func @batch_matmul(%a: tensor<2x3x4xf32>, %b: tensor<2x4x2xf32>) -> tensor<2x3x2xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x3x2xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x3x2xf32>) -> tensor<2x3x2xf32>
  %r = linalg.batch_matmul ins(%a, %b : tensor<2x3x4xf32>, tensor<2x4x2xf32>) outs(%f : tensor<2x3x2xf32>) -> tensor<2x3x2xf32>
  return %r : tensor<2x3x2xf32>
}

// Covers: linalg.transpose of a 3-D tensor and linalg.broadcast of a vector to 2-D plus broadcasted add.
func.func @transpose3d(%a: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %e = tensor.empty() : tensor<4x2x3xf32>
  %t = linalg.transpose ins(%a : tensor<2x3x4xf32>) outs(%e : tensor<4x2x3xf32>) permutation = [2, 0, 1]
  return %t : tensor<4x2x3xf32>
}

func.func @broadcast_add(%v: tensor<4xf32>, %m: tensor<3x4xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>) {
  %e = tensor.empty() : tensor<3x4xf32>
  %b = linalg.broadcast ins(%v : tensor<4xf32>) outs(%e : tensor<3x4xf32>) dimensions = [0]
  %s = arith.addf %b, %m : tensor<3x4xf32>
  return %b, %s : tensor<3x4xf32>, tensor<3x4xf32>
}

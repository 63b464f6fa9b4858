// A 512x512x512 f32 matmul: kernel-bound.
func.func @main(%a: tensor<512x512xf32>, %b: tensor<512x512xf32>) -> tensor<512x512xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<512x512xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<512x512xf32>) -> tensor<512x512xf32>
  %c = linalg.matmul ins(%a, %b : tensor<512x512xf32>, tensor<512x512xf32>)
                     outs(%f : tensor<512x512xf32>) -> tensor<512x512xf32>
  return %c : tensor<512x512xf32>
}

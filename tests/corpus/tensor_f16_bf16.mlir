// Covers: f16 and bf16 tensors: elementwise math, extf to f32, and an f16 matmul with f32 accumulation.
func.func @f16_ops(%a: tensor<8xf16>, %b: tensor<8xf16>) -> (tensor<8xf16>, tensor<8xf32>) {
  %s = arith.addf %a, %b : tensor<8xf16>
  %m = arith.mulf %s, %a : tensor<8xf16>
  %e = tensor.empty() : tensor<8xf32>
  %x = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%m : tensor<8xf16>) outs(%e : tensor<8xf32>) {
  ^bb0(%in: f16, %o: f32):
    %f = arith.extf %in : f16 to f32
    linalg.yield %f : f32
  } -> tensor<8xf32>
  return %m, %x : tensor<8xf16>, tensor<8xf32>
}

func.func @bf16_ops(%a: tensor<2x4xbf16>, %b: tensor<2x4xbf16>) -> (tensor<2x4xbf16>, tensor<2x4xf32>) {
  %s = arith.subf %a, %b : tensor<2x4xbf16>
  %e = tensor.empty() : tensor<2x4xf32>
  %x = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%s : tensor<2x4xbf16>) outs(%e : tensor<2x4xf32>) {
  ^bb0(%in: bf16, %o: f32):
    %f = arith.extf %in : bf16 to f32
    %g = arith.mulf %f, %f : f32
    linalg.yield %g : f32
  } -> tensor<2x4xf32>
  return %s, %x : tensor<2x4xbf16>, tensor<2x4xf32>
}

func.func @f16_matmul(%a: tensor<2x3xf16>, %b: tensor<3x2xf16>) -> tensor<2x2xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x2xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x2xf32>) -> tensor<2x2xf32>
  %r = linalg.matmul ins(%a, %b : tensor<2x3xf16>, tensor<3x2xf16>) outs(%f : tensor<2x2xf32>) -> tensor<2x2xf32>
  return %r : tensor<2x2xf32>
}

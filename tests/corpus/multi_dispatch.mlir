// Covers: several dispatches in one function: elementwise -> matmul -> bias+relu -> reduction, with intermediate tensors.
func.func @mlp(%x: tensor<4x8xf32>, %w: tensor<8x6xf32>, %b: tensor<6xf32>) -> (tensor<4x6xf32>, tensor<4xf32>) {
  %zero = arith.constant 0.0 : f32
  %ex = tensor.empty() : tensor<4x8xf32>
  %sq = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%ex : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %a : f32
    %t = math.tanh %m : f32
    linalg.yield %t : f32
  } -> tensor<4x8xf32>
  %e = tensor.empty() : tensor<4x6xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x6xf32>) -> tensor<4x6xf32>
  %mm = linalg.matmul ins(%sq, %w : tensor<4x8xf32>, tensor<8x6xf32>) outs(%f : tensor<4x6xf32>) -> tensor<4x6xf32>
  %br = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %b : tensor<4x6xf32>, tensor<6xf32>) outs(%e : tensor<4x6xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x6xf32>
  %re = tensor.empty() : tensor<4xf32>
  %rf = linalg.fill ins(%zero : f32) outs(%re : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.reduce ins(%br : tensor<4x6xf32>) outs(%rf : tensor<4xf32>) dimensions = [1]
    (%a: f32, %acc: f32) {
      %y = arith.addf %a, %acc : f32
      linalg.yield %y : f32
    }
  return %br, %sum : tensor<4x6xf32>, tensor<4xf32>
}

// Covers: softmax over the last axis of a 2x6 tensor (max-reduce, exp, sum-reduce, divide: several fused dispatches).
func.func @softmax(%a: tensor<2x6xf32>) -> tensor<2x6xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<2xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<2xf32>) -> tensor<2xf32>
  %mx = linalg.reduce ins(%a : tensor<2x6xf32>) outs(%fm : tensor<2xf32>) dimensions = [1]
    (%x: f32, %acc: f32) {
      %y = arith.maximumf %x, %acc : f32
      linalg.yield %y : f32
    }
  %e2 = tensor.empty() : tensor<2x6xf32>
  %ex = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%a, %mx : tensor<2x6xf32>, tensor<2xf32>) outs(%e2 : tensor<2x6xf32>) {
  ^bb0(%x: f32, %m: f32, %o: f32):
    %d = arith.subf %x, %m : f32
    %e = math.exp %d : f32
    linalg.yield %e : f32
  } -> tensor<2x6xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2xf32>) -> tensor<2xf32>
  %sm = linalg.reduce ins(%ex : tensor<2x6xf32>) outs(%fs : tensor<2xf32>) dimensions = [1]
    (%x: f32, %acc: f32) {
      %y = arith.addf %x, %acc : f32
      linalg.yield %y : f32
    }
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%ex, %sm : tensor<2x6xf32>, tensor<2xf32>) outs(%e2 : tensor<2x6xf32>) {
  ^bb0(%x: f32, %s: f32, %o: f32):
    %q = arith.divf %x, %s : f32
    linalg.yield %q : f32
  } -> tensor<2x6xf32>
  return %r : tensor<2x6xf32>
}

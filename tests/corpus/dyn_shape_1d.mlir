// Covers: dynamic 1-D tensor<?xf32> elementwise with tensor.dim returned as an index result.
func.func @dyn_add(%a: tensor<?xf32>, %b: tensor<?xf32>) -> (tensor<?xf32>, index) {
  %c0 = arith.constant 0 : index
  %d = tensor.dim %a, %c0 : tensor<?xf32>
  %e = tensor.empty(%d) : tensor<?xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<?xf32>, tensor<?xf32>) outs(%e : tensor<?xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    %m = arith.mulf %s, %x : f32
    linalg.yield %m : f32
  } -> tensor<?xf32>
  return %r, %d : tensor<?xf32>, index
}

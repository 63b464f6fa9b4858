// Covers: data-dependent indexing (gather via tensor.extract inside linalg.generic) and iree_linalg_ext.sort on a 1-D tensor.
func.func @gather(%table: tensor<8xf32>, %idx: tensor<5xi32>) -> tensor<5xf32> {
  %e = tensor.empty() : tensor<5xf32>
  %c7 = arith.constant 7 : i32
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%idx : tensor<5xi32>) outs(%e : tensor<5xf32>) {
  ^bb0(%i: i32, %o: f32):
    %m = arith.andi %i, %c7 : i32
    %ii = arith.index_cast %m : i32 to index
    %v = tensor.extract %table[%ii] : tensor<8xf32>
    linalg.yield %v : f32
  } -> tensor<5xf32>
  return %r : tensor<5xf32>
}

func.func @sort(%a: tensor<6xf32>) -> tensor<6xf32> {
  %r = iree_linalg_ext.sort dimension(0) outs(%a : tensor<6xf32>) {
  ^bb0(%x: f32, %y: f32):
    %lt = arith.cmpf olt, %x, %y : f32
    iree_linalg_ext.yield %lt : i1
  } -> tensor<6xf32>
  return %r : tensor<6xf32>
}

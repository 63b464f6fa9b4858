// Covers: mixed static/dynamic shapes: tensor<?x4xf32> input, a result whose size comes from a host scalar, dynamic concat.
func.func @mixed(%a: tensor<?x4xf32>, %v: tensor<4xf32>) -> tensor<?x4xf32> {
  %c0 = arith.constant 0 : index
  %d = tensor.dim %a, %c0 : tensor<?x4xf32>
  %e = tensor.empty(%d) : tensor<?x4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%a, %v : tensor<?x4xf32>, tensor<4xf32>) outs(%e : tensor<?x4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.mulf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

func.func @iota(%n: i32) -> tensor<?xi32> {
  %c15 = arith.constant 15 : i32
  %c1 = arith.constant 1 : i32
  %nm = arith.andi %n, %c15 : i32
  %n1 = arith.addi %nm, %c1 : i32
  %ni = arith.index_cast %n1 : i32 to index
  %e = tensor.empty(%ni) : tensor<?xi32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      outs(%e : tensor<?xi32>) {
  ^bb0(%o: i32):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i32
    %sq = arith.muli %ii, %ii : i32
    linalg.yield %sq : i32
  } -> tensor<?xi32>
  return %r : tensor<?xi32>
}

func.func @dyn_concat(%a: tensor<?xf32>, %b: tensor<?xf32>) -> tensor<?xf32> {
  %r = tensor.concat dim(0) %a, %b : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  return %r : tensor<?xf32>
}

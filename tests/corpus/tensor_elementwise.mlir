// Covers: f32 elementwise tensor math in one dispatch: add/sub/mul/div, exp, log, sqrt, abs, tanh, sin, floor, min/max, select, compare.
func.func @elementwise(%a: tensor<2x5xf32>, %b: tensor<2x5xf32>) -> (tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>) {
  %e = tensor.empty() : tensor<2x5xf32>
  %one = arith.constant 1.0 : f32
  %r:3 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : tensor<2x5xf32>, tensor<2x5xf32>) outs(%e, %e, %e : tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>) {
  ^bb0(%x: f32, %y: f32, %o0: f32, %o1: f32, %o2: f32):
    %s = arith.addf %x, %y : f32
    %d = arith.subf %x, %y : f32
    %m = arith.mulf %s, %d : f32
    %ax = math.absf %x : f32
    %ay = math.absf %y : f32
    %den = arith.addf %ay, %one : f32
    %q = arith.divf %x, %den : f32
    %ex = math.exp %q : f32
    %p = arith.addf %ax, %one : f32
    %lg = math.log %p : f32
    %sq = math.sqrt %p : f32
    %th = math.tanh %x : f32
    %sn = math.sin %y : f32
    %fl = math.floor %x : f32
    %mn = arith.minimumf %x, %y : f32
    %mx = arith.maximumf %x, %y : f32
    %gt = arith.cmpf ogt, %x, %y : f32
    %sel = arith.select %gt, %mn, %mx : f32
    %r0 = arith.addf %m, %ex : f32
    %r1a = arith.addf %lg, %sq : f32
    %r1b = arith.addf %th, %sn : f32
    %r1 = arith.addf %r1a, %r1b : f32
    %r2 = arith.addf %fl, %sel : f32
    linalg.yield %r0, %r1, %r2 : f32, f32, f32
  } -> (tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>)
  return %r#0, %r#1, %r#2 : tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>
}

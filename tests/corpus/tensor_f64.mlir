// Covers: f64 tensors without demotion: elementwise arithmetic + sqrt and a reduction (f64 kernels, f64 scalar host arg).
func.func @f64_tensor(%a: tensor<5xf64>, %b: tensor<5xf64>, %s: f64) -> (tensor<5xf64>, tensor<f64>) {
  %e = tensor.empty() : tensor<5xf64>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<5xf64>, tensor<5xf64>) outs(%e : tensor<5xf64>) {
  ^bb0(%x: f64, %y: f64, %o: f64):
    %m = arith.mulf %x, %y : f64
    %ab = math.absf %m : f64
    %q = math.sqrt %ab : f64
    %t = arith.mulf %q, %s : f64
    linalg.yield %t : f64
  } -> tensor<5xf64>
  %z = arith.constant 0.0 : f64
  %es = tensor.empty() : tensor<f64>
  %fs = linalg.fill ins(%z : f64) outs(%es : tensor<f64>) -> tensor<f64>
  %sum = linalg.reduce ins(%r : tensor<5xf64>) outs(%fs : tensor<f64>) dimensions = [0]
    (%x: f64, %acc: f64) {
      %y = arith.addf %x, %acc : f64
      linalg.yield %y : f64
    }
  return %r, %sum : tensor<5xf64>, tensor<f64>
}

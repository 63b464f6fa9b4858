// Covers: dispatches kept apart by util.optimization_barrier, each its own awaited submission; the run of them becomes one call (translator/codegen/runs.py), an intermediate result also returned.
func.func @barrier_chain(%a: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %0 = arith.addf %a, %b : tensor<8xf32>
  %k0 = util.optimization_barrier %0 : tensor<8xf32>
  %1 = arith.mulf %k0, %b : tensor<8xf32>
  %k1 = util.optimization_barrier %1 : tensor<8xf32>
  %2 = arith.subf %k1, %a : tensor<8xf32>
  %k2 = util.optimization_barrier %2 : tensor<8xf32>
  %3 = math.exp %k2 : tensor<8xf32>
  return %3, %k1 : tensor<8xf32>, tensor<8xf32>
}

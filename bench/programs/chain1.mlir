// 1 dependent 4-element additions kept apart by util.optimization_barrier:
// 1 dispatch(es), so time over the 1-dispatch version is host cost per dispatch.
// (Written by: python3 -c 'from bench.programs import chain_source; ...'.)
func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %s0 = arith.addf %a, %b : tensor<4xf32>
  return %s0 : tensor<4xf32>
}

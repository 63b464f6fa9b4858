// A chain of elementwise ops over 1M f32 elements (fused into one dispatch): memory-bound.
func.func @main(%x: tensor<1048576xf32>, %y: tensor<1048576xf32>) -> tensor<1048576xf32> {
  %0 = arith.mulf %x, %y : tensor<1048576xf32>
  %1 = arith.addf %0, %x : tensor<1048576xf32>
  %2 = math.tanh %1 : tensor<1048576xf32>
  %3 = arith.subf %2, %y : tensor<1048576xf32>
  %4 = arith.mulf %3, %3 : tensor<1048576xf32>
  return %4 : tensor<1048576xf32>
}

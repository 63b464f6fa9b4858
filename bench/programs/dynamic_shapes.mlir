// Dynamic shapes: the dispatch's workgroup count and constants come from the input's
// length, so IREE records a one-shot command buffer per call instead of replaying one.
func.func @main(%a: tensor<?xf32>, %b: tensor<?xf32>) -> tensor<?xf32> {
  %0 = arith.addf %a, %b : tensor<?xf32>
  %1 = arith.mulf %0, %b : tensor<?xf32>
  return %1 : tensor<?xf32>
}

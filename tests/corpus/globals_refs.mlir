// Covers: ref-typed globals: an immutable constant tensor global and a mutable tensor global updated across calls.
util.global private @weights = dense<[0.5, -1.0, 2.0, 4.0]> : tensor<4xf32>
util.global private mutable @state = dense<0.0> : tensor<4xf32>

func.func @accumulate(%x: tensor<4xf32>) -> tensor<4xf32> {
  %w = util.global.load @weights : tensor<4xf32>
  %s = util.global.load @state : tensor<4xf32>
  %p = arith.mulf %x, %w : tensor<4xf32>
  %n = arith.addf %s, %p : tensor<4xf32>
  util.global.store %n, @state : tensor<4xf32>
  return %n : tensor<4xf32>
}

func.func @reset() {
  %z = arith.constant dense<0.0> : tensor<4xf32>
  util.global.store %z, @state : tensor<4xf32>
  return
}

// Covers: several exported functions sharing a private callee, exports with no args/results and a tensor+scalar mix.
util.func private @helper(%x: i32) -> i32 attributes {inlining_policy = #util.inline.never} {
  %c3 = arith.constant 3 : i32
  %r = arith.muli %x, %c3 : i32
  util.return %r : i32
}

func.func @first(%x: i32) -> i32 {
  %r = util.call @helper(%x) : (i32) -> i32
  return %r : i32
}

func.func @second(%x: i32, %y: i32) -> i32 {
  %a = util.call @helper(%x) : (i32) -> i32
  %b = util.call @helper(%y) : (i32) -> i32
  %r = arith.subi %a, %b : i32
  return %r : i32
}

func.func @nothing() {
  return
}

func.func @constant_tensor() -> tensor<3xi32> {
  %c = arith.constant dense<[7, 8, 9]> : tensor<3xi32>
  return %c : tensor<3xi32>
}

func.func @scale_tensor(%t: tensor<3xf32>, %s: f32) -> tensor<3xf32> {
  %e = tensor.empty() : tensor<3xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%t : tensor<3xf32>) outs(%e : tensor<3xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %s : f32
    linalg.yield %m : f32
  } -> tensor<3xf32>
  return %r : tensor<3xf32>
}

// MLP 784-512-512-10, batch 32. Weights live in mutable globals that `setup` fills once
// (so they are neither constant-folded nor copied per call); `main` runs the layers:
// matmul + bias + relu, twice, then matmul + bias.
util.global private mutable @w1 : tensor<784x512xf32>
util.global private mutable @b1 : tensor<512xf32>
util.global private mutable @w2 : tensor<512x512xf32>
util.global private mutable @b2 : tensor<512xf32>
util.global private mutable @w3 : tensor<512x10xf32>
util.global private mutable @b3 : tensor<10xf32>

func.func @setup(%w1: tensor<784x512xf32>, %b1: tensor<512xf32>, %w2: tensor<512x512xf32>,
                 %b2: tensor<512xf32>, %w3: tensor<512x10xf32>, %b3: tensor<10xf32>) {
  util.global.store %w1, @w1 : tensor<784x512xf32>
  util.global.store %b1, @b1 : tensor<512xf32>
  util.global.store %w2, @w2 : tensor<512x512xf32>
  util.global.store %b2, @b2 : tensor<512xf32>
  util.global.store %w3, @w3 : tensor<512x10xf32>
  util.global.store %b3, @b3 : tensor<10xf32>
  return
}

func.func @main(%x: tensor<32x784xf32>) -> tensor<32x10xf32> {
  %zero = arith.constant 0.0 : f32
  %w1 = util.global.load @w1 : tensor<784x512xf32>
  %b1 = util.global.load @b1 : tensor<512xf32>
  %e1 = tensor.empty() : tensor<32x512xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<32x512xf32>) -> tensor<32x512xf32>
  %m1 = linalg.matmul ins(%x, %w1 : tensor<32x784xf32>, tensor<784x512xf32>)
                      outs(%f1 : tensor<32x512xf32>) -> tensor<32x512xf32>
  %h1 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>,
                                        affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%m1, %b1 : tensor<32x512xf32>, tensor<512xf32>) outs(%e1 : tensor<32x512xf32>) {
  ^bb0(%v: f32, %bias: f32, %out: f32):
    %s = arith.addf %v, %bias : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<32x512xf32>
  %w2 = util.global.load @w2 : tensor<512x512xf32>
  %b2 = util.global.load @b2 : tensor<512xf32>
  %e2 = tensor.empty() : tensor<32x512xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<32x512xf32>) -> tensor<32x512xf32>
  %m2 = linalg.matmul ins(%h1, %w2 : tensor<32x512xf32>, tensor<512x512xf32>)
                      outs(%f2 : tensor<32x512xf32>) -> tensor<32x512xf32>
  %h2 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>,
                                        affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%m2, %b2 : tensor<32x512xf32>, tensor<512xf32>) outs(%e2 : tensor<32x512xf32>) {
  ^bb0(%v: f32, %bias: f32, %out: f32):
    %s = arith.addf %v, %bias : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<32x512xf32>
  %w3 = util.global.load @w3 : tensor<512x10xf32>
  %b3 = util.global.load @b3 : tensor<10xf32>
  %e3 = tensor.empty() : tensor<32x10xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<32x10xf32>) -> tensor<32x10xf32>
  %m3 = linalg.matmul ins(%h2, %w3 : tensor<32x512xf32>, tensor<512x10xf32>)
                      outs(%f3 : tensor<32x10xf32>) -> tensor<32x10xf32>
  %h3 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>,
                                        affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%m3, %b3 : tensor<32x10xf32>, tensor<10xf32>) outs(%e3 : tensor<32x10xf32>) {
  ^bb0(%v: f32, %bias: f32, %out: f32):
    %s = arith.addf %v, %bias : f32
    linalg.yield %s : f32
  } -> tensor<32x10xf32>
  return %h3 : tensor<32x10xf32>
}

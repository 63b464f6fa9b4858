// Small CNN: three times (3x3 valid convolution, relu, 2x2 max pool with stride 2),
// NHWC, 1x34x34x4 -> 1x2x2x32. Filters live in mutable globals that `setup` fills once.
util.global private mutable @k1 : tensor<3x3x4x8xf32>
util.global private mutable @k2 : tensor<3x3x8x16xf32>
util.global private mutable @k3 : tensor<3x3x16x32xf32>

func.func @setup(%k1: tensor<3x3x4x8xf32>, %k2: tensor<3x3x8x16xf32>, %k3: tensor<3x3x16x32xf32>) {
  util.global.store %k1, @k1 : tensor<3x3x4x8xf32>
  util.global.store %k2, @k2 : tensor<3x3x8x16xf32>
  util.global.store %k3, @k3 : tensor<3x3x16x32xf32>
  return
}

func.func @main(%x: tensor<1x34x34x4xf32>) -> tensor<1x2x2x32xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %window = tensor.empty() : tensor<2x2xf32>
  %k1 = util.global.load @k1 : tensor<3x3x4x8xf32>
  %ce1 = tensor.empty() : tensor<1x32x32x8xf32>
  %cf1 = linalg.fill ins(%zero : f32) outs(%ce1 : tensor<1x32x32x8xf32>) -> tensor<1x32x32x8xf32>
  %c1 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %k1 : tensor<1x34x34x4xf32>, tensor<3x3x4x8xf32>) outs(%cf1 : tensor<1x32x32x8xf32>) -> tensor<1x32x32x8xf32>
  %r1 = linalg.generic {indexing_maps = [affine_map<(n, h, w, c) -> (n, h, w, c)>,
                                        affine_map<(n, h, w, c) -> (n, h, w, c)>],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%c1 : tensor<1x32x32x8xf32>) outs(%ce1 : tensor<1x32x32x8xf32>) {
  ^bb0(%v: f32, %out: f32):
    %m = arith.maximumf %v, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x32x32x8xf32>
  %pe1 = tensor.empty() : tensor<1x16x16x8xf32>
  %pf1 = linalg.fill ins(%ninf : f32) outs(%pe1 : tensor<1x16x16x8xf32>) -> tensor<1x16x16x8xf32>
  %p1 = linalg.pooling_nhwc_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%r1, %window : tensor<1x32x32x8xf32>, tensor<2x2xf32>) outs(%pf1 : tensor<1x16x16x8xf32>) -> tensor<1x16x16x8xf32>
  %k2 = util.global.load @k2 : tensor<3x3x8x16xf32>
  %ce2 = tensor.empty() : tensor<1x14x14x16xf32>
  %cf2 = linalg.fill ins(%zero : f32) outs(%ce2 : tensor<1x14x14x16xf32>) -> tensor<1x14x14x16xf32>
  %c2 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%p1, %k2 : tensor<1x16x16x8xf32>, tensor<3x3x8x16xf32>) outs(%cf2 : tensor<1x14x14x16xf32>) -> tensor<1x14x14x16xf32>
  %r2 = linalg.generic {indexing_maps = [affine_map<(n, h, w, c) -> (n, h, w, c)>,
                                        affine_map<(n, h, w, c) -> (n, h, w, c)>],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%c2 : tensor<1x14x14x16xf32>) outs(%ce2 : tensor<1x14x14x16xf32>) {
  ^bb0(%v: f32, %out: f32):
    %m = arith.maximumf %v, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x14x14x16xf32>
  %pe2 = tensor.empty() : tensor<1x7x7x16xf32>
  %pf2 = linalg.fill ins(%ninf : f32) outs(%pe2 : tensor<1x7x7x16xf32>) -> tensor<1x7x7x16xf32>
  %p2 = linalg.pooling_nhwc_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%r2, %window : tensor<1x14x14x16xf32>, tensor<2x2xf32>) outs(%pf2 : tensor<1x7x7x16xf32>) -> tensor<1x7x7x16xf32>
  %k3 = util.global.load @k3 : tensor<3x3x16x32xf32>
  %ce3 = tensor.empty() : tensor<1x5x5x32xf32>
  %cf3 = linalg.fill ins(%zero : f32) outs(%ce3 : tensor<1x5x5x32xf32>) -> tensor<1x5x5x32xf32>
  %c3 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%p2, %k3 : tensor<1x7x7x16xf32>, tensor<3x3x16x32xf32>) outs(%cf3 : tensor<1x5x5x32xf32>) -> tensor<1x5x5x32xf32>
  %r3 = linalg.generic {indexing_maps = [affine_map<(n, h, w, c) -> (n, h, w, c)>,
                                        affine_map<(n, h, w, c) -> (n, h, w, c)>],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%c3 : tensor<1x5x5x32xf32>) outs(%ce3 : tensor<1x5x5x32xf32>) {
  ^bb0(%v: f32, %out: f32):
    %m = arith.maximumf %v, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x5x5x32xf32>
  %pe3 = tensor.empty() : tensor<1x2x2x32xf32>
  %pf3 = linalg.fill ins(%ninf : f32) outs(%pe3 : tensor<1x2x2x32xf32>) -> tensor<1x2x2x32xf32>
  %p3 = linalg.pooling_nhwc_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%r3, %window : tensor<1x5x5x32xf32>, tensor<2x2xf32>) outs(%pf3 : tensor<1x2x2x32xf32>) -> tensor<1x2x2x32xf32>
  return %p3 : tensor<1x2x2x32xf32>
}

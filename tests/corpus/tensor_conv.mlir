// Covers: linalg.conv_2d_nhwc_hwcf (1x6x6x2 input, 3x3x2x3 filter, stride 1) and depthwise conv with stride 2.
func.func @conv2d(%in: tensor<1x6x6x2xf32>, %w: tensor<3x3x2x3xf32>) -> tensor<1x4x4x3xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x4x4x3xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x4x4x3xf32>) -> tensor<1x4x4x3xf32>
  %r = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%in, %w : tensor<1x6x6x2xf32>, tensor<3x3x2x3xf32>) outs(%f : tensor<1x4x4x3xf32>) -> tensor<1x4x4x3xf32>
  return %r : tensor<1x4x4x3xf32>
}

func.func @depthwise(%in: tensor<1x5x5x2xf32>, %w: tensor<3x3x2xf32>) -> tensor<1x2x2x2xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x2x2xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %r = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%in, %w : tensor<1x5x5x2xf32>, tensor<3x3x2xf32>) outs(%f : tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  return %r : tensor<1x2x2x2xf32>
}

// linalg.mmt4d / linalg.pack / linalg.unpack for tests/runtime/test_vmvx.py, built with --iree-vmvx-enable-microkernels.
func.func @mmt4d(%a: tensor<2x3x4x1xf32>, %b: tensor<5x3x4x1xf32>, %c: tensor<2x5x4x4xf32>) -> tensor<2x5x4x4xf32> {
  %r = linalg.mmt4d ins(%a, %b : tensor<2x3x4x1xf32>, tensor<5x3x4x1xf32>) outs(%c : tensor<2x5x4x4xf32>) -> tensor<2x5x4x4xf32>
  return %r : tensor<2x5x4x4xf32>
}
func.func @mmt4di8(%a: tensor<2x3x4x2xi8>, %b: tensor<5x3x4x2xi8>, %c: tensor<2x5x4x4xi32>) -> tensor<2x5x4x4xi32> {
  %r = linalg.mmt4d ins(%a, %b : tensor<2x3x4x2xi8>, tensor<5x3x4x2xi8>) outs(%c : tensor<2x5x4x4xi32>) -> tensor<2x5x4x4xi32>
  return %r : tensor<2x5x4x4xi32>
}
func.func @pack(%a: tensor<7x5xf32>) -> tensor<2x3x4x2xf32> {
  %p = arith.constant 3.5 : f32
  %e = tensor.empty() : tensor<2x3x4x2xf32>
  %r = linalg.pack %a padding_value(%p : f32) inner_dims_pos = [0, 1] inner_tiles = [4, 2] into %e : tensor<7x5xf32> -> tensor<2x3x4x2xf32>
  return %r : tensor<2x3x4x2xf32>
}
func.func @packt(%a: tensor<7x5xi32>) -> tensor<3x2x2x4xi32> {
  %p = arith.constant 9 : i32
  %e = tensor.empty() : tensor<3x2x2x4xi32>
  %r = linalg.pack %a padding_value(%p : i32) outer_dims_perm = [1, 0] inner_dims_pos = [1, 0] inner_tiles = [2, 4] into %e : tensor<7x5xi32> -> tensor<3x2x2x4xi32>
  return %r : tensor<3x2x2x4xi32>
}
func.func @unpack(%a: tensor<2x3x4x2xf32>) -> tensor<7x5xf32> {
  %e = tensor.empty() : tensor<7x5xf32>
  %r = linalg.unpack %a inner_dims_pos = [0, 1] inner_tiles = [4, 2] into %e : tensor<2x3x4x2xf32> -> tensor<7x5xf32>
  return %r : tensor<7x5xf32>
}
func.func @m16(%a: tensor<3x40x4x1xf32>, %b: tensor<2x40x16x1xf32>, %c: tensor<3x2x4x16xf32>) -> tensor<3x2x4x16xf32> {
  %r = linalg.mmt4d ins(%a, %b : tensor<3x40x4x1xf32>, tensor<2x40x16x1xf32>) outs(%c : tensor<3x2x4x16xf32>) -> tensor<3x2x4x16xf32>
  return %r : tensor<3x2x4x16xf32>
}
func.func @m3(%a: tensor<3x20x3x2xf32>, %b: tensor<2x20x5x2xf32>, %c: tensor<3x2x3x5xf32>) -> tensor<3x2x3x5xf32> {
  %r = linalg.mmt4d ins(%a, %b : tensor<3x20x3x2xf32>, tensor<2x20x5x2xf32>) outs(%c : tensor<3x2x3x5xf32>) -> tensor<3x2x3x5xf32>
  return %r : tensor<3x2x3x5xf32>
}

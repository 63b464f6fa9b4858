// Covers: tensor.concat, tensor.extract_slice (static and dynamic offset), tensor.insert_slice, tensor.pad.
func.func @concat(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) -> tensor<6x3xf32> {
  %r = tensor.concat dim(0) %a, %b : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<6x3xf32>
  return %r : tensor<6x3xf32>
}

func.func @slices(%a: tensor<6x5xf32>, %off: i32) -> (tensor<2x3xf32>, tensor<2x5xf32>, tensor<6x5xf32>) {
  %s = tensor.extract_slice %a[1, 2] [2, 3] [2, 1] : tensor<6x5xf32> to tensor<2x3xf32>
  %c3 = arith.constant 3 : i32
  %om = arith.andi %off, %c3 : i32
  %oi = arith.index_cast %om : i32 to index
  %d = tensor.extract_slice %a[%oi, 0] [2, 5] [1, 1] : tensor<6x5xf32> to tensor<2x5xf32>
  %neg = arith.negf %s : tensor<2x3xf32>
  %ins = tensor.insert_slice %neg into %a[0, 0] [2, 3] [1, 1] : tensor<2x3xf32> into tensor<6x5xf32>
  return %s, %d, %ins : tensor<2x3xf32>, tensor<2x5xf32>, tensor<6x5xf32>
}

func.func @pad(%a: tensor<2x3xf32>) -> tensor<4x6xf32> {
  %pv = arith.constant -1.0 : f32
  %r = tensor.pad %a low[1, 2] high[1, 1] {
  ^bb0(%i: index, %j: index):
    tensor.yield %pv : f32
  } : tensor<2x3xf32> to tensor<4x6xf32>
  return %r : tensor<4x6xf32>
}

// Covers: device->host readback (tensor.extract to a host scalar used in host arithmetic) and tensor.from_elements of host scalars.
func.func @extract_scalars(%t: tensor<4xf32>, %i: tensor<3xi32>, %k: i32) -> (f32, i32, tensor<3xf32>) {
  %c2 = arith.constant 2 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : i32
  %km = arith.andi %k, %c3 : i32
  %ki = arith.index_cast %km : i32 to index
  %d = arith.addf %t, %t : tensor<4xf32>
  %x = tensor.extract %d[%ki] : tensor<4xf32>
  %y = tensor.extract %i[%c1] : tensor<3xi32>
  %y2 = arith.muli %y, %k : i32
  %x2 = arith.mulf %x, %x : f32
  %yf = arith.sitofp %y2 : i32 to f32
  %ft = tensor.from_elements %x, %x2, %yf : tensor<3xf32>
  return %x2, %y2, %ft : f32, i32, tensor<3xf32>
}

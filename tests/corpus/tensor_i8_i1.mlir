// Covers: i8 tensors (wrapping add, i8 x i8 -> i32 matmul) and i1 tensors (compare results, select, xor on bools).
func.func @i8_ops(%a: tensor<6xi8>, %b: tensor<6xi8>) -> (tensor<6xi8>, tensor<6xi32>) {
  %s = arith.addi %a, %b : tensor<6xi8>
  %m = arith.muli %s, %b : tensor<6xi8>
  %e = tensor.empty() : tensor<6xi32>
  %x = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%m : tensor<6xi8>) outs(%e : tensor<6xi32>) {
  ^bb0(%in: i8, %o: i32):
    %w = arith.extsi %in : i8 to i32
    linalg.yield %w : i32
  } -> tensor<6xi32>
  return %m, %x : tensor<6xi8>, tensor<6xi32>
}

func.func @i8_matmul(%a: tensor<3x4xi8>, %b: tensor<4x2xi8>) -> tensor<3x2xi32> {
  %zero = arith.constant 0 : i32
  %e = tensor.empty() : tensor<3x2xi32>
  %f = linalg.fill ins(%zero : i32) outs(%e : tensor<3x2xi32>) -> tensor<3x2xi32>
  %r = linalg.matmul ins(%a, %b : tensor<3x4xi8>, tensor<4x2xi8>) outs(%f : tensor<3x2xi32>) -> tensor<3x2xi32>
  return %r : tensor<3x2xi32>
}

func.func @i1_ops(%a: tensor<5xf32>, %b: tensor<5xf32>, %m: tensor<5xi1>) -> (tensor<5xi1>, tensor<5xf32>) {
  %gt = arith.cmpf ogt, %a, %b : tensor<5xf32>
  %x = arith.xori %gt, %m : tensor<5xi1>
  %s = arith.select %x, %a, %b : tensor<5xi1>, tensor<5xf32>
  return %x, %s : tensor<5xi1>, tensor<5xf32>
}

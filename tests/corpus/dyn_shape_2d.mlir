// Covers: dynamic 2-D tensor<?x?xf32>: matmul with dynamic M/N/K, transpose, and row sums.
func.func @dyn_matmul(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = tensor.dim %a, %c0 : tensor<?x?xf32>
  %n = tensor.dim %b, %c1 : tensor<?x?xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty(%m, %n) : tensor<?x?xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x?xf32>) -> tensor<?x?xf32>
  %r = linalg.matmul ins(%a, %b : tensor<?x?xf32>, tensor<?x?xf32>) outs(%f : tensor<?x?xf32>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

func.func @dyn_transpose_rowsum(%a: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = tensor.dim %a, %c0 : tensor<?x?xf32>
  %n = tensor.dim %a, %c1 : tensor<?x?xf32>
  %e = tensor.empty(%n, %m) : tensor<?x?xf32>
  %t = linalg.transpose ins(%a : tensor<?x?xf32>) outs(%e : tensor<?x?xf32>) permutation = [1, 0]
  %zero = arith.constant 0.0 : f32
  %re = tensor.empty(%m) : tensor<?xf32>
  %rf = linalg.fill ins(%zero : f32) outs(%re : tensor<?xf32>) -> tensor<?xf32>
  %s = linalg.reduce ins(%a : tensor<?x?xf32>) outs(%rf : tensor<?xf32>) dimensions = [1]
    (%x: f32, %acc: f32) {
      %y = arith.addf %x, %acc : f32
      linalg.yield %y : f32
    }
  return %t, %s : tensor<?x?xf32>, tensor<?xf32>
}

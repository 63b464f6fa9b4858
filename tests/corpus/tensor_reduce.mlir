// Covers: reductions: sum over each axis, full max reduction to a 0-d tensor, and argmax-style index tracking.
func.func @sum_axes(%a: tensor<3x4xf32>) -> (tensor<4xf32>, tensor<3xf32>) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<4xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<4xf32>) -> tensor<4xf32>
  %s0 = linalg.reduce ins(%a : tensor<3x4xf32>) outs(%f0 : tensor<4xf32>) dimensions = [0]
    (%x: f32, %acc: f32) {
      %y = arith.addf %x, %acc : f32
      linalg.yield %y : f32
    }
  %e1 = tensor.empty() : tensor<3xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<3xf32>) -> tensor<3xf32>
  %s1 = linalg.reduce ins(%a : tensor<3x4xf32>) outs(%f1 : tensor<3xf32>) dimensions = [1]
    (%x: f32, %acc: f32) {
      %y = arith.addf %x, %acc : f32
      linalg.yield %y : f32
    }
  return %s0, %s1 : tensor<4xf32>, tensor<3xf32>
}

func.func @max_all(%a: tensor<3x4xf32>) -> tensor<f32> {
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %m = linalg.reduce ins(%a : tensor<3x4xf32>) outs(%f : tensor<f32>) dimensions = [0, 1]
    (%x: f32, %acc: f32) {
      %y = arith.maximumf %x, %acc : f32
      linalg.yield %y : f32
    }
  return %m : tensor<f32>
}

func.func @argmax_rows(%a: tensor<3x4xf32>) -> tensor<3xi32> {
  %ninf = arith.constant 0xFF800000 : f32
  %c0 = arith.constant 0 : i32
  %ev = tensor.empty() : tensor<3xf32>
  %ei = tensor.empty() : tensor<3xi32>
  %fv = linalg.fill ins(%ninf : f32) outs(%ev : tensor<3xf32>) -> tensor<3xf32>
  %fi = linalg.fill ins(%c0 : i32) outs(%ei : tensor<3xi32>) -> tensor<3xi32>
  %r:2 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<3x4xf32>) outs(%fv, %fi : tensor<3xf32>, tensor<3xi32>) {
  ^bb0(%x: f32, %best: f32, %bi: i32):
    %j = linalg.index 1 : index
    %ji = arith.index_cast %j : index to i32
    %gt = arith.cmpf ogt, %x, %best : f32
    %nb = arith.select %gt, %x, %best : f32
    %ni = arith.select %gt, %ji, %bi : i32
    linalg.yield %nb, %ni : f32, i32
  } -> (tensor<3xf32>, tensor<3xi32>)
  return %r#1 : tensor<3xi32>
}

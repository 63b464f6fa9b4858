// Covers: a host loop whose condition is read back from the device every iteration:
// halves a dynamically shaped vector until its sum is at most 1. Each iteration records
// one-shot command buffers (dynamic shape); the head's reduction is awaited and its fence
// is what the body's allocation waits on next, and the body's submission signals a new
// fence the loop carries to the next iteration unawaited.
func.func @halve_until_small(%start: tensor<?xf32>) -> (tensor<?xf32>, tensor<i32>) {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  %half = arith.constant 0.5 : f32
  %z = arith.constant 0.0 : f32
  %n0 = arith.constant 0 : i32
  %i1 = arith.constant 1 : i32
  cf.br ^head(%start, %n0 : tensor<?xf32>, i32)
^head(%x: tensor<?xf32>, %n: i32):
  %init = tensor.empty() : tensor<f32>
  %acc = linalg.fill ins(%z : f32) outs(%init : tensor<f32>) -> tensor<f32>
  %sum = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
                         iterator_types = ["reduction"]}
      ins(%x : tensor<?xf32>) outs(%acc : tensor<f32>) {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      linalg.yield %s : f32
  } -> tensor<f32>
  %s = tensor.extract %sum[] : tensor<f32>
  %more = arith.cmpf ogt, %s, %one : f32
  cf.cond_br %more, ^body, ^done
^body:
  %d = tensor.dim %x, %c0 : tensor<?xf32>
  %e = tensor.empty(%d) : tensor<?xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]}
      ins(%x : tensor<?xf32>) outs(%e : tensor<?xf32>) {
    ^bb0(%a: f32, %b: f32):
      %h = arith.mulf %a, %half : f32
      linalg.yield %h : f32
  } -> tensor<?xf32>
  %n1 = arith.addi %n, %i1 : i32
  cf.br ^head(%y, %n1 : tensor<?xf32>, i32)
^done:
  %nt = tensor.from_elements %n : tensor<i32>
  return %x, %nt : tensor<?xf32>, tensor<i32>
}

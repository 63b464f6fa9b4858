// A convergence loop: x <- 0.5 * x + c over 4096 elements until max|x_new - x| <= 1e-5 or
// 100 iterations (about 20 for the bench's inputs). Each iteration is an elementwise update
// and a max-abs-difference reduction whose value is read back to the host (tensor.extract)
// to decide whether to go on. Returns x and the iteration count.
func.func @main(%x0: tensor<4096xf32>, %c: tensor<4096xf32>) -> (tensor<4096xf32>, tensor<i32>) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %max = arith.constant 100 : i32
  %tol = arith.constant 1.0e-5 : f32
  %half = arith.constant 0.5 : f32
  %zero = arith.constant 0.0 : f32
  %r:2 = scf.while (%i = %c0, %x = %x0) : (i32, tensor<4096xf32>) -> (i32, tensor<4096xf32>) {
    %e = tensor.empty() : tensor<4096xf32>
    %xn = linalg.generic {indexing_maps = [affine_map<(d) -> (d)>, affine_map<(d) -> (d)>,
                                           affine_map<(d) -> (d)>],
                          iterator_types = ["parallel"]}
        ins(%x, %c : tensor<4096xf32>, tensor<4096xf32>) outs(%e : tensor<4096xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %h = arith.mulf %a, %half : f32
      %s = arith.addf %h, %b : f32
      linalg.yield %s : f32
    } -> tensor<4096xf32>
    %de = tensor.empty() : tensor<f32>
    %df = linalg.fill ins(%zero : f32) outs(%de : tensor<f32>) -> tensor<f32>
    %d = linalg.generic {indexing_maps = [affine_map<(d) -> (d)>, affine_map<(d) -> (d)>,
                                          affine_map<(d) -> ()>],
                         iterator_types = ["reduction"]}
        ins(%xn, %x : tensor<4096xf32>, tensor<4096xf32>) outs(%df : tensor<f32>) {
    ^bb0(%a: f32, %b: f32, %m: f32):
      %s = arith.subf %a, %b : f32
      %ab = math.absf %s : f32
      %nm = arith.maximumf %ab, %m : f32
      linalg.yield %nm : f32
    } -> tensor<f32>
    %dv = tensor.extract %d[] : tensor<f32>
    %big = arith.cmpf ogt, %dv, %tol : f32
    %i1 = arith.addi %i, %c1 : i32
    %under = arith.cmpi slt, %i1, %max : i32
    %go = arith.andi %big, %under : i1
    scf.condition(%go) %i1, %xn : i32, tensor<4096xf32>
  } do {
  ^bb0(%i: i32, %x: tensor<4096xf32>):
    scf.yield %i, %x : i32, tensor<4096xf32>
  }
  %n = tensor.from_elements %r#0 : tensor<i32>
  return %r#1, %n : tensor<4096xf32>, tensor<i32>
}

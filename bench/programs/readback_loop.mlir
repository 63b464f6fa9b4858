// A data-dependent host loop: the Collatz steps of a scalar (27 takes 111). Each iteration
// runs small dispatches and reads a predicate back to the host (tensor.extract) to pick its
// branch, as IREE's stablehlo `collatz` model and generation loops do: host cost per
// iteration, with submissions carried from one iteration to the next by their fences.
func.func @main(%start: tensor<f32>) -> tensor<f32> {
  %one = arith.constant dense<1.0> : tensor<f32>
  %two = arith.constant dense<2.0> : tensor<f32>
  %three = arith.constant dense<3.0> : tensor<f32>
  %zero = arith.constant dense<0.0> : tensor<f32>
  cf.br ^head(%zero, %start : tensor<f32>, tensor<f32>)
^head(%n: tensor<f32>, %x: tensor<f32>):
  %more = arith.cmpf ogt, %x, %one : tensor<f32>
  %m = tensor.extract %more[] : tensor<i1>
  cf.cond_br %m, ^body(%n, %x : tensor<f32>, tensor<f32>), ^done(%n : tensor<f32>)
^body(%n1: tensor<f32>, %x1: tensor<f32>):
  %next_n = arith.addf %n1, %one : tensor<f32>
  %r = arith.remf %x1, %two : tensor<f32>
  %odd = arith.cmpf one, %r, %zero : tensor<f32>
  %o = tensor.extract %odd[] : tensor<i1>
  cf.cond_br %o, ^odd, ^even
^odd:
  %t = arith.mulf %x1, %three : tensor<f32>
  %t1 = arith.addf %t, %one : tensor<f32>
  cf.br ^head(%next_n, %t1 : tensor<f32>, tensor<f32>)
^even:
  %h = arith.divf %x1, %two : tensor<f32>
  cf.br ^head(%next_n, %h : tensor<f32>, tensor<f32>)
^done(%res: tensor<f32>):
  return %res : tensor<f32>
}

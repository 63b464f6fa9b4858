// Covers: a host loop (scf.while) of one dispatch per iteration, the tensor carried from one iteration to the next: one queue chain per iteration, run as the steps of one ChainLoop (translator/codegen/loops.py), replayed natively; the trip count fixed, and one from an argument (0..15 iterations, zero included; its command buffer is recorded per iteration, so it stays as it was); a loop nested in another; two dispatches per iteration kept apart by a barrier.
func.func @loop_fixed(%w: tensor<16x16xf32>, %x0: tensor<16xf32>) -> tensor<16xf32> {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %n = arith.constant 20 : i32
  %zero = arith.constant 0.0 : f32
  %r:2 = scf.while (%i = %c0, %x = %x0) : (i32, tensor<16xf32>) -> (i32, tensor<16xf32>) {
    %more = arith.cmpi slt, %i, %n : i32
    scf.condition(%more) %i, %x : i32, tensor<16xf32>
  } do {
  ^bb0(%i: i32, %x: tensor<16xf32>):
    %e = tensor.empty() : tensor<16xf32>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16xf32>) -> tensor<16xf32>
    %y = linalg.matvec ins(%w, %x : tensor<16x16xf32>, tensor<16xf32>)
                       outs(%f : tensor<16xf32>) -> tensor<16xf32>
    %t = math.tanh %y : tensor<16xf32>
    %next = arith.addi %i, %c1 : i32
    scf.yield %next, %t : i32, tensor<16xf32>
  }
  return %r#1 : tensor<16xf32>
}

func.func @loop_n(%x0: tensor<16xf32>, %k: i32) -> tensor<16xf32> {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c15 = arith.constant 15 : i32
  %n = arith.andi %k, %c15 : i32
  %r:2 = scf.while (%i = %c0, %x = %x0) : (i32, tensor<16xf32>) -> (i32, tensor<16xf32>) {
    %more = arith.cmpi slt, %i, %n : i32
    scf.condition(%more) %i, %x : i32, tensor<16xf32>
  } do {
  ^bb0(%i: i32, %x: tensor<16xf32>):
    %s = arith.sitofp %i : i32 to f32
    %e = tensor.empty() : tensor<16xf32>
    %y = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                         iterator_types = ["parallel"]}
        ins(%x : tensor<16xf32>) outs(%e : tensor<16xf32>) {
      ^bb1(%a: f32, %o: f32):
        %m = arith.mulf %a, %a : f32
        %h = arith.mulf %m, %s : f32
        %q = arith.addf %h, %a : f32
        %c = math.sin %q : f32
        linalg.yield %c : f32
    } -> tensor<16xf32>
    %next = arith.addi %i, %c1 : i32
    scf.yield %next, %y : i32, tensor<16xf32>
  }
  return %r#1 : tensor<16xf32>
}

func.func @loop_nested(%t: tensor<8xf32>) -> tensor<8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %half = arith.constant dense<0.5> : tensor<8xf32>
  %r = scf.for %i = %c0 to %c3 step %c1 iter_args(%acc = %t) -> tensor<8xf32> {
    %in = scf.for %j = %c0 to %c4 step %c1 iter_args(%a = %acc) -> tensor<8xf32> {
      %m = arith.mulf %a, %half : tensor<8xf32>
      %s = arith.addf %m, %t : tensor<8xf32>
      scf.yield %s : tensor<8xf32>
    }
    %e = math.exp %in : tensor<8xf32>
    %b = util.optimization_barrier %e : tensor<8xf32>
    scf.yield %b : tensor<8xf32>
  }
  return %r : tensor<8xf32>
}

func.func @loop_two_steps(%w: tensor<8x8xf32>, %x0: tensor<8xf32>) -> tensor<8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %zero = arith.constant 0.0 : f32
  %r = scf.for %i = %c0 to %c6 step %c1 iter_args(%x = %x0) -> tensor<8xf32> {
    %e = tensor.empty() : tensor<8xf32>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
    %y = linalg.matvec ins(%w, %x : tensor<8x8xf32>, tensor<8xf32>)
                       outs(%f : tensor<8xf32>) -> tensor<8xf32>
    %k = util.optimization_barrier %y : tensor<8xf32>
    %t = math.tanh %k : tensor<8xf32>
    scf.yield %t : tensor<8xf32>
  }
  return %r : tensor<8xf32>
}

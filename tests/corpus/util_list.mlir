// Covers: util.list create/resize/set/get/size on i32, i64, f32 and !hal.buffer_view (ref) elements -> vm.list.* ops.
func.func @list_scalars(%n: i32, %v: i32, %w: i64, %f: f32) -> (i32, i64, f32, index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c7 = arith.constant 7 : i32
  %c3i = arith.constant 3 : i32
  %nm = arith.andi %n, %c7 : i32
  %n3 = arith.addi %nm, %c3i : i32
  %size = arith.index_cast %n3 : i32 to index
  %li = util.list.create %size : !util.list<i32>
  util.list.resize %li, %size : !util.list<i32>
  util.list.set %li[%c0], %v : !util.list<i32>
  %v2 = arith.muli %v, %v : i32
  util.list.set %li[%c2], %v2 : !util.list<i32>
  %g0 = util.list.get %li[%c0] : !util.list<i32>
  %g2 = util.list.get %li[%c2] : !util.list<i32>
  %gs = arith.addi %g0, %g2 : i32
  %ll = util.list.create %c2 : !util.list<i64>
  util.list.resize %ll, %c2 : !util.list<i64>
  util.list.set %ll[%c1], %w : !util.list<i64>
  %gl = util.list.get %ll[%c1] : !util.list<i64>
  %lf = util.list.create %c1 : !util.list<f32>
  util.list.resize %lf, %c1 : !util.list<f32>
  util.list.set %lf[%c0], %f : !util.list<f32>
  %gf = util.list.get %lf[%c0] : !util.list<f32>
  %sz = util.list.size %li : !util.list<i32>
  return %gs, %gl, %gf, %sz : i32, i64, f32, index
}

// A list of buffer views (refs) holding exported tensors, selected by a runtime index -> vm.list.set.ref/get.ref.
func.func @list_refs(%a: tensor<4xf32>, %b: tensor<4xf32>, %sel: i32) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c1i = arith.constant 1 : i32
  %l = util.list.create %c2 : !util.list<?>
  util.list.resize %l, %c2 : !util.list<?>
  %av = hal.tensor.export %a : tensor<4xf32> -> !hal.buffer_view
  %bv = hal.tensor.export %b : tensor<4xf32> -> !hal.buffer_view
  util.list.set %l[%c0], %av : !hal.buffer_view -> !util.list<?>
  util.list.set %l[%c1], %bv : !hal.buffer_view -> !util.list<?>
  %s = arith.andi %sel, %c1i : i32
  %si = arith.index_cast %s : i32 to index
  %tv = util.list.get %l[%si] : !util.list<?> -> !hal.buffer_view
  %t = hal.tensor.import %tv : !hal.buffer_view -> tensor<4xf32>
  %r = arith.addf %t, %a : tensor<4xf32>
  return %r : tensor<4xf32>
}

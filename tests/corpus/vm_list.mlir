// Covers (VM dialect): vm.list alloc/reserve/resize/size/get/set for i32, i64, f32, f64 and ref elements in a variant list (incl. get.ref type mismatch -> null). (A typed !vm.list<!vm.buffer> fails to encode in 3.13: type not in the type table.)
vm.module @vm_list {
  vm.global.ref private mutable @keep : !vm.buffer
  vm.func @values(%n: i32, %x: i32, %y: i64, %f: f32, %d: f64) -> (i32, i32, i64, f32, f64, i64, i32) {
    %c0 = vm.const.i32.zero
    %c1 = vm.const.i32 1
    %c2 = vm.const.i32 2
    %c7 = vm.const.i32 7
    %c4 = vm.const.i32 4
    %nm = vm.and.i32 %n, %c7 : i32
    %sz = vm.add.i32 %nm, %c4 : i32
    %li = vm.list.alloc %c1 : (i32) -> !vm.list<i32>
    vm.list.reserve %li, %sz : (!vm.list<i32>, i32)
    vm.list.resize %li, %sz : (!vm.list<i32>, i32)
    vm.list.set.i32 %li, %c2, %x : (!vm.list<i32>, i32, i32)
    %gi = vm.list.get.i32 %li, %c2 : (!vm.list<i32>, i32) -> i32
    %s = vm.list.size %li : (!vm.list<i32>) -> i32
    %ll = vm.list.alloc %c2 : (i32) -> !vm.list<i64>
    vm.list.resize %ll, %c2 : (!vm.list<i64>, i32)
    vm.list.set.i64 %ll, %c1, %y : (!vm.list<i64>, i32, i64)
    %gl = vm.list.get.i64 %ll, %c1 : (!vm.list<i64>, i32) -> i64
    %gl0 = vm.list.get.i64 %ll, %c0 : (!vm.list<i64>, i32) -> i64
    %lf = vm.list.alloc %c2 : (i32) -> !vm.list<f32>
    vm.list.resize %lf, %c2 : (!vm.list<f32>, i32)
    vm.list.set.f32 %lf, %c0, %f : (!vm.list<f32>, i32, f32)
    %gf = vm.list.get.f32 %lf, %c0 : (!vm.list<f32>, i32) -> f32
    %ld = vm.list.alloc %c2 : (i32) -> !vm.list<f64>
    vm.list.resize %ld, %c1 : (!vm.list<f64>, i32)
    vm.list.set.f64 %ld, %c0, %d : (!vm.list<f64>, i32, f64)
    %gd = vm.list.get.f64 %ld, %c0 : (!vm.list<f64>, i32) -> f64
    %lv = vm.list.alloc %c2 : (i32) -> !vm.list<?>
    vm.list.resize %lv, %c2 : (!vm.list<?>, i32)
    vm.list.set.i32 %lv, %c0, %x : (!vm.list<?>, i32, i32)
    %gv = vm.list.get.i32 %lv, %c0 : (!vm.list<?>, i32) -> i32
    vm.return %gi, %s, %gl, %gf, %gd, %gl0, %gv : i32, i32, i64, f32, f64, i64, i32
  }
  vm.export @values

  vm.func @refs(%n: i32) -> (i64, i32, i32, i32) {
    %c0 = vm.const.i32.zero
    %c1 = vm.const.i32 1
    %c2 = vm.const.i32 2
    %c3 = vm.const.i32 3
    %l16 = vm.const.i64 16
    %l8 = vm.const.i64 8
    %lst = vm.list.alloc %c3 : (i32) -> !vm.list<?>
    vm.list.resize %lst, %c3 : (!vm.list<?>, i32)
    %b0 = vm.buffer.alloc %l16, %c0 : !vm.buffer
    %b1 = vm.buffer.alloc %l8, %c0 : !vm.buffer
    vm.list.set.ref %lst, %c0, %b0 : (!vm.list<?>, i32, !vm.buffer)
    vm.list.set.ref %lst, %c1, %b1 : (!vm.list<?>, i32, !vm.buffer)
    %sel = vm.and.i32 %n, %c1 : i32
    %g = vm.list.get.ref %lst, %sel : (!vm.list<?>, i32) -> !vm.buffer
    %len = vm.buffer.length %g : !vm.buffer -> i64
    %g2 = vm.list.get.ref %lst, %c2 : (!vm.list<?>, i32) -> !vm.buffer
    %isnull = vm.cmp.nz.ref %g2 : !vm.buffer
    %any = vm.list.alloc %c1 : (i32) -> !vm.list<?>
    vm.list.resize %any, %c1 : (!vm.list<?>, i32)
    vm.list.set.ref %any, %c0, %b1 : (!vm.list<?>, i32, !vm.buffer)
    %wrong = vm.list.get.ref %any, %c0 : (!vm.list<?>, i32) -> !vm.list<i32>
    %wrongnz = vm.cmp.nz.ref %wrong : !vm.list<i32>
    %same = vm.cmp.eq.ref %g, %b0 : !vm.buffer
    vm.global.store.ref %g, @keep : !vm.buffer
    vm.return %len, %isnull, %wrongnz, %same : i64, i32, i32, i32
  }
  vm.export @refs
}

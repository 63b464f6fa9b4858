// Covers (VM dialect): vm.switch.i32/i64/f32/f64 (in-range, negative and out-of-range index) and vm.select.i32/i64/f32/f64.
vm.module @vm_switch_select {
  vm.func @switches(%idx: i32, %a: i64, %f: f32, %d: f64) -> (i32, i64, f32, f64) {
    %c10 = vm.const.i32 10
    %c20 = vm.const.i32 20
    %c30 = vm.const.i32 30
    %cdef = vm.const.i32 -1
    %s32 = vm.switch.i32 %idx[%c10, %c20, %c30] else %cdef : i32
    %l1 = vm.const.i64 100000000000
    %l2 = vm.const.i64 -5
    %s64 = vm.switch.i64 %idx[%a, %l1, %l2] else %a : i64
    %f1 = vm.const.f32 1.5
    %f2 = vm.const.f32 -2.25
    %sf = vm.switch.f32 %idx[%f1, %f, %f2] else %f : f32
    %d1 = vm.const.f64 3.125
    %sd = vm.switch.f64 %idx[%d, %d1] else %d1 : f64
    vm.return %s32, %s64, %sf, %sd : i32, i64, f32, f64
  }
  vm.export @switches

  vm.func @selects(%c: i32, %a: i32, %b: i32, %x: i64, %y: i64, %f: f32, %g: f32, %d: f64, %e: f64) -> (i32, i64, f32, f64) {
    %s0 = vm.select.i32 %c, %a, %b : i32
    %s1 = vm.select.i64 %c, %x, %y : i64
    %s2 = vm.select.f32 %c, %f, %g : f32
    %s3 = vm.select.f64 %c, %d, %e : f64
    vm.return %s0, %s1, %s2, %s3 : i32, i64, f32, f64
  }
  vm.export @selects
}

// Covers (VM dialect): vm.br_table with block operands, vm.cond_br/vm.br with i32/i64/f32 block args, a counted loop, cmp.nz/eq/ne/lt on i32/i64 incl. pseudo gt/gte.
vm.module @vm_branches {
  vm.func @table(%i: i32, %x: i64) -> i64 {
    vm.br_table %i {
      default: ^bbd(%x : i64),
      0: ^bb0(%x : i64),
      1: ^bb1(%i : i32),
      2: ^bb0(%x : i64)
    }
  ^bbd(%d: i64):
    %m1 = vm.const.i64 -1
    %r = vm.mul.i64 %d, %m1 : i64
    vm.return %r : i64
  ^bb0(%v: i64):
    %two = vm.const.i64 2
    %r0 = vm.add.i64 %v, %two : i64
    vm.return %r0 : i64
  ^bb1(%w: i32):
    %e = vm.ext.i32.i64.u %w : i32 -> i64
    vm.return %e : i64
  }
  vm.export @table

  vm.func @loop(%n: i32, %f: f32) -> (i32, f32) {
    %c0 = vm.const.i32.zero
    %c1 = vm.const.i32 1
    %c31 = vm.const.i32 31
    %lim = vm.and.i32 %n, %c31 : i32
    vm.br ^head(%c0, %f : i32, f32)
  ^head(%i: i32, %acc: f32):
    %lt = vm.cmp.lt.i32.s %i, %lim : i32
    vm.cond_br %lt, ^body(%i, %acc : i32, f32), ^exit(%acc : f32)
  ^body(%j: i32, %a: f32):
    %jf = vm.cast.si32.f32 %j : i32 -> f32
    %a2 = vm.add.f32 %a, %jf : f32
    %j2 = vm.add.i32 %j, %c1 : i32
    vm.br ^head(%j2, %a2 : i32, f32)
  ^exit(%res: f32):
    vm.return %lim, %res : i32, f32
  }
  vm.export @loop

  vm.func @int_compares(%a: i32, %b: i32, %x: i64, %y: i64) -> (i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32) {
    %0 = vm.cmp.eq.i32 %a, %b : i32
    %1 = vm.cmp.ne.i32 %a, %b : i32
    %2 = vm.cmp.lt.i32.s %a, %b : i32
    %3 = vm.cmp.lt.i32.u %a, %b : i32
    %4 = vm.cmp.nz.i32 %a : i32
    %5 = vm.cmp.gt.i32.s %a, %b : i32
    %6 = vm.cmp.gte.i32.u %a, %b : i32
    %7 = vm.cmp.eq.i64 %x, %y : i64
    %8 = vm.cmp.ne.i64 %x, %y : i64
    %9 = vm.cmp.lt.i64.s %x, %y : i64
    %10 = vm.cmp.lt.i64.u %x, %y : i64
    %11 = vm.cmp.nz.i64 %x : i64
    %12 = vm.cmp.lte.i64.s %x, %y : i64
    %13 = vm.cmp.gt.i64.u %x, %y : i64
    vm.return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13 : i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32
  }
  vm.export @int_compares
}

// Covers (VM dialect): ctlz, abs, fma, not, i32/i64 min/max signed+unsigned, i64 shifts (i32 amount), trunc/ext i8/i16, div/rem with safe divisors.
vm.module @vm_int_misc {
  vm.func @bits_i32(%a: i32, %b: i32) -> (i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32) {
    %clz = vm.ctlz.i32 %a : i32
    %abs = vm.abs.i32 %a : i32
    %fma = vm.fma.i32 %a, %b, %a : i32
    %not = vm.not.i32 %a : i32
    %mns = vm.min.i32.s %a, %b : i32
    %mnu = vm.min.i32.u %a, %b : i32
    %mxs = vm.max.i32.s %a, %b : i32
    %mxu = vm.max.i32.u %a, %b : i32
    %t8 = vm.trunc.i32.i8 %a : i32 -> i32
    %t16 = vm.trunc.i32.i16 %a : i32 -> i32
    %e8 = vm.ext.i8.i32.s %t8 : i32 -> i32
    %e8u = vm.ext.i8.i32.u %b : i32 -> i32
    %e16 = vm.ext.i16.i32.s %t16 : i32 -> i32
    %e16u = vm.ext.i16.i32.u %b : i32 -> i32
    %s1 = vm.add.i32 %e8, %e16 : i32
    %s2 = vm.add.i32 %e8u, %e16u : i32
    vm.return %clz, %abs, %fma, %not, %mns, %mnu, %mxs, %mxu, %s1, %s2, %t16 : i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32
  }
  vm.export @bits_i32

  vm.func @bits_i64(%a: i64, %b: i64, %sh: i32) -> (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64) {
    %clz = vm.ctlz.i64 %a : i64
    %abs = vm.abs.i64 %a : i64
    %fma = vm.fma.i64 %a, %b, %a : i64
    %not = vm.not.i64 %a : i64
    %mns = vm.min.i64.s %a, %b : i64
    %mnu = vm.min.i64.u %a, %b : i64
    %mxs = vm.max.i64.s %a, %b : i64
    %mxu = vm.max.i64.u %a, %b : i64
    %shl = vm.shl.i64 %a, %sh : i64
    %shrs = vm.shr.i64.s %a, %sh : i64
    %shru = vm.shr.i64.u %a, %sh : i64
    %x = vm.xor.i64 %a, %b : i64
    vm.return %clz, %abs, %fma, %not, %mns, %mnu, %mxs, %mxu, %shl, %shrs, %shru, %x : i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64
  }
  vm.export @bits_i64

  vm.func @divs(%a: i32, %b: i32, %c: i64, %d: i64) -> (i32, i32, i32, i32, i64, i64, i64, i64) {
    %c7 = vm.const.i32 7
    %c1 = vm.const.i32 1
    %bm = vm.and.i32 %b, %c7 : i32
    %bd = vm.add.i32 %bm, %c1 : i32
    %q = vm.div.i32.s %a, %bd : i32
    %qu = vm.div.i32.u %a, %bd : i32
    %r = vm.rem.i32.s %a, %bd : i32
    %ru = vm.rem.i32.u %a, %bd : i32
    %c15l = vm.const.i64 15
    %c1l = vm.const.i64 1
    %dm = vm.and.i64 %d, %c15l : i64
    %dd = vm.add.i64 %dm, %c1l : i64
    %ql = vm.div.i64.s %c, %dd : i64
    %qul = vm.div.i64.u %c, %dd : i64
    %rl = vm.rem.i64.s %c, %dd : i64
    %rul = vm.rem.i64.u %c, %dd : i64
    vm.return %q, %qu, %r, %ru, %ql, %qul, %rl, %rul : i32, i32, i32, i32, i64, i64, i64, i64
  }
  vm.export @divs
}
